/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Write-behind for buffered trace writes (trace-writer.c; docs/recorder.md,
 * "Through the page cache"): where new page-cache pages are dear, the
 * writeback of what lies half a window behind the end is started, and what
 * lies a window behind is waited for and dropped, so that the page cache's
 * pages are used again instead of new ones.
 */
#ifndef EVR_WRITE_BEHIND_H
#define EVR_WRITE_BEHIND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct evr_write_behind {
	int fd;			/* the writer's own descriptor, dup()ed */
	bool on;		/* a regular file off tmpfs */
	bool drop;		/* pages a window behind written back and dropped */
	bool forced;		/* drop set by the tests' knob, not measured */
	bool inline_only;	/* no worker could be started: the writer does it */
	bool owns_fd;		/* @fd is ours to close */
	uint32_t stall_ms;	/* the tests' disk stall before each step */
	uint64_t base;		/* the file offset of the writer's byte 0 */
	uint64_t window;	/* bytes left in the page cache behind the end */
	uint64_t posted;	/* the end last handed to the worker */
	/* The worker (started at the first drop): its state under @mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* the worker's: something posted */
	pthread_cond_t done;	/* the writer's: the worker moved on */
	pthread_t worker;
	bool started, quit, failed;
	uint64_t end;		/* the writer's end, as last posted */
	uint64_t gen;		/* resumes: a step begun before one is forgotten */
	uint64_t kicked;	/* writer bytes whose writeback was started */
	uint64_t dropped;	/* writer bytes waited for and dropped */
	/* The window being measured: from writer byte t0_bytes, when the writing
	 * thread (t0_tid) had spent t0_sys_ns of system time. */
	uint64_t t0_sys_ns;
	uint64_t t0_bytes;
	int t0_tid;
};

/*
 * evr_write_behind_init() - set up for buffered writes to @fd, whose byte
 * @written of the writer's stream is at the file's current position. Off for
 * anything but a regular file on a file system with a disk behind it (tmpfs
 * and ramfs keep their pages: there is nothing to write back). Call before a
 * sandbox: it asks fstat(), fstatfs() and lseek().
 */
void evr_write_behind_init(struct evr_write_behind *b, int fd, uint64_t written);

/*
 * evr_write_behind_note() - the writer's stream now ends at byte @end (all of
 * it handed to write()): at the end of each window written, whether to drop
 * from now on is decided from what it cost; while dropping, the writeback of
 * what lies half a window behind is started and what lies a window behind is
 * waited for and dropped, by a thread of its own (the writer never waits for
 * the disk here: starting a writeback blocks too while the disk's queue is
 * full), or by the writer where no thread can be had. Stops for good at the
 * first refusal (a sandbox, a file system without it).
 */
void evr_write_behind_note(struct evr_write_behind *b, uint64_t end);

/*
 * evr_write_behind_resume() - buffered writes again from writer byte @written,
 * after direct ones (which left nothing in the page cache): the writeback and
 * the drops go on from there, and the window being measured starts there.
 */
void evr_write_behind_resume(struct evr_write_behind *b, uint64_t written);

/*
 * evr_write_behind_fini() - the writer is done: the worker, if any, does the
 * steps posted and ends; the descriptor is closed. @b may be all zero
 * (never initialised).
 */
void evr_write_behind_fini(struct evr_write_behind *b);

#endif
