// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record: attach to a process (or start one), run a session, and write
 * its rings into a trace file. The recording itself is libevring-recorder's
 * (<evring/recorder.h>); this file is the command around it: options, the
 * output file, signals, the sandbox, the progress line and the summary, which
 * always reports the lost events.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/provider-spec.h>
#include <evring/recorder.h>
#include <evring/sandbox.h>
#include <evring/symbols.h>
#include <evring/trace.h>

#include "cli.h"
#include "record.h"

#define CMD "record"
#define PROGRESS_NS 250000000u		/* refresh ~4 times a second */

enum { OPT_PROVIDERS = EVR_OPT_FIRST_OWN, OPT_DURATION, OPT_BUFFER, OPT_MODE, OPT_COUNTERS,
       OPT_STACKS, OPT_SAMPLE, OPT_CONNECT_TIMEOUT, OPT_IO, OPT_PROFILE, OPT_FORMAT, OPT_HEAP,
       OPT_SYSCALLS, OPT_ALL, OPT_SYSTEM, OPT_PERF_COUNTERS, OPT_CHECKSUM };

static const struct evr_cli_option longopts[] = {
	EVR_CLI_OPTIONS_PID("attach to process PID (no restart needed); repeat\n"
			    "-p and -n to record several processes in one file"),
	{ "name", required_argument, 'n', "NAME", "attach to the one process named NAME" },
	{ "all", no_argument, OPT_ALL, NULL,
	  "every process of yours with libevring's agent, and\n"
	  "those that start while recording, in one file" },
	{ "providers", required_argument, OPT_PROVIDERS, "LIST",
	  "Name[:0xKEYWORDS[:LEVEL[:k=v;...]]],... (default: '*')" },
	{ "output", required_argument, 'o', "FILE",
	  "trace file to write (default: PROCNAME_YYYYMMDD_HHMMSS\n"
	  ".evtrace, never an existing file; -: stdout)" },
	{ "profile", required_argument, OPT_PROFILE, "NAME[,...]",
	  "a named set of providers and options (evring profiles\n"
	  "lists them: cpu-sampling, gc-verbose, ...)" },
	{ "format", required_argument, OPT_FORMAT, "FORMAT",
	  "also convert the trace when the recording ends, next\n"
	  "to it (chrome, speedscope, pprof...: evring --help)" },
	{ "duration", required_argument, OPT_DURATION, "TIME",
	  "stop after TIME (500ms, 30s, 5m, 1h, hh:mm:ss, dd:hh:mm:ss)" },
	{ "buffer-size", required_argument, OPT_BUFFER, "SIZE",
	  "session buffer in all, split over the process's rings\n"
	  "(e.g. 256M; default: up to 32 MiB per ring, within\n"
	  "the process's memory limits)" },
	{ "mode", required_argument, OPT_MODE, "MODE",
	  "discard (default: drop new events when full) or\n"
	  "overwrite (flight recorder: keep the newest)" },
	{ "counter-interval", required_argument, OPT_COUNTERS, "TIME",
	  "sample the providers' counters every TIME\n"
	  "(e.g. 1s; at least 10ms; default: no counters)" },
	{ "stacks", optional_argument, OPT_STACKS, "[=DEPTH]",
	  "every event carries its thread's call stack, at most\n"
	  "DEPTH frames (1-127, default 64)" },
	{ "heap", optional_argument, OPT_HEAP, "[=RATE]",
	  "sample heap allocations, one every RATE bytes on\n"
	  "average (default 512K), with stacks (docs/memory.md)" },
	{ "sample-cpu", optional_argument, OPT_SAMPLE, "[=EVENT][:HZ]",
	  "also sample the process's threads on the CPU\n"
	  "with perf_events, HZ times a second (default 999),\n"
	  "with call stacks and context switches; EVENT:\n"
	  "cpu-clock (default), or cycles, instructions,\n"
	  "cache-misses... where there is a hardware PMU\n"
	  "(else cpu-clock, said in one line; docs/stacks.md),\n"
	  "or timer-tick with --system: every Nth scheduler\n"
	  "tick of busy CPUs, N = kernel HZ / HZ (default 100),\n"
	  "the cheapest in a VM (docs/system.md)" },
	{ "perf-counters", optional_argument, OPT_PERF_COUNTERS, "[=LIST]",
	  "count per thread: cycles, instructions,\n"
	  "cache-misses, branch-misses (a PMU), task-clock,\n"
	  "context-switches, page-faults, cpu-migrations\n"
	  "(default: all of these)" },
	{ "system", no_argument, OPT_SYSTEM, NULL,
	  "with --sample-cpu: sample every CPU and every process,\n"
	  "kernel stacks included (root or CAP_PERFMON, else\n"
	  "the recorded process only; docs/system.md)" },
	{ "syscalls", optional_argument, OPT_SYSCALLS, "[=LIST]",
	  "also record every system call of the process's\n"
	  "threads (or those in LIST: write,openat,...) with\n"
	  "perf tracepoints: needs root or CAP_PERFMON\n"
	  "(docs/syscalls.md)\n"
	  "(these four: per process with several -p/-n; not\n"
	  "with --all)" },
	{ "connect-timeout", required_argument, OPT_CONNECT_TIMEOUT, "TIME",
	  "with -- PROGRAM: how long PROGRAM has to connect\n"
	  "(default 10s); then it is stopped with SIGTERM" },
	{ "io", required_argument, OPT_IO, "MODE",
	  "auto (default: whole packets go to the disk with\n"
	  "direct I/O where the file system allows it, in\n"
	  "discard mode, with rings that hold 64 ms of the\n"
	  "stream, several writes in flight through io_uring\n"
	  "where the kernel allows it; the page cache on\n"
	  "tmpfs, pipes and file systems without direct\n"
	  "I/O), uring (the same, and say so when io_uring\n"
	  "is refused), direct (direct I/O, one write at a\n"
	  "time) or buffered (through the page cache)" },
	{ "checksum", required_argument, OPT_CHECKSUM, "WHEN",
	  "the CRC of the events' bytes in the file: auto\n"
	  "(default: while the recorder keeps up; skipped while\n"
	  "it is behind rather than lose events), always, never" },
	EVR_CLI_OPTIONS_SANDBOX(EVR_OPT_NO_SANDBOX, EVR_OPT_SANDBOX_PROBE,
				"do not confine evring with seccomp once attached"),
	EVR_CLI_OPTION_HELP,
	{ 0 },
};

