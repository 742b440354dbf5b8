// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target `convert`: the converters and the report model of
 * libevring-export (what `evring convert` and `evring report` run, and the
 * monitor serves), from a fuzzed trace file. The input is as for the `trace`
 * target (a control byte, then a file repaired chunk by chunk: fuzz.h). The
 * file is converted to JSON lines, to Chrome JSON and to CTF (a directory in
 * memory-backed temporary storage), and reported as JSON and as HTML.
 *
 * Properties: each writer finishes, or fails with a one-line reason; the
 * Chrome output stays proportional to what was read (at most
 * CHROME_RECORDS_PER_VIEW records per event or loss, plus the metadata
 * records: a trace cannot make it grow faster than the trace), parses as JSON
 * (jansson), and every "E" closes the innermost open "B" of its thread, with
 * its name; the JSON lines output has one line per view, each an object; the
 * report's JSON parses; the report's totals are the reader's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <evring/export.h>

#include "fuzz.h"

/* The Chrome converter's bound (docs/cli.md): a view is one record, a stop may
 * split and reopen at most 16 slices above it, and each slice is closed once. */
#define CHROME_RECORDS_PER_VIEW 40u

static int fd = -1;
static char tmpdir[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	(void)argc;
	(void)argv;
	fd = memfd_create("fuzz-convert", MFD_CLOEXEC);
	snprintf(tmpdir, sizeof(tmpdir), "%s/evr-fuzz-ctf-XXXXXX", base);
	if (fd < 0 || !mkdtemp(tmpdir)) {
		perror("fuzz_convert: set-up");
		exit(1);
	}
	return 0;
}

/* @doc parses as JSON; else a finding, with jansson's reason. */
static json_t *check_json(const char *doc, size_t len, const char *what)
{
	json_error_t je;
	/* Integers as reals: JSON numbers have no size limit, jansson's integers do
	 * (dump --json writes u64 values as they are). */
	json_t *j = json_loadb(doc, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &je);

	if (!j)
		fprintf(stderr, "%s is not JSON: %s (line %d, column %d)\n", what, je.text, je.line,
			je.column);
	fuzz_check(j != NULL);
	return j;
}

/* The Chrome document: JSON, and every "E" closes the innermost "B" of its thread. */
static void check_chrome(const char *doc, size_t len)
{
	json_t *j = check_json(doc, len, "the Chrome JSON"), *evs = json_object_get(j, "traceEvents");
	struct { double tid; const char *name; } open[4096];
	size_t nopen = 0, i;
	json_t *e;

	fuzz_check(json_is_array(evs));
	json_array_foreach(evs, i, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));
		const char *name = json_string_value(json_object_get(e, "name"));
		double tid = json_number_value(json_object_get(e, "tid"));
		size_t k;

		fuzz_check(ph && name);
		if (!strcmp(ph, "B")) {
			fuzz_check(nopen < sizeof(open) / sizeof(open[0]));
			open[nopen].tid = tid;
			open[nopen++].name = name;
		} else if (!strcmp(ph, "E")) {
			for (k = nopen; k > 0 && open[k - 1].tid != tid; k--)
				;
			if (k == 0 || strcmp(open[k - 1].name, name))
				fprintf(stderr, "E %s on tid %.0f closes %s\n", name, tid,
					k ? open[k - 1].name : "nothing");
			fuzz_check(k > 0 && !strcmp(open[k - 1].name, name));
			memmove(&open[k - 1], &open[k], (nopen - k) * sizeof(open[0]));
			nopen--;
		}
	}
	fuzz_check(nopen == 0);	/* every slice is closed by the end */
	json_decref(j);
}

static struct evr_trace_reader *open_trace(void)
{
	struct evr_trace_reader *r = NULL;
	char err[256] = "";
	int ret = evr_trace_reader_open_fd(fd, &r, err, sizeof(err));

	if (ret < 0) {
		fuzz_check(err[0] && !strchr(err, '\n'));
		return NULL;
	}
	return r;
}

