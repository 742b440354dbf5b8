// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: listen mode, the consumer's side. Programs started with
 * EVR_MONITOR_SOCKET=PATH connect to us instead of waiting in their runtime
 * directory for us to connect to them (a monitor that cannot see that
 * directory: another mount namespace, a sidecar). Their agent keeps one
 * unused connection open to PATH at all times and makes the next as soon as
 * we say Hello on it (producer/agent.c), so a process here is a pid with at
 * most one parked connection; evr_client_connect() takes it instead of
 * looking for <pid>.sock, and evr_process_list() lists the pid.
 *
 * One thread (started by evr_client_dialin_start()) accepts, checks each
 * peer's credentials (SO_PEERCRED: our uid, anyone's when we are root), parks
 * the connection, and forgets a process when its pidfd says it exited. It
 * waits in poll(), not epoll: the monitor's sandbox allows no epoll_ctl(), and
 * the set is small.
 *
 * A process in a pid namespace that ours cannot name (a sidecar's neighbour:
 * SO_PEERCRED says pid 0) gets an id of ours, from EVR_DIALIN_ID_MIN up, which
 * no real pid can be (PID_MAX_LIMIT is 4194304), kept while it stays
 * connected. Which process a connection comes from is the kernel's word, not
 * the program's: SO_PEERPIDFD gives its pidfd, and pidfs (Linux 6.9) gives
 * every process one inode, so the agent's next connection lands on the same
 * id, and no program can claim another's.
 *
 * Locking: di.lock covers the process list and the parked fds. A parked fd
 * belongs to the pool until evr_client_dialin_take() hands it out (fd -1,
 * generation +1, the thread woken to drop it from its poll set); the thread
 * closes a parked fd only if its generation is still the one it polled, so it
 * never closes one it no longer owns, whatever number it now has.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client-internal.h"

/* Processes in listen mode at once; connections beyond are refused (and said so). */
#define DIALIN_MAX_PROCS 1024u

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77			/* Linux 6.5 */
#endif
#ifndef PID_FS_MAGIC
#define PID_FS_MAGIC 0x50494446		/* pidfs, Linux 6.9: one inode per process */
#endif

struct dialin_proc {
	struct dialin_proc *next;
	pid_t pid;			/* SO_PEERCRED's, or ours (EVR_DIALIN_ID_MIN up) if foreign */
	bool foreign;			/* in a pid namespace ours cannot name */
	uint64_t ino;			/* foreign: its pidfd's pidfs inode, who it is */
	uid_t uid;			/* foreign: SO_PEERCRED's, which its next connection repeats */
	/* foreign: what it said its executable's and argv[0]'s base names are (its HelloReply;
	 * "" until then): our /proc has no entry to find it by name. */
	char exe_name[64], argv0_name[64];
	int pidfd;			/* readable once the process exited; -1 without pidfd_open */
	int fd;				/* the parked connection, -1 while none */
	uint64_t gen;			/* + 1 whenever fd changes hands */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t parked;		/* a connection was parked or a process forgotten */
	bool running, stop;
	pthread_t thread;
	int lfd, wakefd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	evr_client_dialin_log_fn log;
	void *log_arg;
	struct dialin_proc *procs;
	uint32_t nprocs;
	pid_t next_id;			/* the next foreign process's id, to try */
} di = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.lfd = -1,
	.wakefd = -1,
	.next_id = EVR_DIALIN_ID_MIN,
};

static void wake_thread(void)
{
	uint64_t one = 1;
	ssize_t n = write(di.wakefd, &one, sizeof(one));

	(void)n;	/* a full counter is still a wake-up */
}

__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!di.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	di.log(di.log_arg, line);
}