static void usage(FILE *f)
{
	evr_cli_usage(f,
		"Usage: evring record -p PID | -n NAME | --all [OPTIONS]\n"
		"       evring record [OPTIONS] -- PROGRAM [ARGS...]\n"
		"Record events of running processes, or of PROGRAM from its first event.\n",
		longopts,
		"Stops on Ctrl-C/SIGTERM, after --duration, or when the process exits.\n");
}

/* Return: 1 run, 0 done (--help), -EINVAL. */
static int parse_argv(int argc, char **argv, struct record_opts *o)
{
	struct evr_cli_getopt g;
	int c, r;

	o->providers = "*";
	/* No -o: named after the process once it is known (evr_record_default_output()). */
	o->mode = EVR_MODE_DISCARD;
	o->io_flags = EVR_RECORDER_DIRECT_IO | EVR_RECORDER_URING;
	evr_cli_getopt_init(&g, "+:", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case 'p':
			/* The option as typed: -p, --pid or --process-id. */
			if (evr_cli_parse_pid(CMD, g.opt, optarg, &o->pid) < 0)
				return -EINVAL;
			if (o->npids == sizeof(o->pids) / sizeof(o->pids[0])) {
				evr_cli_error(CMD, "-p: at most 64 processes (use --all for more)");
				return -EINVAL;
			}
			o->pids[o->npids++] = o->pid;
			break;
		case 'n':
			if (!*optarg) {
				evr_cli_error(CMD, "--name: empty process name");
				return -EINVAL;
			}
			if (o->nnames == sizeof(o->names) / sizeof(o->names[0])) {
				evr_cli_error(CMD, "-n: at most 64 names");
				return -EINVAL;
			}
			o->name = optarg;
			o->names[o->nnames++] = optarg;
			break;
		case OPT_ALL:
			o->all = true;
			break;
		case OPT_PROVIDERS:
			if (evr_cli_parse_providers(CMD, optarg, &o->providers) < 0)
				return -EINVAL;
			o->providers_arg = optarg;
			break;
		case OPT_PROFILE:
			o->profile = optarg;
			break;
		case OPT_FORMAT:
			if (evr_record_format_parse(optarg, o) < 0)
				return -EINVAL;
			break;
		case 'o':
			if (!*optarg) {
				evr_cli_error(CMD, "--output: empty file name");
				return -EINVAL;
			}
			o->output = optarg;
			/* "-": standard output (a pipe into evring dump -, a socket...). */
			o->output_name = strcmp(optarg, "-") == 0 ? "stdout" : optarg;
			break;
		case OPT_DURATION:
			if (evr_parse_duration(CMD, "--duration", optarg, &o->duration_ns) < 0)
				return -EINVAL;
			break;
		case OPT_STACKS:
			o->stack_depth = 64;
			if (optarg && evr_cli_parse_uint(CMD, "--stacks", optarg, 1, 127, &o->stack_depth) < 0)
				return -EINVAL;
			break;
		case OPT_SAMPLE:
			if (evr_record_sample_parse(optarg, o) < 0)
				return -EINVAL;
			break;
		case OPT_PERF_COUNTERS:
			if (evr_record_counters_parse(optarg, o) < 0)
				return -EINVAL;
			break;
		case OPT_SYSCALLS:
			o->syscalls = true;
			o->syscall_list = optarg;
			if (evr_record_syscalls_parse(optarg) < 0)
				return -EINVAL;
			break;
		case OPT_SYSTEM:
			o->system = true;
			break;
		case OPT_HEAP:
			if (evr_record_heap_parse(optarg, o) < 0)
				return -EINVAL;
			break;
		case OPT_COUNTERS:
			if (evr_cli_parse_counter_interval(CMD, optarg, &o->counter_interval_ms) < 0)
				return -EINVAL;
			break;
		case OPT_CONNECT_TIMEOUT: {
			uint64_t ns;

			if (evr_parse_duration(CMD, "--connect-timeout", optarg, &ns) < 0)
				return -EINVAL;
			if (ns < 100000000ull || ns > 3600000000000ull) {
				evr_cli_error(CMD, "--connect-timeout %s is not between 100ms and 1h",
					      optarg);
				return -EINVAL;
			}
			o->connect_timeout_ms = (uint32_t)(ns / 1000000u);
			o->connect_timeout_arg = optarg;
			break;
		}
		case OPT_BUFFER:
			if (evr_parse_size(CMD, "--buffer-size", optarg, &o->buffer_size) < 0)
				return -EINVAL;
			o->buffer_arg = optarg;
			break;
		case OPT_IO:
			o->io_asked = strcmp(optarg, "auto") != 0;
			if (!o->io_asked) {
				o->io_flags = EVR_RECORDER_DIRECT_IO | EVR_RECORDER_URING;
			} else if (strcmp(optarg, "uring") == 0) {
				o->io_flags = EVR_RECORDER_DIRECT_IO | EVR_RECORDER_URING |
					      EVR_RECORDER_URING_WARN;
			} else if (strcmp(optarg, "direct") == 0) {
				o->io_flags = EVR_RECORDER_DIRECT_IO;
			} else if (strcmp(optarg, "buffered") == 0) {
				o->io_flags = 0;
			} else {
				evr_cli_error(CMD, "--io: '%s' is not auto, uring, direct or buffered",
					      optarg);
				return -EINVAL;
			}
			break;
		case OPT_CHECKSUM:
			o->crc_flags = 0;
			if (strcmp(optarg, "always") == 0) {
				o->crc_flags = EVR_RECORDER_CHECKSUM_ALWAYS;
			} else if (strcmp(optarg, "never") == 0) {
				o->crc_flags = EVR_RECORDER_CHECKSUM_NEVER;
			} else if (strcmp(optarg, "auto") != 0) {
				evr_cli_error(CMD, "--checksum: '%s' is not auto, always or never",
					      optarg);
				return -EINVAL;
			}
			break;
		case OPT_MODE:
			if (strcmp(optarg, "discard") == 0) {
				o->mode = EVR_MODE_DISCARD;
			} else if (strcmp(optarg, "overwrite") == 0) {
				o->mode = EVR_MODE_OVERWRITE;
			} else {
				evr_cli_error(CMD, "--mode: '%s' is not discard or overwrite", optarg);
				return -EINVAL;
			}
			break;
		default:
			r = evr_cli_common_opt(CMD, c, argv, usage, &o->flags);
			if (r <= 0)
				return r;
		}
	}
	if (evr_cli_program_operand(CMD, argc, argv, &o->program) < 0)
		return -EINVAL;
	if (o->program && (o->pid || o->name || o->all)) {
		evr_cli_error(CMD, "-- PROGRAM and -p, -n or --all exclude each other");
		return -EINVAL;
	}
	if (!evr_record_multi(o) && (o->pid != 0) + (o->name != NULL) > 1) {
		evr_cli_error(CMD, "-p and -n name one process each: give both to record several, "
			      "or use --all");
		return -EINVAL;
	}
	if (!o->pid && !o->name && !o->program && !o->all) {
		evr_cli_error(CMD, "say what to record: -p PID, -n NAME, --all or -- PROGRAM "
			      "[ARGS...] (try evring record --help)");
		return -EINVAL;
	}
	if (o->connect_timeout_arg && !o->program) {
		evr_cli_error(CMD, "--connect-timeout is for -- PROGRAM (a running process "
			      "is attached to at once)");
		return -EINVAL;
	}
	/* Values that need no process are checked now, not after attaching. */
	if (evr_record_profiles_apply(o) < 0 || evr_record_heap_apply(o) < 0 ||
	    evr_record_check_opts(o) < 0)
		return -EINVAL;
	/* After the profiles: --profile cpu-sampling turns --sample-cpu on too. */
	if (o->system && !o->sample_hz) {
		evr_cli_error(CMD, "--system samples every CPU: give it with --sample-cpu");
		return -EINVAL;
	}
	if (o->sample_hz && o->sample_event == EVR_SAMPLER_TIMER_TICK && !o->system) {
		evr_cli_error(CMD, "--sample-cpu=timer-tick samples every CPU's timer ticks: "
			      "give it with --system");
		return -EINVAL;
	}
	if (o->system && evr_record_multi(o)) {
		evr_cli_error(CMD, "--system records one process's events beside every CPU's "
			      "samples: not with --all or several -p/-n yet");
		return -EINVAL;
	}
	if (o->all) {
		/* With -p/-n each process gets its side band before the sandbox (record-multi.c);
		 * one found later is attached inside it. */
		const char *one = o->stack_depth ? "--stacks" : o->sample_hz ? "--sample-cpu" :
				  o->heap_rate ? "--heap" : o->syscalls ? "--syscalls" :
				  o->ncounters ? "--perf-counters" : NULL;

		if (one) {
			evr_cli_error(CMD, "%s: not with --all (a process found while recording is "
				      "attached inside the sandbox, which reads no process's maps "
				      "nor opens perf events): name them with -p/-n", one);
			return -EINVAL;
		}
	}
	return 1;
}

