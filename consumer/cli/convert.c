// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring convert: a trace file to CTF 1.8 (babeltrace2, Trace Compass), Chrome
 * trace-event JSON (Perfetto UI, chrome://tracing), JSON lines, or a profile of
 * its stacks (folded, speedscope, pprof). This file is
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
#include <evring/sandbox.h>
#include <evring/symbols.h>
#include <evring/syscalls.h>

#include "cli.h"
#include "report-syscalls.h"

#define CMD "convert"

/* The formats are libevring-export's table (evr_export_formats[]): parsed and listed from it. */
enum convert_format { FMT_NONE = 0, FMT_CTF = EVR_EXPORT_CTF, FMT_CHROME = EVR_EXPORT_CHROME,
		      FMT_JSONL = EVR_EXPORT_JSONL, FMT_FOLDED = EVR_EXPORT_FOLDED,
		      FMT_SPEEDSCOPE = EVR_EXPORT_SPEEDSCOPE, FMT_PPROF = EVR_EXPORT_PPROF };

struct convert_opts {
	const char *path;
	const char *output;		/* NULL or "-": stdout (not for ctf) */
	enum convert_format format;
	struct evr_cli_flags flags;	/* --no-sandbox */
	bool quiet;
	bool event_stacks;		/* --event-stacks */
	pid_t pid;			/* --pid: one process of a trace of several; 0: all */
};

enum { OPT_EVENT_STACKS = EVR_OPT_FIRST_OWN, OPT_PID };

static const struct evr_cli_option longopts[] = {
	{ "format", required_argument, 'f', "FORMAT",
	  "one of the formats above; ctf writes a directory: -o required" },
	{ "event-stacks", no_argument, OPT_EVENT_STACKS, NULL,
	  "folded/speedscope/pprof: the events' stacks (record --stacks)\n"
	  "instead of the CPU samples (the default when there are none)" },
	{ "output", required_argument, 'o', "OUTPUT",
	  "the directory (ctf) or file to write; '-' or none: stdout" },
	{ "pid", required_argument, OPT_PID, "PID",
	  "only process PID of a trace of several (record --all);\n"
	  "folded/speedscope/pprof make one profile per process" },
	{ "quiet", no_argument, 'q', NULL, "no summary line on stderr" },
	EVR_CLI_OPTIONS_SANDBOX(EVR_OPT_NO_SANDBOX, EVR_OPT_SANDBOX_PROBE,
				"do not confine evring with seccomp"),
	EVR_CLI_OPTION_HELP,
	{ 0 },
};

static void usage(FILE *f)
{
	fputs("Usage: evring convert FILE --format FORMAT [-o OUTPUT] [--event-stacks] [-q]\n"
	      "Convert trace FILE for other tools. FORMAT is one of:\n", f);
	evr_cli_print_formats(f, "  ");
	evr_cli_options_print(f, longopts);
	fputs("The summary on stderr counts what was written: events (chrome, jsonl, ctf), CPU\n"
	      "samples or event stacks (folded, speedscope, pprof), and the distinct stacks.\n", f);
}

static int parse_format(const char *s, enum convert_format *ret)
{
	const struct evr_export_format *ef = evr_export_format_find(s);
	char names[128];

	if (!ef) {
		evr_cli_error(CMD, "--format: unknown format '%s' (%s)", s,
			      evr_export_format_names(names, sizeof(names)));
		return -EINVAL;
	}
	*ret = (enum convert_format)ef->id;
	return 0;
}

static int parse_argv(int argc, char **argv, struct convert_opts *o)
{
	struct evr_cli_getopt g;
	int c, r;

	/* No '+': GNU getopt permutes, so FILE may come first (evring convert F --format ctf). */
	evr_cli_getopt_init(&g, ":", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
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
		case OPT_EVENT_STACKS:
			o->event_stacks = true;
			continue;
		case OPT_PID: {
			if (evr_cli_parse_pid(CMD, "--pid", optarg, &o->pid) < 0)
				return -EINVAL;
			continue;
		}
		}
		r = evr_cli_common_opt(CMD, c, argv, usage, &o->flags);
		if (r <= 0)
			return r;
	}
	if (evr_cli_file_operand(CMD, "evring convert FILE --format FORMAT", argc, argv,
				 &o->path) < 0)
		return -EINVAL;
	if (o->format == FMT_NONE) {
		char names[128];

		evr_cli_error(CMD, "--format is required: %s",
			      evr_export_format_names(names, sizeof(names)));
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
	const struct evr_export_format *ef = evr_export_format_get((enum evr_export_format_id)f);

	return ef ? ef->name : "?";
}

/*
 * folded, speedscope, pprof: the profile of the CPU samples (or of the events' stacks),
 * symbolized with what was loaded before the sandbox.
 */
static int convert_profile_to(const struct convert_opts *o, struct evr_trace_reader *r,
			      struct evr_symbolizer *sym, const struct evr_samples *ss, FILE *out,
			      struct evr_convert_stats *cs, char *err, size_t errlen)
{
	struct evr_profile *p;
	uint64_t stacks;
	int ret;

	if (o->format == FMT_PPROF) {
		ret = evr_pprof_write(r, sym, ss, o->event_stacks, evr_cli_trace_name(o->path), out,
				      &stacks);
		if (ret == 0 && fflush(out) != 0)
			ret = -EIO;
		if (ret == -ENODATA)
			snprintf(err, errlen, "%s has no %s to profile (record with %s)",
				 evr_cli_trace_name(o->path),
				 o->event_stacks || !ss || !ss->n ? "event stacks" : "CPU samples",
				 o->event_stacks ? "--stacks" : "--sample-cpu or --stacks");
		else if (ret == -EIO)
			snprintf(err, errlen, "cannot write the output: %s", strerror(EIO));
		else if (ret < 0)
			snprintf(err, errlen, "%s: %s", evr_cli_trace_name(o->path),
				 ret == -ENOMEM ? "out of memory" : evr_trace_reader_errmsg(r));
		cs->events = stacks;	/* the stacks written: CPU samples or event stacks */
		return ret;
	}
	ret = evr_profile_from_trace(r, sym, ss, o->event_stacks, &p);
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", evr_cli_trace_name(o->path),
			 ret == -ENOMEM ? "out of memory" : evr_trace_reader_errmsg(r));
		return ret;
	}
	if (!evr_profile_total(p)) {
		snprintf(err, errlen, "%s has no %s to profile (record with %s)",
			 evr_cli_trace_name(o->path),
			 o->event_stacks || !ss || !ss->n ? "event stacks" : "CPU samples",
			 o->event_stacks ? "--stacks" : "--sample-cpu or --stacks");
		evr_profile_free(p);
		return -ENODATA;
	}
	if (o->format == FMT_FOLDED)
		ret = evr_profile_write_folded(p, out);
	else
		ret = evr_profile_write_speedscope(p, o->path, out);
	if (fflush(out) != 0)
		ret = -EIO;
	if (ret < 0)
		snprintf(err, errlen, "cannot write the output: %s", strerror(EIO));
	/* The stacks the profile holds (CPU samples or event stacks), not every record of
	 * the SAMPLES chunks (context switches included) as it once said. */
	cs->events = evr_profile_count(p, NULL);
	evr_profile_free(p);
	return ret;
}