static struct dialin_proc *find_locked(pid_t pid)
{
	for (struct dialin_proc *p = di.procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

static void forget_locked(struct dialin_proc *p)
{
	for (struct dialin_proc **pp = &di.procs; *pp; pp = &(*pp)->next) {
		if (*pp != p)
			continue;
		*pp = p->next;
		if (p->fd >= 0)
			close(p->fd);
		if (p->pidfd >= 0)
			close(p->pidfd);
		free(p);
		di.nprocs--;
		pthread_cond_broadcast(&di.parked);
		return;
	}
}

static struct dialin_proc *find_foreign_locked(uint64_t ino, uid_t uid)
{
	for (struct dialin_proc *p = di.procs; p; p = p->next)
		if (p->foreign && p->ino == ino && p->uid == uid)
			return p;
	return NULL;
}

/* An id for a new foreign process: one no listed process has, from EVR_DIALIN_ID_MIN. */
static pid_t foreign_id_locked(void)
{
	for (;;) {
		pid_t id = di.next_id;

		di.next_id = id == INT32_MAX ? EVR_DIALIN_ID_MIN : id + 1;
		if (!find_locked(id))
			return id;	/* DIALIN_MAX_PROCS ids at most are taken: it ends */
	}
}

/*
 * The peer of @fd is in a pid namespace ours cannot name: its pidfd (the
 * kernel's, through the socket) and that pidfd's pidfs inode, which is the
 * same for every pidfd of one process and never another's.
 * Return: the pidfd (close-on-exec), or -errno with the reason said.
 */
static int foreign_pidfd(int fd, uid_t uid, uint64_t *ret_ino)
{
	struct statfs sfs;
	struct stat st;
	socklen_t l = sizeof(int);
	int pidfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &l) < 0 || pidfd < 0) {
		int err = errno;

		say("refusing a listen-mode connection of uid %u on %s: its process is in a pid "
		    "namespace this one cannot see, and this kernel cannot tell which process it "
		    "is (SO_PEERPIDFD: %s; Linux 6.9 or later can); run the monitor in the "
		    "program's pid namespace or an ancestor of it", (unsigned int)uid, di.path,
		    strerror(err));
		return -err;
	}
	if (fstatfs(pidfd, &sfs) < 0 || sfs.f_type != PID_FS_MAGIC || fstat(pidfd, &st) < 0) {
		close(pidfd);
		say("refusing a listen-mode connection of uid %u on %s: its process is in a pid "
		    "namespace this one cannot see, and this kernel's pidfds do not tell processes "
		    "apart (no pidfs: Linux 6.9 or later); run the monitor in the program's pid "
		    "namespace or an ancestor of it", (unsigned int)uid, di.path);
		return -ENOTSUP;
	}
	*ret_ino = (uint64_t)st.st_ino;
	return pidfd;
}

/* Check and park one accepted connection. */
static void admit(int fd)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct dialin_proc *p;
	uid_t me = geteuid();
	uint64_t ino = 0;
	int pidfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		close(fd);
		return;
	}
	if (cred.uid != me && me != 0) {
		say("refusing a listen-mode connection from process %d of uid %u on %s: only "
		    "uid %u's programs may connect", (int)cred.pid, (unsigned int)cred.uid, di.path,
		    (unsigned int)me);
		close(fd);
		return;
	}
	if (cred.pid <= 0) {
		pidfd = foreign_pidfd(fd, cred.uid, &ino);
		if (pidfd < 0) {
			close(fd);
			return;
		}
	}
	pthread_mutex_lock(&di.lock);
	p = pidfd >= 0 ? find_foreign_locked(ino, cred.uid) : find_locked(cred.pid);
	if (!p) {
		if (di.nprocs >= DIALIN_MAX_PROCS || !(p = calloc(1, sizeof(*p)))) {
			pthread_mutex_unlock(&di.lock);
			say("refusing a listen-mode connection from process %d: %u processes are "
			    "connected already", (int)cred.pid, di.nprocs);
			close(fd);
			if (pidfd >= 0)
				close(pidfd);
			return;
		}
		p->fd = -1;
		if (pidfd >= 0) {
			p->foreign = true;
			p->ino = ino;
			p->uid = cred.uid;
			p->pid = foreign_id_locked();
			p->pidfd = pidfd;
			pidfd = -1;
			say("process %d connected in listen mode on %s (from a pid namespace this one "
			    "cannot see: id %d)", (int)p->pid, di.path, (int)p->pid);
		} else {
			p->pid = cred.pid;
			/* Opened now, while the connection holds the process: it names that one. */
			p->pidfd = evr_consumer_pidfd_open(cred.pid);
			say("process %d connected in listen mode on %s", (int)cred.pid, di.path);
		}
		p->next = di.procs;
		di.procs = p;
		di.nprocs++;
	}
	if (pidfd >= 0)
		close(pidfd);	/* the process's first pidfd stands for it */
	/* The agent keeps one spare: a second one replaces the first (it reconnected). */
	if (p->fd >= 0)
		close(p->fd);
	p->fd = fd;
	p->gen++;
	pthread_cond_broadcast(&di.parked);
	pthread_mutex_unlock(&di.lock);
}

