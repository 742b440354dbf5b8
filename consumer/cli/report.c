// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring report: what a person reads first about a trace. The traced process,
 * the time span, events in all and per provider and event type (count, rate,
 * share), losses per CPU, counter statistics, the busiest threads; as tables
 * on the terminal, as one JSON object (--json), and as one self-contained HTML
 * page with plots (--html FILE). The model, the JSON object and the page come
 * from libevring-export (consumer/export/: report-model.c, report-json.c,
 * report-html.c); this file is the command line and the tables.
 *
 * A truncated file is reported up to its last complete chunk with a warning,
 * exit status 0, as dump does.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <evring/export.h>
#include <evring/symbols.h>

#include "cli.h"
#include "report-cpu.h"
#include "report-syscalls.h"
#include "report-heap.h"

#define CMD "report"
#define TOP_FUNCTIONS 20
#define TOP_THREADS 10

struct report_opts {
	const char *path;
	const char *html;		/* --html FILE */
	struct evr_cli_flags flags;	/* --json, --no-sandbox */
	unsigned width;			/* --width N; 0: the terminal's, or unlimited */
	unsigned threads;		/* --threads N */
	unsigned functions;		/* --functions N */
};

enum { OPT_HTML = EVR_OPT_FIRST_OWN, OPT_WIDTH, OPT_THREADS, OPT_FUNCTIONS };

static const struct evr_cli_option longopts[] = {
	{ "json", no_argument, 'j', NULL,
	  "one JSON object with the same numbers instead of tables" },
	{ "html", required_argument, OPT_HTML, "FILE",
	  "write a self-contained HTML page with plots to FILE instead\n"
	  "of the tables (with --json: both)" },
	{ "threads", required_argument, OPT_THREADS, "N",
	  "how many threads to list (default 10, 0 for all)" },
	{ "functions", required_argument, OPT_FUNCTIONS, "N",
	  "how many functions of the CPU samples to list (default 20,\n0 for all)" },
	{ "width", required_argument, OPT_WIDTH, "N",
	  "fit tables into N columns (default: the terminal's)" },
	EVR_CLI_OPTIONS_SANDBOX(EVR_OPT_NO_SANDBOX, EVR_OPT_SANDBOX_PROBE,
				"do not confine evring with seccomp once the files are open"),
	EVR_CLI_OPTION_HELP,
	{ 0 },
};

static void usage(FILE *f)
{
	evr_cli_usage(f,
		"Usage: evring report [--json] [--html FILE] [--threads N] [--functions N]\n"
		"                     [--width N] FILE\n"
		"Summarize trace FILE: process, time span, events per provider and event type,\n"
		"lost events per CPU, counter statistics, the busiest threads, the CPU samples\n"
		"and the functions they were in (record --sample-cpu), and per process the\n"
		"system calls (record --syscalls), as strace -c counts them.\n",
		longopts, "");
}

static int parse_argv(int argc, char **argv, struct report_opts *o)
{
	struct evr_cli_getopt g;
	int c, r;

	o->threads = TOP_THREADS;
	o->functions = TOP_FUNCTIONS;
	/* No '+': the file may come before the options (evring report F --html R.html). */
	evr_cli_getopt_init(&g, ":", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case OPT_HTML:
			o->html = optarg;
			continue;
		case OPT_WIDTH:
			if (evr_cli_parse_uint(CMD, "--width", optarg, 0, 100000, &o->width) < 0)
				return -EINVAL;
			continue;
		case OPT_THREADS:
			if (evr_cli_parse_uint(CMD, "--threads", optarg, 0, 100000, &o->threads) < 0)
				return -EINVAL;
			continue;
		case OPT_FUNCTIONS:
			if (evr_cli_parse_uint(CMD, "--functions", optarg, 0, 100000, &o->functions) < 0)
				return -EINVAL;
			continue;
		}
		r = evr_cli_common_opt(CMD, c, argv, usage, &o->flags);
		if (r <= 0)
			return r;
	}
	if (evr_cli_file_operand(CMD, "evring report FILE", argc, argv, &o->path) < 0)
		return -EINVAL;
	return 1;
}

/* ---- terminal tables --------------------------------------------------------- */

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static double per_s(uint64_t n, uint64_t span_ns)
{
	return (double)n * 1e9 / (double)span_ns;
}

