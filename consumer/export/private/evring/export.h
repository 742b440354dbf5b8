/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libevring-export: what `evring convert`, `evring report` and `evring monitor`
 * share. A trace, read with the trace reader (<evring/trace.h>), written as
 * another format (CTF 1.8, Chrome trace-event JSON, JSON lines) or summarized
 * into numbers (the report model) that can be shown as JSON or as one HTML page.
 *
 * The library never prints and never exits: a function that fails returns
 * -errno and, where it takes one, writes a one-line reason into an @err buffer
 * (NUL-terminated, cut to @errlen). The caller decides how to show it.
 *
 * Sources: convert-*.c (the writers), report-model.c (the model),
 * report-json.c and report-html.c (its outputs), report-util.c (escaping).
 */
#ifndef EVR_EXPORT_H
#define EVR_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <evring/counter-sample.h>
#include <evring/schema.h>
#include <evring/trace.h>

/* ---- the formats ---------------------------------------------------------- */

enum evr_export_format_id {
	EVR_EXPORT_CTF = 1,
	EVR_EXPORT_CHROME,
	EVR_EXPORT_JSONL,
	EVR_EXPORT_FOLDED,
	EVR_EXPORT_SPEEDSCOPE,
	EVR_EXPORT_PPROF,
};

#define EVR_EXPORT_MAX_ALIASES 2

/* One format a trace converts to (formats.c: the one table every command uses). */
struct evr_export_format {
	enum evr_export_format_id id;
	const char *name;				/* as --format takes it */
	const char *aliases[EVR_EXPORT_MAX_ALIASES];	/* other spellings, NULL-ended */
	const char *suffix;				/* of a file named after the trace */
	bool profile;					/* a profile of the trace's stacks */
	const char *what;				/* one line for --help */
};

/* Every format, in the order --help lists them. */
extern const struct evr_export_format evr_export_formats[];
extern const size_t evr_export_nformats;

/* The format named (or aliased) @name; NULL if none. */
const struct evr_export_format *evr_export_format_find(const char *name);
const struct evr_export_format *evr_export_format_get(enum evr_export_format_id id);

/* "ctf, chrome, jsonl, folded, speedscope or pprof" into @buf. Return: @buf. */
const char *evr_export_format_names(char *buf, size_t len);

/* ---- converters ----------------------------------------------------------- */

/* What every writer reports, for a summary line. */
struct evr_convert_stats {
	uint64_t events;		/* events written */
	uint64_t lost;			/* lost events carried into the output */
	uint64_t bytes;			/* bytes of output written */
	uint64_t undecodable;		/* events without a schema or whose payload did not decode */
	/*
	 * Chrome: records the converter could only approximate to keep its work per
	 * record bounded (docs/cli.md): stops of slices crossed by too many open
	 * slices, and starts (with their stops) nested too deep, all written as
	 * instant events. Also in the output's otherData.approximations.
	 */
	uint64_t crossed, too_deep;
};

/**
 * evr_convert_ctf() - write @r as a CTF 1.8 trace into directory @dir: a
 * `metadata` file (TSDL) and one data stream file per ring that has events.
 * @r: a freshly opened reader; consumed with evr_trace_reader_next().
 * @dir: created if missing (mode 0755); an existing directory must be empty.
 * @ret: the counts, written on success only.
 * @err: a one-line reason on failure ("cannot create directory D: ...").
 * Return: 0, or -errno.
 * Context: the caller's thread.
 */
int evr_convert_ctf(struct evr_trace_reader *r, const char *dir, struct evr_convert_stats *ret,
		    char *err, size_t errlen);

/* Create file @name (a plain name) for a converter: a new descriptor, or -errno. */
typedef int evr_export_create_fn(void *ctx, const char *name);

/**
 * evr_convert_ctf_prepare() / evr_convert_ctf_at() - evr_convert_ctf() in two
 * steps, for a confined converter that may not create files itself: prepare
 * @dir (created if missing, must be empty) while it still may, then convert,
 * creating each file with @create (for example evr_broker_create() of
 * <evring/sandbox.h>, whose helper holds the directory). @create NULL: as
 * evr_convert_ctf() (the directory is prepared and opened here).
 * Return: 0, or -errno with a one-line reason in @err.
 */
int evr_convert_ctf_prepare(const char *dir, char *err, size_t errlen);
int evr_convert_ctf_at(struct evr_trace_reader *r, const char *dir, evr_export_create_fn *create,
		       void *create_ctx, struct evr_convert_stats *ret, char *err, size_t errlen);

