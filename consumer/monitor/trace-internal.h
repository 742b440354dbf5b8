/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The monitor's traces: what trace.c and trace-output.c share. */
#ifndef EVR_MONITOR_TRACE_INTERNAL_H
#define EVR_MONITOR_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum evr_mon_format {
	EVR_MON_FMT_EVTRACE,		/* evring's trace format (docs/trace-format.md) */
	EVR_MON_FMT_CHROME,		/* Chrome trace-event JSON */
	EVR_MON_FMT_JSONL,		/* JSON lines, as evring dump --json */
	EVR_MON_FMT_CTF,		/* CTF 1.8, a tar of the trace directory */
};

/* "evtrace", "chrome", "jsonl" (or "ndjson"), "ctf"; NULL: evtrace. Return: 0, -EINVAL. */
int evr_mon_format_parse(const char *s, enum evr_mon_format *ret);
const char *evr_mon_format_name(enum evr_mon_format f);
const char *evr_mon_format_ctype(enum evr_mon_format f);
/* "PID-20260101T120000Z.evtrace" (.json, .jsonl, .ctf.tar). */
void evr_mon_trace_filename(pid_t pid, uint64_t realtime_ns, enum evr_mon_format f, char *buf,
			    size_t len);

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
