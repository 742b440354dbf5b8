/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clrtop's core: what the viewer computes without a terminal or a process, so
 * that unit tests can check it: numbers with units, the --counters filter,
 * option values, the overview's sort order and the csv/json sample lines.
 * Everything here is pure (no I/O, no globals) and safe from any thread.
 */
#ifndef EVR_CLRTOP_H
#define EVR_CLRTOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <evring/counter-sample.h>
#include <evring/schema.h>

/* ---- numbers ------------------------------------------------------------------------------ */

/**
 * evr_top_fmt_number() - @v for a person: thousands separators ("1,234,567"), one or
 * two decimals for values that are not whole ("12.35", "1,234.6"), "%.3g" past
 * 10^15, "-" for NaN and infinities.
 * Context: any thread.
 */
void evr_top_fmt_number(char *buf, size_t len, double v);

/**
 * evr_top_fmt_value() - a counter's value with its unit: bytes ("B", "KB", "MB",
 * "GB"; KB and friends are taken as binary multiples, as minirt and .NET's
 * runtime compute them) as "12.3 MiB", times ("ns", "us", "ms", "s") scaled to
 * the largest unit under 1000 of it, "%" as "12.3%", other units appended
 * after a space. A RATE sample (@kind EVR_SAMPLE_RATE) is per second: "/s" is
 * appended, except to "%" (a rate of percent is already a share of time).
 * @signed_: prefix "+" to positive values (for changes).
 * Context: any thread.
 */
void evr_top_fmt_value(char *buf, size_t len, double v, const char *unit, uint32_t kind, bool signed_);

/**
 * evr_top_parse_seconds() - "0.5", "2", "1.5s", "250ms", "00:00:01" (any form of
 * evr_duration_parse(): seconds, units, dotnet's hh:mm:ss) into milliseconds.
 * Return: 0, or -EINVAL (not a duration) or -ERANGE (outside [@min_ms,
 * @max_ms]); @ret_ms untouched on failure.
 */
int evr_top_parse_seconds(const char *s, uint32_t min_ms, uint32_t max_ms, uint32_t *ret_ms);

/* ---- --counters ------------------------------------------------------------------------ */

struct evr_top_filter_provider {
	char *name;
	uint32_t ncounters;		/* 0: every counter of the provider */
	char **counters;
};

/* Zero-initialized: no filter (every provider, every counter). */
struct evr_top_filter {
	uint32_t n;
	struct evr_top_filter_provider *v;
};

/**
 * evr_top_filter_parse() - the --counters argument, as dotnet-counters takes it:
 * "System.Runtime[gc-heap-size,cpu-usage],Process" (a provider alone means all
 * its counters).
 * @ret: zero-initialized; filled on success, free with evr_top_filter_fini().
 * Return: 0, -EINVAL with a one-line reason in @err, -ENOMEM.
 */
int evr_top_filter_parse(const char *text, struct evr_top_filter *ret, char *err, size_t errlen);
void evr_top_filter_fini(struct evr_top_filter *f);

/* Whether counter @name (@name_len bytes) of @provider passes the filter. */
bool evr_top_filter_wants(const struct evr_top_filter *f, const char *provider, const char *name,
		     size_t name_len);

/**
 * evr_top_provider_spec() - the session's provider list for @names: each as
 * "Name:0x0:0", which enables only the keyword-0, LogAlways events of the
 * provider: its Counter* events and none of its other events.
 * Return: malloc'ed string (the caller frees it), NULL when out of memory.
 */
char *evr_top_provider_spec(const char *const *names, uint32_t n);

/* ---- the overview's rows -------------------------------------------------------------------- */

enum evr_top_col {
	EVR_TOP_COL_PID,
	EVR_TOP_COL_NAME,
	EVR_TOP_COL_CPU,		/* Process/cpu-usage, % of one CPU */
	EVR_TOP_COL_WS,		/* Process/working-set, bytes */
	EVR_TOP_COL_THREADS,		/* Process/threads */
	EVR_TOP_COL_GCHEAP,		/* System.Runtime/gc-heap-size, bytes */
	EVR_TOP_COL_GEN0,		/* System.Runtime/gen-0-gc-count, per second */
	EVR_TOP_COL_TPQUEUE,		/* System.Runtime/threadpool-queue-length */
	EVR_TOP_COL_EXC,		/* System.Runtime/exception-count, per second */
	EVR_TOP_COL_MAX_,
};

struct evr_top_row {
	pid_t pid;
	pid_t ns_pid;			/* in a pid namespace of its own (a container), or 0 */
	char name[64];
	double val[EVR_TOP_COL_MAX_];	/* numeric columns */
	bool has[EVR_TOP_COL_MAX_];		/* false: the process has no such counter (yet) */
	const void *ctx;		/* the caller's, carried along */
};

/* "PID", "CPU%"... */
const char *evr_top_col_title(enum evr_top_col col);

/**
 * evr_top_rows_sort() - order rows by @col: numbers largest first and names and pids
 * in ascending order, the other way when @reverse; rows without a value go last
 * either way; ties by pid.
 * Context: any thread.
 */
void evr_top_rows_sort(struct evr_top_row *rows, size_t n, enum evr_top_col col, bool reverse);

/* ---- recorded samples ---------------------------------------------------------------------- */

enum evr_top_export_format { EVR_TOP_EXPORT_NONE, EVR_TOP_EXPORT_CSV, EVR_TOP_EXPORT_JSON };

/* "csv" -> EVR_TOP_EXPORT_CSV...; -EINVAL for anything else. */
int evr_top_export_format_parse(const char *s);

/* The csv header line, with its newline. */
int evr_top_csv_header(struct evr_strbuf *out);

/**
 * evr_top_sample_line() - one sample of process @pid as a csv row or a JSON object,
 * with its newline: timestamp (ISO 8601 UTC with microseconds, from
 * @realtime_ns), pid, provider, counter name, display name, unit, kind, value,
 * then the kind's statistics (csv: empty columns for the other kinds' ones).
 * Return: 0 or -ENOMEM.
 */
int evr_top_sample_line(struct evr_strbuf *out, enum evr_top_export_format fmt, uint64_t realtime_ns,
		   pid_t pid, const struct evr_counter_sample *s);

/* "2024-05-01T12:34:56.123456Z" (28 bytes with the NUL). */
void evr_top_fmt_iso8601(char *buf, size_t len, uint64_t realtime_ns);

#endif /* EVR_CLRTOP_H */
