// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * clrtop: a live `top` for the counters of processes that link libevring.
 *
 *   clrtop                      every attachable process, one row each
 *   clrtop -p PID [-p PID2...]  all counters of those processes, by provider
 *   clrtop -b -n N ...          N plain-text snapshots, no terminal needed
 *   clrtop --format csv -o F    also record every sample (dotnet-counters collect)
 *
 * parse_argv() then run(); errors are one line on stderr, exit 2 for a bad
 * command line and 1 for anything else.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <curses.h>

#include <evring/cli-options.h>

#include "detail.h"
#include "model.h"
#include "view.h"

#ifndef EVR_VERSION
#define EVR_VERSION "unknown"
#endif

#define MAX_PIDS 64
/* Per-CPU ring of each session: counter samples are small (about 100 bytes
 * each, a few dozen per interval), so 64 KiB holds many intervals, and ten
 * watched processes cost little memory. */
#define RING_SIZE (64u * 1024u)
/* How long the overview keeps an exited process (or a refusal) on screen. */
#define KEEP_GONE_MS 5000u
/* The producer's shortest counter interval (EVR_COUNTER_INTERVAL_MIN_MS). */
#define INTERVAL_MIN_MS 10u

struct opts {
	pid_t pids[MAX_PIDS];
	uint32_t npids;
	const char *names[MAX_PIDS];	/* --name, resolved into pids by main() */
	uint32_t nnames;
	struct evr_top_filter filter;
	uint32_t interval_ms;
	bool batch;
	uint64_t iterations;		/* 0: no limit */
	uint32_t duration_ms;		/* 0: no limit */
	enum evr_top_export_format fmt;
	const char *output;
	bool no_sandbox;		/* --no-sandbox */
	bool sandbox_probe;		/* --debug-sandbox-probe (hidden) */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

enum { OPT_COUNTERS = EVR_CLI_LONG_ONLY, OPT_FORMAT, OPT_DURATION, OPT_NO_SANDBOX, OPT_PROBE,
       OPT_NAME, OPT_VERSION };

/* tests/cli/help.sh checks that --help names every option of this table. */
static const struct evr_cli_option longopts[] = {
	EVR_CLI_OPTIONS_PID("watch PID (repeatable); default: an overview of all"),
	{ "name", required_argument, OPT_NAME, "NAME",
	  "watch the one process named NAME (repeatable)" },
	{ "counters", required_argument, OPT_COUNTERS, "LIST",
	  "'Provider[counter,...],Provider2': only these" },
	{ "delay", required_argument, 'd', "SECONDS",
	  "refresh and sampling interval (default 1; 0.01-3600;\n"
	  "or a TimeSpan, 00:00:01, as dotnet-counters takes it)" },
	{ "refresh-interval", required_argument, 'd', NULL, NULL },
	{ "batch", no_argument, 'b', NULL, "plain-text snapshots on stdout, no terminal needed" },
	{ "iterations", required_argument, 'n', "N", "stop after N refreshes" },
	{ "duration", required_argument, OPT_DURATION, "SECONDS", "stop after this long" },
	{ "format", required_argument, OPT_FORMAT, "csv|json",
	  "record every sample (to -o FILE; batch: stdout)" },
	{ "output", required_argument, 'o', "FILE", "where --format writes" },
	EVR_CLI_OPTIONS_SANDBOX(OPT_NO_SANDBOX, OPT_PROBE,
				"do not confine clrtop with seccomp"),
	EVR_CLI_OPTION_HELP,
	EVR_CLI_OPTION_VERSION(OPT_VERSION),
	{ 0 },
};

static void usage(FILE *f)
{
	evr_cli_usage(f,
		"Usage: clrtop [OPTIONS]\n"
		"Live view of the counters of processes running libevring's agent.\n",
		longopts,
		"Keys: q quit, space pause, < > sort, Enter details, Esc back, h help.\n");
}

__attribute__((format(printf, 1, 2)))
static int bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "clrtop: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry 'clrtop --help'.\n");
	va_end(ap);
	return -EINVAL;
}


/*
 * The options that set no value of clrtop's own: the sandbox's flags, --help,
 * --version, and getopt's errors. Return: 1 go on, 0 done (exit 0), -EINVAL.
 */
static int other_opt(int c, char **argv, struct opts *o)
{
	if (c == OPT_NO_SANDBOX || c == OPT_PROBE) {
		*(c == OPT_PROBE ? &o->sandbox_probe : &o->no_sandbox) = true;
		return 1;
	}
	if (c == 'h')
		usage(stdout);
	else if (c == OPT_VERSION)
		printf("clrtop %s\n", EVR_VERSION);
	else if (c == ':')
		return bad("option '%s' needs a value", argv[optind - 1]);
	else if (optopt)
		return bad("unknown option '-%c'", optopt);
	else
		return bad("unknown option '%s'", argv[optind - 1]);
	return 0;
}

