// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: finding a process's agent. Its socket is PID.sock in one
 * of the runtime directories of the process's uid (<evring/rundir.h>); a
 * directory is used only if that uid owns it and no one else may write to it,
 * and a socket only if SO_PEERCRED names process PID of that uid. So another
 * local user who creates /tmp/evring-UID first, or plants a socket, gets a
 * refusal that names what is wrong, never a conversation.
 *
 * A process in a mount or pid namespace of its own (a container) is found in
 * ITS runtime directory under ITS pid, through /proc/PID/root (client-ns.c),
 * with the same checks; SO_PEERCRED then names it by the pid we know it by.
 *
 * Also the list of processes one may attach to (every trusted directory, and
 * the processes in namespaces of their own whose agents listen there).
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
 * process itself, so SO_PEERCRED of a connected socket names it, with the pid
 * as our pid namespace sees it: anything else is not that process's agent. A
 * stale socket never gets here (connect() is refused): the one who answers is
 * alive, so the message never says to remove the socket; it says who that is,
 * and when it is a process that names itself @pid in a pid namespace of its
 * own (a container sharing the directory), how to reach it.
 */
static int check_peer(int sock, pid_t pid, uid_t uid, const char *path, char *errbuf,
		      size_t errlen)
{
	struct evr_ns_proc peer;
	struct ucred cred;
	socklen_t cl = sizeof(cred);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		return fail(errbuf, errlen, -errno, "SO_PEERCRED on %s: %s", path,
			    strerror(errno));
	if (cred.pid == pid && cred.uid == uid)
		return 0;
	if (cred.pid > 0 && evr_ns_probe(cred.pid, &peer) == 0 && peer.other_pidns &&
	    peer.ns_pid == pid)
		return fail(errbuf, errlen, -EPERM,
			    "refusing %s: it is served by process %d of uid %u, not by process %d "
			    "(uid %u): process %d runs in a pid namespace of its own, where it is "
			    "process %d; attach to it as process %d", path, (int)cred.pid,
			    (unsigned int)cred.uid, (int)pid, (unsigned int)uid, (int)cred.pid,
			    (int)pid, (int)cred.pid);
	return fail(errbuf, errlen, -EPERM,
		    "refusing %s: it is served by process %d of uid %u, not by process %d "
		    "(uid %u): it is not that process's agent, and evring does not talk to it "
		    "(a socket planted there, or one a process of that uid serves under a name "
		    "not its own)", path, (int)cred.pid, (unsigned int)cred.uid, (int)pid,
		    (unsigned int)uid);
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

/* A search for one process's socket: what it is, and what went wrong so far. */
struct find {
	pid_t pid;
	uid_t uid;
	int sock;			/* -1 until a directory holds a socket to try */
	char refused[512];		/* the first directory refused */
	char note[256];			/* why a socket that exists may not be listened on */
};

/*
 * Try the socket at @path (@shown: the same, as the user should read it), in
 * directory @dir_fd or @dir: 0 connected and checked (f->sock), 1 nothing
 * listens there (go on), or -errno with @errbuf set.
 */
static int try_socket(struct find *f, const char *path, const char *shown, int dir_fd,
		      const char *dir, char *errbuf, size_t errlen)
{
	struct timeval tv = { .tv_sec = EVR_CLIENT_HELLO_TIMEOUT_MS / 1000 };
	struct stat st;
	int err;

	if (f->sock < 0) {
		f->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (f->sock < 0)
			return fail(errbuf, errlen, -errno, "socket: %s", strerror(errno));
		/* A full backlog (agent stopped) must not block connect() forever. */
		(void)setsockopt(f->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	err = connect_path(f->sock, path);
	if (err == -ENOENT || err == -ECONNREFUSED || err == -ENOTDIR) {
		/* A fresh socket for the next directory, not one a failed connect left. */
		close(f->sock);
		f->sock = -1;
		/* The agent refuses a directory whose mode is not 0700: say so. */
		if (!f->note[0] && (dir_fd >= 0 ? fstat(dir_fd, &st) : stat(dir, &st)) == 0 &&
		    (st.st_mode & 07777) != 0700)
			snprintf(f->note, sizeof(f->note),
				 " (its agent listens only in a directory of mode 0700; %s "
				 "has mode %04o)", dir, (unsigned int)(st.st_mode & 07777));
		return 1;
	}
	if (err == -EAGAIN || err == -EINPROGRESS || err == -ETIMEDOUT)
		return fail(errbuf, errlen, -ETIMEDOUT, "process %d did not answer (stopped?)",
			    (int)f->pid);
	if (err == -EACCES || err == -EPERM)
		return fail(errbuf, errlen, -EACCES, "cannot reach %s: %s", shown, strerror(-err));
	if (err < 0)
		return fail(errbuf, errlen, err, "cannot connect to %s: %s", shown, strerror(-err));
	return check_peer(f->sock, f->pid, f->uid, shown, errbuf, errlen);
}

/* @f's process in our namespaces: PID.sock in our runtime directories for its uid. */
static int find_here(struct find *f, char *errbuf, size_t errlen)
{
	char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN], path[EVR_RUNDIR_LEN + 16];
	unsigned int ndirs;
	int err;

	if (evr_rundir_candidates(f->uid, dirs, &ndirs) < 0)
		return fail(errbuf, errlen, -ENAMETOOLONG, "EVR_RUNTIME_DIR is too long");
	for (unsigned int i = 0; i < ndirs; i++) {
		char why[512];
		int n;

		err = evr_rundir_check(dirs[i], f->uid, why, sizeof(why));
		if (err == -ENOENT)
			continue;
		if (err < 0) {
			/* A process of ours may still be found in the next one. */
			if (!f->refused[0])
				snprintf(f->refused, sizeof(f->refused), "%s", why);
			continue;
		}
		n = snprintf(path, sizeof(path), "%s/%d.sock", dirs[i], (int)f->pid);
		if (n < 0 || (size_t)n >= EVR_RUNDIR_LEN)
			return fail(errbuf, errlen, -ENAMETOOLONG, "socket path %s/%d.sock is too long",
				    dirs[i], (int)f->pid);
		err = try_socket(f, path, path, -1, dirs[i], errbuf, errlen);
		if (err <= 0)
			return err;
	}
	return 1;
}

/*
 * @f's process in a mount or pid namespace of its own: NSPID.sock in the
 * runtime directories its agent chose, inside its root (client-ns.c).
 */
static int find_in_ns(struct find *f, const struct evr_ns_proc *p, char *errbuf, size_t errlen)
{
	char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN];
	unsigned int ndirs;
	int rootfd, err;

	rootfd = evr_ns_root_open(p->pid, errbuf, errlen);
	if (rootfd < 0)
		return rootfd;
	err = evr_ns_rundirs(p, rootfd, dirs, &ndirs, errbuf, errlen);
	if (err == 0)
		err = 1;
	for (unsigned int i = 0; err == 1 && i < ndirs; i++) {
		char why[512], shown[EVR_RUNDIR_LEN + 64], path[64], shown_sock[sizeof(shown) + 16];
		int dfd = evr_ns_rundir_open(p, rootfd, dirs[i], shown, sizeof(shown), why,
					     sizeof(why));

		if (dfd == -ENOENT)
			continue;
		if (dfd < 0) {
			if (!f->refused[0])
				snprintf(f->refused, sizeof(f->refused), "%s", why);
			continue;
		}
		/* Through the descriptor: the path we checked is the one we connect to. */
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%d.sock", dfd, (int)p->ns_pid);
		snprintf(shown_sock, sizeof(shown_sock), "%s/%d.sock", shown, (int)p->ns_pid);
		err = try_socket(f, path, shown_sock, dfd, shown, errbuf, errlen);
		close(dfd);
	}
	close(rootfd);
	return err;
}

int evr_client_open_socket(pid_t pid, int *ret_sock, int *ret_pidfd, char *errbuf, size_t errlen)
{
	struct find f = { .pid = pid, .sock = -1 };
	struct evr_ns_proc p;
	char comm[64], ns[48] = "";
	int pidfd, err;
	uid_t me = geteuid();

	if (!ret_sock || !ret_pidfd)
		return -EINVAL;
	if (pid <= 0)
		return fail(errbuf, errlen, -EINVAL, "invalid process id %d", (int)pid);
	if (evr_ns_probe(pid, &p) < 0)
		return fail(errbuf, errlen, -ESRCH, "no process %d", (int)pid);
	f.uid = p.uid;
	/* Refuse before touching the socket: the reason is clearer than EACCES on
	 * a directory the user cannot enter. */
	if (p.uid != me && me != 0) {
		char name[64];

		user_of(p.uid, name, sizeof(name));
		return fail(errbuf, errlen, -EACCES,
			    "process %d belongs to user %s (uid %u); you can attach only to your own processes",
			    (int)pid, name, (unsigned int)p.uid);
	}
	comm_of(pid, comm, sizeof(comm));
	if (p.other_pidns)
		snprintf(ns, sizeof(ns), ", process %d in its pid namespace", (int)p.ns_pid);
	/* Its uids are not ours, and its agent would take us for nobody. */
	if (p.other_userns)
		return fail(errbuf, errlen, -EPERM,
			    "process %d (%s%s) runs in another user namespace (a rootless container?); "
			    "evring attaches only within its own user namespace: run it inside that "
			    "namespace", (int)pid, comm, ns);
	/* Before connecting: the pidfd then surely names the process we talk to. */
	pidfd = evr_consumer_pidfd_open(pid);
	if (p.other_pidns || p.other_mntns) {
		err = find_in_ns(&f, &p, errbuf, errlen);
		/* Only a mount namespace of its own, and we cannot look into it: ours, then. */
		if (err < 0 && !p.other_pidns && f.sock < 0 && !f.refused[0] &&
		    (err == -EACCES || err == -EPERM)) {
			err = find_here(&f, errbuf, errlen);
		}
	} else {
		err = find_here(&f, errbuf, errlen);
	}
	if (err == 0) {
		if (fcntl(f.sock, F_SETFL, O_NONBLOCK) < 0) {
			err = fail(errbuf, errlen, -errno, "fcntl: %s", strerror(errno));
			goto err;
		}
		*ret_sock = f.sock;
		*ret_pidfd = pidfd;
		return 0;
	}
	if (err < 0)
		goto err;
	/* Not found where it may be: a directory we refused is the likely reason. */
	if (f.refused[0])
		err = fail(errbuf, errlen, -EPERM, "process %d (%s%s): %s", (int)pid, comm, ns,
			   f.refused);
	else
		err = fail(errbuf, errlen, -ENOENT, "process %d (%s%s) does not run libevring's agent%s",
			   (int)pid, comm, ns, f.note);
err:
	if (f.sock >= 0)
		close(f.sock);
	if (pidfd >= 0)
		close(pidfd);
	return err;
}

/* ---- the process list ------------------------------------------------------------------ */

struct pid_vec {
	pid_t *v;
	uint32_t n, cap;
	/*
	 * The sockets of processes found in namespaces of their own (scan_ns()).
	 * A directory they share with us (a pid namespace without a mount
	 * namespace, or a bind mount) shows the same socket as NSPID.sock, which
	 * is not the socket of our process NSPID: scan_dir() skips these.
	 */
	struct { dev_t dev; ino_t ino; } *ns_socks;
	uint32_t nns, nscap;
};

static int pid_vec_add(struct pid_vec *pv, pid_t pid)
{
	if (pv->n == pv->cap) {
		uint32_t cap = pv->cap ? pv->cap * 2 : 32;
		pid_t *nv = realloc(pv->v, sizeof(*nv) * cap);

		if (!nv)
			return -ENOMEM;
		pv->v = nv;
		pv->cap = cap;
	}
	pv->v[pv->n++] = pid;
	return 0;
}

static bool is_ns_sock(const struct pid_vec *pv, const struct stat *st)
{
	for (uint32_t i = 0; i < pv->nns; i++)
		if (pv->ns_socks[i].dev == st->st_dev && pv->ns_socks[i].ino == st->st_ino)
			return true;
	return false;
}

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
		    !S_ISSOCK(st.st_mode) || is_ns_sock(pv, &st))
			continue;
		snprintf(proc, sizeof(proc), "/proc/%lu", pid);
		if (access(proc, F_OK) < 0)
			continue;
		err = pid_vec_add(pv, (pid_t)pid);
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

