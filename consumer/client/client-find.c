// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: finding a process's agent. Its socket is PID.sock in one
 * of the runtime directories of the process's uid (<evring/rundir.h>); a
 * directory is used only if that uid owns it and no one else may write to it,
 * and a socket only if SO_PEERCRED names process PID of that uid. So another
 * local user who creates /tmp/evring-UID first, or plants a socket, gets a
 * refusal that names what is wrong, never a conversation.
 *
 * Also the list of processes one may attach to (every trusted directory).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <evring/rundir.h>

#include "client-internal.h"

#define fail evr_client_fail

static void comm_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/*
 * The effective uid of @pid, from /proc/PID/status: the uid its agent runs as
 * and names its directory after. (The owner of /proc/PID is root for a process
 * that is not dumpable, whatever its uid.)
 */
static int proc_euid(pid_t pid, uid_t *ret)
{
	char path[64], line[256];
	unsigned int r, e;
	int err = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u", &r, &e) == 2) {
			*ret = (uid_t)e;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

static void user_of(uid_t uid, char *buf, size_t len)
{
	char pwbuf[1024];
	struct passwd pw, *pwp = NULL;

	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 && pwp)
		snprintf(buf, len, "%s", pwp->pw_name);
	else
		snprintf(buf, len, "%u", (unsigned int)uid);
}

/*
 * Is @sock served by process @pid of uid @uid? The agent listens from the
 * process itself, so SO_PEERCRED of a connected socket names it: anything else
 * is an impostor (a socket planted in the directory, or a stale one taken over).
 */
static int check_peer(int sock, pid_t pid, uid_t uid, const char *path, char *errbuf,
		      size_t errlen)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		return fail(errbuf, errlen, -errno, "SO_PEERCRED on %s: %s", path,
			    strerror(errno));
	if (cred.pid != pid || cred.uid != uid)
		return fail(errbuf, errlen, -EPERM,
			    "refusing %s: it is served by process %d of uid %u, not by process %d "
			    "(uid %u): a planted or stale socket, remove it", path, (int)cred.pid,
			    (unsigned int)cred.uid, (int)pid, (unsigned int)uid);
	return 0;
}

/* Connect @sock to @path: 0, or -errno as connect() said. */
static int connect_path(int sock, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	return connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
}