static int parse_argv(int argc, char **argv, struct opts *o)
{
	struct evr_cli_getopt g;
	char err[256];
	int c, r;

	o->interval_ms = 1000;
	evr_cli_getopt_init(&g, ":", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
		/* g.opt: the option as the user spelled it (-d, --delay or --refresh-interval). */
		char *end;
		long long v;

		switch (c) {
		case 'p':
			errno = 0;
			v = strtoll(optarg, &end, 10);
			if (end == optarg || *end || errno || v <= 0 || v > INT_MAX)
				return bad("%s: '%s' is not a process id", g.opt, optarg);
			if (o->npids + o->nnames == MAX_PIDS)
				return bad("%s: at most %d processes", g.opt, MAX_PIDS);
			o->pids[o->npids++] = (pid_t)v;
			break;
		case OPT_COUNTERS:
			evr_top_filter_fini(&o->filter);
			r = evr_top_filter_parse(optarg, &o->filter, err, sizeof(err));
			if (r < 0)
				return bad("%s", err);
			break;
		case 'd':
			r = evr_top_parse_seconds(optarg, INTERVAL_MIN_MS, 3600000u,
					     &o->interval_ms);
			if (r < 0)
				return bad("%s: '%s' is not a duration from 0.01 to 3600 seconds "
					   "(e.g. 0.5, 2s, 250ms, 00:00:01)", g.opt, optarg);
			break;
		case 'b':
			o->batch = true;
			break;
		case 'n':
			errno = 0;
			v = strtoll(optarg, &end, 10);
			if (end == optarg || *end || errno || v <= 0)
				return bad("-n: '%s' is not a positive number", optarg);
			o->iterations = (uint64_t)v;
			break;
		case OPT_DURATION:
			r = evr_top_parse_seconds(optarg, 1, UINT32_MAX - 1, &o->duration_ms);
			if (r < 0)
				return bad("--duration: '%s' is not a positive duration (e.g. 60, 30s, "
					   "5m, 00:01:00)", optarg);
			break;
		case OPT_FORMAT:
			r = evr_top_export_format_parse(optarg);
			if (r < 0)
				return bad("--format: '%s' is not csv or json", optarg);
			o->fmt = (enum evr_top_export_format)r;
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_NAME:
			if (!*optarg)
				return bad("--name: empty process name");
			if (o->npids + o->nnames == MAX_PIDS)
				return bad("--name: at most %d processes", MAX_PIDS);
			o->names[o->nnames++] = optarg;
			break;
		default:
			r = other_opt(c, argv, o);
			if (r <= 0)
				return r;
			break;
		}
	}
	if (optind < argc)
		return bad("unexpected argument '%s'", argv[optind]);
	if (o->output && o->fmt == EVR_TOP_EXPORT_NONE)
		return bad("-o needs --format csv or --format json");
	/* Without a terminal there is no screen to draw: plain text, as top -b. */
	if (!o->batch && (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)))
		o->batch = true;
	if (o->fmt != EVR_TOP_EXPORT_NONE && !o->output && !o->batch)
		return bad("--format needs -o FILE when clrtop draws the screen");
	return 1;
}

/* ---- batch ------------------------------------------------------------------------------- */

static void print_overview(struct evr_top_model *m)
{
	struct evr_top_row *rows = calloc(m->w.n ? m->w.n : 1, sizeof(*rows));

	if (!rows)
		return;
	for (size_t i = 0; i < EVR_TOP_NCOLS; i++) {
		const struct evr_top_col_fmt *f = &evr_top_overview_cols[i];

		printf(f->left ? "%-*s " : "%*s ", f->width, evr_top_col_title(f->col));
	}
	printf("STATE\n");
	for (uint32_t i = 0; i < m->w.n; i++)
		evr_top_proc_row(evr_top_model_proc(m, i), &rows[i]);
	evr_top_rows_sort(rows, m->w.n, EVR_TOP_COL_CPU, false);
	for (uint32_t i = 0; i < m->w.n; i++) {
		const struct evr_top_proc *p = rows[i].ctx;

		for (size_t j = 0; j < EVR_TOP_NCOLS; j++) {
			const struct evr_top_col_fmt *f = &evr_top_overview_cols[j];
			char text[64];

			evr_top_row_cell(&rows[i], f->col, text, sizeof(text));
			printf(f->left ? "%-*.*s " : "%*.*s ", f->width, f->width, text);
		}
		if (p->state == EVR_WATCH_FAILED)
			printf("failed: %s\n", p->err);
		else if (p->stale)
			printf("stale: no new samples for %.1f s\n", p->stale_ms / 1000.0);
		else
			printf("%s\n", evr_watch_state_name(p->state));
	}
	free(rows);
}

