// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The smallest instrumented program: one provider with three events, a
 * session started in-process, and the records read back through the reader.
 * Usage: hello [N]   (fires N allocation events, default 5)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <evring/evring.h>

#define HELLO_EVENTS(EVENT)                                                                \
	EVENT(hello_alloc, "Alloc", 1, EVR_LEVEL_VERBOSE, 0x1, (u64, addr), (u32, size))   \
	EVENT(hello_log, "Log", 2, EVR_LEVEL_INFO, 0x2, (str, text))                       \
	EVENT(hello_tick, "Tick", 3, EVR_LEVEL_INFO, 0x0, )

EVR_PROVIDER_DECLARE(hello, HELLO_EVENTS)
EVR_PROVIDER_DEFINE(hello, "Hello", HELLO_EVENTS)

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	struct evr_session_opts opts = { .providers = "Hello:0x3:5", .ring_size = 1 << 20 };
	struct evr_session *s;
	struct evr_reader *r;
	struct evr_record rec;
	uint64_t events = 0, lost = 0;
	char err[256];
	int ret;

	ret = evr_session_start(&opts, &s, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "hello: %s\n", err);
		return 1;
	}
	for (int i = 0; i < n; i++)
		hello_alloc(0x1000u + (uint64_t)i * 64, 64);
	if (hello_log_enabled())
		hello_log("hello, rings");
	hello_tick();
	evr_session_stop(s);

	ret = evr_session_reader_new(s, EVR_READER_GATING, &r);
	if (ret < 0) {
		fprintf(stderr, "hello: cannot read the session: %d\n", ret);
		return 1;
	}
	while (evr_reader_next(r, &rec) > 0) {
		const struct evr_event *ev;

		if (rec.type == EVR_REC_LOST) {
			lost += rec.lost;
			continue;
		}
		events++;
		ev = evr_event_by_rid(rec.event_id);
		printf("%s/%s tid=%u ring=%u %u bytes\n", ev->provider->name, ev->desc->name,
		       rec.tid, rec.ring, rec.len);
	}
	printf("read %" PRIu64 " events, %" PRIu64 " lost\n", events, lost);
	evr_reader_free(r);
	evr_session_free(s);
	return 0;
}