/*
 * Print @s in a column of @w characters (left aligned), cutting it with "~" if
 * it is longer. Counts bytes: names are ASCII in practice, and a cut never
 * splits a UTF-8 sequence (it stops before a continuation byte).
 */
static void put_col(FILE *f, const char *s, int w)
{
	int n = (int)strlen(s);

	if (n <= w) {
		fprintf(f, "%-*s", w, s);
		return;
	}
	n = w - 1;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	fprintf(f, "%.*s~%*s", n, s, w - 1 - n, "");
}

/* Width of the name column: the longest name, within what the line leaves. */
static int name_width(int longest, int rest, unsigned width, int min)
{
	int w = longest;

	if (width && (int)width - rest < w)
		w = (int)width - rest;
	return w < min ? min : w;
}

/*
 * A rate sample's value is per second: show its unit so ("B" becomes "B/s"),
 * unless the unit already says so or is a percentage (cpu-usage).
 */
static const char *rate_unit(uint32_t kind, const char *unit, char *buf, size_t len)
{
	if (kind != EVR_SAMPLE_RATE || strstr(unit, "/s") || !strcmp(unit, "%"))
		return unit;
	snprintf(buf, len, "%s/s", unit);
	return buf;
}

/*
 * A value people read at a glance and scripts parse back: no exponent below
 * 10^15 (2.65679e+08 bytes reads worse than 265679000), six significant
 * digits for the small ones.
 */
static void put_value(FILE *f, double v)
{
	double a = v < 0 ? -v : v;

	if (a >= 1e5 && a < 1e15)
		fprintf(f, " %12.0f", v);
	else
		fprintf(f, " %12.6g", v);
}

static void put_count_line(FILE *f, const char *name, int w, uint64_t n, uint64_t span,
			   uint64_t total)
{
	fputs("  ", f);
	put_col(f, name, w);
	fprintf(f, " %12" PRIu64 " %12.1f %7.2f%%\n", n, per_s(n, span), pct(n, total));
}