/*
 * Warn about providers and counters the process does not have. @complete: ask
 * the process (ListEvents); otherwise, or when it cannot answer any more, look
 * at what reached the session's metadata.
 */
static void check_providers(struct recorder *r, pid_t pid, bool ask)
{
	struct evr_schema_set *set = NULL;
	char err[256];
	bool complete = false;

	if (evr_schema_set_new(&set) < 0)
		return;
	if (ask && evr_client_list_events(r->c, set, err, sizeof(err)) == 0) {
		complete = true;
	} else {
		uint64_t pos = 0;
		const void *data;
		uint32_t kind, len;

		while (evr_client_meta_next(r->c, &pos, &kind, &data, &len) == 1)
			if (kind == EVR_META_EVENT)
				(void)evr_schema_set_add_pb(set, data, len);
	}
	evr_record_check_providers(r->o, set, pid, complete);
	evr_schema_set_free(set);
}

/* --buffer-size in all, to one ring's size: a power of two, rounded down. */
static int ring_size_for(const struct record_opts *o, uint32_t nr_rings, uint64_t *ret)
{
	uint64_t min = (uint64_t)EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN;
	uint64_t p2;
	char a[32];

	if (!o->buffer_size) {
		*ret = 0;
		return 0;
	}
	if (nr_rings == 0)
		nr_rings = 1;
	p2 = evr_cli_ring_share(o->buffer_size, nr_rings);
	/* min is a power of two: the share is under it exactly when the quotient is. */
	if (p2 < min) {
		evr_cli_error(CMD, "--buffer-size %s is too small: the process has %u rings and "
			      "each needs at least %s (use at least %lluK)",
			      o->buffer_arg, nr_rings, evr_fmt_bytes(min, a, sizeof(a)),
			      (unsigned long long)(min * nr_rings / 1024));
		return -EINVAL;
	}
	/* Not clamped: the producer says what it grants, or why not. */
	*ret = p2;
	return 0;
}

