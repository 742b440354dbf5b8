/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `evring convert`: one trace file to other formats. convert.c parses the
 * command line, opens the trace and calls one writer below; each writer reads
 * the trace with the trace reader (<evring/trace.h>) and writes its format.
 */
#ifndef EVR_CONVERT_H
#define EVR_CONVERT_H

#include <stdint.h>
#include <stdio.h>

#include <evring/trace.h>

/* What every writer reports, for the summary line on stderr. */
struct evr_convert_stats {
	uint64_t events;		/* events written */
	uint64_t lost;			/* lost events carried into the output */
	uint64_t bytes;			/* bytes of output written */
	uint64_t undecodable;		/* events without a schema or whose payload did not decode */
};

/**
 * evr_convert_ctf() - write @r as a CTF 1.8 trace into directory @dir: a
 * `metadata` file (TSDL) and one data stream file per ring that has events.
 * @r: a freshly opened reader; consumed with evr_trace_reader_next().
 * @dir: created if missing (mode 0755); an existing directory must be empty.
 * Return: 0, or -errno after printing one line (evr_cli_error("convert", ...)).
 * Context: the caller's thread.
 */
int evr_convert_ctf(struct evr_trace_reader *r, const char *dir, struct evr_convert_stats *ret);

/**
 * evr_convert_chrome() - write @r as Chrome trace-event JSON (the "JSON Object
 * Format": {"traceEvents":[...],"displayTimeUnit":"ns",...}) to @out.
 * Return: 0, or -errno after printing one line.
 */
int evr_convert_chrome(struct evr_trace_reader *r, FILE *out, struct evr_convert_stats *ret);

/**
 * evr_convert_jsonl() - one JSON object per event and line, exactly as
 * `evring dump --json` prints them (evr_event_to_json()).
 * Return: 0, or -errno after printing one line.
 */
int evr_convert_jsonl(struct evr_trace_reader *r, FILE *out, struct evr_convert_stats *ret);

#endif /* EVR_CONVERT_H */