/**
 * evr_convert_chrome() - write @r as Chrome trace-event JSON (the "JSON Object
 * Format": {"traceEvents":[...],"displayTimeUnit":"ns",...}) to @out.
 * @out: borrowed; flushed at the end, not closed.
 * Return: 0, or -errno with a one-line reason in @err (-EIO: @out failed).
 * Context: the caller's thread.
 */
int evr_convert_chrome(struct evr_trace_reader *r, FILE *out, struct evr_convert_stats *ret,
		       char *err, size_t errlen);

/*
 * Stacks in Chrome JSON (evr_convert_chrome_stacks()): an event that carries its
 * writer's stack (evr_event_view.nframes) gets "sf", the id of its innermost
 * frame in the top-level "stackFrames" tree that chrome://tracing and
 * speedscope read (Perfetto ignores both). Supplied by whoever symbolizes
 * (libevring-symbols' evr_chrome_frames).
 */
struct evr_chrome_stacks {
	/* @ret: the stack's id, >= 1 (0: none). Return: 0, or -errno (the event keeps no sf). */
	int (*stack_id)(void *ctx, const struct evr_event_view *v, uint64_t *ret);
	/* Write `,"stackFrames":{...}` (and optional top-level members after it) to @out.
	 * Return: bytes written, or -errno. */
	long (*write_frames)(void *ctx, FILE *out);
	void *ctx;
	/* Optional: more trace events (system calls as "X" slices) written into the
	 * traceEvents array after the events', each but the first of the array
	 * preceded by ",\n" (@first: none before them). Return: bytes, or -errno. */
	long (*write_events)(void *events_ctx, FILE *out, bool first);
	void *events_ctx;
};

/* evr_convert_chrome() with the events' stacks (@sk may be NULL: none). */
int evr_convert_chrome_stacks(struct evr_trace_reader *r, FILE *out,
			      const struct evr_chrome_stacks *sk, struct evr_convert_stats *ret,
			      char *errbuf, size_t errlen);

/**
 * evr_convert_chrome_procs() - several processes (a trace of several: one
 * reader per process, evr_trace_reader_open_stream()) into one Chrome JSON
 * file, each process under its pid (@pids[i] for @rs[i]: a process track
 * group each in Perfetto). otherData lists the pids and sums the counts.
 * Return: 0, or -errno with a one-line reason in @err.
 */
int evr_convert_chrome_procs(struct evr_trace_reader *const *rs, const uint32_t *pids, uint32_t n,
			     FILE *out, struct evr_convert_stats *ret, char *err, size_t errlen);

/**
 * evr_convert_jsonl() - one JSON object per event and line, exactly as
 * `evring dump --json` prints them (evr_event_to_json()).
 * Return: 0, or -errno with a one-line reason in @err.
 * Context: the caller's thread.
 */
int evr_convert_jsonl(struct evr_trace_reader *r, FILE *out, struct evr_convert_stats *ret,
		      char *err, size_t errlen);

/**
 * evr_convert_jsonl_procs() - several processes (@rs[i] of pid @pids[i]) as
 * JSON lines: their events merged in time order (as `evring dump --json`
 * shows them), each object with its process's "pid" first; @ret counts the
 * events, losses and bytes written.
 * Return: 0, or -errno with a one-line reason in @err.
 * Context: the caller's thread.
 */
int evr_convert_jsonl_procs(struct evr_trace_reader *const *rs, const uint32_t *pids, uint32_t n,
			    FILE *out, struct evr_convert_stats *ret, char *err, size_t errlen);

/* "1.25 M", "987" into @buf: event counts and rates, as the report and the evring
 * command show them (report-util.c). Return: @buf. */
const char *evr_fmt_count(double n, char *buf, size_t len);

/* ---- the report model (report-model.c) ------------------------------------- */

#define EVR_RPT_BUCKETS 256		/* most time buckets kept for the rate plots */

/* u32 -> pointer hash (report-util.c); the model's lookups. */
struct evr_rpt_map {
	uint32_t *keys;
	void **vals;
	uint32_t cap;			/* a power of two, or 0 */
	uint32_t n;
};

struct evr_rpt_event {			/* one event type (rid) */
	const struct evr_schema_event *schema;	/* NULL: undescribed */
	uint32_t rid;
	uint32_t provider;		/* index into evr_rpt.providers */
	uint64_t count;
};

struct evr_rpt_provider {
	char *name;
	uint64_t count;
	uint64_t *buckets;		/* EVR_RPT_BUCKETS counts */
};

struct evr_rpt_thread {
	uint32_t tid;
	uint64_t count;
};

struct evr_rpt_point {
	uint64_t ts_ns;
	double value;
};