/* Report a failure of the recorder: a write error names the file. */
static void report_failure(struct recorder *r, int err, const char *msg)
{
	struct evr_recorder_stats st;
	char b[32];

	evr_recorder_stats(r->rec, &st);
	if (!st.write_failed) {
		evr_cli_error(CMD, "%s", msg);
		return;
	}
	err = st.error ? st.error : err;
	if (st.bytes == 0)
		evr_cli_error(CMD, "cannot write %s: %s", r->o->output_name, strerror(-err));
	else if (err == -ENOSPC || err == -EDQUOT || err == -EFBIG)
		evr_cli_error(CMD, "%s: %s: recording stopped; the %" PRIu64 " events (%s) "
			      "written before are readable", r->o->output_name, strerror(-err),
			      st.events, evr_fmt_bytes(st.bytes, b, sizeof(b)));
	else
		evr_cli_error(CMD, "cannot write %s: %s: recording stopped", r->o->output_name,
			      strerror(-err));
}

static void progress(struct recorder *r, bool final)
{
	uint64_t now = evr_mono_ns();
	double secs = (double)(now - r->t_start) / 1e9;
	double dt = (double)(now - r->t_progress) / 1e9;
	char ev[32], by[32], rate[32];
	struct evr_recorder_stats st;

	if (!r->tty || (!final && now - r->t_progress < PROGRESS_NS))
		return;
	evr_recorder_stats(r->rec, &st);
	/* The rate over the last refresh (what the process does now); at the end, the mean. */
	fprintf(stderr, "\r\033[K%s events  %s  %" PRIu64 " lost  %s events/s  %.1f s%s",
		evr_fmt_count((double)st.events, ev, sizeof(ev)),
		evr_fmt_bytes(st.bytes, by, sizeof(by)), st.lost,
		evr_fmt_count(final ? (secs > 0 ? (double)st.events / secs : 0)
				    : (dt > 0 ? (double)(st.events - r->progress_events) / dt : 0),
			      rate, sizeof(rate)),
		secs, final ? "\n" : "");
	r->t_progress = now;
	r->progress_events = st.events;
}

/* Each round of the recording: stop on a signal, else refresh the progress line. */
static int tick(struct evr_recorder *rec, void *arg)
{
	struct recorder *r = arg;

	(void)rec;
	if (evr_cli_stop_signal) {
		r->stop_signal = evr_cli_stop_signal;
		return 1;
	}
	progress(r, false);
	return 0;
}

static void log_warning(void *arg, const char *msg)
{
	(void)arg;
	evr_cli_warn(CMD, "%s", msg);
}