static void print_detail(struct evr_top_model *m)
{
	struct evr_top_proc **procs = calloc(m->w.n ? m->w.n : 1, sizeof(*procs));
	struct evr_top_line *lines = NULL;
	uint32_t nl = 0;
	char label[160], value[48], change[48], stats[128], hdr[400];
	int r;

	if (!procs)
		return;
	for (uint32_t i = 0; i < m->w.n; i++)
		procs[i] = evr_top_model_proc(m, i);
	r = evr_top_detail_lines(procs, m->w.n, true, &lines, &nl);
	free(procs);
	if (r < 0)
		return;
	for (uint32_t i = 0; i < nl; i++) {
		const struct evr_top_line *l = &lines[i];

		switch (l->kind) {
		case EVR_TOP_LINE_BLANK:
			putchar('\n');
			break;
		case EVR_TOP_LINE_PROC:
			evr_top_proc_header(l->p, hdr, sizeof(hdr));
			printf("%s\n", hdr);
			break;
		case EVR_TOP_LINE_PROVIDER:
			printf("  %s\n", l->provider);
			break;
		case EVR_TOP_LINE_COUNTER:
			evr_top_counter_label(l->c, label, sizeof(label));
			evr_top_counter_texts(l->c, value, sizeof(value), change, sizeof(change), stats,
					 sizeof(stats));
			printf("    %-*s %*s %*s   %s\n", EVR_TOP_W_LABEL, label, EVR_TOP_W_VALUE, value,
			       EVR_TOP_W_CHANGE, change, stats);
			break;
		}
	}
	free(lines);
}

static void print_snapshot(struct evr_top_model *m, const struct opts *o, uint64_t k)
{
	char ts[40], of[32] = "";
	uint64_t now = evr_mono_ns();

	/* What did not change since the previous snapshot is said to be old. */
	evr_top_model_mark_stale(m, true, now);
	evr_top_fmt_iso8601(ts, sizeof(ts), now + (uint64_t)m->realtime_offset_ns);
	if (o->iterations)
		snprintf(of, sizeof(of), "/%llu", (unsigned long long)o->iterations);
	printf("=== clrtop %s  snapshot %llu%s  interval %.3gs ===\n", ts, (unsigned long long)k, of,
	       o->interval_ms / 1000.0);
	if (o->npids)
		print_detail(m);
	else
		print_overview(m);
	putchar('\n');
	fflush(stdout);
	evr_top_model_shown(m);
}

/* Warnings about what --counters names and the process does not have: stderr. */
static void print_warnings(struct evr_top_model *m)
{
	for (uint32_t i = 0; i < m->w.n; i++) {
		const char *w = evr_top_model_warning(evr_top_model_proc(m, i));

		if (w)
			fprintf(stderr, "clrtop: warning: process %d (%s): %s\n",
				(int)evr_top_model_proc(m, i)->pid, evr_top_model_proc(m, i)->name, w);
	}
}

/*
 * Has every watched process delivered @need intervals of samples, the latest
 * one whole, or ended? A snapshot printed after only the first samples of an
 * interval would show the others' previous values as if they were new.
 */
static bool all_sampled(const struct evr_top_model *m, uint64_t need)
{
	for (uint32_t i = 0; i < m->w.n; i++) {
		const struct evr_top_proc *p = evr_top_model_proc(m, i);

		if (p->state == EVR_WATCH_ATTACHING)
			return false;
		if (p->state == EVR_WATCH_LIVE && (p->ticks < need || !evr_top_proc_complete(p)))
			return false;
	}
	return true;
}

static bool all_gone(const struct evr_top_model *m)
{
	for (uint32_t i = 0; i < m->w.n; i++)
		if (evr_top_model_proc(m, i)->state == EVR_WATCH_LIVE || evr_top_model_proc(m, i)->state == EVR_WATCH_ATTACHING)
			return false;
	return true;
}

