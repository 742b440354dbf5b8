// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Discovery of new processes as they start: inotify on the runtime
 * directories (proto/include/evring/rundir.h), where every agent binds its
 * socket. An event there (a socket made, removed or renamed in) makes
 * evr_watch_scan_due() say yes, and the owner's next scan lists the processes;
 * the listing, not the event, decides what is watched (an event says nothing
 * of whether the socket is an agent's, or trusted).
 *
 * An agent binds its socket, then listens: a scan right after the event may
 * come between the two and not list the process. So a socket that appeared
 * ("PID.sock") is pending until its process is attached (or failed), and
 * while one is, every round scans again (at most every SETTLE_MS), for
 * PENDING_MS at most; an attach the agent refused then (not listening yet)
 * is tried again at the next scan instead of failing (watch.c).
 *
 * A directory that does not exist yet (no agent ever ran) is watched from the
 * scan after it appears; until then, and where inotify cannot be had at all
 * (a confined tool, a broker, no inotify instances left), the periodic rescan
 * finds the processes. Root's scans also cover other users' directories,
 * which are not watched: the periodic rescan finds those.
 *
 * A process in a mount namespace of its own (a container) binds its socket in
 * a directory of its own, which no watch here sees: the /proc check
 * (evr_proc_check_run(): a read of /proc's directory every o.check_ms, and a
 * look at the pids new since) finds it once its agent listens, and makes it
 * pending as if inotify had said so, marked as the check's (evr_watch_proc.found).
 *
 * Context: the owner's thread (see watch.h); the descriptor is O_CLOEXEC and
 * non-blocking, so reading it never stalls the owner.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <evring/rundir.h>
#include <evring/sandbox.h>

#include "watch-internal.h"

#define SETTLE_MS 20		/* a pending socket: scan again at most this often */
#define PENDING_MS 2000		/* ... for this long at most: then the periodic rescan */

#define NOTIFY_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE_SELF | \
		       IN_MOVE_SELF)

void evr_watch_notify_open(struct evr_watch *w)
{
	w->notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	evr_watch_notify_arm(w);
}

void evr_watch_notify_arm(struct evr_watch *w)
{
	char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN];
	unsigned int ndirs = 0;
	uint32_t n = 0;

	if (w->notify_fd < 0 || evr_rundir_candidates(geteuid(), dirs, &ndirs) < 0)
		return;
	if (w->nwatched == ndirs)
		return;		/* all of them already; a removed one resets the count */
	/* Adding a directory watched already returns its watch again: harmless. */
	for (unsigned int i = 0; i < ndirs; i++)
		if (inotify_add_watch(w->notify_fd, dirs[i], NOTIFY_EVENTS | IN_ONLYDIR) >= 0)
			n++;
	w->nwatched = n;
}

void evr_watch_notify_close(struct evr_watch *w)
{
	if (w->notify_fd >= 0)
		close(w->notify_fd);
	w->notify_fd = -1;
	w->nwatched = 0;
}

int evr_watch_fd(const struct evr_watch *w)
{
	return w->notify_fd;
}

void evr_watch_notify_pend(struct evr_watch *w, pid_t pid, bool checked, uint64_t now_ns)
{
	for (uint32_t i = 0; i < w->npending; i++)
		if (w->pending[i] == pid)
			return;
	if (w->npending == sizeof(w->pending) / sizeof(w->pending[0]))
		return;		/* a burst: the periodic rescan finds the rest */
	w->pending[w->npending] = pid;
	w->pending_checked[w->npending] = checked;
	w->pending_until_ns[w->npending++] = now_ns + (uint64_t)PENDING_MS * 1000000u;
}

/* A socket named @name appeared: its process is pending until a scan lists it. */
static void add_pending(struct evr_watch *w, const char *name, uint64_t now_ns)
{
	int pid, end = 0;

	if (sscanf(name, "%d.sock%n", &pid, &end) != 1 || name[end] || pid <= 0)
		return;
	evr_watch_notify_pend(w, pid, false, now_ns);
}

enum evr_watch_found evr_watch_notify_found(const struct evr_watch *w, pid_t pid)
{
	for (uint32_t i = 0; i < w->npending; i++)
		if (w->pending[i] == pid)
			return w->pending_checked[i] ? EVR_WATCH_FOUND_CHECK : EVR_WATCH_FOUND_NOTIFY;
	return w->scans > 1 ? EVR_WATCH_FOUND_RESCAN : EVR_WATCH_FOUND_START;
}

bool evr_watch_notify_fresh(struct evr_watch *w, pid_t pid, uint64_t now_ns)
{
	for (uint32_t i = 0; i < w->npending; i++)
		if (w->pending[i] == pid)
			return now_ns < w->pending_until_ns[i];
	/*
	 * A socket named after no process we watch: a container's in a directory
	 * it shares with us, named by the pid it has there (often 1), while we
	 * know the process by another (client-find.c). Its process may be this
	 * one: try again while the name is pending rather than fail for good.
	 */
	for (uint32_t i = 0; i < w->npending; i++)
		if (now_ns < w->pending_until_ns[i] &&
		    !evr_watch_find(w, w->pending[i]))
			return true;
	return false;
}