/* Chrome's extra events: the system calls' slices, then the per-thread counters. */
struct chrome_extra {
	struct evr_syscall_set *sys;
	const struct evr_samples *ss;
};

static long chrome_extra_write(void *ctx, FILE *out, bool first)
{
	const struct chrome_extra *x = ctx;
	long a = x->sys && x->sys->n ? evr_syscalls_chrome_write(x->sys, out, first) : 0, b;

	if (a < 0)
		return a;
	b = evr_counters_chrome_write(x->ss, out, first && !a);
	return b < 0 ? b : a + b;
}

/* The CPU samples with a stack: what the profiles and Chrome's samples hold. */
static size_t cpu_samples(const struct evr_samples *ss)
{
	size_t n = 0;

	for (size_t i = 0; i < ss->n; i++)
		n += ss->v[i].type == EVR_SAMPLE_CPU && ss->v[i].nframes;
	return n;
}

/* The profile writers' output, counted on its way to the real one (the summary's size: in
 * the sandbox, ftell() cannot ask the file, lseek being refused). */
struct counted_out {
	FILE *out;
	uint64_t bytes;
};

static ssize_t counted_write(void *cookie, const char *buf, size_t len)
{
	struct counted_out *c = cookie;
	size_t n = fwrite(buf, 1, len, c->out);

	c->bytes += n;
	return n == len ? (ssize_t)n : -1;
}

static int convert_profile(const struct convert_opts *o, struct evr_trace_reader *r,
			   struct evr_symbolizer *sym, const struct evr_samples *ss, FILE *out,
			   struct evr_convert_stats *cs, char *err, size_t errlen)
{
	struct counted_out c = { out, 0 };
	FILE *cf = fopencookie(&c, "w", (cookie_io_functions_t){ .write = counted_write });
	int ret;

