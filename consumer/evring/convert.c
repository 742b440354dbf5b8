// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring convert: a trace file to CTF 1.8 (babeltrace2, Trace Compass), Chrome
 * trace-event JSON (Perfetto UI, chrome://tracing) or JSON lines. This file is
 * the command line; the writers are in libevring-export (consumer/export/).
 *
 * Like dump, a truncated file converts up to its last complete chunk with a
 * warning and exit status 0. The summary on stderr gives the throughput.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/export.h>

#include "cli.h"

#define CMD "convert"

enum convert_format { FMT_NONE, FMT_CTF, FMT_CHROME, FMT_JSONL };

struct convert_opts {
	const char *path;
	const char *output;		/* NULL or "-": stdout (not for ctf) */
	enum convert_format format;
	struct evr_cli_flags flags;	/* --no-sandbox */
	bool quiet;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: evring convert FILE --format ctf|chrome|jsonl [-o OUTPUT] [-q]\n"
		"Convert trace FILE for other tools.\n"
		"  -f, --format ctf     a CTF 1.8 trace directory (babeltrace2 OUTPUT); -o required\n"
		"  -f, --format chrome  Chrome trace-event JSON (Perfetto UI, chrome://tracing)\n"
		"  -f, --format jsonl   one JSON object per event, as evring dump --json\n"
		"  -o, --output OUTPUT  the directory (ctf) or file to write; '-' or none: stdout\n"
		"  -q, --quiet          no summary line on stderr\n"
		"  --no-sandbox         do not confine evring with seccomp (chrome and jsonl)\n");
}

static int parse_format(const char *s, enum convert_format *ret)
{
	if (!strcmp(s, "ctf"))
		*ret = FMT_CTF;
	else if (!strcmp(s, "chrome") || !strcmp(s, "perfetto"))
		*ret = FMT_CHROME;
	else if (!strcmp(s, "jsonl") || !strcmp(s, "json"))
		*ret = FMT_JSONL;
	else {
		evr_cli_error(CMD, "--format: unknown format '%s' (ctf, chrome or jsonl)", s);
		return -EINVAL;
	}
	return 0;
}

static int parse_argv(int argc, char **argv, struct convert_opts *o)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		EVR_CLI_LONGOPTS_SANDBOX,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, r;

	opterr = 0;
	/* No '+': GNU getopt permutes, so FILE may come first (evring convert F --format ctf). */
	while ((c = getopt_long(argc, argv, ":f:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (parse_format(optarg, &o->format) < 0)
				return -EINVAL;
			continue;
		case 'o':
			o->output = optarg;
			continue;
		case 'q':
			o->quiet = true;
			continue;
		}
		r = evr_cli_common_opt(CMD, c, argv, usage, &o->flags);
		if (r <= 0)
			return r;
	}
	if (evr_cli_file_operand(CMD, "evring convert FILE --format ctf|chrome|jsonl", argc, argv,
				 &o->path) < 0)
		return -EINVAL;
	if (o->format == FMT_NONE) {
		evr_cli_error(CMD, "--format is required: ctf, chrome or jsonl");
		return -EINVAL;
	}
	if (o->format == FMT_CTF && (!o->output || !strcmp(o->output, "-"))) {
		evr_cli_error(CMD, "--format ctf writes a directory: name it with -o DIR");
		return -EINVAL;
	}
	return 1;
}

static const char *format_name(enum convert_format f)
{
	return f == FMT_CTF ? "ctf" : f == FMT_CHROME ? "chrome" : "jsonl";
}

static int run(const struct convert_opts *o)
{
	struct evr_convert_stats cs = { 0 };
	struct evr_trace_reader *r = NULL;
	bool to_stdout = !o->output || !strcmp(o->output, "-");
	struct evr_trace_stats st;
	FILE *out = NULL;
	char b1[32], b2[32], err[512];
	uint64_t t0;
	int ret;

	ret = evr_cli_trace_open(CMD, o->path, &r);
	if (ret < 0)
		return ret;
	if (o->format != FMT_CTF) {
		if (to_stdout) {
			out = stdout;
		} else {
			int fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

			if (fd < 0 || !(out = fdopen(fd, "w"))) {
				ret = -errno;
				if (fd >= 0)
					close(fd);
				evr_cli_error(CMD, "cannot create %s: %s", o->output, strerror(-ret));
				goto out;
			}
		}
		/* Decided now: stdio would ask the terminal (ioctl) at the first write. */
		setvbuf(out, NULL, _IOFBF, 1u << 16);
		/*
		 * The CTF writer creates one file per stream as it meets them, so only
		 * the single-file formats can be confined once their output is open.
		 */
		ret = evr_cli_sandbox_enter(CMD, EVR_SANDBOX_DUMP, &o->flags);
		if (ret < 0)
			goto out;
		if (o->flags.sandbox_probe)
			evr_sandbox_probe(CMD);
	}

	t0 = evr_now_ns();
	switch (o->format) {
	case FMT_CTF:
		ret = evr_convert_ctf(r, o->output, &cs, err, sizeof(err));
		break;
	case FMT_CHROME:
		ret = evr_convert_chrome(r, out, &cs, err, sizeof(err));
		break;
	default:
		ret = evr_convert_jsonl(r, out, &cs, err, sizeof(err));
		break;
	}
	if (ret < 0) {
		evr_cli_error(CMD, "%s", err);
		goto out;
	}
	t0 = evr_now_ns() - t0;

	evr_trace_reader_stats(r, &st);
	evr_cli_trace_warnings(CMD, o->path, &st, "converted");
	if (cs.undecodable)
		evr_cli_warn(CMD, "%" PRIu64 " events had no schema or did not decode; they are "
			     "written with their raw payload", cs.undecodable);
	if (cs.crossed)
		evr_cli_warn(CMD, "%" PRIu64 " stops came while more than 16 slices crossed theirs: "
			     "they are instant events (\"crossed\") and their slices end late "
			     "(otherData.approximations)", cs.crossed);
	if (cs.too_deep)
		evr_cli_warn(CMD, "%" PRIu64 " starts and stops nested deeper than 1024 slices: they "
			     "are instant events (\"too deep\", otherData.approximations)",
			     cs.too_deep);
	if (!o->quiet)
		fprintf(stderr, "evring convert: %" PRIu64 " events, %" PRIu64 " lost, %s of %s "
			"to %s in %.3f s (%s events/s)\n", cs.events, cs.lost,
			evr_fmt_bytes(cs.bytes, b1, sizeof(b1)), format_name(o->format),
			to_stdout ? "stdout" : o->output, (double)t0 / 1e9,
			evr_fmt_count(t0 ? (double)cs.events * 1e9 / (double)t0 : 0, b2,
				      sizeof(b2)));
	ret = 0;
out:
	if (out && out != stdout && fclose(out) != 0 && ret == 0) {
		ret = -errno;
		evr_cli_error(CMD, "cannot write %s: %s", o->output, strerror(-ret));
	}
	evr_trace_reader_free(r);
	return ret;
}

int evr_cmd_convert(int argc, char **argv)
{
	struct convert_opts o = { 0 };
	int ret = parse_argv(argc, argv, &o);

	return ret <= 0 ? evr_cli_exit_status(ret) : evr_cli_run_status(run(&o));
}
