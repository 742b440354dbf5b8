/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The monitor's traces: what trace.c and trace-output.c share. */
#ifndef EVR_MONITOR_TRACE_INTERNAL_H
#define EVR_MONITOR_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <stdbool.h>

#include <jansson.h>

struct evr_client;
struct evr_recorder;
struct evr_sideband;

enum evr_mon_format {
	EVR_MON_FMT_EVTRACE,		/* evring's trace format (docs/trace-format.md) */
	EVR_MON_FMT_CHROME,		/* Chrome trace-event JSON */
	EVR_MON_FMT_JSONL,		/* JSON lines, as evring dump --json */
	EVR_MON_FMT_CTF,		/* CTF 1.8, a tar of the trace directory */
	EVR_MON_FMT_FOLDED,		/* folded stacks (profiles: CPU samples or event stacks) */
	EVR_MON_FMT_SPEEDSCOPE,		/* speedscope JSON */
	EVR_MON_FMT_PPROF,		/* pprof, gzip'd protobuf */
};

/*
 * "evtrace" (or "evring"; NULL: evtrace), else a name or alias of libevring-export's
 * table (evr_export_formats[]: chrome, jsonl, ctf, folded, speedscope, pprof), as
 * `evring convert --format` takes them; "ndjson" for jsonl. Return: 0, -EINVAL.
 */
int evr_mon_format_parse(const char *s, enum evr_mon_format *ret);
const char *evr_mon_format_name(enum evr_mon_format f);
const char *evr_mon_format_ctype(enum evr_mon_format f);
/* "PID-20260101T120000Z.evtrace" (.json, .jsonl, .ctf.tar). */
void evr_mon_trace_filename(pid_t pid, uint64_t realtime_ns, enum evr_mon_format f, char *buf,
			    size_t len);

/* A trace's parameters (trace-params.c): the query's or the JSON body's. */
struct evr_mon_tparams {
	const char *providers;		/* borrowed from the request */
	uint64_t buffer_size;		/* in all, at most 1G; 0: the producer's default */
	uint32_t mode;
	uint32_t counter_ms;
	uint64_t duration_ns;		/* 0: until stopped (at most --max-duration) */
	uint64_t max_size;		/* 0: --max-trace-size */
	enum evr_mon_format format;
	uint32_t stack_depth;		/* stacks=N: each event's stack (record --stacks); 0: none */
	uint32_t sample_hz;		/* sample_cpu=HZ: CPU samples (record --sample-cpu); 0: none */
};

/*
 * evr_mon_tparams_set() - parameter @key = @val into @p (borrowed: @val must live
 * as long as @p). Return: 0, or -EINVAL with one line in @err naming the parameter
 * and, for a value over a limit, the limit.
 */
int evr_mon_tparams_set(struct evr_mon_tparams *p, const char *key, const char *val, char *err,
			size_t errlen);
/*
 * evr_mon_tparams_from_json() - a JSON object of the same names; numbers are taken
 * for buffer_size and max_size (bytes), and for duration and counter_interval
 * (seconds). Strings are borrowed from @body. Return: 0, -EINVAL with @err.
 */
int evr_mon_tparams_from_json(json_t *body, struct evr_mon_tparams *p, char *err, size_t errlen);

struct evr_mon_req;
/*
 * evr_mon_trace_answer() - GET /processes/{pid}/trace once its parameters are
 * read: record @pid with @p for its duration (an operation) and answer with the
 * trace in @p->format. The heap route (heap.c) is this with its own parameters.
 */
enum MHD_Result evr_mon_trace_answer(struct evr_mon_req *q, pid_t pid,
				     const struct evr_mon_tparams *p);

/* trace-side.c: the side band of stacks= and sample_cpu=, and the providers' warning. */
struct evr_mon_sideband {
	struct evr_sideband *sb;	/* NULL: neither asked */
	bool started;
	uint32_t sample_hz;
};

/* stacks (@stack_depth) or sample_cpu (@sample_hz): the side band, before recording.
 * Return: 0 (nothing when neither), -errno with @err (-EACCES: perf_event_paranoid). */
int evr_mon_sideband_open(struct evr_mon_sideband *s, pid_t pid, uint32_t stack_depth,
			  uint32_t sample_hz, char *err, size_t errlen);
/* evr_recorder_start() with @s's side band added. Return: 0, -errno with @err. */
int evr_mon_recorder_start(struct evr_recorder *rec, struct evr_mon_sideband *s, int fd,
			   char *err, size_t errlen);
/* After evr_recorder_free(), which borrows @s. */
void evr_mon_sideband_free(struct evr_mon_sideband *s);
/*
 * evr_mon_providers_warning() - as `evring record` warns: the providers @providers
 * names that process @pid has no event of (they record nothing), one line in @buf
 * fit for a header; "" when none, or when the process cannot say. One round trip.
 */
void evr_mon_providers_warning(struct evr_client *c, const char *providers, pid_t pid,
			       char *buf, size_t len);

/* An unnamed read-write file in @dir. Return: the fd, or -errno with @err set. */
int evr_mon_tmpfile(const char *dir, char *err, size_t errlen);

/**
 * evr_mon_trace_convert() - the trace in @trace_fd (evring's format, complete)
 * as format @f, in a new file.
 * @top: the directory name inside a CTF tar.
 * @client_fd: the requesting client's socket, or -1: when it goes away, the
 *	conversion stops with -ECONNABORTED (checked at each 64 KiB written).
 * @ret_fd: the new file (a dup of @trace_fd for evtrace), positioned anywhere:
 *	send it by size and offset 0.
 * Return: 0, or -errno with one line in @err.
 * Context: any thread; reads @trace_fd with pread only.
 */
int evr_mon_trace_convert(int trace_fd, enum evr_mon_format f, const char *outdir,
			  const char *top, int client_fd, int *ret_fd, char *err, size_t errlen);

#endif /* EVR_MONITOR_TRACE_INTERNAL_H */
