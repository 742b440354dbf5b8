/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Opening a file that a process we do not trust named (<evring/untrusted-file.h>).
 *
 * The consumers open files on behalf of the processes they look at: the perf
 * map /tmp/perf-PID.map, the files /proc/PID/maps names, build-id and
 * .gnu_debuglink debug files next to them, module paths recorded in a trace.
 * Any local user can plant something at such a name: a FIFO (open() for
 * reading blocks until a writer comes, forever), a symbolic link to a device
 * (/dev/zero never ends; opening some devices has effects), a huge file. So
 * every such open goes through evr_untrusted_open(), which looks at the file
 * before it opens it for reading: O_PATH first (no open() of the object
 * itself, so nothing blocks and no device driver runs), fstat(), the checks,
 * then the same inode is opened for reading through /proc/self/fd.
 *
 * A static library of its own (no libdw) so that the sandbox's broker, which
 * opens perf maps for a confined recorder, uses the same code.
 */
#ifndef EVR_UNTRUSTED_FILE_H
#define EVR_UNTRUSTED_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* evr_untrusted_rules.owner: any owner is fine (system files: libraries, debug files). */
#define EVR_UNTRUSTED_ANY_OWNER ((uid_t)-1)

/* What the file must be, besides a regular file. */
struct evr_untrusted_rules {
	uid_t owner;		/* its owner must be this uid or root; EVR_UNTRUSTED_ANY_OWNER */
	uint64_t max_size;	/* largest size accepted in bytes; 0: no limit */
	bool nofollow;		/* the last component must not be a symbolic link */
};

/**
 * evr_untrusted_open() - open for reading a file whose name comes from a process
 * @dirfd: AT_FDCWD, or the directory @path is relative to
 * @path: the name
 * @rules: what the file must be (NULL: a regular file, any owner, any size, links followed)
 * @ret_st: its stat, when not NULL (untouched on failure)
 *
 * Never blocks on what it finds at @path and never opens anything but a
 * regular file that passed the checks: the object is first opened with O_PATH
 * (which opens nothing), checked with fstat(), then that same inode is opened
 * for reading. Without /proc (some chroots) the second open is by name, with
 * O_NONBLOCK|O_NOCTTY, and must find the inode that was checked.
 *
 * Return: an fd open O_RDONLY|O_CLOEXEC (the caller closes it); -ENOENT,
 * -EACCES, -ENOTDIR... as open() fails; -EPERM: not a regular file (a FIFO, a
 * device, a directory, a symbolic link with @rules->nofollow), or not owned by
 * @rules->owner or root, or replaced while being opened; -EFBIG: larger than
 * @rules->max_size; -EINVAL: @path is NULL or empty.
 * Context: any thread; no signal handler (it allocates nothing, but may take time on slow file systems).
 */
int evr_untrusted_open(int dirfd, const char *path, const struct evr_untrusted_rules *rules,
		       struct stat *ret_st);

#ifdef __cplusplus
}
#endif

#endif /* EVR_UNTRUSTED_FILE_H */