/* A discard session lost events: one line (docs/recorder.md, "When events are lost"). */
static void explain_loss(const struct recorder *r, const struct evr_recorder_stats *st)
{
	const struct evr_loss_facts f = {
		.events = st->events, .lost = st->lost, .bytes = st->bytes,
		.ring_size = st->ring_size, .nr_rings = st->nr_rings, .stall_ns = st->stall_ns,
		.write_max_ns = st->uring_write_max_ns, .disk_waited_ns = st->uring_waited_ns,
		.write_ns = st->write_ns, .stream_ns = st->stream_ns, .direct = st->direct,
		.direct_fell_back = st->direct_fell_back, .cache_slow = st->cache_slow,
		.cache_dear = st->cache_dear,
	};
	char line[800];

	if (!st->lost || r->o->mode != EVR_MODE_DISCARD)
		return;
	evr_cli_warn(CMD, "%s", evr_loss_advice(&f, line, sizeof(line)));
}

static void summary(struct recorder *r)
{
	double secs = (double)(r->t_end - r->t_start) / 1e9;
	char by[32], rate[32], whybuf[256];
	struct evr_recorder_stats st;
	pid_t pid = r->child > 0 ? r->child : r->o->pid;
	bool runs_on = false;

	evr_recorder_stats(r->rec, &st);
	progress(r, true);
	fprintf(stderr,
		"evring record: %" PRIu64 " events, %s, %" PRIu64 " lost, %.2f s, %s events/s, "
		"file %s\n",
		st.events, evr_fmt_bytes(st.bytes, by, sizeof(by)), st.lost,
		secs, evr_fmt_count(secs > 0 ? (double)st.events / secs : 0, rate, sizeof(rate)),
		r->o->output_name);
	switch (st.stop) {
	case EVR_RECORDER_STOP_REQUESTED:
		snprintf(whybuf, sizeof(whybuf), "stopped by %s", strsignal(r->stop_signal));
		runs_on = true;
		break;
	case EVR_RECORDER_STOP_DEADLINE:
		snprintf(whybuf, sizeof(whybuf), "stopped after --duration");
		runs_on = true;
		break;
	case EVR_RECORDER_STOP_ENDED:
		/* libevring ends its sessions when the process exits normally. */
		snprintf(whybuf, sizeof(whybuf), "process %d exited (it ended the session)",
			 (int)pid);
		break;
	case EVR_RECORDER_STOP_GONE:
		snprintf(whybuf, sizeof(whybuf),
			 "process %d died (or exited without ending the session)", (int)pid);
		break;
	case EVR_RECORDER_RUNNING:
	case EVR_RECORDER_STOP_ERROR:
		snprintf(whybuf, sizeof(whybuf), "%s", st.write_failed ?
			 "stopped: the file could not be written" : "stopped by an error");
		break;
	}
	if (r->child > 0)
		evr_record_child_summary(r, whybuf);
	else if (runs_on)
		fprintf(stderr, "evring record: %s; process %d runs on\n", whybuf, (int)pid);
	else
		fprintf(stderr, "evring record: %s\n", whybuf);
	if (r->sb && r->o->sample_hz) {
		struct evr_sampler_totals t;

		evr_sideband_totals(r->sb, &t);
		char hz[16];

		/* The timer-tick source's rate is what its period gives: say both. */
		snprintf(hz, sizeof(hz), "%u Hz", r->o->sample_hz);
		if (t.system)
			fprintf(stderr,
				"evring record: %" PRIu64 " CPU samples (every CPU, %s), %" PRIu64
				" lost, %" PRIu64 " context switch records\n", t.samples,
				r->o->sample_event == EVR_SAMPLER_TIMER_TICK ? t.source : hz, t.lost,
				t.switches);
		else
			fprintf(stderr,
				"evring record: %" PRIu64 " CPU samples (%u threads, %u Hz), %" PRIu64
				" lost, %" PRIu64 " context switches\n",
				t.samples, t.threads, r->o->sample_hz, t.lost, t.switches);
	}
	evr_record_syscalls_summary(r->sb);
	evr_record_counters_summary(r->sb);
	if (st.spans_retracted)
		fprintf(stderr, "evring record: %" PRIu64 " spans were overwritten while being "
			"written and were retracted (their events count as lost)\n",
			st.spans_retracted);
	if (st.spans_unchecked && !r->o->crc_flags)
		fprintf(stderr, "evring record: %" PRIu64 " of %" PRIu64 " EVENTS chunks were "
			"written without their checksum while the recorder was behind "
			"(--checksum auto; --checksum always keeps it, at the price of events)\n",
			st.spans_unchecked, st.spans + st.spans_retracted);
	if (st.clock_jumps)
		fprintf(stderr, "evring record: the TSC jumped %u times during the recording (a VM "
			"restored from a snapshot or migrated?); the file marks each jump and "
			"readers convert the segments apart\n", st.clock_jumps);
	explain_loss(r, &st);
}

static int sideband_emit(void *ctx, uint32_t kind, const void *data, size_t len)
{
	return evr_trace_writer_chunk(ctx, kind, data, (uint32_t)len);
}

