// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target `trace`: the trace file reader (what dump, convert and report
 * read). The input is a control byte and a trace file, repaired chunk by chunk
 * as the control byte says (fuzz.h), so that mutations reach the checks behind
 * the CRCs: sessions, metadata, threads, packets and records.
 *
 * Properties, as in tests/unit/test_trace_fuzz.c: a file opens or is refused
 * with -EBADMSG / -EPROTONOSUPPORT and one line saying why; an opened file
 * reads to the end (0) or fails with one line; timestamps never go back; every
 * view has a valid ring, an EVENT a payload no larger than a record allows and
 * the schema of its rid, a LOST view a count; the statistics and the per-ring
 * figures add up to what was returned; every view renders as JSON; the raw
 * chunk walk ends, and returns as many chunks as the statistics count.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <evring/trace.h>

#include "fuzz.h"

static int fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
	if (fd < 0) {
		perror("fuzz_trace: memfd_create");
		exit(1);
	}
	return 0;
}

static void read_views(struct evr_trace_reader *r)
{
	const struct evr_trace_session *s = evr_trace_reader_session(r);
	uint32_t nr = s ? s->nr_rings : 0;
	struct evr_strbuf sb = { 0 };
	struct evr_trace_stats st;
	struct evr_event_view v;
	uint64_t events = 0, lost = 0, last = 0, ring_ev = 0, ring_lost = 0;
	int ret;

	while ((ret = evr_trace_reader_next(r, &v)) == 1) {
		fuzz_check(v.ts_ns >= last);
		last = v.ts_ns;
		fuzz_check(v.ring < nr);
		if (v.type == EVR_REC_EVENT) {
			fuzz_check(v.len <= EVR_MAX_PAYLOAD);
			fuzz_check(v.len == 0 || v.payload != NULL);
			fuzz_check(!v.schema || v.schema->rid == v.rid);
			if (v.tid)
				(void)evr_trace_reader_thread_name(r, v.tid);
			events++;
		} else {
			fuzz_check(v.type == EVR_REC_LOST && v.lost > 0);
			lost += v.lost;
		}
		sb.len = 0;
		fuzz_check(evr_event_to_json(&v, &sb) == 0);
		fuzz_check(sb.len > 0 && sb.buf[0] == '{' && sb.buf[sb.len - 1] == '}');
	}
	free(sb.buf);
	if (ret < 0)
		fuzz_check(evr_trace_reader_errmsg(r)[0] != '\0');
	else
		fuzz_check(ret == 0 && evr_trace_reader_next(r, &v) == 0);
	evr_trace_reader_stats(r, &st);
	fuzz_check(st.events == events);
	fuzz_check(st.lost == lost || st.lost == UINT64_MAX);
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t e, l;

		fuzz_check(evr_trace_reader_ring_stats(r, i, &e, &l) == 0);
		ring_ev += e;
		ring_lost = ring_lost + l < ring_lost ? UINT64_MAX : ring_lost + l;
	}
	fuzz_check(evr_trace_reader_ring_stats(r, nr, NULL, NULL) == -EINVAL);
	fuzz_check(ring_ev == events);
	fuzz_check(!st.truncated || st.truncated_why[0] != '\0');
}

static void read_chunks(struct evr_trace_reader *r)
{
	struct evr_trace_stats st;
	struct evr_trace_chunk ch;
	uint64_t pos = 0, prev = 0, n = 0;
	int ret;

	evr_trace_reader_stats(r, &st);
	while ((ret = evr_trace_reader_chunk_next(r, &pos, &ch)) != 0) {
		fuzz_check(ret == 1 || ret == -EBADMSG);
		fuzz_check(pos > prev && pos <= st.bytes + 7);
		prev = pos;
		if (ret == 1)
			fuzz_check(ch.off + 24 + ch.len <= st.bytes);
		n++;
		fuzz_check(n <= st.chunks);
	}
	/* The walk returns each chunk the scan counted, once, and steps over what it skipped. */
	fuzz_check(n == st.chunks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evr_trace_reader *r = NULL;
	char err[256] = "";
	int ret;

	if (fuzz_trace_file(fd, data, size) < 0)
		return 0;
	ret = evr_trace_reader_open_fd(fd, &r, err, sizeof(err));
	if (ret < 0) {
		fuzz_check(ret == -EBADMSG || ret == -EPROTONOSUPPORT || ret == -ENOMEM);
		fuzz_check(err[0] && !strchr(err, '\n'));
		fuzz_check(r == NULL);
		return 0;
	}
	(void)evr_trace_reader_process(r);
	(void)evr_trace_reader_schemas(r);
	read_chunks(r);
	read_views(r);
	evr_trace_reader_free(r);
	return 0;
}
