/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring report's system-call section (record --syscalls): per process, a table
 * like `strace -c` / `perf trace -s` (calls, errors and their errno, total, max
 * and average wall time per call, the heaviest total first), in the text
 * tables and in --json ("syscalls", docs/syscalls.md).
 */
#ifndef EVR_REPORT_SYSCALLS_H
#define EVR_REPORT_SYSCALLS_H

#include <stdio.h>

#include <evring/export.h>
#include <evring/syscalls.h>

struct evr_trace_reader;

struct evr_report_syscalls {
	bool recorded;			/* the trace has system calls (or their INFO chunk) */
	bool unreadable;		/* a stream: chunks cannot be read ahead */
	uint32_t machine;
	uint64_t calls, lost;
	struct evr_syscall_stat *v;	/* by process, the heaviest total first */
	size_t n;
	uint32_t main_pid;		/* the traced process (named) */
	char main_name[64];
};

/*
 * Load the system calls of @r and sum them up; before the events are read (it
 * reads the file's SYSCALLS chunks through @r). Return: 0, -ENOMEM; a
 * malformed chunk is left out with a warning.
 */
int evr_report_syscalls_build(struct evr_trace_reader *r, const char *path,
			      struct evr_report_syscalls *ret);
void evr_report_syscalls_fini(struct evr_report_syscalls *s);

/*
 * The system calls of trace @r (record --syscalls), for a command @cmd
 * reading @path: a malformed chunk is left out with a warning; @ret is NULL
 * for a stream (chunks cannot be read ahead). Return: 0, -ENOMEM, -EIO.
 */
int evr_cli_syscalls_load(const char *cmd, const char *path, struct evr_trace_reader *r,
			  struct evr_syscall_set **ret);

/* The text section (nothing when the trace was recorded without --syscalls). */
void evr_report_syscalls_print(FILE *f, const struct evr_report_syscalls *s);

/*
 * Add "syscalls" (every process's calls together) and "syscalls_by_process" to
 * the JSON object @sb holds (ending in "}\n"); nothing without system calls.
 * Return: 0, -ENOMEM, -EINVAL if @sb is no such object.
 */
int evr_report_syscalls_json(struct evr_strbuf *sb, const struct evr_report_syscalls *s);

#endif /* EVR_REPORT_SYSCALLS_H */