int evr_client_open_socket(pid_t pid, int *ret_sock, int *ret_pidfd, char *errbuf, size_t errlen)
{
	struct timeval tv = { .tv_sec = EVR_CLIENT_HELLO_TIMEOUT_MS / 1000 };
	char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN], path[EVR_RUNDIR_LEN + 16], comm[64];
	char refused[512] = "", note[256] = "";
	unsigned int ndirs;
	int sock = -1, pidfd, err;
	uid_t me = geteuid(), uid;

	if (!ret_sock || !ret_pidfd)
		return -EINVAL;
	if (pid <= 0)
		return fail(errbuf, errlen, -EINVAL, "invalid process id %d", (int)pid);
	if (proc_euid(pid, &uid) < 0)
		return fail(errbuf, errlen, -ESRCH, "no process %d", (int)pid);
	/* Refuse before touching the socket: the reason is clearer than EACCES on
	 * a directory the user cannot enter. */
	if (uid != me && me != 0) {
		char name[64];

		user_of(uid, name, sizeof(name));
		return fail(errbuf, errlen, -EACCES,
			    "process %d belongs to user %s (uid %u); you can attach only to your own processes",
			    (int)pid, name, (unsigned int)uid);
	}
	comm_of(pid, comm, sizeof(comm));
	if (evr_rundir_candidates(uid, dirs, &ndirs) < 0)
		return fail(errbuf, errlen, -ENAMETOOLONG, "EVR_RUNTIME_DIR is too long");
	/* Before connecting: the pidfd then surely names the process we talk to. */
	pidfd = evr_consumer_pidfd_open(pid);
	for (unsigned int i = 0; i < ndirs; i++) {
		char why[512];
		struct stat st;
		int n;

		err = evr_rundir_check(dirs[i], uid, why, sizeof(why));
		if (err == -ENOENT)
			continue;
		if (err < 0) {
			/* A process of ours may still be found in the next one. */
			if (!refused[0])
				snprintf(refused, sizeof(refused), "%s", why);
			continue;
		}
		n = snprintf(path, sizeof(path), "%s/%d.sock", dirs[i], (int)pid);
		if (n < 0 || (size_t)n >= EVR_RUNDIR_LEN) {
			err = fail(errbuf, errlen, -ENAMETOOLONG, "socket path %s/%d.sock is too long",
				   dirs[i], (int)pid);
			goto err;
		}
		if (sock < 0) {
			sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (sock < 0) {
				err = fail(errbuf, errlen, -errno, "socket: %s", strerror(errno));
				goto err;
			}
			/* A full backlog (agent stopped) must not block connect() forever. */
			(void)setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		}
		err = connect_path(sock, path);
		if (err == -ENOENT || err == -ECONNREFUSED || err == -ENOTDIR) {
			/* A fresh socket for the next directory, not one a failed connect left. */
			close(sock);
			sock = -1;
			/* The agent refuses a directory whose mode is not 0700: say so. */
			if (!note[0] && stat(dirs[i], &st) == 0 && (st.st_mode & 07777) != 0700)
				snprintf(note, sizeof(note),
					 " (its agent listens only in a directory of mode 0700; %s "
					 "has mode %04o)", dirs[i], (unsigned int)(st.st_mode & 07777));
			continue;
		}
		if (err == -EAGAIN || err == -EINPROGRESS || err == -ETIMEDOUT) {
			err = fail(errbuf, errlen, -ETIMEDOUT, "process %d did not answer (stopped?)",
				   (int)pid);
			goto err;
		}
		if (err == -EACCES || err == -EPERM) {
			err = fail(errbuf, errlen, -EACCES, "cannot reach %s: %s", path,
				   strerror(-err));
			goto err;
		}
		if (err < 0) {
			fail(errbuf, errlen, err, "cannot connect to %s: %s", path, strerror(-err));
			goto err;
		}
		err = check_peer(sock, pid, uid, path, errbuf, errlen);
		if (err < 0)
			goto err;
		if (fcntl(sock, F_SETFL, O_NONBLOCK) < 0) {
			err = fail(errbuf, errlen, -errno, "fcntl: %s", strerror(errno));
			goto err;
		}
		*ret_sock = sock;
		*ret_pidfd = pidfd;
		return 0;
	}
	/* Not found where it may be: a directory we refused is the likely reason. */
	if (refused[0])
		err = fail(errbuf, errlen, -EPERM, "process %d (%s): %s", (int)pid, comm, refused);
	else
		err = fail(errbuf, errlen, -ENOENT, "process %d (%s) does not run libevring's agent%s",
			   (int)pid, comm, note);
err:
	if (sock >= 0)
		close(sock);
	if (pidfd >= 0)
		close(pidfd);
	return err;
}

/* ---- the process list ------------------------------------------------------------------ */

struct pid_vec {
	pid_t *v;
	uint32_t n, cap;
};

static int scan_dir(const char *dir, struct pid_vec *pv)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int err = 0;

	if (!d)
		return 0;	/* no directory: nobody runs an agent there */
	while (!err && (e = readdir(d))) {
		char proc[64], *end;
		unsigned long pid;
		struct stat st;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		errno = 0;
		pid = strtoul(e->d_name, &end, 10);
		if (errno || strcmp(end, ".sock") != 0 || pid > INT32_MAX)
			continue;
		/* A socket whose process is gone is stale; the next agent removes it. */
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISSOCK(st.st_mode))
			continue;
		snprintf(proc, sizeof(proc), "/proc/%lu", pid);
		if (access(proc, F_OK) < 0)
			continue;
		if (pv->n == pv->cap) {
			uint32_t cap = pv->cap ? pv->cap * 2 : 32;
			pid_t *nv = realloc(pv->v, sizeof(*nv) * cap);

			if (!nv) {
				err = -ENOMEM;
				break;
			}
			pv->v = nv;
			pv->cap = cap;
		}
		pv->v[pv->n++] = (pid_t)pid;
	}
	closedir(d);
	return err;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* What the scan refused: the number of directories, and the first one's reason. */
struct scan_refusals {
	int n;
	char *errbuf;
	size_t errlen;
};