static void accept_some(void)
{
	/* Bounded: a flood of connections cannot keep the thread from the rest. */
	for (int i = 0; i < 64; i++) {
		int fd = accept4(di.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return;
		admit(fd);
	}
}

/* What one entry of the poll set stands for. */
struct dialin_slot {
	pid_t pid;
	uint64_t gen;
	bool pidfd;			/* the process's pidfd, not its parked connection */
};

static void *dialin_run(void *arg)
{
	struct pollfd *pfd = NULL;
	struct dialin_slot *slot = NULL;
	uint32_t cap = 0;

	(void)arg;
	for (;;) {
		uint32_t n = 2;
		int r;

		pthread_mutex_lock(&di.lock);
		if (di.stop) {
			pthread_mutex_unlock(&di.lock);
			break;
		}
		if (cap < 2 + 2 * di.nprocs) {
			uint32_t c = 2 + 2 * di.nprocs + 16;
			struct pollfd *np = realloc(pfd, c * sizeof(*np));
			struct dialin_slot *ns = np ? realloc(slot, c * sizeof(*ns)) : NULL;

			if (np)
				pfd = np;
			if (ns)
				slot = ns;
			if (np && ns)
				cap = c;
		}
		pfd[0] = (struct pollfd){ .fd = di.wakefd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = di.lfd, .events = POLLIN };
		for (struct dialin_proc *p = di.procs; p && n + 2 <= cap; p = p->next) {
			/* A parked connection says nothing until we speak: any input is its end. */
			if (p->fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = p->fd, .events = POLLIN };
				slot[n++] = (struct dialin_slot){ .pid = p->pid, .gen = p->gen };
			}
			if (p->pidfd >= 0) {
				pfd[n] = (struct pollfd){ .fd = p->pidfd, .events = POLLIN };
				slot[n++] = (struct dialin_slot){ .pid = p->pid, .pidfd = true };
			}
		}
		pthread_mutex_unlock(&di.lock);
		r = poll(pfd, n, -1);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (pfd[0].revents) {
			uint64_t v;
			ssize_t got = read(di.wakefd, &v, sizeof(v));

			(void)got;
		}
		if (pfd[1].revents & POLLIN)
			accept_some();
		pthread_mutex_lock(&di.lock);
		for (uint32_t i = 2; i < n; i++) {
			struct dialin_proc *p;

			if (!pfd[i].revents || !(p = find_locked(slot[i].pid)))
				continue;
			if (slot[i].pidfd) {
				if (p->pidfd == pfd[i].fd)
					forget_locked(p);	/* exited */
			} else if (p->fd == pfd[i].fd && p->gen == slot[i].gen) {
				/* The agent closed its spare (or talked out of turn): drop it. It
				 * makes another if it lives; without a pidfd, it is forgotten. */
				close(p->fd);
				p->fd = -1;
				p->gen++;
				if (p->pidfd < 0)
					forget_locked(p);
			}
		}
		pthread_mutex_unlock(&di.lock);
	}
	free(pfd);
	free(slot);
	return NULL;
}

/*
 * The socket's directory must be one that nobody else can write in: another
 * user could otherwise replace our socket with theirs (the agent's peer check
 * would refuse it, but the programs would be lost to us).
 */