static void nap_ms(uint32_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int run_batch(struct evr_top_model *m, const struct opts *o)
{
	uint64_t iv = (uint64_t)o->interval_ms * 1000000u, t0 = evr_mono_ns();
	uint64_t end = o->duration_ms ? t0 + (uint64_t)o->duration_ms * 1000000u : 0;
	bool text = !(o->fmt != EVR_TOP_EXPORT_NONE && !o->output);
	uint32_t nap = o->interval_ms / 10 < 20 ? (o->interval_ms / 10 ?: 1) : 20;

	for (uint64_t k = 1; !o->iterations || k <= o->iterations; k++) {
		uint64_t target = t0 + k * iv;
		/* A process that stops sampling must not hang the snapshot: two
		 * intervals and two seconds late, print what there is. */
		uint64_t deadline = target + iv + 2000000000u;
		int r;

		if (!o->npids) {
			r = evr_top_model_rescan(m, KEEP_GONE_MS);
			if (r < 0) {
				fprintf(stderr, "clrtop: cannot list processes: %s\n", strerror(-r));
				return r;
			}
		}
		for (;;) {
			uint64_t now;

			evr_top_model_poll(m);
			print_warnings(m);
			now = evr_mono_ns();
			if (stop_signal || (end && now >= end))
				break;
			/* -p: snapshot k once every process has sent k intervals; the
			 * overview: at its time, once the processes it found have sent one. */
			if (o->npids ? all_sampled(m, k) : (now >= target && all_sampled(m, 1)))
				break;
			if (now >= deadline)
				break;
			nap_ms(nap);
		}
		if (text)
			print_snapshot(m, o, k);
		if (stop_signal || (end && evr_mono_ns() >= end) || (o->npids && all_gone(m)))
			break;
	}
	return 0;
}

/* ---- interactive ---------------------------------------------------------------------------- */

static int run_screen(struct evr_top_model *m, const struct opts *o)
{
	struct evr_top_ui ui = {
		.overview = o->npids == 0,
		.sort_col = EVR_TOP_COL_CPU,
		.interval_ms = o->interval_ms,
	};
	uint64_t iv = (uint64_t)o->interval_ms * 1000000u, t0 = evr_mono_ns();
	uint64_t end = o->duration_ms ? t0 + (uint64_t)o->duration_ms * 1000000u : 0;
	uint64_t next_tick = t0, refreshes = 0;
	bool quit = false, dirty = true;
	int r;

	while (!quit && !stop_signal) {
		uint64_t now = evr_mono_ns(), wait_ns;
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		int key;

		if (end && now >= end)
			break;
		if (now >= next_tick) {
			if (o->iterations && refreshes == o->iterations)
				break;
			refreshes++;
			if (ui.overview) {
				r = evr_top_model_rescan(m, KEEP_GONE_MS);
				if (r < 0) {
					snprintf(ui.msg, sizeof(ui.msg), "cannot list processes: %s",
						 strerror(-r));
					ui.msg_error = true;
				}
			}
			next_tick += iv;
			if (next_tick <= now)
				next_tick = now + iv;
			dirty = true;
			if (m->o.export)
				fflush(m->o.export);
		}
		dirty |= evr_top_model_poll(m);
		for (uint32_t i = 0; i < m->w.n; i++) {
			const char *w = evr_top_model_warning(evr_top_model_proc(m, i));

			if (w) {
				snprintf(ui.msg, sizeof(ui.msg), "PID %d: %s", (int)evr_top_model_proc(m, i)->pid, w);
				ui.msg_error = true;
				dirty = true;
			}
		}
		/* Age matters even when nothing arrives: a process that stopped sampling. */
		evr_top_model_mark_stale(m, false, evr_mono_ns());
		if (dirty && !ui.paused) {
			evr_top_view_draw(&ui, m);
			dirty = false;
		}
		/* Samples are read at most 250 ms after they arrive, and the screen
		 * is redrawn only when something changed. */
		now = evr_mono_ns();
		wait_ns = next_tick > now ? next_tick - now : 0;
		if (wait_ns > 250000000u)
			wait_ns = 250000000u;
		if (end && end - now < wait_ns)
			wait_ns = end > now ? end - now : 0;
		/* EINTR (SIGWINCH, a stop signal) is fine: the loop looks again. */
		(void)poll(&pfd, 1, (int)((wait_ns + 999999u) / 1000000u));
		while ((key = getch()) != ERR) {
			if (evr_top_view_key(&ui, m, key)) {
				quit = true;
				break;
			}
			/* Keys redraw even when paused: the help, a new sort order. */
			if (!ui.help || key != KEY_RESIZE)
				evr_top_view_draw(&ui, m);
		}
	}
	evr_top_view_close();
	return 0;
}

/* ---- run ------------------------------------------------------------------------------- */

/*
 * Confine clrtop once everything is open: the output file, the terminal (curses
 * set up, the time zone read), the processes of -p attached. What it still
 * needs: waiting, its agent sockets, threads for attaching later (through the
 * broker, which lists and connects for it), and the terminal's ioctls.
 */
static int confine(const struct opts *o)
{
	struct evr_sandbox_opts so = {
		.allow = EVR_SANDBOX_WAIT | EVR_SANDBOX_SOCKETS | EVR_SANDBOX_THREADS |
			 EVR_SANDBOX_TERMINAL | EVR_SANDBOX_SESSIONS,
	};
	char err[512], what[256];
	int r;

	if (!o->no_sandbox) {
		tzset();
		r = evr_sandbox_enter(&so, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "clrtop: %s\n", err);
			return r;
		}
	}
	if (o->sandbox_probe) {
		evr_sandbox_probe(what, sizeof(what));
		fprintf(stderr, "clrtop: sandbox probe: %s\n", what);
	}
	return 0;
}

