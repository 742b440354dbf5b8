/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The trace file's space allocated ahead of the recorder's direct writes
 * (recorder-alloc.c; docs/recorder.md "I/O engine"), so that each write is an
 * overwrite inside the file's size, not an append that moves it.
 */
#ifndef EVR_RECORDER_ALLOC_H
#define EVR_RECORDER_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

/* So much at a time, asked for when the writes come within half of it of its
 * end: a request every quarter second of a 500 MB/s stream. */
#define EVR_ALLOC_STEP		(128ull << 20)

struct evr_alloc {
	int fd;
	uint64_t step;			/* EVR_ALLOC_STEP, or the environment's (below) */
	bool on;			/* still allocating ahead */
	bool used;			/* something was: the file is cut back at the end */
	uint64_t end;			/* the file's size, allocated up to there */
	int err;			/* why not, or why it stopped: -errno, 0 */
};

/**
 * evr_alloc_start() - allocate the first EVR_ALLOC_STEP bytes from @fd's
 * position (fallocate() mode 0, which moves the size too), unless the
 * environment has EVR_RECORDER_NO_PREALLOC=1 (tests, benchmarks).
 * EVR_RECORDER_PREALLOC_MIB=N (1 to 1024) makes the step N MiB, so that a
 * test fills a small disk after the first step.
 * Return: true if it did; else @a->err says why (EOPNOTSUPP, ENOSPC, EPERM).
 * Context: before the recording's sandbox, before the first write.
 */
bool evr_alloc_start(struct evr_alloc *a, int fd);

/**
 * evr_alloc_ahead() - from the writer's thread, before a write that takes the
 * file from @from to @upto bytes: one more step when @upto comes within half
 * a step of the space allocated. A refusal (a disk full of what is allocated
 * already, a seccomp filter) stops it: the writes append from there on.
 */
void evr_alloc_ahead(struct evr_alloc *a, uint64_t from, uint64_t upto);

/**
 * evr_alloc_trim() - the end of the writes: cut the file back to the @size
 * bytes written (all of them, the page cache's too) wherever space was
 * allocated ahead, also when a step was refused part of the way. Nothing
 * when none was.
 * Return: 0 or -errno of ftruncate().
 */
int evr_alloc_trim(struct evr_alloc *a, uint64_t size);

#endif