/* Scan @dir for @uid's sockets, if it can be trusted to hold them. */
static int scan_trusted(const char *dir, uid_t uid, struct pid_vec *pv, struct scan_refusals *rf)
{
	char why[512];
	int err = evr_rundir_check(dir, uid, why, sizeof(why));

	if (err == -ENOENT)
		return 0;
	if (err < 0) {
		if (rf->n++ == 0)
			fail(rf->errbuf, rf->errlen, err, "%s", why);
		return 0;
	}
	return scan_dir(dir, pv);
}

/* A decimal uid that is the whole of @s. */
static bool parse_uid(const char *s, uid_t *ret)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX - 1)
		return false;
	*ret = (uid_t)v;
	return true;
}

/* Root, default directories: every user's, /run/user/U/evring and /tmp/evring-U. */
static int scan_all_users(struct pid_vec *pv, struct scan_refusals *rf)
{
	static const struct {
		const char *parent, *prefix, *suffix;
	} where[] = {
		{ "/run/user", "", "/evring" },
		{ "/tmp", "evring-", "" },
	};
	int err = 0;

	for (size_t w = 0; w < sizeof(where) / sizeof(where[0]) && !err; w++) {
		size_t plen = strlen(where[w].prefix);
		DIR *d = opendir(where[w].parent);
		struct dirent *e;

		while (d && !err && (e = readdir(d))) {
			char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN], dir[EVR_RUNDIR_LEN];
			unsigned int ndirs;
			bool candidate = false;
			uid_t uid;

			if (strncmp(e->d_name, where[w].prefix, plen) != 0 ||
			    !parse_uid(e->d_name + plen, &uid))
				continue;
			if (snprintf(dir, sizeof(dir), "%s/%.64s%s", where[w].parent, e->d_name,
				     where[w].suffix) >= (int)sizeof(dir))
				continue;
			/* Only where uid's agents may listen (/run/user/U must be U's). */
			if (evr_rundir_candidates(uid, dirs, &ndirs) < 0)
				continue;
			for (unsigned int i = 0; i < ndirs; i++)
				candidate |= strcmp(dirs[i], dir) == 0;
			if (candidate)
				err = scan_trusted(dir, uid, pv, rf);
		}
		if (d)
			closedir(d);
	}
	return err;
}

/* The processes that connected to us in listen mode (client-dialin.c). */
static int add_dialin(struct pid_vec *pv)
{
	pid_t *v;
	uint32_t n;
	int err = evr_client_dialin_pids(&v, &n);

	if (err == 0 && n && pv->n + n > pv->cap) {
		pid_t *nv = realloc(pv->v, sizeof(*nv) * (pv->n + n));

		if (nv) {
			pv->v = nv;
			pv->cap = pv->n + n;
		} else {
			err = -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < n && err == 0; i++)
		pv->v[pv->n++] = v[i];
	free(v);
	return err;
}

int evr_process_list_checked(pid_t **ret, uint32_t *ret_n, char *errbuf, size_t errlen)
{
	struct scan_refusals rf = { .errbuf = errbuf, .errlen = errlen };
	struct pid_vec pv = { 0 };
	char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN];
	unsigned int ndirs;
	uint32_t n = 0;
	int err = 0;

	if (!ret || !ret_n)
		return -EINVAL;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (geteuid() == 0 && evr_rundir_is_default()) {
		err = scan_all_users(&pv, &rf);
	} else if (evr_rundir_candidates(geteuid(), dirs, &ndirs) == 0) {
		for (unsigned int i = 0; i < ndirs && !err; i++)
			err = scan_trusted(dirs[i], geteuid(), &pv, &rf);
	}
	if (err == 0)
		err = add_dialin(&pv);
	if (err < 0) {
		free(pv.v);
		return err;
	}
	if (pv.n)
		qsort(pv.v, pv.n, sizeof(*pv.v), pid_cmp);
	for (uint32_t i = 0; i < pv.n; i++) {
		if (i == 0 || pv.v[i] != pv.v[n - 1])
			pv.v[n++] = pv.v[i];
	}
	if (!pv.v) {
		pv.v = malloc(sizeof(*pv.v));
		if (!pv.v)
			return -ENOMEM;
	}
	*ret = pv.v;
	*ret_n = n;
	return rf.n;
}

int evr_process_list(pid_t **ret, uint32_t *ret_n)
{
	int err = evr_process_list_checked(ret, ret_n, NULL, 0);

	return err < 0 ? err : 0;
}