	if (!cf)
		return convert_profile_to(o, r, sym, ss, out, cs, err, errlen);
	setvbuf(cf, NULL, _IOFBF, 1u << 16);
	ret = convert_profile_to(o, r, sym, ss, cf, cs, err, errlen);
	if (fclose(cf) != 0 && ret == 0) {
		snprintf(err, errlen, "cannot write the output: %s", strerror(EIO));
		ret = -EIO;
	}
	cs->bytes = c.bytes;
	return ret;
}

/* A CTF file, created by the broker. */
static int ctf_create(void *ctx, const char *name)
{
	char err[512];

	return evr_broker_create(ctx, name, err, sizeof(err));
}

/*
 * stdout for "-" or no -o, else the -o file created, fully buffered; then the
 * sandbox, since nothing else is opened after it. *@ret is set even when the
 * sandbox fails, for the caller to close. Return: 0, -errno (printed).
 */
static int open_output_confined(const struct convert_opts *o, FILE **ret)
{
	int fd, err;

	if (!o->output || !strcmp(o->output, "-")) {
		*ret = stdout;
	} else {
		fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || !(*ret = fdopen(fd, "w"))) {
			err = -errno;
			if (fd >= 0)
				close(fd);
			evr_cli_error(CMD, "cannot create %s: %s", o->output, strerror(-err));
			return err;
		}
	}
	/* Decided now: stdio would ask the terminal (ioctl) at the first write. */
	setvbuf(*ret, NULL, _IOFBF, 1u << 16);
	return evr_cli_sandbox_enter(CMD, EVR_SANDBOX_DUMP, &o->flags);
}

/* ---- several processes ---------------------------------------------------------- */


/*
 * CTF of several processes: one CTF trace per process, in OUTPUT/PID/
 * (babeltrace2 reads a directory of traces, each with its own metadata and
 * clock). Not confined: the writer creates the directories and files itself.
 */
static int ctf_procs(const struct convert_opts *o, struct evr_trace_reader *const *rs,
		     const uint32_t *pids, uint32_t n, struct evr_convert_stats *cs, char *err,
		     size_t errlen)
{
	char dir[4096];
	int ret = evr_convert_ctf_prepare(o->output, err, errlen);

	for (uint32_t i = 0; i < n && ret == 0; i++) {
		struct evr_convert_stats one = { 0 };

		snprintf(dir, sizeof(dir), "%s/%u", o->output, pids[i]);
		ret = evr_convert_ctf(rs[i], dir, &one, err, errlen);
		cs->events += one.events;
		cs->lost = evr_trace_lost_add(cs->lost, one.lost);
		cs->bytes += one.bytes;
		cs->undecodable += one.undecodable;
	}
	return ret;
}

