// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The trace file's space allocated ahead of the direct writes
 * (recorder-alloc.h).
 *
 * A direct write that makes the file longer moves its size in a journal
 * transaction (ext4) under the inode's exclusive lock, and allocates its
 * blocks on the way; one inside the size, over allocated blocks (unwritten
 * ones too), is an overwrite that only waits for the disk. The io_uring
 * engine (recorder-uring.c) needs that for its writes to overlap and asks
 * for the later steps through io_uring; one write at a time (--io direct,
 * or io_uring refused) asks here, from the recorder's thread, a system call
 * per step (EVR_ALLOC_STEP: every 0.25 s of a 500 MB/s stream). Both cut the
 * file back to what was written at the end; a recorder killed before leaves
 * a tail of zeros, which the readers take for that (docs/trace-format.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder-alloc.h"

bool evr_alloc_start(struct evr_alloc *a, int fd)
{
	const char *no = getenv("EVR_RECORDER_NO_PREALLOC");
	const char *mib = getenv("EVR_RECORDER_PREALLOC_MIB");
	off_t pos;

	*a = (struct evr_alloc){ .fd = fd, .step = EVR_ALLOC_STEP };
	if (mib) {
		char *end;
		unsigned long n = strtoul(mib, &end, 10);

		if (end != mib && !*end && n >= 1 && n <= 1024)
			a->step = (uint64_t)n << 20;
	}
	if (no && strcmp(no, "1") == 0) {
		a->err = -EPERM;
		return false;
	}
	pos = lseek(fd, 0, SEEK_CUR);
	if (pos < 0) {
		a->err = -errno;
		return false;
	}
	if (fallocate(fd, 0, pos, (off_t)a->step) < 0) {
		a->err = -errno;
		return false;
	}
	a->on = true;
	a->used = true;
	a->end = (uint64_t)pos + a->step;
	return true;
}

void evr_alloc_ahead(struct evr_alloc *a, uint64_t from, uint64_t upto)
{
	uint64_t base;

	if (!a->on || upto + a->step / 2 <= a->end)
		return;
	/* Buffered writes after a fall back may have taken the file past the
	 * space: on from its end then. */
	base = a->end > from ? a->end : from;
	if (fallocate(a->fd, 0, (off_t)base, (off_t)a->step) < 0) {
		a->err = -errno;
		a->on = false;
		return;
	}
	a->end = base + a->step;
}

int evr_alloc_trim(struct evr_alloc *a, uint64_t size)
{
	a->on = false;
	/*
	 * Whatever a->end says: a step refused for want of room (ENOSPC) may
	 * have allocated part of its range and moved the size that far (ext4
	 * does, as it goes), and the writes then stop short of that on a full
	 * disk. @size is every byte written (through the page cache too), so
	 * the cut never takes one. No fstat(): the recording's seccomp filter
	 * allows ftruncate() for this, not that.
	 */
	if (!a->used)
		return 0;
	if (ftruncate(a->fd, (off_t)size) < 0)
		return -errno;
	a->end = size;
	return 0;
}
