// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: processes in namespaces of their own (a container, or a
 * service started with `unshare --pid --mount`). Such a process's agent names
 * its socket after the pid it sees (NSpid's last entry in /proc/PID/status,
 * often 1) and binds it in the runtime directory of ITS mount namespace, chosen
 * from ITS environment (<evring/rundir.h>). From our side:
 *   - the directory is reached through /proc/PID/root, one component at a
 *     time with O_PATH|O_NOFOLLOW, symbolic links resolved against that root
 *     (never ours) and ".." refused, so that nothing in the container can
 *     point us at a file of the host;
 *   - it is trusted by the same rule as ours (evr_rundir_check_stat(): owned
 *     by the process's uid, writable by no one else);
 *   - the socket is connected through /proc/self/fd/DIRFD/NSPID.sock, and its
 *     peer checked with the pid the kernel translates into our namespace
 *     (SO_PEERCRED), which is the pid we were asked for.
 * A process in another user namespace is refused before anything: uids there
 * mean something else, and its agent would refuse us anyway.
 *
 * Everything here reads /proc and opens read-only (the broker's filter allows
 * it); nothing is exported but through evr_client_open_socket() and the
 * process list (client-find.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/rundir.h>

#include "client-internal.h"

#define fail evr_client_fail

#define ENVIRON_MAX	(1u << 20)	/* a larger environment is not read */
#define MAX_LINKS	40		/* symbolic links followed in one path, as the kernel */

/* Same namespace @kind (a name in /proc/PID/ns) as ours? Unknown counts as the same. */
static bool same_ns(pid_t pid, const char *kind)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kind);
	if (stat(path, &a) < 0)
		return true;
	snprintf(path, sizeof(path), "/proc/self/ns/%s", kind);
	if (stat(path, &b) < 0)
		return true;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int evr_ns_probe(pid_t pid, struct evr_ns_proc *ret)
{
	char path[64], line[512];
	unsigned int r, e;
	bool have_uid = false;
	FILE *f;

	memset(ret, 0, sizeof(*ret));
	ret->pid = pid;
	ret->ns_pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Tgid: %u", &r) == 1) {
			ret->tgid = (pid_t)r;
		} else if (sscanf(line, "Uid: %u %u", &r, &e) == 2) {
			ret->uid = (uid_t)e;
			have_uid = true;
		} else if (!strncmp(line, "NSpid:", 6)) {
			/* Our namespace's pid first, the process's own last. */
			char *s = line + 6, *end;
			unsigned int n = 0;
			long v, last = pid;

			for (;;) {
				errno = 0;
				v = strtol(s, &end, 10);
				if (end == s || errno || v <= 0 || v > INT_MAX)
					break;
				last = v;
				n++;
				s = end;
			}
			if (n > 1) {
				ret->ns_pid = (pid_t)last;
				ret->other_pidns = true;
			}
		}
	}
	fclose(f);
	if (!have_uid)
		return -ESRCH;
	ret->other_mntns = !same_ns(pid, "mnt");
	ret->other_userns = !same_ns(pid, "user");
	/* A pid namespace of its own that the NSpid line did not show (a /proc of another). */
	if (!ret->other_pidns && !same_ns(pid, "pid"))
		ret->other_pidns = true;
	return 0;
}

int evr_ns_environ_get(pid_t pid, const char *name, char *buf, size_t len)
{
	size_t nlen = strlen(name), cap = 0, n = 0;
	char path[64], *env = NULL;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t k;

		if (n + 4096 > cap) {
			char *ne;

			if (cap >= ENVIRON_MAX) {
				ret = -E2BIG;
				goto out;
			}
			cap = cap ? cap * 2 : 16384;
			ne = realloc(env, cap + 1);
			if (!ne) {
				ret = -ENOMEM;
				goto out;
			}
			env = ne;
		}
		k = read(fd, env + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			ret = -errno;
			goto out;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	env[n] = '\0';
	/* The first one, as getenv() takes it. */
	for (size_t i = 0; i < n; i += strlen(env + i) + 1) {
		if (strncmp(env + i, name, nlen) != 0 || env[i + nlen] != '=')
			continue;
		if (strlen(env + i + nlen + 1) >= len) {
			ret = -ENAMETOOLONG;
			goto out;
		}
		snprintf(buf, len, "%s", env + i + nlen + 1);
		ret = 1;
		break;
	}
out:
	free(env);
	close(fd);
	return ret;
}

/*
 * Open @path as the process whose root is @rootfd would resolve it: one
 * component at a time, symbolic links read and resolved against @rootfd. The
 * last component is not followed (like lstat(): the caller sees a link as a
 * link). ".." is refused: at the container's root it would climb into ours.
 * Return: an O_PATH descriptor, or -errno (-ENOENT: something is missing).
 */
static int open_in_root(int rootfd, const char *path)
{
	char work[2 * PATH_MAX];
	int cur, links = 0;
	char *rest = work;

	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	snprintf(work, sizeof(work), "%s", path);
	cur = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (;;) {
		char comp[NAME_MAX + 1], target[PATH_MAX], tail[PATH_MAX];
		size_t clen;
		struct stat st;
		bool last;
		ssize_t tl;
		int nfd;

		while (*rest == '/')
			rest++;
		if (!*rest)
			return cur;
		clen = strcspn(rest, "/");
		if (clen > NAME_MAX) {
			close(cur);
			return -ENAMETOOLONG;
		}
		memcpy(comp, rest, clen);
		comp[clen] = '\0';
		rest += clen;
		last = rest[strspn(rest, "/")] == '\0';
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			close(cur);
			return -EXDEV;
		}
		nfd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 || fstat(nfd, &st) < 0) {
			int err = errno == ENOTDIR ? -ENOENT : -errno;

			if (nfd >= 0)
				close(nfd);
			close(cur);
			return err;
		}
		if (S_ISLNK(st.st_mode) && !last) {
			tl = readlinkat(nfd, "", target, sizeof(target) - 1);
			close(nfd);
			if (tl <= 0 || ++links > MAX_LINKS) {
				close(cur);
				return tl <= 0 ? -ENOENT : -ELOOP;
			}
			target[tl] = '\0';
			snprintf(tail, sizeof(tail), "%s", rest);
			if (snprintf(work, sizeof(work), "%s/%s", target, tail) >= (int)sizeof(work)) {
				close(cur);
				return -ENAMETOOLONG;
			}
			rest = work;
			if (target[0] == '/') {
				close(cur);
				cur = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (cur < 0)
					return -errno;
			}
			continue;
		}
		close(cur);
		if (last)
			return nfd;
		if (!S_ISDIR(st.st_mode)) {
			close(nfd);
			return -ENOENT;
		}
		cur = nfd;
	}
}