static int check_dir(const char *path, char *errbuf, size_t errlen)
{
	char dir[sizeof(di.path)];
	char *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (lstat(dir, &st) < 0)
		return evr_client_fail(errbuf, errlen, -errno, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return evr_client_fail(errbuf, errlen, -ENOTDIR, "%s is not a directory%s", dir,
				       S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
	if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022))
		return evr_client_fail(errbuf, errlen, -EPERM,
				       "refusing %s for the agents' socket: it has mode %04o and owner "
				       "uid %u, so others could replace the socket; use a directory "
				       "that only you (or root) can write in", dir,
				       (unsigned int)(st.st_mode & 07777), (unsigned int)st.st_uid);
	return 0;
}

int evr_client_dialin_start(const char *path, evr_client_dialin_log_fn log, void *log_arg,
			    char *errbuf, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd = -1, wfd = -1, err;

	if (!path || !*path)
		return -EINVAL;
	if (di.running)
		return evr_client_fail(errbuf, errlen, -EBUSY, "listen mode is already on (%s)",
				       di.path);
	if (strlen(path) >= sizeof(sa.sun_path))
		return evr_client_fail(errbuf, errlen, -ENAMETOOLONG,
				       "%s is too long for a socket path (at most %zu bytes)", path,
				       sizeof(sa.sun_path) - 1);
	err = check_dir(path, errbuf, errlen);
	if (err < 0)
		return err;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* A socket left by an earlier monitor goes; anything else is not ours to remove. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return evr_client_fail(errbuf, errlen, -EEXIST,
					       "%s exists and is not a socket: not replacing it", path);
		(void)unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0 || wfd < 0) {
		err = evr_client_fail(errbuf, errlen, -errno, "socket: %s", strerror(errno));
		goto err;
	}
	/*
	 * Mode 0600, set before listen(): until then a connect() is refused whatever
	 * the umask made. The directory check above keeps others from replacing the
	 * socket, the mode from connecting to it; the peer check after accept() is
	 * the last word (a socket whose mode was widened, root's programs).
	 */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(fd, 128) < 0) {
		err = evr_client_fail(errbuf, errlen, -errno, "cannot listen on %s: %s", path,
				      strerror(errno));
		(void)unlink(path);
		goto err;
	}
	pthread_mutex_lock(&di.lock);
	di.lfd = fd;
	di.wakefd = wfd;
	di.log = log;
	di.log_arg = log_arg;
	di.stop = false;
	memcpy(di.path, path, strlen(path) + 1);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&di.parked, &ca);
		pthread_condattr_destroy(&ca);
	}
	err = pthread_create(&di.thread, NULL, dialin_run, NULL);
	di.running = err == 0;
	pthread_mutex_unlock(&di.lock);
	if (err) {
		(void)unlink(path);
		err = evr_client_fail(errbuf, errlen, -err, "cannot start a thread: %s",
				      strerror(err));
		goto err;
	}
	return 0;

err:
	if (fd >= 0)
		close(fd);
	if (wfd >= 0)
		close(wfd);
	di.lfd = di.wakefd = -1;
	return err;
}

void evr_client_dialin_stop(void)
{
	if (!di.running)
		return;
	pthread_mutex_lock(&di.lock);
	di.stop = true;
	wake_thread();
	pthread_mutex_unlock(&di.lock);
	pthread_join(di.thread, NULL);
	pthread_mutex_lock(&di.lock);
	while (di.procs)
		forget_locked(di.procs);
	close(di.lfd);
	(void)unlink(di.path);
	close(di.wakefd);
	di.lfd = di.wakefd = -1;
	di.running = false;
	pthread_mutex_unlock(&di.lock);
	pthread_cond_destroy(&di.parked);
}

bool evr_client_dialin_has(pid_t pid)
{
	bool has;

	pthread_mutex_lock(&di.lock);
	has = di.running && find_locked(pid) != NULL;
	pthread_mutex_unlock(&di.lock);
	return has;
}