/*
 * Does @p's agent listen in its own namespaces, and may we list it? The same
 * uid rule as for our directories (root: any uid), and the same runtime
 * directory setting as ours: EVR_RUNTIME_DIR unset in both, or set to the same
 * path (inside its root) in both, so that a private directory stays private.
 * Return: 1 and the socket's identity in @ret_st, 0 not listed, -ENOMEM.
 */
int evr_ns_listed(const struct evr_ns_proc *p, struct stat *ret_st)
{
	const char *mine = secure_getenv("EVR_RUNTIME_DIR");
	char env[EVR_RUNDIR_LEN], dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN];
	unsigned int ndirs;
	int rootfd, r, found = 0;

	if ((p->uid != geteuid() && geteuid() != 0) || p->other_userns)
		return 0;
	r = evr_ns_environ_get(p->pid, "EVR_RUNTIME_DIR", env, sizeof(env));
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	if (r == 0 || !env[0])
		env[0] = '\0';
	if (strcmp(env, mine ? mine : "") != 0)
		return 0;
	rootfd = evr_ns_root_open(p->pid, NULL, 0);
	if (rootfd < 0)
		return 0;
	/* A directory refused here is not reported: attaching by pid says why. */
	if (evr_ns_rundirs(p, rootfd, dirs, &ndirs, NULL, 0) == 0) {
		for (unsigned int i = 0; i < ndirs && !found; i++) {
			char shown[EVR_RUNDIR_LEN + 64], name[24];
			int dfd = evr_ns_rundir_open(p, rootfd, dirs[i], shown, sizeof(shown), NULL,
						     0);

			if (dfd < 0)
				continue;
			snprintf(name, sizeof(name), "%d.sock", (int)p->ns_pid);
			found = fstatat(dfd, name, ret_st, AT_SYMLINK_NOFOLLOW) == 0 &&
				S_ISSOCK(ret_st->st_mode);
			close(dfd);
		}
	}
	close(rootfd);
	return found;
}