static void check_failure(int ret, const char *err)
{
	fuzz_check(ret < 0 && err[0] && !strchr(err, '\n'));
}

/* Empty the CTF directory (one level: metadata and stream files). */
static void ctf_clean(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evr_convert_stats cs;
	struct evr_trace_reader *r;
	struct evr_trace_stats st;
	uint64_t lines = 0;
	char err[256], dir[96];
	uint64_t views;
	FILE *f;
	int ret;

	if (fuzz_trace_file(fd, data, size) < 0 || !(r = open_trace()))
		return 0;

	/* JSON lines: one line per view (event or loss), each a JSON object. */
	{
		char *doc = NULL;
		size_t doclen = 0;

		f = open_memstream(&doc, &doclen);
		fuzz_check(f != NULL);
		err[0] = '\0';
		ret = evr_convert_jsonl(r, f, &cs, err, sizeof(err));
		fclose(f);
		views = 0;
		for (size_t at = 0; ret == 0 && at < doclen; views++) {
			const char *nl = memchr(doc + at, '\n', doclen - at);
			json_t *j;

			fuzz_check(nl != NULL);
			j = check_json(doc + at, (size_t)(nl - doc - at), "a JSON line");
			fuzz_check(json_is_object(j));
			json_decref(j);
			at = (size_t)(nl - doc) + 1;
		}
		free(doc);
	}
	evr_trace_reader_stats(r, &st);
	if (ret == 0)
		fuzz_check(cs.events == st.events && cs.lost == st.lost);
	else
		check_failure(ret, err);
	evr_trace_reader_free(r);

	/* Chrome JSON: one line per record. */
	if (ret == 0 && (r = open_trace())) {
		char *doc = NULL;
		size_t doclen = 0;

		f = open_memstream(&doc, &doclen);
		fuzz_check(f != NULL);
		err[0] = '\0';
		ret = evr_convert_chrome(r, f, &cs, err, sizeof(err));
		fclose(f);
		for (size_t i = 0; i < doclen; i++)
			lines += doc[i] == '\n';
		if (ret == 0)
			check_chrome(doc, doclen);
		free(doc);
		if (ret == 0) {
			/* Also the process records, and one thread_name per thread. */
			uint64_t bound = CHROME_RECORDS_PER_VIEW * views + views + 8;

			fuzz_check(cs.events == st.events);
			if (lines > bound)
				fprintf(stderr, "%llu Chrome records for %llu views\n",
					(unsigned long long)lines, (unsigned long long)views);
			fuzz_check(lines <= bound);
		} else {
			check_failure(ret, err);
		}
		evr_trace_reader_free(r);
	}

	/* CTF 1.8. */
	if ((r = open_trace())) {
		snprintf(dir, sizeof(dir), "%s/ctf", tmpdir);
		err[0] = '\0';
		ret = evr_convert_ctf(r, dir, &cs, err, sizeof(err));
		if (ret < 0)
			check_failure(ret, err);
		ctf_clean(dir);
		evr_trace_reader_free(r);
	}

	/* The report: its model, as JSON and as HTML. */
	if ((r = open_trace())) {
		struct evr_rpt m = { 0 };
		struct evr_strbuf sb = { 0 };

		err[0] = '\0';
		ret = evr_rpt_build(r, &m, err, sizeof(err));
		if (ret == 0) {
			evr_trace_reader_stats(r, &st);
			fuzz_check(m.events == st.events);
			evr_rpt_sort(&m);
			fuzz_check(evr_rpt_json(&sb, &m, r, "fuzz.evtrace") == 0);
			fuzz_check(sb.len && sb.buf[0] == '{' && sb.buf[sb.len - 1] == '\n');
			json_decref(check_json(sb.buf, sb.len, "report --json"));
			sb.len = 0;
			fuzz_check(evr_rpt_html(&m, r, "fuzz.evtrace", &sb) == 0);
		} else {
			check_failure(ret, err);
		}
		free(sb.buf);
		evr_rpt_fini(&m);
		evr_trace_reader_free(r);
	}
	return 0;
}