bool evr_client_dialin_foreign(pid_t pid)
{
	struct dialin_proc *p;
	bool foreign;

	pthread_mutex_lock(&di.lock);
	p = di.running ? find_locked(pid) : NULL;
	foreign = p && p->foreign;
	pthread_mutex_unlock(&di.lock);
	return foreign;
}

int evr_client_dialin_take(pid_t pid, int timeout_ms, int *ret_fd, int *ret_pidfd,
			   bool *ret_foreign, char *errbuf, size_t errlen)
{
	struct dialin_proc *p;
	struct timespec dl;
	bool foreign;
	int fd, pidfd;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&di.lock);
	p = di.running ? find_locked(pid) : NULL;
	if (!p) {
		pthread_mutex_unlock(&di.lock);
		return -ENOENT;
	}
	/* Its spare is in use by another of our requests: the agent makes the next at once. */
	while ((p = find_locked(pid)) && p->fd < 0) {
		if (pthread_cond_timedwait(&di.parked, &di.lock, &dl) == ETIMEDOUT)
			break;
	}
	p = find_locked(pid);
	if (!p || p->fd < 0) {
		pthread_mutex_unlock(&di.lock);
		if (!p)
			return evr_client_fail(errbuf, errlen, -ESRCH,
					       "process %d (listen mode) exited", (int)pid);
		return evr_client_fail(errbuf, errlen, -ETIMEDOUT,
				       "process %d (listen mode) made no new connection within %d ms",
				       (int)pid, timeout_ms);
	}
	fd = p->fd;
	p->fd = -1;
	p->gen++;
	foreign = p->foreign;
	/* A foreign process has no pid of ours to pidfd_open(): a copy of the one we hold.
	 * Without it the caller notices the exit by EOF, as without pidfd_open(). */
	pidfd = foreign ? (p->pidfd >= 0 ? fcntl(p->pidfd, F_DUPFD_CLOEXEC, 0) : -1) : -2;
	/* Out of the thread's poll set: the connection is the caller's now. */
	wake_thread();
	pthread_mutex_unlock(&di.lock);
	*ret_fd = fd;
	*ret_pidfd = pidfd == -2 ? evr_consumer_pidfd_open(pid) : pidfd;
	*ret_foreign = foreign;
	return 0;
}

int evr_client_dialin_pids(pid_t **ret, uint32_t *ret_n)
{
	pid_t *v;
	uint32_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	pthread_mutex_lock(&di.lock);
	if (!di.running) {
		pthread_mutex_unlock(&di.lock);
		return 0;
	}
	v = malloc((di.nprocs ? di.nprocs : 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&di.lock);
		return -ENOMEM;
	}
	for (struct dialin_proc *p = di.procs; p; p = p->next)
		v[n++] = p->pid;
	pthread_mutex_unlock(&di.lock);
	*ret = v;
	*ret_n = n;
	return 0;
}

static const char *base_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "";
}

void evr_client_dialin_learn(pid_t pid, const struct evr_process_info *pi)
{
	struct dialin_proc *p;

	pthread_mutex_lock(&di.lock);
	p = di.running ? find_locked(pid) : NULL;
	if (p && p->foreign) {
		snprintf(p->exe_name, sizeof(p->exe_name), "%s", base_of(pi->exe));
		snprintf(p->argv0_name, sizeof(p->argv0_name), "%s",
			 base_of(pi->argc ? pi->argv[0] : NULL));
	}
	pthread_mutex_unlock(&di.lock);
}

int evr_client_dialin_named(pid_t pid, const char *name)
{
	struct dialin_proc *p;
	int r = -ENOENT;

	pthread_mutex_lock(&di.lock);
	p = di.running ? find_locked(pid) : NULL;
	if (p && p->foreign)
		r = (p->exe_name[0] && strcmp(p->exe_name, name) == 0) ||
		    (p->argv0_name[0] && strcmp(p->argv0_name, name) == 0);
	pthread_mutex_unlock(&di.lock);
	return r;
}
