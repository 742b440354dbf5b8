// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr_untrusted_open(): see <evring/untrusted-file.h> for why.
 *
 * The rejected alternatives: open(O_RDONLY) then fstat() (what the perf map
 * reader did) blocks in open() on a FIFO before anything is checked; stat()
 * then open() (what libdwfl's dwfl_linux_proc_find_elf() does) leaves a window
 * in which the name can be swapped for a FIFO; open(O_NONBLOCK) does not block
 * on a FIFO but still runs a device's open, and a tty could become our
 * controlling terminal without O_NOCTTY. O_PATH opens none of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <evring/untrusted-file.h>

static int check(const struct stat *st, const struct evr_untrusted_rules *r)
{
	if (!S_ISREG(st->st_mode))
		return -EPERM;
	if (r->owner != EVR_UNTRUSTED_ANY_OWNER && st->st_uid != r->owner && st->st_uid != 0)
		return -EPERM;
	if (r->max_size && (uint64_t)st->st_size > r->max_size)
		return -EFBIG;
	return 0;
}

int evr_untrusted_open(int dirfd, const char *path, const struct evr_untrusted_rules *rules,
		       struct stat *ret_st)
{
	static const struct evr_untrusted_rules none = { .owner = EVR_UNTRUSTED_ANY_OWNER };
	const struct evr_untrusted_rules *r = rules ? rules : &none;
	int nofollow = r->nofollow ? O_NOFOLLOW : 0;
	struct stat st, st2;
	char self[40];
	int pfd, fd, err;

	if (!path || !*path)
		return -EINVAL;
	/* With O_NOFOLLOW, O_PATH opens a symbolic link itself: fstat() then says S_IFLNK. */
	pfd = openat(dirfd, path, O_PATH | O_CLOEXEC | nofollow);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) < 0) {
		err = -errno;
		close(pfd);
		return err;
	}
	err = check(&st, r);
	if (err < 0) {
		close(pfd);
		return err;
	}
	/* The inode just checked, opened for reading: the name is not looked up again. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | nofollow);
	err = fd < 0 ? -errno : 0;
	close(pfd);
	if (err < 0)
		return err == -ELOOP ? -EPERM : err;
	/* By name (no /proc), something else may have been put there meanwhile. */
	if (fstat(fd, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		close(fd);
		return -EPERM;
	}
	/* Reads of a regular file never block; clear the flag so that callers see a plain fd. */
	(void)fcntl(fd, F_SETFL, 0);
	if (ret_st)
		*ret_st = st2;
	return fd;
}