static int run(struct opts *o)
{
	struct evr_top_model_opts mo = {
		.interval_ms = o->interval_ms,
		.ring_size = RING_SIZE,
		.filter = &o->filter,
		.export_fmt = o->fmt,
	};
	struct evr_top_model m;
	FILE *out = NULL;
	char err[512];
	int r;

	if (o->fmt != EVR_TOP_EXPORT_NONE) {
		if (o->output) {
			out = fopen(o->output, "we");
			if (!out) {
				r = -errno;
				fprintf(stderr, "clrtop: cannot create %s: %s\n", o->output,
					strerror(errno));
				return r;
			}
		} else {
			out = stdout;
		}
		if (o->fmt == EVR_TOP_EXPORT_CSV) {
			struct evr_strbuf sb = { 0 };

			if (evr_top_csv_header(&sb) == 0)
				fwrite(sb.buf, 1, sb.len, out);
			free(sb.buf);
		}
		mo.export = out;
	}
	/* Decided now, not at the first write (stdio would ask fstat, in the sandbox). */
	if (o->batch)
		setvbuf(stdout, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, 1u << 16);
	if (out && out != stdout)
		setvbuf(out, NULL, _IOFBF, 1u << 16);
	evr_top_model_init(&m, &mo);
	/*
	 * Before any thread: the broker is a forked helper. It is not freed at the
	 * end (an attach thread may still be asking it): our exit closes its
	 * socket, and it exits.
	 */
	if (!o->no_sandbox) {
		r = evr_broker_new(NULL, &m.o.broker, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "clrtop: %s\n", err);
			goto out;
		}
		m.w.o.broker = m.o.broker;	/* the watch lists and attaches through it */
	}
	for (uint32_t i = 0; i < o->npids; i++) {
		r = evr_top_model_add(&m, o->pids[i], true, err, sizeof(err));
		if (r == -ESRCH) {
			fprintf(stderr, "clrtop: process %d does not exist\n", (int)o->pids[i]);
			goto out;
		}
		if (r < 0) {
			fprintf(stderr, "clrtop: %s\n", err);
			goto out;
		}
	}
	if (!o->batch) {
		r = evr_top_view_open(err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "clrtop: %s\n", err);
			goto out;
		}
	}
	r = confine(o);
	if (r < 0) {
		if (!o->batch)
			evr_top_view_close();
		goto out;
	}
	r = o->batch ? run_batch(&m, o) : run_screen(&m, o);
	if (r == 0)
		evr_top_model_poll(&m);	/* the samples that arrived last, for the recording */
out:
	if (out) {
		int werr = m.export_err;

		if (fflush(out) != 0 && !werr)
			werr = -errno;
		if (out != stdout && fclose(out) != 0 && !werr)
			werr = -errno;
		if (werr && r == 0) {
			fprintf(stderr, "clrtop: cannot write %s: %s\n",
				o->output ? o->output : "the samples", strerror(-werr));
			r = werr;
		}
	}
	evr_top_model_fini(&m);
	return r;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct opts o = { 0 };
	int r;

	r = parse_argv(argc, argv, &o);
	if (r <= 0) {
		evr_top_filter_fini(&o.filter);
		return r == 0 ? 0 : 2;
	}
	/* --name: the one process of that name, watched as -p would. */
	for (uint32_t i = 0; i < o.nnames; i++) {
		char err[1024];

		r = evr_process_resolve_name(o.names[i], &o.pids[o.npids], err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "clrtop: %s\n", err);
			evr_top_filter_fini(&o.filter);
			return 1;
		}
		o.npids++;
	}
	/* No SA_RESTART: a stop signal interrupts the wait and the loop ends. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = run(&o);
	evr_top_filter_fini(&o.filter);
	return r < 0 ? 1 : 0;
}
