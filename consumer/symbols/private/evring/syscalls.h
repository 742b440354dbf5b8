/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * System calls of the recorded process (evring record --syscalls): the tracer
 * that reads perf_events' raw_syscalls tracepoints (syscalls.c), the records
 * it stores in trace files (docs/trace-format.md, docs/syscalls.md), and their
 * reading and summary (syscalls-read.c).
 */
#ifndef EVR_SYSCALLS_H
#define EVR_SYSCALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <evring/symbols.h>

/* Chunk kinds (enum evr_trace_chunk_kind leaves them to their writers). */
#define EVR_CHUNK_SYSCALLS 20u		/* struct evr_syscall_rec, repeated */
#define EVR_CHUNK_SYSCALL_INFO 21u	/* struct evr_syscall_info_rec, once at the end */

/* One system call: its entry and exit, paired by the recorder. */
struct evr_syscall_rec {
	uint64_t time_ns;		/* entry, CLOCK_MONOTONIC as the events' timestamps */
	uint64_t dur_ns;		/* exit - entry; 0 with a NO_ flag */
	uint32_t pid;
	uint32_t tid;
	int32_t nr;			/* the system call's number (info.machine's table) */
	uint32_t flags;			/* EVR_SYSCALL_* */
	int64_t ret;			/* the return value; -4095..-1: -errno */
	uint64_t args[4];		/* the first four arguments, raw (0 with NO_ENTER) */
};
_Static_assert(sizeof(struct evr_syscall_rec) == 72, "SYSCALLS record layout");

enum evr_syscall_flags {
	EVR_SYSCALL_NO_ENTER = 1u << 0,	/* the entry was lost: time_ns is the exit's */
	EVR_SYSCALL_NO_EXIT = 1u << 1,	/* no exit (exit_group, or still in it at the end): ret 0 */
};

/* The SYSCALL_INFO chunk: how the calls were recorded, and the totals. */
struct evr_syscall_info_rec {
	uint32_t machine;		/* ELF e_machine of the numbers (EM_X86_64: 62) */
	uint32_t threads;		/* threads opened (later ones followed by inherit) */
	uint32_t cpus;			/* rings */
	uint32_t nfilter;		/* system calls selected by --syscalls=LIST; 0: all */
	uint64_t calls;			/* records stored */
	uint64_t lost;			/* tracepoint records the kernel lost (ring full) */
	uint64_t unpaired;		/* calls stored with a NO_ENTER or NO_EXIT flag */
	uint64_t reserved;		/* 0 */
};
_Static_assert(sizeof(struct evr_syscall_info_rec) == 48, "SYSCALL_INFO record layout");

/* ---- names (a table generated from <asm/unistd.h> at build time) ---------------- */

/* The name of system call @nr of this build's architecture, or NULL. */
const char *evr_syscall_name(int32_t nr);

/* The number of system call @name, or -ENOENT. */
int evr_syscall_number(const char *name);

/* "syscall_NNN" when the table has no name: in @buf (at least 24 bytes). */
const char *evr_syscall_name_or_nr(int32_t nr, uint32_t machine, char *buf, size_t len);

/* ELF e_machine of this build's numbers. */
uint32_t evr_syscall_machine(void);

/* ---- the tracer (recorder side) ------------------------------------------------- */

struct evr_syscalls;

/**
 * evr_syscalls_new() - find (or, as root, mount) tracefs, open the
 * raw_syscalls:sys_enter/sys_exit tracepoints on every thread of @pid, one
 * ring per CPU (perf-ring.c), inherited by the threads created later.
 * @list: "write,openat,17" to keep only these calls, or NULL for all.
 * @note: a line for the user ("mounted tracefs at ..."), or "".
 * Return: 0, -EINVAL (a name not known in @list), -EACCES/-EPERM (errbuf names
 * the missing permission), -ENOENT (no tracefs), -ESRCH, -ENOMEM.
 */
int evr_syscalls_new(pid_t pid, const char *list, struct evr_syscalls **ret, char *note,
		     size_t notelen, char *errbuf, size_t errlen);

/* Move the paired calls out of the rings into SYSCALLS chunks. */
int evr_syscalls_drain(struct evr_syscalls *s, evr_sideband_emit_fn *emit, void *ctx);

/* The last drain, the calls never finished, and the SYSCALL_INFO chunk. */
int evr_syscalls_finish(struct evr_syscalls *s, evr_sideband_emit_fn *emit, void *ctx);

void evr_syscalls_info(const struct evr_syscalls *s, struct evr_syscall_info_rec *ret);

void evr_syscalls_free(struct evr_syscalls *s);

/* ---- reading and summing (readers) ------------------------------------------------ */

struct evr_trace_reader;

/* A trace's system calls, loaded whole and sorted by entry time. */
struct evr_syscall_set {
	size_t n;
	struct evr_syscall_rec *v;
	bool has_info;
	struct evr_syscall_info_rec info;
};

/**
 * evr_syscalls_load() - the records of @r's SYSCALLS chunks.
 * @ret: n is 0 when there are none; free with evr_syscalls_set_free().
 * Return: 0, -EBADMSG (a malformed chunk: left out, the rest kept), -ENOMEM.
 */
int evr_syscalls_load(struct evr_trace_reader *r, struct evr_syscall_set **ret);
void evr_syscalls_set_free(struct evr_syscall_set *s);

#define EVR_SYSCALL_ERRNOS 4		/* errno values kept per system call */

/* One line of a strace -c style summary. */
struct evr_syscall_stat {
	uint32_t pid;
	int32_t nr;
	uint64_t count;
	uint64_t timed;			/* calls with a duration (entry and exit seen) */
	uint64_t errors;		/* returns in -4095..-1 */
	uint64_t total_ns, max_ns, min_ns;
	uint16_t errnos[EVR_SYSCALL_ERRNOS];	/* the most frequent first */
	uint64_t errno_count[EVR_SYSCALL_ERRNOS];
};

/**
 * evr_syscalls_summary() - per (process, system call) statistics of @s, sorted
 * by process, then by total time (the heaviest first). Calls without an exit
 * count as calls, without time.
 * Return: 0, -ENOMEM. @ret: free().
 */
int evr_syscalls_summary(const struct evr_syscall_set *s, struct evr_syscall_stat **ret,
			 size_t *n);

#include <stdio.h>

/*
 * evr_syscalls_chrome_write() - the calls of @ctx (a struct evr_syscall_set) as
 * Chrome trace events, "ph":"X" slices on their threads' tracks, for
 * evr_chrome_stacks.write_events. Return: bytes written, or -EIO.
 */
long evr_syscalls_chrome_write(void *ctx, FILE *out, bool first);

/* "ENOENT" for errno @e, or its number in @buf. */
const char *evr_errno_name(int e, char *buf, size_t len);

#endif /* EVR_SYSCALLS_H */
