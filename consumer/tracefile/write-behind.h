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

#include <stdbool.h>
#include <stdint.h>

struct evr_write_behind {
	int fd;
	bool on;		/* a regular file off tmpfs */
	bool drop;		/* pages a window behind written back and dropped */
	bool forced;		/* drop set by the tests' knob, not measured */
	uint64_t base;		/* the file offset of the writer's byte 0 */
	uint64_t kicked;	/* writer bytes whose writeback was started */
	uint64_t dropped;	/* writer bytes waited for and dropped */
	uint64_t window;	/* bytes left in the page cache behind the end */
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
 * from now on is decided from what it cost; while dropping, start the
 * writeback of what lies half a window behind and wait for and drop what lies
 * a window behind. Stops for good at the first refusal (a sandbox, a file
 * system without it).
 */
void evr_write_behind_note(struct evr_write_behind *b, uint64_t end);

/*
 * evr_write_behind_resume() - buffered writes again from writer byte @written,
 * after direct ones (which left nothing in the page cache): the writeback and
 * the drops go on from there, and the window being measured starts there.
 */
void evr_write_behind_resume(struct evr_write_behind *b, uint64_t written);

#endif
