/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where agents listen: the runtime directories of a user, and whether one can
 * be trusted. The producer (its agent) and every consumer use these same rules,
 * so that a consumer finds a process's socket from its pid alone, whatever
 * environment each of them was started in (docs/protocol.md, "Finding the
 * process").
 *
 * The directories of uid U, in search order:
 *   1. $EVR_RUNTIME_DIR, when set (then it is the only one; ignored in setuid
 *      programs);
 *   2. /run/user/U/evring, when /run/user/U is a directory owned by U that no one
 *      else may enter (what systemd-logind creates at login: only root could
 *      have made it, so no other user can squat it);
 *   3. /tmp/evring-U.
 * $XDG_RUNTIME_DIR is not read: a process started by a service manager, by cron
 * or under sudo does not see the same value as the user's shell, and root
 * attaching to another user's process does not know that user's value at all.
 * /run/user/U is where it points to on systems that have it.
 *
 * A directory is trusted to hold U's sockets when it is a real directory (not a
 * symlink), owned by U, and neither group nor others may write to it (the agent
 * itself listens only in one of mode 0700). Anything else could let another
 * user plant a socket that impersonates an agent.
 *
 * Nothing here is exported from libevring or libevring-consumer.
 * Context: any thread; reads the environment and the file system only.
 */
#ifndef EVR_RUNDIR_H
#define EVR_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define EVR_RUNDIR_MAX	2u		/* candidate directories of one uid */
#define EVR_RUNDIR_LEN	108u		/* sizeof(sockaddr_un.sun_path) */

/**
 * evr_rundir_decimal() - @v in decimal at @out, not NUL-terminated.
 * Return: the number of digits written (1 to 10).
 *
 * The socket and directory names of a program nobody traces are built with it,
 * not snprintf(): the first vfprintf() faults in three pages of libc's at every
 * start (docs/protocol.md, "What a program pays at start-up").
 */
size_t evr_rundir_decimal(char out[10], unsigned int v);

/**
 * evr_rundir_candidates() - the runtime directories of @uid, in search order.
 * @dirs: receives the paths; @ret_n their number (1 or 2).
 * Return: 0, -ENAMETOOLONG ($EVR_RUNTIME_DIR too long for a socket path).
 */
int evr_rundir_candidates(uid_t uid, char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN],
			  unsigned int *ret_n);

/**
 * evr_rundir_check() - may @dir be trusted to hold the agent sockets of @uid?
 * @errbuf: on -EPERM, one line saying what is wrong (owner, mode, path) and how
 *          to fix it; may be NULL.
 * Return: 0 trusted, -ENOENT missing, -EPERM not to be trusted, -errno.
 */
int evr_rundir_check(const char *dir, uid_t uid, char *errbuf, size_t errlen);

/**
 * evr_rundir_check_stat() - evr_rundir_check() on what lstat() (or fstat() of
 * an O_PATH|O_NOFOLLOW descriptor) said of @dir: for a directory reached by
 * descriptor, such as one inside another mount namespace's root.
 * @dir: the path named in the message.
 * Return: 0 trusted, -EPERM not to be trusted.
 */
int evr_rundir_check_stat(const struct stat *st, const char *dir, uid_t uid, char *errbuf,
			  size_t errlen);

/* True if @uid's runtime directories are the default ones ($EVR_RUNTIME_DIR unset). */
bool evr_rundir_is_default(void);

#endif /* EVR_RUNDIR_H */