/* The recorder's side band: the module map first, then samples, at the end the perf map. */
static int sideband_cb(struct evr_recorder *rec, struct evr_trace_writer *w, uint64_t now_ns,
		       bool final, void *arg)
{
	struct recorder *r = arg;
	int ret = 0;

	(void)rec;
	(void)now_ns;
	if (!r->sb_started) {
		r->sb_started = true;
		ret = evr_sideband_start(r->sb, sideband_emit, w);
	}
	if (ret == 0)
		ret = final ? evr_sideband_finish(r->sb, sideband_emit, w)
			    : evr_sideband_poll(r->sb, sideband_emit, w);
	return ret;
}

/* evr_sideband_open_fn through the broker: a perf map created after the sandbox. */
static int open_perf_map(void *ctx, pid_t pid, uid_t owner)
{
	char err[512];

	return evr_broker_open_perf_map(ctx, pid, owner, err, sizeof(err));
}

/*
 * Before the sandbox: the module map (--stacks, --sample-cpu) and the perf
 * events (--sample-cpu) of the recorded process.
 */
static int sideband_open(struct recorder *r, pid_t pid)
{
	struct evr_sideband_opts so = { .pid = pid, .sample_hz = r->o->sample_hz,
					.sample_event = r->o->sample_event,
					.ncounters = r->o->ncounters,
					.system = r->o->system,
					.syscalls = r->o->syscalls,
					.syscall_list = r->o->syscall_list };
	char err[512] = "";
	int ret;

	if (!r->o->stack_depth && !r->o->sample_hz && !r->o->heap_rate && !r->o->syscalls &&
	    !r->o->ncounters)
		return 0;
	memcpy(so.counters, r->o->counters, sizeof(so.counters));
	ret = evr_sideband_new(&so, &r->sb, err, sizeof(err));
	if (ret < 0) {
		evr_cli_error(CMD, "%s", err[0] ? err : strerror(-ret));
		return ret;
	}
	evr_record_perf_note(r->sb);
	if (r->o->system) {
		struct evr_sampler_totals t;

		evr_sideband_totals(r->sb, &t);
		if (t.note[0])
			fprintf(stderr, "evring record: %s; sampling process %d only\n", t.note,
				(int)pid);
	}
	/*
	 * No perf map yet: a JIT may start one during the recording, which the
	 * confined recorder could not open at the end. A broker (forked now: nothing
	 * here has started a thread) opens it then.
	 */
	if (!evr_sideband_has_perf_map(r->sb) && !r->o->flags.no_sandbox) {
		ret = evr_broker_new(NULL, &r->broker, err, sizeof(err));
		if (ret < 0) {
			evr_cli_error(CMD, "%s", err);
			return ret;
		}
		evr_sideband_set_perf_map_opener(r->sb, open_perf_map, r->broker);
	}
	/* Often enough that a 256 KiB sampling ring per CPU never fills at 999 Hz. */
	/* System calls come faster: a 4 MiB ring per CPU holds ~30000 (10 ms at ~3 M/s). */
	ret = evr_recorder_add_sideband(r->rec, r->o->syscalls ? 10 : r->o->sample_hz ? 100 : 1000,
					sideband_cb, r);
	if (ret < 0)
		evr_cli_error(CMD, "cannot add the stacks side band: %s", strerror(-ret));
	return ret;
}

/* Start the session and the file's first chunks. */
static int start_recording(struct recorder *r)
{
	const struct evr_process_info *pi = evr_client_process(r->c);
	struct evr_recorder_opts ro = {
		.attach = {
			.providers = r->o->providers,
			.mode = r->o->mode,
			.counter_interval_ms = r->o->counter_interval_ms,
			.stack_depth = r->o->stack_depth,
		},
		.client = EVR_RECORD_CLIENT_NAME,
		.flags = r->io_flags | r->o->crc_flags,
		.log = log_warning,
	};
	char err[512];
	int ret;

	ret = ring_size_for(r->o, pi->nr_cpus, &ro.attach.ring_size);
	if (ret < 0)
		return ret;
	ret = evr_recorder_new(r->c, &ro, &r->rec, err, sizeof(err));
	if (ret < 0) {
		/* Over the process's memory limits: say what we asked for. */
		if ((ret == -EFBIG || ret == -ENOSPC) && r->o->buffer_arg)
			evr_cli_error(CMD, "--buffer-size %s: %s", r->o->buffer_arg, err);
		else if (ret == -EFBIG || ret == -ENOSPC)
			evr_cli_error(CMD, "the default buffer: %s (try a smaller --buffer-size)", err);
		else
			evr_cli_error(CMD, "%s", err);
		/* -EINVAL here is the producer rejecting the provider list or sizes. */
		return ret == -EINVAL ? -EPROTO : ret;
	}
	ret = evr_recorder_start(r->rec, r->out_fd, err, sizeof(err));
	if (ret < 0)
		report_failure(r, ret, err);
	return ret;
}

