// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: the /proc check (evr_proc_check_run()), for the tools
 * that keep watching for new processes (the watch: record --all, forward
 * --all, the monitor). A process in a mount namespace of its own (a container)
 * binds its agent's socket in a runtime directory of its own, which inotify
 * on ours never sees; the full listing (evr_process_list()) finds it, but
 * walks every process's namespaces and costs milliseconds, too much to run
 * every 50 ms. So:
 *   - each look first reads the last pid handed out (/proc/loadavg); the
 *     pids since, when they are few, are looked at one by one (a stat() of
 *     /proc/PID: a look costs what the machine starts, not what it runs);
 *   - else it reads /proc's directory only (pids and their inode numbers, no
 *     file of any process), and compares it with the last such read;
 *   - a pid not there before, or there with another inode (a reused pid: a
 *     new process gets a new /proc inode), is examined once: two stat()s tell
 *     our namespaces (nearly every process: inotify's business) from others;
 *   - one in namespaces of its own is examined as the full listing would
 *     (client-find.c: evr_ns_listed()), and while its agent is not listening
 *     yet (it forked first, loads its program, then binds), it stays pending
 *     and is examined again at every look, for PENDING_MS at most, or until
 *     its pid leaves /proc or changes inode.
 * A process that moves into namespaces of its own after it was first seen
 * (`unshare --mount` without --fork) is left to the full listing's rescans.
 * Its owner calls it only when something may have changed: a pid handed out
 * since its last call (evr_proc_last_pid(): one read of /proc/loadavg, 2.4 us
 * on our 2-vCPU guest), or a process pending. A read of /proc's directory
 * costs 30 us with 77 processes there and 0.7 ms with 1080, which a busy
 * machine of a thousand processes would pay 20 times a second: the range of
 * new pids is looked at instead while it is small.
 *
 * Context: one thread at a time per check (its owner's).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/mono-time.h>

#include "client-internal.h"

#define PENDING_MS	3000	/* a process in a namespace of its own: its agent awaited this long */
#define PENDING_MAX	64	/* ... at most this many at once; the rescans find the rest */
#define RANGE_MIN	64	/* pids handed out since the last look: each looked at, up to
				 * this many (or a quarter of the processes) */

struct seen {
	pid_t pid;
	uint64_t ino;		/* its /proc directory's: who it is */
};

struct pending {
	struct seen who;
	uint64_t until_ns;
};

struct evr_proc_check {
	DIR *proc;
	int loadavg_fd;			/* /proc/loadavg: the last pid handed out */
	int last_pid;			/* ... at the last look, or -1 */
	struct stat self_mnt, self_pid;
	struct seen *seen, *next;	/* the last look's pids, and this one's */
	uint32_t nseen, nnext, cap;
	struct pending pending[PENDING_MAX];
	uint32_t npending;
	bool primed;			/* a first look was taken */
};

int evr_proc_check_new(struct evr_proc_check **ret)
{
	struct evr_proc_check *pc = calloc(1, sizeof(*pc));

	if (!pc)
		return -ENOMEM;
	if (stat("/proc/self/ns/mnt", &pc->self_mnt) < 0 ||
	    stat("/proc/self/ns/pid", &pc->self_pid) < 0) {
		free(pc);
		return -EOPNOTSUPP;	/* no namespaces to tell apart */
	}
	pc->proc = opendir("/proc");
	if (!pc->proc) {
		int err = -errno;

		free(pc);
		return err;
	}
	pc->loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	pc->last_pid = -1;
	*ret = pc;
	return 0;
}

void evr_proc_check_free(struct evr_proc_check *pc)
{
	if (!pc)
		return;
	closedir(pc->proc);
	if (pc->loadavg_fd >= 0)
		close(pc->loadavg_fd);
	free(pc->seen);
	free(pc->next);
	free(pc);
}

static int seen_cmp(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static const struct seen *seen_find(const struct seen *v, uint32_t n, pid_t pid)
{
	const struct seen key = { .pid = pid };

	return n ? bsearch(&key, v, n, sizeof(*v), seen_cmp) : NULL;
}

/* /proc's pids now, sorted, into pc->next. Return: 0, -ENOMEM. */
static int list_pids(struct evr_proc_check *pc)
{
	bool sorted = true;
	struct dirent *e;

	pc->nnext = 0;
	/* The kernel lists the directory anew from its start. */
	rewinddir(pc->proc);
	while ((e = readdir(pc->proc))) {
		unsigned long pid = 0;
		const char *s = e->d_name;

		if (*s < '1' || *s > '9')
			continue;	/* not a process: self, sys, meminfo, ... */
		for (; *s >= '0' && *s <= '9' && pid <= INT32_MAX; s++)
			pid = pid * 10 + (unsigned long)(*s - '0');
		if (*s || pid > INT32_MAX)
			continue;
		if (pc->nnext == pc->cap) {
			uint32_t cap = pc->cap ? pc->cap * 2 : 512;
			struct seen *a = realloc(pc->seen, cap * sizeof(*a)), *b;

			if (!a)
				return -ENOMEM;
			pc->seen = a;
			b = realloc(pc->next, cap * sizeof(*b));
			if (!b)
				return -ENOMEM;
			pc->next = b;
			pc->cap = cap;
		}
		if (pc->nnext && pc->next[pc->nnext - 1].pid >= (pid_t)pid)
			sorted = false;
		pc->next[pc->nnext++] = (struct seen){ .pid = (pid_t)pid, .ino = e->d_ino };
	}
	/* In pid order, as Linux lists them; sorted anyway, should one not. */
	if (!sorted)
		qsort(pc->next, pc->nnext, sizeof(*pc->next), seen_cmp);
	return 0;
}

/*
 * Look at @pid. Return: 1 its agent listens where the full listing would list
 * it, 0 a process in a namespace of its own not (yet) listed, -1 one in ours
 * (inotify's and the rescans' business), gone, or not ours to look at.
 */
static int examine(const struct evr_proc_check *pc, pid_t pid)
{
	struct stat mnt, pidns, sock;
	struct evr_ns_proc p;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if (stat(path, &mnt) < 0)
		return -1;	/* gone, or another user's (ptrace access needed) */
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	if (stat(path, &pidns) < 0)
		return -1;
	if (mnt.st_ino == pc->self_mnt.st_ino && mnt.st_dev == pc->self_mnt.st_dev &&
	    pidns.st_ino == pc->self_pid.st_ino && pidns.st_dev == pc->self_pid.st_dev)
		return -1;
	/* A thread (the pids handed out are threads' too): its process is looked at. */
	if (evr_ns_probe(pid, &p) < 0 || (p.tgid && p.tgid != pid))
		return -1;
	return evr_ns_listed(&p, &sock) == 1 ? 1 : 0;
}

static void pend(struct evr_proc_check *pc, const struct seen *who, uint64_t now_ns)
{
	for (uint32_t i = 0; i < pc->npending; i++)
		if (pc->pending[i].who.pid == who->pid)
			return;
	if (pc->npending == PENDING_MAX)
		return;		/* a burst: the rescans find the rest */
	pc->pending[pc->npending++] = (struct pending){
		.who = *who, .until_ns = now_ns + (uint64_t)PENDING_MS * 1000000u,
	};
}

uint32_t evr_proc_check_pending(const struct evr_proc_check *pc)
{
	return pc ? pc->npending : 0;
}

int evr_proc_last_pid(int fd)
{
	char buf[128], *last;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long v;

	if (n < 0)
		return -errno;
	/* "0.47 0.60 0.63 2/1082 123456\n": the last field. */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	last = strrchr(buf, ' ');
	if (!last)
		return -EPROTO;
	v = strtol(last + 1, NULL, 10);
	return v >= 0 && v <= INT32_MAX ? (int)v : -EPROTO;
}

/* @pid's /proc inode now (who it is), or 0 when it is gone. */
static uint64_t ino_of(pid_t pid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/*
 * The pending ones: still there, still the same (@listed: by this look's
 * listing, else by a stat()), not too old; reported into @ret once listening.
 */
static void pending_look(struct evr_proc_check *pc, bool listed, uint64_t now_ns, pid_t *ret,
			 uint32_t cap, uint32_t *n)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < pc->npending; i++) {
		struct pending *p = &pc->pending[i];
		const struct seen *s = listed ? seen_find(pc->next, pc->nnext, p->who.pid) : NULL;
		uint64_t ino = listed ? (s ? s->ino : 0) : ino_of(p->who.pid);

		if (ino != p->who.ino || now_ns >= p->until_ns)
			continue;
		if (*n < cap && examine(pc, p->who.pid) == 1) {
			ret[(*n)++] = p->who.pid;
			continue;
		}
		pc->pending[k++] = *p;
	}
	pc->npending = k;
}

/* @who is new: reported into @ret, awaited, or (ours, gone) nothing. */
static void new_look(struct evr_proc_check *pc, const struct seen *who, uint64_t now_ns,
		     pid_t *ret, uint32_t cap, uint32_t *n)
{
	int r = examine(pc, who->pid);

	if (r == 1 && *n < cap)
		ret[(*n)++] = who->pid;
	else if (r >= 0)
		pend(pc, who, now_ns);
}

/*
 * The pids handed out since the last look, when they are few: each looked at
 * by itself (a stat()), not by a read of /proc's whole directory, so that a
 * look costs what the machine starts, not what it runs.
 */
static bool range_ok(const struct evr_proc_check *pc, int last)
{
	uint32_t d;

	if (!pc->primed || last < 0 || pc->last_pid < 0 || last < pc->last_pid)
		return false;	/* not known, or wrapped at pid_max */
	d = (uint32_t)(last - pc->last_pid);
	return d <= RANGE_MIN || d * 4 <= pc->nseen;
}

int evr_proc_check_run(struct evr_proc_check *pc, pid_t *ret, uint32_t cap, uint32_t *ret_n)
{
	uint64_t now = evr_mono_ns();
	uint32_t n = 0;
	struct seen *t;
	int err, last;

	*ret_n = 0;
	if (!pc)
		return -EINVAL;
	/* Before the look: a process made during it moves it again. */
	last = pc->loadavg_fd >= 0 ? evr_proc_last_pid(pc->loadavg_fd) : -1;
	if (range_ok(pc, last)) {
		pending_look(pc, false, now, ret, cap, &n);
		for (int pid = pc->last_pid + 1; pid > 0 && pid <= last; pid++) {
			const struct seen who = { .pid = pid, .ino = ino_of(pid) };

			if (who.ino)
				new_look(pc, &who, now, ret, cap, &n);
		}
		pc->last_pid = last;
		*ret_n = n;
		return 0;
	}
	err = list_pids(pc);
	if (err < 0)
		return err;
	pc->last_pid = last;
	if (pc->primed) {
		pending_look(pc, true, now, ret, cap, &n);
		/*
		 * Then the new ones: not in the last listing (or another process
		 * by the same pid). One a range look since reported is looked at
		 * again: reported again if it listens (the caller knows it).
		 */
		for (uint32_t i = 0; i < pc->nnext; i++) {
			const struct seen *s = &pc->next[i], *old;

			old = seen_find(pc->seen, pc->nseen, s->pid);
			if (!old || old->ino != s->ino)
				new_look(pc, s, now, ret, cap, &n);
		}
	}
	/* The processes there at the first look are the full listing's. */
	pc->primed = true;
	t = pc->seen;
	pc->seen = pc->next;
	pc->next = t;
	pc->nseen = pc->nnext;
	*ret_n = n;
	return 0;
}
