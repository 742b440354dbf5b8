// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Integration test of the watch (consumer/watch/) with real producers: two
 * workload processes (examples/workload.c) in a private runtime directory.
 *
 *   - the first, running before the watch, is found by the first scan, goes
 *     attaching -> live, and its Process counters arrive (the table finds
 *     each by name, the history holds its latest values);
 *   - the second, started after the watch began, is found without a periodic
 *     rescan (rescan_ms is an hour): inotify on the runtime directory says a
 *     socket came. Where inotify cannot be had, the test says so and exits 77;
 *   - ended (SIGTERM), it is reported exited, and a scan later forgets it;
 *   - a pid with no agent (this test's own parent has none) is reported failed
 *     with a reason, and evr_watch_add(sync) gives the error to the caller.
 *
 * Every wait is for the event itself, polled on the watch's descriptor with a
 * generous deadline that turns a hang into a failure.
 * Usage: evr-watch-test WORKLOAD
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <evring/watch.h>

#define DEADLINE_NS 60000000000ull	/* a hang, not a slow machine */

#define CHECK(c, ...)								\
	do {									\
		if (!(c)) {							\
			fprintf(stderr, "FAIL watch_test:%d: ", __LINE__);	\
			fprintf(stderr, __VA_ARGS__);				\
			fputc('\n', stderr);					\
			exit(1);						\
		}								\
	} while (0)

/* The state changes the watch reported, in order. */
struct change {
	pid_t pid;
	enum evr_watch_state from, to;
	bool had_info;
};

struct change_log {
	struct change v[64];
	unsigned n;
	unsigned scans_by_event;
};

static struct change_log changes;

static void on_changed(struct evr_watch *w, struct evr_watch_proc *p,
		       const struct evr_watch_change *ch)
{
	(void)w;
	if (changes.n < 64)
		changes.v[changes.n++] = (struct change){ p->pid, ch->from, ch->to, ch->info != NULL };
}

static const struct evr_watch_ops ops = {
	EVR_WATCH_OPS_SIZES(struct evr_watch_proc, struct evr_watch_counter),
	.changed = on_changed,
};

static pid_t spawn(const char *workload)
{
	pid_t pid = fork();

	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* A failing test exits at once: its producers go with it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Its "ready"/"done" lines are not this test's output. */
		if (!freopen("/dev/null", "w", stdout))
			_exit(126);
		execl(workload, workload, "--rate", "50", "--events", "0", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The report of @pid going @from -> @to, or NULL. */
static const struct change *reported(pid_t pid, enum evr_watch_state from,
				     enum evr_watch_state to)
{
	for (unsigned i = 0; i < changes.n; i++)
		if (changes.v[i].pid == pid && changes.v[i].from == from && changes.v[i].to == to)
			return &changes.v[i];
	return NULL;
}

/* Run the owner's loop until @done(@w, @pid) or the deadline. */
static void run_until(struct evr_watch *w, pid_t pid,
		      bool (*done)(struct evr_watch *w, pid_t pid), const char *what)
{
	uint64_t deadline = evr_mono_ns() + DEADLINE_NS;

	while (!done(w, pid)) {
		struct pollfd pfd = { .fd = evr_watch_fd(w), .events = POLLIN };
		uint64_t scans = w->scans;

		CHECK(evr_mono_ns() < deadline, "pid %d: never %s (%llu scans, %u pending, %s %s)",
		      (int)pid, what, (unsigned long long)w->scans, w->npending,
		      evr_watch_find(w, pid) ? evr_watch_state_name(evr_watch_find(w, pid)->state)
					     : "not watched",
		      evr_watch_find(w, pid) ? evr_watch_find(w, pid)->err : "");
		if (evr_watch_scan_due(w, evr_mono_ns())) {
			CHECK(evr_watch_scan(w) == 0, "scan failed");
			if (scans)	/* rescan_ms is an hour: only inotify makes a later one */
				changes.scans_by_event++;
		}
		evr_watch_poll(w);
		/* Wake for a socket in the directory, else look at the sessions again. */
		(void)poll(&pfd, 1, 20);
	}
}

/* Is @pid's agent listening yet (its socket in the runtime directory)? */
static bool listening(pid_t pid)
{
	pid_t *pids = NULL;
	uint32_t n = 0;
	bool found = false;

	if (evr_process_list(&pids, &n) < 0)
		return false;
	for (uint32_t i = 0; i < n; i++)
		found |= pids[i] == pid;
	free(pids);
	return found;
}

static bool has_counters(struct evr_watch *w, pid_t pid)
{
	struct evr_watch_proc *p = evr_watch_find(w, pid);
	struct evr_watch_counter *c;

	if (!p || p->state != EVR_WATCH_LIVE)
		return false;
	c = evr_watch_counter(w, p, "Process", "threads");
	return c && c->nsamples >= 3;
}

static bool is_gone(struct evr_watch *w, pid_t pid)
{
	struct evr_watch_proc *p = evr_watch_find(w, pid);

	return p && (p->state == EVR_WATCH_EXITED || p->state == EVR_WATCH_FAILED);
}

static bool forgotten(struct evr_watch *w, pid_t pid)
{
	return !evr_watch_find(w, pid);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/evr-watch-XXXXXX", err[256] = "";
	struct evr_watch_opts o = {
		.client_name = "watch-test",
		.interval_ms = 100,
		.ring_size = 64u * 1024u,
		.history = 4,
		.notify = true,
		.rescan_ms = 3600000,
		.forget_ms = 0,
		.ops = &ops,
	};
	struct evr_watch_counter *c;
	struct evr_watch_proc *p;
	struct evr_watch w;
	pid_t a, b, none = getppid();
	int st;

	CHECK(argc == 2, "usage: %s WORKLOAD", argv[0]);
	signal(SIGPIPE, SIG_IGN);
	CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	setenv("EVR_RUNTIME_DIR", dir, 1);

	/* Sizes below the watch's are refused. */
	{
		struct evr_watch_ops small = ops;
		struct evr_watch_opts so = o;

		small.counter_size = sizeof(struct evr_watch_counter) - 1;
		so.ops = &small;
		CHECK(evr_watch_init(&w, &so) == -EINVAL, "a counter struct too small was taken");
	}

	a = spawn(argv[1]);
	/* A listens before the watch begins: the first scan finds it. */
	{
		uint64_t deadline = evr_mono_ns() + DEADLINE_NS;
		struct timespec nap = { .tv_nsec = 10000000 };

		while (!listening(a)) {
			CHECK(evr_mono_ns() < deadline, "A never listened");
			nanosleep(&nap, NULL);
		}
	}
	CHECK(evr_watch_init(&w, &o) == 0, "init");
	if (evr_watch_fd(&w) < 0) {
		printf("SKIP: no inotify here\n");
		kill(a, SIGKILL);
		waitpid(a, NULL, 0);
		rmdir(dir);
		return 77;
	}

	/* The first: found by the first scan, attached, its counters in the table. */
	CHECK(evr_watch_scan_due(&w, evr_mono_ns()) && evr_watch_scan(&w) == 0 &&
	      evr_watch_find(&w, a), "the first scan did not find A");
	run_until(&w, a, has_counters, "had Process counters");
	CHECK(reported(a, EVR_WATCH_ATTACHING, EVR_WATCH_LIVE), "no attaching -> live for A");
	CHECK(reported(a, EVR_WATCH_ATTACHING, EVR_WATCH_LIVE)->had_info,
	      "A's attach came without the process's description");
	p = evr_watch_find(&w, a);
	CHECK(!strcmp(p->name, "workload"), "A is named '%s'", p->name);
	c = evr_watch_counter(&w, p, "Process", "threads");
	CHECK(c->last.value >= 1 && c->kind == EVR_SAMPLE_GAUGE, "threads: %g, kind %u",
	      c->last.value, c->kind);
	CHECK(c->hist_cap == 4 && c->hist_n == (c->nsamples < 4 ? c->nsamples : 4),
	      "history: %u of %u for %llu samples", c->hist_n, c->hist_cap,
	      (unsigned long long)c->nsamples);
	CHECK(c->hist[(c->hist_next + c->hist_cap - 1) % c->hist_cap].value == c->last.value,
	      "the newest history point is not the latest sample");
	CHECK(evr_watch_counter(&w, p, "Process", "no-such-counter") == NULL, "a counter made up");
	/* Watching it again is nothing new. */
	{
		struct evr_watch_proc *again = NULL;

		CHECK(evr_watch_add(&w, a, true, err, sizeof(err), &again) == 0 && again == p,
		      "adding A again");
	}

	/* The second: started now, found through inotify, not a periodic scan. */
	b = spawn(argv[1]);
	run_until(&w, b, has_counters, "was found and had Process counters");
	CHECK(changes.scans_by_event > 0, "B was found, but by no scan that inotify asked for");
	CHECK(reported(b, EVR_WATCH_ATTACHING, EVR_WATCH_LIVE), "no attaching -> live for B");

	/* Ended: reported exited, then forgotten once it is not listed. */
	kill(b, SIGTERM);
	CHECK(waitpid(b, &st, 0) == b, "waitpid B");
	run_until(&w, b, is_gone, "was reported gone");
	CHECK(reported(b, EVR_WATCH_LIVE, EVR_WATCH_EXITED), "B went live -> %s",
	      evr_watch_state_name(evr_watch_find(&w, b)->state));
	CHECK(evr_watch_find(&w, b)->errnum == ESRCH, "B's errnum");
	/* Its socket is gone: the next scan forgets it (forget_ms 0, not listed). */
	CHECK(evr_watch_scan(&w) == 0 && forgotten(&w, b), "B was not forgotten");
	CHECK(evr_watch_find(&w, a) && evr_watch_find(&w, a)->state == EVR_WATCH_LIVE,
	      "A is no longer live");

	/* No agent there: the caller's error with sync, a failed state without. */
	CHECK(evr_watch_add(&w, none, true, err, sizeof(err), NULL) < 0 && err[0],
	      "a sync attach to pid %d (no agent) did not fail", (int)none);
	CHECK(!evr_watch_find(&w, none), "a failed sync attach was kept");
	CHECK(evr_watch_add(&w, none, false, err, sizeof(err), &p) == 0 && p, "async add");
	run_until(&w, none, is_gone, "failed");
	p = evr_watch_find(&w, none);
	CHECK(p->state == EVR_WATCH_FAILED && p->err[0] && p->errnum > 0, "no agent: %s %s (%d)",
	      evr_watch_state_name(p->state), p->err, p->errnum);
	CHECK(reported(none, EVR_WATCH_ATTACHING, EVR_WATCH_FAILED), "no attaching -> failed");
	CHECK(!reported(none, EVR_WATCH_ATTACHING, EVR_WATCH_FAILED)->had_info,
	      "a process never reached came with a description");
	p->pinned = true;	/* forget_ms 0, yet kept: the owner pinned it */
	CHECK(evr_watch_scan(&w) == 0 && evr_watch_find(&w, none), "a pinned process forgotten");

	evr_watch_fini(&w);
	kill(a, SIGTERM);
	CHECK(waitpid(a, &st, 0) == a, "waitpid A");
	rmdir(dir);
	printf("ok: %u state changes, %u scans asked by inotify\n", changes.n,
	       changes.scans_by_event);
	return 0;
}