/*
 * What --io comes to for output @fd: what was asked, or, for --io auto (the
 * default), direct I/O through io_uring wherever the file system takes direct
 * writes, ext4 included, and the page cache on tmpfs (docs/recorder.md "Which
 * I/O"). The trace writer and the recorder fall back by themselves: to the
 * page cache where the file system refuses O_DIRECT (pipes, sockets, -o -,
 * overwrite sessions), to one direct write at a time where the kernel refuses
 * io_uring.
 */
static uint32_t io_flags_for(const struct record_opts *o, int fd)
{
	struct statfs sf;

	if (o->io_asked || !(o->io_flags & EVR_RECORDER_DIRECT_IO))
		return o->io_flags;
	/*
	 * ext4 took the page cache until stop 36: direct writes fell back and
	 * lost more there, because each 64 KiB packet's chunk header was padded
	 * to 512 bytes only and the block layer could not merge a batch into
	 * one request (40-300 MB/s on a virtio disk that takes 1.1 GB/s). With
	 * whole-page headers and the file's space allocated ahead, io_uring
	 * recorded 12 M events/s to ext4 at 23 ns of recorder CPU per event and
	 * lost 0, against 38-41 ns and 18-330 k lost through the page cache
	 * (bench/results/9970f2a-zen-dio-pattern.json, docs/recorder.md).
	 *
	 * tmpfs is memory: a direct write there is the same copy into its
	 * pages, so its page cache is the file (the writer would find no
	 * STATX_DIOALIGN there today; this keeps it so on a kernel that
	 * reports one).
	 */
	if (fstatfs(fd, &sf) == 0 && sf.f_type == TMPFS_MAGIC)
		return 0;
	return o->io_flags;
}

static int open_output(struct recorder *r)
{
	int ret = evr_record_open_output(r->o, &r->out_fd, &r->created);

	if (ret == 0)
		r->io_flags = io_flags_for(r->o, r->out_fd);
	return ret;
}

int evr_record_open_output(const struct record_opts *o, int *ret_fd, bool *ret_created)
{
	struct stat st;
	int fd;

	if (strcmp(o->output, "-") == 0) {
		/* The trace is binary: a terminal would show garbage, and lose it. */
		if (isatty(STDOUT_FILENO)) {
			evr_cli_error(CMD, "-o -: stdout is a terminal; pipe it (evring record -o - "
				      "... | evring dump -) or redirect it to a file");
			return -EINVAL;
		}
		/* A copy: the output is closed (and its error checked) like a file's. */
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			int err = errno;

			evr_cli_error(CMD, "cannot write to stdout: %s", strerror(err));
			return -err;
		}
		/* Our stdout now only carries the trace, through fd: a program started with
		 * -- inherits stderr as its stdout, so its output cannot mix into it. */
		if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			int err = errno;

			close(fd);
			evr_cli_error(CMD, "cannot set up stdout: %s", strerror(err));
			return -err;
		}
		*ret_fd = fd;
		return 0;
	}
	/* A file we create and then fail to fill is removed; an existing one is
	 * overwritten, like any recorder's output. */
	*ret_created = stat(o->output, &st) < 0;
	fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int err = errno;

		evr_cli_error(CMD, "cannot open output %s: %s", o->output, strerror(err));
		return -err;
	}
	*ret_fd = fd;
	return 0;
}

void evr_record_catch_signals(void)
{
	evr_cli_catch_stop_signals();
	/* A file over RLIMIT_FSIZE is EFBIG, handled like a full disk. */
	signal(SIGXFSZ, SIG_IGN);
}

/* Record until stopped, then finish the file. Return: 0 or -errno (reported). */
static int record(struct recorder *r)
{
	struct evr_recorder_run_opts ro = {
		.tick = tick,
		.tick_arg = r,
		.tick_ms = PROGRESS_NS / 1000000u,
	};
	struct evr_recorder_stats st;
	char err[512];
	int ret, fin;

	if (r->o->duration_ns)
		ro.deadline_ns = r->t_start + r->o->duration_ns;
	ret = evr_recorder_run(r->rec, &ro, err, sizeof(err));
	if (ret < 0)
		report_failure(r, ret, err);
	evr_recorder_stats(r->rec, &st);
	if (ret < 0 && !st.write_failed)
		return ret;
	fin = evr_recorder_stop(r->rec, r->stop_signal ? EVR_TRACE_END_INTERRUPTED : 0, err,
				sizeof(err));
	if (ret == 0 && fin < 0) {
		report_failure(r, fin, err);
		ret = fin;
	}
	return ret;
}