void evr_watch_notify_scanned(struct evr_watch *w, uint64_t now_ns)
{
	bool attaching = false;
	uint32_t k = 0;

	for (uint32_t i = 0; i < w->n; i++)
		attaching |= w->procs[i]->state == EVR_WATCH_ATTACHING;
	for (uint32_t i = 0; i < w->npending; i++) {
		struct evr_watch_proc *p = evr_watch_find(w, w->pending[i]);

		/* Pending until its attach ended one way or the other. */
		if ((p && p->state != EVR_WATCH_ATTACHING) || now_ns >= w->pending_until_ns[i])
			continue;
		/*
		 * A name the scan listed no process by (a container's socket in a
		 * shared directory, named by its own pid; or one removed again):
		 * once no attach is under way, the one it may have been is done, and
		 * scanning every SETTLE_MS for it would find nothing more.
		 */
		if (!p && !attaching)
			continue;
		w->pending[k] = w->pending[i];
		w->pending_checked[k] = w->pending_checked[i];
		w->pending_until_ns[k++] = w->pending_until_ns[i];
	}
	w->npending = k;
}

/* One look of the /proc check (the broker's, or ours). Return: 0, -errno. */
static int check_look(struct evr_watch *w, pid_t *v, uint32_t cap, uint32_t *n)
{
	int r;

	if (w->o.broker) {
		char err[512];

		return evr_broker_proc_check(w->o.broker, v, cap, n, &w->check_pending, err,
					     sizeof(err));
	}
	r = evr_proc_check_run(w->check, v, cap, n);
	w->check_pending = evr_proc_check_pending(w->check);
	return r;
}

/*
 * The /proc check, when due and when something may have changed (a pid
 * handed out since the last look, or a process pending): a process of a
 * namespace of its own found listening is pending (as a socket inotify saw),
 * and a scan is due now. Return: true when it found one.
 */
static bool check(struct evr_watch *w, uint64_t now_ns)
{
	pid_t v[64];
	uint32_t n = 0;
	bool found = false;
	int r, last;

	if (!w->o.check_ms || w->check_off ||
	    now_ns - w->last_check_ns < (uint64_t)w->o.check_ms * 1000000u)
		return false;
	w->last_check_ns = now_ns;
	/* Read before the look: a process made after it moves it again. */
	last = w->loadavg_fd >= 0 ? evr_proc_last_pid(w->loadavg_fd) : -1;
	if (last >= 0 && last == w->check_last_pid && !w->check_pending)
		return false;
	w->check_last_pid = last;
	w->check_looks++;
	r = check_look(w, v, sizeof(v) / sizeof(v[0]), &n);
	/* Cannot be had (no /proc, a helper gone): the rescans do its work. */
	if (r < 0 && r != -ENOMEM)
		w->check_off = true;
	for (uint32_t i = 0; i < n; i++) {
		/* A pid reused by a new process is the rescan's (retry_ms). */
		if (evr_watch_find(w, v[i]))
			continue;
		evr_watch_notify_pend(w, v[i], true, now_ns);
		found = true;
	}
	return found;
}

void evr_watch_check_open(struct evr_watch *w)
{
	pid_t v[64];
	uint32_t n;

	w->loadavg_fd = -1;
	if (!w->o.check_ms)
		return;
	/*
	 * Now, before the owner confines itself (the descriptors stay open) and
	 * before its first scan: the first look takes note of what runs, which
	 * that scan lists; whatever starts after it is new to the check.
	 */
	w->loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	w->check_last_pid = w->loadavg_fd >= 0 ? evr_proc_last_pid(w->loadavg_fd) : -1;
	if (!w->o.broker && evr_proc_check_new(&w->check) < 0)
		w->check_off = true;
	else if (check_look(w, v, sizeof(v) / sizeof(v[0]), &n) < 0)
		w->check_off = true;
	w->last_check_ns = evr_mono_ns();
}

void evr_watch_check_close(struct evr_watch *w)
{
	evr_proc_check_free(w->check);
	w->check = NULL;
	if (w->loadavg_fd >= 0)
		close(w->loadavg_fd);
	w->loadavg_fd = -1;
}

bool evr_watch_scan_due(struct evr_watch *w, uint64_t now_ns)
{
	uint64_t since = now_ns - w->last_scan_ns;
	bool due = !w->scans || since >= (uint64_t)w->o.rescan_ms * 1000000u ||
		   (w->npending && since >= (uint64_t)SETTLE_MS * 1000000u);
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;

	due |= check(w, now_ns);
	if (w->notify_fd < 0)
		return due;
	while ((len = read(w->notify_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			/* A watched directory went away: watch it again once it is back. */
			if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))
				w->nwatched = 0;
			if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && ev->len)
				add_pending(w, ev->name, now_ns);
			p += sizeof(*ev) + ev->len;
		}
		due = true;
	}
	return due;
}

uint64_t evr_watch_due_ns(const struct evr_watch *w)
{
	uint64_t due;

	if (!w->scans || w->npending || !w->o.rescan_ms)
		return 0;
	for (uint32_t i = 0; i < w->n; i++)
		if (w->procs[i]->state == EVR_WATCH_ATTACHING)
			return 0;
	due = w->last_scan_ns + (uint64_t)w->o.rescan_ms * 1000000u;
	if (w->o.check_ms && !w->check_off &&
	    w->last_check_ns + (uint64_t)w->o.check_ms * 1000000u < due)
		due = w->last_check_ns + (uint64_t)w->o.check_ms * 1000000u;
	return due;
}