static int run_procs(const struct convert_opts *o, struct evr_trace_reader *r0)
{
	struct evr_trace_reader **rs = NULL;
	struct evr_convert_stats cs = { 0 };
	bool to_stdout = !o->output || !strcmp(o->output, "-");
	uint32_t *pids = NULL, n = 0;
	FILE *out = NULL;
	char err[512], b[32];
	int ret;

	if (o->format == FMT_FOLDED || o->format == FMT_SPEEDSCOPE || o->format == FMT_PPROF) {
		const struct evr_trace_proc *procs;
		char list[256] = "";
		size_t used = 0;

		(void)evr_trace_reader_procs(r0, &procs, &n);
		for (uint32_t i = 0; i < n && used < sizeof(list) - 16; i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%u",
						 i ? ", " : "", procs[i].pid);
		evr_cli_error(CMD, "%s: a profile is of one process: choose one with --pid (the "
			      "trace has %s)", evr_cli_trace_name(o->path), list);
		return -EINVAL;
	}
	ret = evr_cli_trace_procs(CMD, o->path, r0, EVR_CLI_TRACE_FILE, 0, &rs, &n);
	if (ret < 0)
		return ret;
	pids = calloc(n ? n : 1, sizeof(*pids));
	if (!pids) {
		ret = -ENOMEM;
		evr_cli_error(CMD, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		pids[i] = evr_cli_trace_pid(rs[i]);
	if (o->format == FMT_CTF) {
		ret = ctf_procs(o, rs, pids, n, &cs, err, sizeof(err));
	} else {
		ret = open_output_confined(o, &out);
		if (ret < 0)
			goto out;
		if (o->format == FMT_CHROME)
			ret = evr_convert_chrome_procs(rs, pids, n, out, &cs, err, sizeof(err));
		else
			ret = evr_convert_jsonl_procs(rs, pids, n, out, &cs, err, sizeof(err));
	}
	if (ret < 0) {
		evr_cli_error(CMD, "%s", err);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		evr_cli_trace_warnings(CMD, o->path, rs[i]);
	if (!o->quiet)
		fprintf(stderr, "evring convert: %" PRIu64 " events of %u processes, %" PRIu64
			" lost, %s of %s to %s\n", cs.events, n, cs.lost,
			evr_fmt_bytes(cs.bytes, b, sizeof(b)), format_name(o->format),
			to_stdout ? "stdout" : o->output);
out:
	if (out && out != stdout && fclose(out) != 0 && ret == 0) {
		ret = -errno;
		evr_cli_error(CMD, "cannot write %s: %s", o->output, strerror(-ret));
	}
	evr_cli_trace_procs_free(rs, n, r0);
	free(pids);
	return ret;
}

/* The work, as evr_cli_main()'s run step. */
static int run(void *arg)
{
	const struct convert_opts *o = arg;
	struct evr_broker *broker = NULL;
	struct evr_convert_stats cs = { 0 };
	struct evr_trace_reader *r = NULL;
	bool to_stdout = !o->output || !strcmp(o->output, "-");
	struct evr_trace_stats st;
	struct evr_symbolizer *sym = NULL;
	struct evr_samples *ss = NULL;
	struct evr_syscall_set *sys = NULL;
	FILE *out = NULL;
	char b1[32], b2[32], err[512];
	uint64_t t0;
	int ret;

	/* JSON lines stream; the other formats need every event type (and the stacks'
	 * modules) before the first event: from a pipe, they read a copy of it. */
	ret = evr_cli_trace_open(CMD, o->path, o->format == FMT_JSONL ? 0 : EVR_CLI_TRACE_FILE,
				 &r);
	if (ret < 0)
		return ret;
	if (evr_trace_reader_procs(r, NULL, NULL) || o->pid) {
		struct evr_trace_reader **rs = NULL;
		uint32_t n = 0;

		if (!o->pid) {
			ret = run_procs(o, r);
			goto out;
		}
		/* --pid: that process's stream, converted as a trace of its own. */
		ret = evr_cli_trace_procs(CMD, o->path, r, EVR_CLI_TRACE_FILE, o->pid, &rs, &n);
		if (ret < 0)
			goto out;
		for (uint32_t i = 1; i < n; i++)	/* a pid recorded twice: the first */
			if (rs[i] != r)
				evr_trace_reader_free(rs[i]);
		if (rs[0] != r) {
			evr_trace_reader_free(r);
			r = rs[0];
		}
		free(rs);
	}
	if (o->format == FMT_FOLDED || o->format == FMT_SPEEDSCOPE || o->format == FMT_PPROF ||
	    o->format == FMT_CHROME) {
		/* Before the sandbox: the binaries the stacks point into are opened now. */
		ret = evr_symbolizer_from_trace(r, &sym);
		if (ret == 0 && sym && *evr_symbolizer_warnings(sym))
			fprintf(stderr, "%s", evr_symbolizer_warnings(sym));
		if (ret == 0)
			ret = evr_samples_load(r, &ss);
		if (ret == -EBADMSG) {
			evr_cli_warn(CMD, "%s: a SAMPLES chunk is malformed; its samples are left out",
				     evr_cli_trace_name(o->path));
			ret = 0;
		}
		if (ret == 0 && o->format == FMT_CHROME)
			ret = evr_cli_syscalls_load(CMD, o->path, r, &sys);
		if (ret < 0) {
			evr_cli_error(CMD, "%s: %s", evr_cli_trace_name(o->path), strerror(-ret));
			goto out;
		}
	}
	if (o->format == FMT_PPROF && to_stdout && isatty(STDOUT_FILENO)) {
		evr_cli_error(CMD, "--format pprof is binary: write it to a file with -o FILE");
		ret = -EINVAL;
		goto out;
	}
	if (o->format != FMT_CTF) {
		ret = open_output_confined(o, &out);
		if (ret < 0)
			goto out;
		if (o->flags.sandbox_probe)
			evr_cli_sandbox_probe(CMD);
	} else {
		/*
		 * The CTF writer creates one file per stream as it meets them: the
		 * broker, which holds the output directory, creates them for it.
		 */
		ret = evr_convert_ctf_prepare(o->output, err, sizeof(err));
		if (ret == 0 && !o->flags.no_sandbox)
			ret = evr_broker_new(o->output, &broker, err, sizeof(err));
		if (ret < 0) {
			evr_cli_error(CMD, "%s", err);
			goto out;
		}
		ret = evr_cli_sandbox_enter(CMD, EVR_SANDBOX_ATTACHED, &o->flags);
		if (ret < 0)
			goto out;
		if (o->flags.sandbox_probe)
			evr_cli_sandbox_probe(CMD);
	}

	t0 = evr_mono_ns();
	switch (o->format) {
	case FMT_CTF:
		ret = evr_convert_ctf_at(r, o->output, broker ? ctf_create : NULL, broker, &cs, err,
					 sizeof(err));
		break;
	case FMT_CHROME:
		if (sym || (ss && ss->n) || (sys && sys->n)) {
			/* Events' stacks and CPU samples as Chrome's stackFrames and samples;
			 * system calls as slices on their threads. */
			struct evr_chrome_frames *cf = NULL;
			struct evr_chrome_stacks sk = { .stack_id = evr_chrome_frames_stack_id,
							.write_frames = evr_chrome_frames_write };
			struct chrome_extra extra = { .sys = sys, .ss = ss };

			sk.write_events = chrome_extra_write;
			sk.events_ctx = &extra;

			ret = evr_chrome_frames_new(sym, ss, &cf);
			if (ret == 0) {
				sk.ctx = cf;
				ret = evr_convert_chrome_stacks(r, out, &sk, &cs, err, sizeof(err));
			} else {
				snprintf(err, sizeof(err), "out of memory");
			}
			evr_chrome_frames_free(cf);
		} else {
			ret = evr_convert_chrome(r, out, &cs, err, sizeof(err));
		}
		break;
	case FMT_FOLDED:
	case FMT_SPEEDSCOPE:
	case FMT_PPROF:
		ret = convert_profile(o, r, sym, ss, out, &cs, err, sizeof(err));
		break;
	default:
		ret = evr_convert_jsonl(r, out, &cs, err, sizeof(err));
		break;
	}
	if (ret < 0) {
		evr_cli_error(CMD, "%s", err);
		goto out;
	}
	t0 = evr_mono_ns() - t0;

	evr_trace_reader_stats(r, &st);
	evr_cli_trace_warnings(CMD, o->path, r);
	if (sym) {
		const struct evr_process_info *pi = evr_trace_reader_process(r);
		char note[256];

		if (evr_symbolizer_unmapped_note(sym, pi ? pi->pid : 0, note, sizeof(note)))
			evr_cli_warn(CMD, "%s: %s", evr_cli_trace_name(o->path), note);
	}
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
	if (!o->quiet) {
		/*
		 * Each count says what it counts (docs/cli.md): the events written
		 * (ctf, chrome, jsonl), the CPU samples chrome adds as its sampling
		 * profile, and for the profiles the stacks they hold, CPU samples or
		 * event stacks. Once every format said "events" of different things.
		 */
		bool profile = evr_export_format_get((enum evr_export_format_id)o->format)->profile;
		bool cpu = profile && !o->event_stacks && ss && cpu_samples(ss);
		const char *unit = !profile ? "events" : cpu ? "CPU samples" : "event stacks";
		char extra[64] = "";

		if (o->format == FMT_CHROME && ss && cpu_samples(ss))
			snprintf(extra, sizeof(extra), ", %zu CPU samples", cpu_samples(ss));
		if (o->format == FMT_CHROME && sys && sys->n)
			snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
				 ", %zu system calls", sys->n);
		fprintf(stderr, "evring convert: %" PRIu64 " %s%s, %" PRIu64 " lost, %s of %s "
			"to %s in %.3f s (%s %s/s)\n", cs.events, unit, extra, cs.lost,
			evr_fmt_bytes(cs.bytes, b1, sizeof(b1)), format_name(o->format),
			to_stdout ? "stdout" : o->output, (double)t0 / 1e9,
			evr_fmt_count(t0 ? (double)cs.events * 1e9 / (double)t0 : 0, b2,
				      sizeof(b2)), profile ? (cpu ? "samples" : "stacks") : "events");
	}
	ret = 0;
out:
	if (out && out != stdout && fclose(out) != 0 && ret == 0) {
		ret = -errno;
		evr_cli_error(CMD, "cannot write %s: %s", o->output, strerror(-ret));
	}
	evr_samples_free(ss);
	evr_syscalls_set_free(sys);
	evr_symbolizer_free(sym);
	evr_trace_reader_free(r);
	evr_broker_free(broker);
	return ret;
}

int evr_cmd_convert(int argc, char **argv)
{
	static const struct evr_cli_steps steps = { .run = run };
	struct convert_opts o = { 0 };

	return evr_cli_main(parse_argv(argc, argv, &o), &steps, &o);
}