static int run(const struct record_opts *o)
{
	struct recorder r = { .o = o, .out_fd = -1, .child = -1, .child_pidfd = -1 };
	struct evr_recorder_stats st;
	uint64_t cpu_start = 0, cpu_end = 0, events = 0;
	char err[512];
	int ret;

	ret = open_output(&r);
	if (ret < 0)
		return ret;
	if (o->program) {
		ret = evr_record_launch(&r);
	} else {
		ret = evr_client_connect(o->pid, EVR_RECORD_CLIENT_NAME, &r.c, err, sizeof(err));
		if (ret < 0)
			evr_cli_error(CMD, "%s", err);
	}
	if (ret < 0)
		goto fail;
	/* A running process has its providers: say now what it lacks. A program
	 * started here registers its own after the session starts: said at the end. */
	if (!o->program)
		check_providers(&r, o->pid, true);
	/* Before the recording starts, which allocates the file's space ahead: a
	 * step past RLIMIT_FSIZE must be EFBIG (refused, the writes append), not
	 * SIGXFSZ's end of the recorder. After the launch: an ignored signal stays
	 * ignored across exec(), and the program's is its own. */
	signal(SIGXFSZ, SIG_IGN);
	ret = start_recording(&r);
	if (ret < 0)
		goto fail;
	ret = sideband_open(&r, o->program ? r.child : o->pid);
	if (ret < 0)
		goto fail;
	evr_record_catch_signals();
	r.tty = isatty(STDERR_FILENO);
	ret = evr_cli_sandbox_enter_child(CMD, EVR_SANDBOX_RECORD, &o->flags, r.child);
	if (ret < 0)
		goto fail;
	/* Tests wait for this line: the session runs and the sandbox is in place. */
	{
		const struct evr_shm_hdr *h = evr_client_shm(r.c);
		char mem[96], a[32], b[32];

		/* What the producer granted, which may differ from what was asked. */
		snprintf(mem, sizeof(mem), "; buffer: %u rings of %s, %s of shared memory in all",
			 h->nr_rings, evr_fmt_bytes(h->ring_size, b, sizeof(b)),
			 evr_fmt_bytes(h->total_size, a, sizeof(a)));
		if (o->program)
			fprintf(stderr, "evring record: recording %s (pid %d) into %s%s\n",
				o->program[0], (int)r.child, o->output_name, mem);
		else
			fprintf(stderr, "evring record: recording process %d into %s%s (Ctrl-C to "
				"stop)\n", (int)o->pid, o->output_name, mem);
	}
	if (o->flags.sandbox_probe)
		evr_cli_sandbox_probe(CMD);
	r.t_start = evr_mono_ns();
	cpu_start = evr_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	r.t_progress = r.t_start;
	if (o->program) {
		ret = evr_client_resume(r.c, err, sizeof(err));
		if (ret < 0) {
			evr_cli_error(CMD, "cannot let %s run: %s", o->program[0], err);
			goto fail;
		}
	}
	ret = record(&r);
	r.t_end = evr_mono_ns();
	if (o->program)
		check_providers(&r, r.child, true);
	if (r.child > 0)
		evr_record_child_wait(&r);
	summary(&r);
	evr_recorder_stats(r.rec, &st);
	events = st.events;
	cpu_end = evr_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	goto out;
fail:
	if (r.child > 0)
		evr_record_child_abandon(&r);
	/* Nothing useful was recorded: do not leave an empty file behind. */
	evr_recorder_stats(r.rec, &st);
	if (r.created && (!r.rec || st.chunks == 0))
		unlink(o->output);
out:
	evr_recorder_free(r.rec);
	evr_sideband_free(r.sb);
	evr_broker_free(r.broker);
	evr_client_free(r.c);
	if (r.child_pidfd >= 0)
		close(r.child_pidfd);
	if (r.out_fd >= 0 && close(r.out_fd) < 0 && ret == 0) {
		evr_cli_error(CMD, "cannot write %s: %s", o->output_name, strerror(errno));
		ret = -EIO;
	}
	evr_cli_cpu_line(CMD, cpu_start, cpu_end, evr_clock_ns(CLOCK_PROCESS_CPUTIME_ID), events);
	return ret;
}

/* -n NAME's pid (one process), the default output, --format's converter (evr_cli_main()). */
static int cli_prepare(void *arg)
{
	struct record_opts *o = arg;
	/* Several processes: their names are resolved by record-multi.c. */
	int r = o->name && !evr_record_multi(o) ? evr_cli_pid_of_name(CMD, o->name, &o->pid) : 0;

	if (r >= 0)
		r = evr_record_default_output(o);
	if (r >= 0)
		r = evr_record_convert_prepare(o);
	return r;
}

static int cli_run(void *arg)
{
	struct record_opts *o = arg;
	int r = evr_record_multi(o) ? evr_record_multi_run(o) : run(o);

	/* --format: the trace is converted if it was recorded (even if cut short). */
	return evr_record_convert_finish(o, r == 0) < 0 && r == 0 ? -EIO : r;
}

static void cli_fini(void *arg)
{
	struct record_opts *o = arg;

	evr_provider_spec_list_free(o->spec);
	free(o->owned_providers);
	free(o->owned_output);
}

int evr_cmd_record(int argc, char **argv)
{
	static const struct evr_cli_steps steps = { .prepare = cli_prepare, .run = cli_run,
						    .fini = cli_fini };
	struct record_opts o = { .convert_fd = -1 };

	return evr_cli_main(parse_argv(argc, argv, &o), &steps, &o);
}