/* /run/user/@uid inside @rootfd exists, is @uid's own and closed to everyone else. */
static bool xdg_runtime_ok_in(int rootfd, uid_t uid)
{
	char path[64];
	struct stat st;
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "/run/user/%u", (unsigned int)uid);
	fd = open_in_root(rootfd, path);
	if (fd < 0)
		return false;
	ok = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
	     (st.st_mode & 077) == 0;
	close(fd);
	return ok;
}

int evr_ns_rundirs(const struct evr_ns_proc *p, int rootfd, char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN],
		   unsigned int *ret_n, char *errbuf, size_t errlen)
{
	char env[EVR_RUNDIR_LEN];
	unsigned int n = 0;
	int r;

	r = evr_ns_environ_get(p->pid, "EVR_RUNTIME_DIR", env, sizeof(env));
	if (r == -ENAMETOOLONG)
		return fail(errbuf, errlen, -ENAMETOOLONG,
			    "process %d's EVR_RUNTIME_DIR is too long for a socket path", (int)p->pid);
	if (r < 0)
		return fail(errbuf, errlen, r, "cannot read /proc/%d/environ: %s", (int)p->pid,
			    strerror(-r));
	if (r == 1 && env[0]) {
		/* Relative to a working directory we would have to guess: its agent's cwd. */
		if (env[0] != '/')
			return fail(errbuf, errlen, -EINVAL,
				    "process %d's EVR_RUNTIME_DIR (%s) is not an absolute path",
				    (int)p->pid, env);
		snprintf(dirs[0], EVR_RUNDIR_LEN, "%s", env);
		*ret_n = 1;
		return 0;
	}
	if (xdg_runtime_ok_in(rootfd, p->uid))
		snprintf(dirs[n++], EVR_RUNDIR_LEN, "/run/user/%u/evring", (unsigned int)p->uid);
	snprintf(dirs[n++], EVR_RUNDIR_LEN, "/tmp/evring-%u", (unsigned int)p->uid);
	*ret_n = n;
	return 0;
}

int evr_ns_root_open(pid_t pid, char *errbuf, size_t errlen)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fail(errbuf, errlen, -errno,
			    "cannot look into process %d's file system (%s: %s)%s", (int)pid, path,
			    strerror(errno),
			    errno == EACCES ? "; needs the right to ptrace it (same user and "
					      "dumpable, or CAP_SYS_PTRACE)" : "");
	return fd;
}

int evr_ns_rundir_open(const struct evr_ns_proc *p, int rootfd, const char *dir, char *shown,
		       size_t shownlen, char *errbuf, size_t errlen)
{
	struct stat st;
	int fd, err;

	snprintf(shown, shownlen, "/proc/%d/root%s", (int)p->pid, dir);
	fd = open_in_root(rootfd, dir);
	if (fd == -ENOENT)
		return -ENOENT;
	if (fd == -EXDEV)
		return fail(errbuf, errlen, -EPERM,
			    "refusing %s: its path climbs out of the process's root (\"..\")", shown);
	if (fd < 0)
		return fail(errbuf, errlen, fd, "cannot examine %s: %s", shown, strerror(-fd));
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return fail(errbuf, errlen, err, "cannot examine %s: %s", shown, strerror(-err));
	}
	err = evr_rundir_check_stat(&st, shown, p->uid, errbuf, errlen);
	if (err < 0) {
		close(fd);
		return err;
	}
	return fd;
}