static void print_head(FILE *f, const struct evr_rpt *m, const char *path)
{
	const struct evr_process_info *p = m->proc;
	const struct evr_trace_session *s = m->sess;
	uint64_t span = evr_rpt_span(m);
	struct evr_strbuf cmd = { 0 };
	char b1[32], b2[32];

	fprintf(f, "Trace     %s (%s%s%s", path, evr_fmt_bytes(m->st.bytes, b1, sizeof(b1)),
		m->st.truncated ? ", truncated" : "", m->st.damaged ? ", damaged" : "");
	if (m->st.unchecked_chunks)
		fprintf(f, ", %" PRIu64 " chunks of events without checksum", m->st.unchecked_chunks);
	fprintf(f, ")\n");
	if (p) {
		evr_rpt_command(m, &cmd);
		fprintf(f, "Process   pid %" PRIu32 ", %s, host %s\n", p->pid,
			cmd.buf ? cmd.buf : "?", p->hostname ? p->hostname : "?");
	} else {
		fprintf(f, "Process   unknown (the file has no PROCESS chunk)\n");
	}
	free(cmd.buf);
	if (s) {
		time_t t = (time_t)((s->start_realtime_ns + (m->first_ts - s->start_mono_ns)) /
				    1000000000u);
		struct tm tm;
		char when[64] = "?";

		/* UTC: the local zone would need /etc/localtime, closed to the sandbox. */
		if (m->events + m->lost && gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
		fprintf(f, "Session   providers %s, %s mode, %" PRIu32 " rings of %s\n",
			s->providers && *s->providers ? s->providers : "*",
			s->mode ? "overwrite" : "discard", s->nr_rings,
			evr_fmt_bytes(s->ring_size, b2, sizeof(b2)));
		fprintf(f, "Time      %s, %.3f s from first to last event\n", when,
			(double)(m->last_ts - m->first_ts) / 1e9);
		/* Which clock the events carry, why, and how the file converts it. */
		fprintf(f, "Clock     %s", s->clock.kind == EVR_CLOCK_TSC ? "TSC" : "CLOCK_MONOTONIC");
		if (m->st.sync_points)
			fprintf(f, ", %" PRIu32 " sync points", m->st.sync_points);
		if (m->st.clock_segments > 1)
			fprintf(f, ", the TSC jumped %" PRIu32 " times", m->st.clock_segments - 1);
		if (p && p->clock_choice.known)
			fprintf(f, " (%s)", p->clock_choice.reason);
		fputc('\n', f);
	}
	fprintf(f, "Events    %" PRIu64 " (%s/s), %" PRIu64 " lost (%.2f%% of events)",
		m->events, evr_fmt_count(per_s(m->events, span), b1, sizeof(b1)), m->lost,
		pct(m->lost, m->events + m->lost));
	if (m->damaged)
		fprintf(f, ", %" PRIu64 " missing from the damaged file", m->damaged);
	fputc('\n', f);
	if (m->undecodable || m->bad_samples)
		fprintf(f, "Warning   %" PRIu64 " events without a description, %" PRIu64
			" malformed counter samples\n", m->undecodable, m->bad_samples);
}

static void print_providers(FILE *f, const struct evr_rpt *m, unsigned width)
{
	uint64_t span = evr_rpt_span(m);
	char buf[512];
	int longest = 8, w;

	for (uint32_t i = 0; i < m->nproviders; i++)
		if ((int)strlen(m->providers[i].name) > longest)
			longest = (int)strlen(m->providers[i].name);
	w = name_width(longest, 2 + 35, width, 8);
	fprintf(f, "\nEvents per provider\n  ");
	put_col(f, "PROVIDER", w);
	fprintf(f, " %12s %12s %8s\n", "EVENTS", "PER SECOND", "SHARE");
	for (uint32_t i = 0; i < m->nproviders; i++)
		put_count_line(f, m->providers[i].name, w, m->providers[i].count, span, m->events);

	longest = (int)strlen("PROVIDER/EVENT");
	for (uint32_t i = 0; i < m->nevents; i++) {
		int n = (int)strlen(evr_rpt_event_name(m, m->events_v[i], buf, sizeof(buf)));

		if (n > longest)
			longest = n;
	}
	w = name_width(longest, 2 + 35, width, 8);
	fprintf(f, "\nEvents per type\n  ");
	put_col(f, "PROVIDER/EVENT", w);
	fprintf(f, " %12s %12s %8s\n", "EVENTS", "PER SECOND", "SHARE");
	for (uint32_t i = 0; i < m->nevents; i++)
		put_count_line(f, evr_rpt_event_name(m, m->events_v[i], buf, sizeof(buf)), w,
			       m->events_v[i]->count, span, m->events);
}

static void print_lost(FILE *f, const struct evr_rpt *m)
{
	fprintf(f, "\nLost events per CPU (ring)\n  %-6s %12s %12s %8s\n", "CPU", "EVENTS", "LOST",
		"LOST %");
	for (uint32_t i = 0; i < m->nr_rings; i++) {
		if (!m->ring_events[i] && !m->ring_lost[i])
			continue;
		fprintf(f, "  %-6" PRIu32 " %12" PRIu64 " %12" PRIu64 " %7.2f%%\n", i,
			m->ring_events[i], m->ring_lost[i],
			pct(m->ring_lost[i], m->ring_events[i] + m->ring_lost[i]));
	}
	fprintf(f, "  %-6s %12" PRIu64 " %12" PRIu64 " %7.2f%%\n", "total", m->events,
		m->lost + m->damaged, pct(m->lost + m->damaged, m->events + m->lost + m->damaged));
	if (m->damaged)
		fprintf(f, "  (%" PRIu64 " of them are missing from the damaged file, not lost by "
			"the recording)\n", m->damaged);
}

static void print_counters(FILE *f, const struct evr_rpt *m, unsigned width)
{
	int longest = (int)strlen("PROVIDER/COUNTER"), w;
	char buf[512], ubuf[40];

	if (!m->ncounters)
		return;
	for (uint32_t i = 0; i < m->ncounters; i++) {
		int n = snprintf(buf, sizeof(buf), "%s/%s", m->counters[i].provider,
				 m->counters[i].name);

		if (n > longest)
			longest = n;
	}
	w = name_width(longest, 2 + 10 + 8 + 8 + 4 * 13, width, 12);
	fprintf(f, "\nCounters (value per sample: mean, rate per second, gauge value, p50)\n  ");
	put_col(f, "PROVIDER/COUNTER", w);
	fprintf(f, " %-9s %-7s %7s %12s %12s %12s %12s\n", "KIND", "UNIT", "SAMPLES", "MIN", "MEAN",
		"MAX", "LAST");
	for (uint32_t i = 0; i < m->ncounters; i++) {
		const struct evr_rpt_counter *c = &m->counters[i];

		snprintf(buf, sizeof(buf), "%s/%s", c->provider, c->name);
		fputs("  ", f);
		put_col(f, buf, w);
		fputc(' ', f);
		put_col(f, evr_sample_kind_name(c->kind), 9);
		fputc(' ', f);
		put_col(f, rate_unit(c->kind, c->unit, ubuf, sizeof(ubuf)), 7);
		fprintf(f, " %7" PRIu64, c->samples);
		put_value(f, c->min);
		put_value(f, c->sum / (double)c->samples);
		put_value(f, c->max);
		put_value(f, c->last);
		fputc('\n', f);
	}
}

static void print_threads(FILE *f, const struct evr_rpt *m, const struct evr_trace_reader *r,
			  unsigned width, unsigned top)
{
	uint32_t n = top && top < m->nthreads ? top : m->nthreads;
	int longest = 4, w;

	for (uint32_t i = 0; i < n; i++)
		if ((int)strlen(evr_rpt_thread_name(r, m->threads_v[i]->tid)) > longest)
			longest = (int)strlen(evr_rpt_thread_name(r, m->threads_v[i]->tid));
	w = name_width(longest, 2 + 8 + 1 + 22, width, 4);
	fprintf(f, "\nBusiest threads (%" PRIu32 " of %" PRIu32 ")\n  %8s ", n, m->nthreads, "TID");
	put_col(f, "NAME", w);
	fprintf(f, " %12s %8s\n", "EVENTS", "SHARE");
	for (uint32_t i = 0; i < n; i++) {
		const struct evr_rpt_thread *t = m->threads_v[i];

		fprintf(f, "  %8" PRIu32 " ", t->tid);
		put_col(f, evr_rpt_thread_name(r, t->tid), w);
		fprintf(f, " %12" PRIu64 " %7.2f%%\n", t->count, pct(t->count, m->events));
	}
}

/* ---- run ------------------------------------------------------------------------ */

static unsigned term_width(const struct report_opts *o)
{
	struct winsize ws;

	if (o->width)
		return o->width;
	/* Not a terminal: nothing to fit, and scripts get whole names. */
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		return ws.ws_col;
	return 0;
}

/*
 * Flame graphs for --html: the CPU samples' and the events' stacks, drawn by
 * libevring-symbols as inline SVG. The binaries are opened before the sandbox
 * (@sym, @ss loaded by the caller); the events' stacks are read through a second
 * reader of the file, since the report's model consumes the first.
 */
struct flames {
	struct evr_trace_reader *r2;
	struct evr_symbolizer *sym;
	struct evr_samples *ss;
};

static int flames_load(const struct report_opts *o, struct evr_trace_reader *r,
		       struct flames *fl)
{
	int ret;

	ret = evr_symbolizer_from_trace(r, &fl->sym);
	if (ret == 0)
		ret = evr_samples_load(r, &fl->ss);
	if (ret == -EBADMSG) {
		evr_cli_warn(CMD, "%s: a SAMPLES chunk is malformed; its samples are left out",
			     evr_cli_trace_name(o->path));
		ret = 0;
	}
	if (ret == 0 && o->html &&
	    evr_cli_trace_open(CMD, o->path, EVR_CLI_TRACE_FILE, &fl->r2) < 0)
		fl->r2 = NULL;	/* the event stacks' graph is left out; the rest works */
	return ret;
}

static void flames_free(struct flames *fl)
{
	evr_trace_reader_free(fl->r2);
	evr_samples_free(fl->ss);
	evr_symbolizer_free(fl->sym);
}

/* Append one flame graph section to @sb. Return: 0, -ENOMEM. */
static int flame_section(struct evr_strbuf *sb, struct evr_profile *p, const char *title,
			 const char *what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	if (!evr_profile_total(p))
		return 0;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	ret = evr_profile_write_svg(p, title, 1200, f);
	if (fclose(f) != 0 || ret < 0) {
		free(buf);
		return -ENOMEM;
	}
	ret = evr_strbuf_printf(sb, "<h2>%s</h2>\n<p>%s</p>\n<div class=\"flame\">", title, what);
	if (!ret)
		ret = evr_strbuf_append(sb, buf, len);
	if (!ret)
		ret = evr_strbuf_append(sb, "</div>\n", 7);
	free(buf);
	return ret;
}

/* Insert the flame graphs before the end of the page @sb that evr_rpt_html() wrote. */
static int flames_html(struct flames *fl, struct evr_strbuf *sb)
{
	static const char tail[] = "</body></html>\n";
	struct evr_profile *p = NULL;
	int ret = 0;

	if (sb->len < sizeof(tail) - 1 || strcmp(sb->buf + sb->len - (sizeof(tail) - 1), tail))
		return 0;
	sb->len -= sizeof(tail) - 1;
	if (fl->ss && fl->ss->n) {
		ret = evr_profile_from_trace(fl->r2, fl->sym, fl->ss, false, &p);
		if (!ret)
			ret = flame_section(sb, p, "CPU flame graph",
					    "Where the threads were on the CPU (record --sample-cpu): "
					    "each box is a function, as wide as its share of the "
					    "samples, its callers below it.");
		evr_profile_free(p);
		p = NULL;
	}
	if (!ret && fl->r2) {
		ret = evr_profile_from_trace(fl->r2, fl->sym, NULL, true, &p);
		if (!ret)
			ret = flame_section(sb, p, "Event stacks",
					    "Where the events were written from (record --stacks), "
					    "as wide as their share of the events.");
		evr_profile_free(p);
		if (ret == -EBADMSG || ret == -EIO)
			ret = 0;	/* the tables already report a damaged file */
	}
	if (!ret)
		ret = evr_strbuf_append(sb, tail, sizeof(tail) - 1);
	return ret;
}

/* ---- several processes --------------------------------------------------------------- */

static const char *proc_end_name(uint32_t end)
{
	switch (end) {
	case EVR_TRACE_PROC_EXITED: return "exited";
	case EVR_TRACE_PROC_DIED: return "died";
	case EVR_TRACE_PROC_DETACHED: return "ran on";
	case EVR_TRACE_PROC_FAILED: return "failed";
	}
	return "cut short";
}

/* The process table's entry of the stream @r reads, or NULL. */
static const struct evr_trace_proc *proc_entry(const struct evr_trace_reader *r)
{
	const struct evr_trace_proc *procs;
	uint32_t n, s = evr_trace_reader_stream(r);

	(void)evr_trace_reader_procs(r, &procs, &n);
	for (uint32_t i = 0; i < n; i++)
		if (procs[i].stream == s)
			return &procs[i];
	return NULL;
}

/* ps for the trace: who was recorded, from when to when, how it ended. */
static void print_proc_table(FILE *f, struct evr_trace_reader *const *rs, const struct evr_rpt *ms,
			     uint32_t n, uint64_t t0)
{
	fprintf(f, "Processes (%u; STARTED: the process's start, UTC; FROM, TO: its recording, "
		"seconds after the first began)\n  %7s %7s %-16s %-8s %8s %8s %-9s %10s %8s  %s\n", n,
		"PID", "PPID", "NAME", "STARTED", "FROM", "TO", "END", "EVENTS", "LOST", "COMMAND");
	for (uint32_t i = 0; i < n; i++) {
		const struct evr_trace_proc *p = proc_entry(rs[i]);
		char from[24] = "?", to[24] = "?", started[16] = "?";
		time_t st = p ? (time_t)(p->start_realtime_ns / 1000000000u) : 0;
		struct tm tm;

		/* UTC: the local zone would need /etc/localtime, closed to the sandbox. */
		if (st && gmtime_r(&st, &tm))
			strftime(started, sizeof(started), "%H:%M:%S", &tm);
		if (p && p->attach_ns >= t0)
			snprintf(from, sizeof(from), "%.3f", (double)(p->attach_ns - t0) / 1e9);
		if (p && p->end_ns >= t0)
			snprintf(to, sizeof(to), "%.3f", (double)(p->end_ns - t0) / 1e9);
		fprintf(f, "  %7u %7u %-16s %-8s %8s %8s %-9s %10" PRIu64 " %8" PRIu64 "  %s\n",
			evr_cli_trace_pid(rs[i]), p ? p->ppid : 0, p ? p->name : "?", started, from, to,
			proc_end_name(p ? p->end : 0), ms[i].events, ms[i].lost,
			p && p->cmdline ? p->cmdline : "");
	}
}

/* One process's report object, with its line of the process table added. */
static int proc_json(struct evr_strbuf *sb, const struct evr_rpt *m, struct evr_trace_reader *r,
		     const char *path)
{
	const struct evr_trace_proc *p = proc_entry(r);
	struct evr_strbuf one = { 0 };
	int err = evr_rpt_json(&one, m, r, path);

	/* evr_rpt_json() closes its object with "}\n": reopen it. */
	if (!err && (one.len < 2 || memcmp(one.buf + one.len - 2, "}\n", 2)))
		err = -EINVAL;
	if (!err)
		err = evr_strbuf_append(sb, one.buf, one.len - 2);
	if (!err)
		err = evr_strbuf_printf(sb, ",\"stream\":%u,\"pid\":%u,\"ppid\":%u,\"name\":",
					evr_trace_reader_stream(r), evr_cli_trace_pid(r),
					p ? p->ppid : 0);
	if (!err)
		err = evr_strbuf_json_string(sb, p ? p->name : "", p ? strlen(p->name) : 0);
	if (!err)
		err = evr_strbuf_append(sb, ",\"cmdline\":", 11);
	if (!err)
		err = evr_strbuf_json_string(sb, p && p->cmdline ? p->cmdline : "",
					     p && p->cmdline ? strlen(p->cmdline) : 0);
	if (!err)
		err = evr_strbuf_printf(sb, ",\"start_realtime_ns\":%" PRIu64 ",\"attach_ns\":%"
					PRIu64 ",\"end_ns\":%" PRIu64 ",\"end\":\"%s\"}",
					p ? p->start_realtime_ns : 0, p ? p->attach_ns : 0,
					p ? p->end_ns : 0, proc_end_name(p ? p->end : 0));
	free(one.buf);
	return err;
}

/*
 * A trace of several processes: the process table, a section per process (as
 * for a single one, without the CPU and heap sections: a recording of several
 * has no side bands), and the totals. --json: {"file", "processes": [each
 * process's report object plus its table line], "totals"}.
 */
static int run_procs(const struct report_opts *o, struct evr_trace_reader *r0)
{
	struct evr_trace_reader **rs = NULL;
	struct evr_strbuf sb = { 0 };
	struct evr_rpt *ms = NULL;
	uint64_t events = 0, lost = 0, t0 = UINT64_MAX, t1 = 0;
	unsigned width = term_width(o);
	uint32_t n = 0;
	char err[512];
	int ret;

	if (o->html) {
		evr_cli_error(CMD, "--html shows one process: this trace has several (use --json)");
		return -EINVAL;
	}
	ret = evr_cli_trace_procs(CMD, o->path, r0, EVR_CLI_TRACE_FILE, 0, &rs, &n);
	if (ret < 0)
		return ret;
	ms = calloc(n ? n : 1, sizeof(*ms));
	if (!ms)
		goto nomem;
	setvbuf(stdout, NULL, _IOFBF, 1u << 16);
	ret = evr_cli_sandbox_enter(CMD, EVR_SANDBOX_DUMP, &o->flags);
	if (ret < 0)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		const struct evr_trace_proc *p = proc_entry(rs[i]);

		ret = evr_rpt_build(rs[i], &ms[i], err, sizeof(err));
		if (ret < 0) {
			evr_cli_error(CMD, "%s: process %u: %s", evr_cli_trace_name(o->path),
				      evr_cli_trace_pid(rs[i]), err);
			goto out;
		}
		evr_rpt_sort(&ms[i]);
		events += ms[i].events;
		lost += ms[i].lost;
		if (p && p->attach_ns && p->attach_ns < t0)
			t0 = p->attach_ns;
		if (ms[i].events + ms[i].lost && ms[i].first_ts < t0)
			t0 = ms[i].first_ts;
		if (ms[i].last_ts > t1)
			t1 = ms[i].last_ts;
	}
	if (o->flags.json) {
		ret = evr_strbuf_append(&sb, "{\"file\":", 8);
		if (!ret)
			ret = evr_strbuf_json_string(&sb, o->path, strlen(o->path));
		if (!ret)
			ret = evr_strbuf_append(&sb, ",\"processes\":[", 14);
		for (uint32_t i = 0; i < n && !ret; i++) {
			if (i)
				ret = evr_strbuf_append(&sb, ",", 1);
			if (!ret)
				ret = proc_json(&sb, &ms[i], rs[i], o->path);
		}
		if (!ret)
			ret = evr_strbuf_printf(&sb, "],\"totals\":{\"processes\":%u,\"events\":%"
						PRIu64 ",\"lost\":%" PRIu64 "}}\n", n, events, lost);
		if (ret < 0)
			goto nomem;
		fwrite(sb.buf, 1, sb.len, stdout);
	} else {
		struct evr_trace_stats st;
		char b[32];

		evr_trace_reader_stats(r0, &st);
		fprintf(stdout, "Trace     %s (%s%s), %u processes\n\n", o->path,
			evr_fmt_bytes(st.file_size, b, sizeof(b)), st.truncated ? ", truncated" : "",
			n);
		print_proc_table(stdout, rs, ms, n, t0 == UINT64_MAX ? 0 : t0);
		for (uint32_t i = 0; i < n; i++) {
			const struct evr_trace_proc *p = proc_entry(rs[i]);

			fprintf(stdout, "\n=== Process %u (%s), stream %u ===\n",
				evr_cli_trace_pid(rs[i]), p ? p->name : "?",
				evr_trace_reader_stream(rs[i]));
			print_head(stdout, &ms[i], o->path);
			print_providers(stdout, &ms[i], width);
			print_lost(stdout, &ms[i]);
			print_counters(stdout, &ms[i], width);
			print_threads(stdout, &ms[i], rs[i], width, o->threads);
		}
		fprintf(stdout, "\n=== Totals ===\nEvents    %" PRIu64 " in %u processes, %" PRIu64
			" lost (%.2f%% of events), %.3f s from first to last event\n", events, n,
			lost, pct(lost, events + lost),
			t1 > t0 && t0 != UINT64_MAX ? (double)(t1 - t0) / 1e9 : 0.0);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		ret = errno ? -errno : -EIO;
		evr_cli_error(CMD, "cannot write the output: %s", strerror(-ret));
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		evr_cli_trace_warnings(CMD, o->path, rs[i]);
	ret = 0;
	goto out;
nomem:
	evr_cli_error(CMD, "out of memory");
	ret = -ENOMEM;
out:
	for (uint32_t i = 0; ms && i < n; i++)
		evr_rpt_fini(&ms[i]);
	free(ms);
	evr_cli_trace_procs_free(rs, n, r0);
	free(sb.buf);
	return ret;
}

/* The work, as evr_cli_main()'s run step. */
static int run(void *arg)
{
	const struct report_opts *o = arg;
	struct evr_trace_reader *r = NULL;
	struct evr_strbuf sb = { 0 };
	struct evr_rpt m = { 0 };
	unsigned width = term_width(o);
	struct flames fl = { 0 };
	struct evr_report_cpu cpu = { 0 };
	struct evr_report_heap heap = { 0 };
	struct evr_report_syscalls sys = { 0 };
	struct evr_trace_reader *hr = NULL;
	FILE *html = NULL;
	char err[512];
	int ret;

	/* The stacks' modules and samples are read before the events, and the HTML page's
	 * flame graphs read the file a second time: from a pipe, a copy. */
	ret = evr_cli_trace_open(CMD, o->path, EVR_CLI_TRACE_FILE, &r);
	if (ret < 0)
		return ret;
	if (evr_trace_reader_procs(r, NULL, NULL)) {
		ret = run_procs(o, r);
		goto out;
	}
	if (o->html) {
		int fd = open(o->html, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || !(html = fdopen(fd, "w"))) {
			ret = -errno;
			if (fd >= 0)
				close(fd);
			evr_cli_error(CMD, "cannot create %s: %s", o->html, strerror(-ret));
			goto out;
		}
	}
	/* The CPU section's binaries, opened before the sandbox. */
	ret = flames_load(o, r, &fl);
	if (ret < 0) {
		evr_cli_error(CMD, "%s: %s", evr_cli_trace_name(o->path), strerror(-ret));
		goto out;
	}
	if (evr_report_syscalls_build(r, o->path, &sys) < 0)
		goto nomem;
	/* The heap section reads the events again (Heap's only), from a reader of its own. */
	if (evr_schema_set_count(evr_trace_reader_schemas(r)) &&
	    evr_cli_trace_open(CMD, o->path, EVR_CLI_TRACE_FILE, &hr) < 0)
		hr = NULL;	/* no heap section; the rest works */
	/* Decided now: stdio would ask the terminal (ioctl) at the first write, in the sandbox. */
	setvbuf(stdout, NULL, _IOFBF, 1u << 16);
	ret = evr_cli_sandbox_enter(CMD, EVR_SANDBOX_DUMP, &o->flags);
	if (ret < 0)
		goto out;
	if (o->flags.sandbox_probe)
		evr_cli_sandbox_probe(CMD);

	ret = evr_rpt_build(r, &m, err, sizeof(err));
	if (ret < 0) {
		evr_cli_error(CMD, "%s: %s", evr_cli_trace_name(o->path), err);
		goto out;
	}
	evr_rpt_sort(&m);
	if (evr_report_cpu_build(r, fl.sym, fl.ss, &cpu) < 0)
		goto nomem;
	if (hr && evr_report_heap_build(hr, fl.sym, &heap) == -ENOMEM)
		goto nomem;
	if (o->flags.json) {
		ret = evr_rpt_json(&sb, &m, r, o->path);
		if (ret == 0)
			ret = evr_report_cpu_json(&sb, &cpu, o->functions);
		if (ret == 0)
			ret = evr_report_heap_json(&sb, &heap, o->functions);
		if (ret == 0)
			ret = evr_report_syscalls_json(&sb, &sys);
		if (ret < 0)
			goto nomem;
		fwrite(sb.buf, 1, sb.len, stdout);
	} else if (!html) {
		/* With --html the page is the output (a script redirecting stdout got both). */
		print_head(stdout, &m, o->path);
		print_providers(stdout, &m, width);
		print_lost(stdout, &m);
		print_counters(stdout, &m, width);
		print_threads(stdout, &m, r, width, o->threads);
		evr_report_cpu_print(stdout, &cpu, o->functions);
		evr_report_heap_print(stdout, &heap, o->functions);
		evr_report_syscalls_print(stdout, &sys);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		ret = errno ? -errno : -EIO;
		evr_cli_error(CMD, "cannot write the output: %s", strerror(-ret));
		goto out;
	}
	if (html) {
		sb.len = 0;
		ret = evr_rpt_html(&m, r, o->path, &sb);
		if (ret == 0)
			ret = flames_html(&fl, &sb);
		if (ret < 0)
			goto nomem;
		if (fwrite(sb.buf, 1, sb.len, html) != sb.len || fclose(html) != 0) {
			ret = errno ? -errno : -EIO;
			html = NULL;
			evr_cli_error(CMD, "cannot write %s: %s", o->html, strerror(-ret));
			goto out;
		}
		html = NULL;
	}
	evr_cli_trace_warnings(CMD, o->path, r);
	if (fl.sym) {
		const struct evr_process_info *pi = evr_trace_reader_process(r);
		char note[256];

		if (evr_symbolizer_unmapped_note(fl.sym, pi ? pi->pid : 0, note, sizeof(note)))
			evr_cli_warn(CMD, "%s: %s", evr_cli_trace_name(o->path), note);
	}
	ret = 0;
	goto out;
nomem:
	evr_cli_error(CMD, "out of memory");
out:
	evr_report_cpu_fini(&cpu);
	evr_report_heap_fini(&heap);
	evr_report_syscalls_fini(&sys);
	evr_trace_reader_free(hr);
	flames_free(&fl);
	if (html)
		fclose(html);
	free(sb.buf);
	evr_rpt_fini(&m);
	evr_trace_reader_free(r);
	return ret;
}

int evr_cmd_report(int argc, char **argv)
{
	static const struct evr_cli_steps steps = { .run = run };
	struct report_opts o = { 0 };

	return evr_cli_main(parse_argv(argc, argv, &o), &steps, &o);
}
