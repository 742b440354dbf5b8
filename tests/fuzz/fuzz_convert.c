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
 * records: a trace cannot make it grow faster than the trace); the JSON lines
 * output has one line per view; the report's totals are the reader's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/export.h>

#include "fuzz.h"

/* The Chrome converter's bound (docs/cli.md): a view is one record, a stop may
 * split and reopen at most 16 slices above it, and each slice is closed once. */
#define CHROME_RECORDS_PER_VIEW 40u

static int fd = -1;
static char tmpdir[64];

struct counted {
	uint64_t bytes, lines;
};

static ssize_t count_write(void *cookie, const char *buf, size_t n)
{
	struct counted *c = cookie;

	c->bytes += n;
	for (size_t i = 0; i < n; i++)
		c->lines += buf[i] == '\n';
	return (ssize_t)n;
}

/* A FILE that only counts what is written to it. */
static FILE *counting(struct counted *c)
{
	cookie_io_functions_t io = { .write = count_write };
	FILE *f;

	memset(c, 0, sizeof(*c));
	f = fopencookie(c, "w", io);
	fuzz_check(f != NULL);
	return f;
}

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
	struct counted out;
	char err[256], dir[96];
	uint64_t views;
	FILE *f;
	int ret;

	if (fuzz_trace_file(fd, data, size) < 0 || !(r = open_trace()))
		return 0;

	/* JSON lines: one line per view (event or loss). */
	f = counting(&out);
	err[0] = '\0';
	ret = evr_convert_jsonl(r, f, &cs, err, sizeof(err));
	fclose(f);
	evr_trace_reader_stats(r, &st);
	views = out.lines;
	if (ret == 0)
		fuzz_check(cs.events == st.events && cs.lost == st.lost);
	else
		check_failure(ret, err);
	evr_trace_reader_free(r);

	/* Chrome JSON: one line per record. */
	if (ret == 0 && (r = open_trace())) {
		f = counting(&out);
		err[0] = '\0';
		ret = evr_convert_chrome(r, f, &cs, err, sizeof(err));
		fclose(f);
		if (ret == 0) {
			/* Also the process records, and one thread_name per thread. */
			uint64_t bound = CHROME_RECORDS_PER_VIEW * views + views + 8;

			fuzz_check(cs.events == st.events);
			if (out.lines > bound)
				fprintf(stderr, "%llu Chrome records for %llu views\n",
					(unsigned long long)out.lines, (unsigned long long)views);
			fuzz_check(out.lines <= bound);
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