struct evr_rpt_counter {		/* one counter series: provider + name */
	char *provider, *name, *display, *unit;
	uint32_t kind;			/* enum evr_sample_kind of the first sample */
	uint32_t interval_ms;
	uint64_t samples;
	double min, max, sum, last;	/* of evr_counter_sample.value */
	struct evr_rpt_point *points;	/* at most EVR_RPT_POINTS, thinned evenly */
	uint32_t npoints, stride;	/* every stride-th sample is kept */
};

#define EVR_RPT_POINTS 2048

struct evr_rpt {
	/* the file */
	const struct evr_process_info *proc;	/* NULL: no PROCESS chunk */
	const struct evr_trace_session *sess;	/* NULL: no SESSION chunk */
	struct evr_trace_stats st;
	/* totals */
	uint64_t events, lost, undecodable, bad_samples;
	/* events the END chunk counts that the damaged file lacks: not in lost
	 * (the producer's and recorder's losses), but in ring_lost (gaps per ring) */
	uint64_t damaged;
	uint64_t first_ts, last_ts;	/* of all views; 0 if none */
	/* lost per ring, and events per ring */
	uint32_t nr_rings;
	uint64_t *ring_lost, *ring_events;
	/* tables */
	struct evr_rpt_provider *providers;
	uint32_t nproviders;
	struct evr_rpt_event **events_v;	/* every event type seen, in order of first sight */
	uint32_t nevents;
	struct evr_rpt_thread **threads_v;
	uint32_t nthreads;
	struct evr_rpt_counter *counters;
	uint32_t ncounters;
	/* rate buckets: bucket i covers [first_ts + i * bucket_ns, + bucket_ns) */
	uint64_t bucket_ns;
	uint64_t lost_buckets[EVR_RPT_BUCKETS];
	/* lookups */
	struct evr_rpt_map by_rid, by_tid;
};

/**
 * evr_rpt_build() - read every record of @r into @m (zeroed by the caller).
 * @m: keeps pointers into @r's schemas and process info: use it while @r lives.
 * Return: 0, or -errno with one line in @err (the reader's error, out of memory).
 * Context: the caller's thread.
 */
int evr_rpt_build(struct evr_trace_reader *r, struct evr_rpt *m, char *err, size_t errlen);
/* Free what evr_rpt_build() allocated; @m may be zeroed or half built. */
void evr_rpt_fini(struct evr_rpt *m);

/* The traced command: argv joined by spaces, or exe, or "?"; into @sb. Return: 0, -ENOMEM. */
int evr_rpt_command(const struct evr_rpt *m, struct evr_strbuf *sb);

/* Event types, threads and counters sorted for display (count descending...). */
void evr_rpt_sort(struct evr_rpt *m);

/* The span in ns (last - first), at least 1. */
uint64_t evr_rpt_span(const struct evr_rpt *m);

/* "Provider/Event", or "Provider/rid N" for an undescribed event, into @buf. */
const char *evr_rpt_event_name(const struct evr_rpt *m, const struct evr_rpt_event *e,
			       char *buf, size_t len);

/* A thread's name from the trace, "" when it has none, "(unknown thread)" for tid 0. */
const char *evr_rpt_thread_name(const struct evr_trace_reader *r, uint32_t tid);

/* ---- escaping (report-util.c) ------------------------------------------------- */

/*
 * Append @n bytes (or the string @s) escaped for HTML text and attribute
 * values, each invalid UTF-8 sequence replaced by U+FFFD: for any bytes a
 * traced process sent. Return: 0 or -ENOMEM. Context: any thread.
 */
int evr_rpt_html_str(struct evr_strbuf *sb, const void *data, size_t n);
int evr_rpt_html_cstr(struct evr_strbuf *sb, const char *s);

/* ---- report outputs --------------------------------------------------------- */

/**
 * evr_rpt_json() - append the report of a sorted model @m as one JSON object
 * and a newline to @sb (the `evring report --json` document).
 * @r: the reader @m was built from (thread names); @path: the "file" member.
 * Return: 0 or -ENOMEM.
 * Context: the caller's thread.
 */
int evr_rpt_json(struct evr_strbuf *sb, const struct evr_rpt *m, const struct evr_trace_reader *r,
		 const char *path);

/**
 * evr_rpt_html() - append the whole self-contained HTML page of a sorted
 * model @m to @out (no script or style from elsewhere).
 * Return: 0 or -ENOMEM.
 * Context: the caller's thread.
 */
int evr_rpt_html(const struct evr_rpt *m, const struct evr_trace_reader *r, const char *path,
		 struct evr_strbuf *out);

#endif /* EVR_EXPORT_H */