/*
 * The processes in a mount or pid namespace of their own (a container) whose
 * agents listen there: a walk of /proc, where two stat() calls tell a process
 * in our namespaces (nearly all of them) from one that is not.
 */
static int scan_ns(struct pid_vec *pv)
{
	DIR *d = opendir("/proc");
	struct stat self_mnt, self_pid;
	struct dirent *e;
	int err = 0;

	if (!d)
		return 0;
	if (stat("/proc/self/ns/mnt", &self_mnt) < 0 || stat("/proc/self/ns/pid", &self_pid) < 0) {
		closedir(d);
		return 0;	/* no namespaces to tell apart */
	}
	while (!err && (e = readdir(d))) {
		char path[64], *end;
		struct evr_ns_proc p;
		struct stat a, b, sock;
		unsigned long pid;
		int r;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		errno = 0;
		pid = strtoul(e->d_name, &end, 10);
		if (errno || *end || pid > INT32_MAX)
			continue;
		snprintf(path, sizeof(path), "/proc/%lu/ns/mnt", pid);
		if (stat(path, &a) < 0)
			continue;	/* gone, or not ours to look at */
		snprintf(path, sizeof(path), "/proc/%lu/ns/pid", pid);
		if (stat(path, &b) < 0)
			continue;
		if (a.st_ino == self_mnt.st_ino && a.st_dev == self_mnt.st_dev &&
		    b.st_ino == self_pid.st_ino && b.st_dev == self_pid.st_dev)
			continue;
		if (evr_ns_probe((pid_t)pid, &p) < 0)
			continue;
		r = evr_ns_listed(&p, &sock);
		if (r <= 0) {
			err = r;
			continue;
		}
		if (pv->nns == pv->nscap) {
			uint32_t cap = pv->nscap ? pv->nscap * 2 : 8;
			void *nv = realloc(pv->ns_socks, sizeof(*pv->ns_socks) * cap);

			if (!nv) {
				err = -ENOMEM;
				break;
			}
			pv->ns_socks = nv;
			pv->nscap = cap;
		}
		pv->ns_socks[pv->nns].dev = sock.st_dev;
		pv->ns_socks[pv->nns++].ino = sock.st_ino;
		err = pid_vec_add(pv, (pid_t)pid);
	}
	closedir(d);
	return err;
}

/* The processes that connected to us in listen mode (client-dialin.c). */
static int add_dialin(struct pid_vec *pv)
{
	pid_t *v;
	uint32_t n;
	int err = evr_client_dialin_pids(&v, &n);

	for (uint32_t i = 0; i < n && err == 0; i++)
		err = pid_vec_add(pv, v[i]);
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
	/* First: scan_dir() then knows the sockets that are theirs. */
	err = scan_ns(&pv);
	if (err == 0 && geteuid() == 0 && evr_rundir_is_default()) {
		err = scan_all_users(&pv, &rf);
	} else if (err == 0 && evr_rundir_candidates(geteuid(), dirs, &ndirs) == 0) {
		for (unsigned int i = 0; i < ndirs && !err; i++)
			err = scan_trusted(dirs[i], geteuid(), &pv, &rf);
	}
	free(pv.ns_socks);
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
