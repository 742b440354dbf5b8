// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record with several processes: -p A -p B -n NAME, or --all (every
 * process of this user that runs libevring's agent, including those that start
 * while recording). One file of several processes (format 2, docs/trace-
 * format.md): each process is a stream of its own, written by a recorder of
 * its own (<evring/recorder.h>), with its own PROCESS, SESSION, clock sync
 * points, threads, losses and END; the file's stream 0 is its process table
 * (pid, name, command line, start, how its recording ended).
 *
 * One thread, one loop, whatever the number of processes, which sleeps in
 * epoll_wait() on every process's descriptors and steps a recorder
 * (evr_recorder_step(): pump what its producer published, notice that it ended
 * or died) only when it has something to do, so that a process costs the loop
 * in proportion to what it publishes, not to the loop's rounds:
 *  - a packet completed: its doorbell (armed after each step, the handshake of
 *    evr_client_wait_fd()) wakes the loop, for that process alone;
 *  - the session ended (the doorbell again) or the process died (its pidfd, or
 *    its socket's end): at once;
 *  - its recorder's own deadlines (evr_recorder_due_ns(): the packets still
 *    open every flush interval, clock sync points, thread names, side bands);
 *    the flushes of every recorder fall on the same instants
 *    (EVR_RECORDER_FLUSH_ALIGNED), so that one wake-up serves them all;
 *  - a busy process, whose doorbell would ring more than 10 times a second
 *    (a packet within FAST_WINDOW_NS), is looked at every DRAIN_MS instead,
 *    its doorbell unarmed: its writers then make no system call for us (as a
 *    paced reader, docs/protocol.md "Waking the consumer").
 * A thread per process would buy lower latency per process at the price of a
 * lock around the shared file and N stacks; the rings are sized to hold far
 * more than a DRAIN_MS pause (32 MiB per ring by default).
 *
 * Discovery is the watch's (consumer/watch/): inotify on the runtime
 * directories says a socket appeared, a scan lists the processes, and an attach
 * thread per new process connects (a stopped or slow process never holds up
 * the loop); connect_only leaves the session to us. The loop then starts the
 * recorder on the connected client: one round trip to an agent that just
 * answered its hello.
 *
 * Confinement, as clrtop's: a broker (forked before any thread) lists the
 * processes and connects to them; once the named processes are recording and
 * inotify is armed, seccomp allows waiting, the sockets already open, threads
 * (the attaches) and mapping the sessions that agents send.
 *
 * Side bands (--stacks, --sample-cpu, --heap, --syscalls), with -p/-n only:
 * each process gets its own (its module map, its perf events, in its own
 * stream), opened in proc_start() before the sandbox, as record.c opens the
 * one process's. Not with --all: a process found later is attached inside the
 * sandbox, which may not read its /proc maps nor open perf events.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/recorder.h>
#include <evring/sandbox.h>
#include <evring/symbols.h>
#include <evring/trace.h>
#include <evring/watch.h>

#include "cli.h"
#include "record.h"

#define CMD "record"
#define DRAIN_MS 10		/* a busy process is looked at this often */
#define DRAIN_NS (DRAIN_MS * 1000000ull)
/* Busy: FAST_PACKETS packets or more a second, measured over FAST_WINDOW_NS
 * (longer than the flush interval: what is written comes in bursts then). */
#define FAST_WINDOW_NS 1000000000ull
#define FAST_PACKETS 10u
#define RESCAN_MS 1000		/* --all: list the processes anyway this often */
/* The processes' answers to the stop, all together (an agent waits for an RCU grace period). */
#define STOP_WAIT_MS 30000
#define WAKE_MAX 64		/* epoll events taken per wake-up */
/* epoll_event.data: the process's index times 4 plus which descriptor, or the watch's. */
#define EV_DOORBELL 0u
#define EV_PIDFD 1u
#define EV_SOCK 2u
#define EV_WATCH UINT64_MAX

/* A process being recorded, or that was. */
struct mproc {
	pid_t pid;
	char name[64];
	struct evr_client *c;
	struct evr_recorder *rec;
	uint32_t stream;
	struct evr_sideband *sb;	/* --stacks, --sample-cpu, --heap, --syscalls; or NULL */
	bool sb_started;
	bool finished;		/* evr_recorder_stop() was called */
	enum evr_trace_proc_what how;	/* how its recording ended */
	/* The loop's (run_loop()). */
	struct evr_client_wait_set ws;	/* its descriptors in the epoll set, -1: not */
	bool polled;		/* not in the set: looked at every DRAIN_MS, as a busy one */
	bool fast;		/* busy: looked at every DRAIN_MS, its doorbell unarmed */
	bool ready;		/* step it at the next round (woken, or it had more) */
	uint64_t due;		/* step it then at the latest */
	uint64_t win_ns, win_bytes;	/* its rate: the window's start, bytes written then */
	uint32_t packet_size;
};

struct multi {
	const struct record_opts *o;
	int out_fd;
	bool created;
	struct evr_trace_mux *mux;
	struct mproc **procs;	/* each its own allocation: recorders keep a pointer */
	uint32_t n, cap;
	struct evr_watch watch;
	bool watching;
	struct evr_broker *broker;	/* lists and connects once confined; NULL: --no-sandbox */
	bool failed;		/* the file could not be written: stop */
	int err;
	int epfd;		/* every process's doorbell, pidfd and socket, and the watch's */
	/* The CPU line (evr_cli_cpu_line()): read before the loop and after the summary. */
	uint64_t cpu_start, cpu_end, events;
	bool watch_fired;	/* the watch's inotify descriptor is readable */
};

static struct multi *the_multi;	/* for the watch's hook: one recording per program */

static void log_warning(void *arg, const char *msg)
{
	const struct mproc *p = arg;

	evr_cli_warn(CMD, "process %d: %s", (int)p->pid, msg);
}

static struct mproc *proc_find(struct multi *m, pid_t pid)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (m->procs[i]->pid == pid)
			return m->procs[i];
	return NULL;
}

/* A line of the process table, now. */
static int table_line(struct multi *m, const struct mproc *p, enum evr_trace_proc_what what,
		      const char *why)
{
	const struct evr_process_info *pi = p->c ? evr_client_process(p->c) : NULL;
	struct evr_trace_proc_rec rec = {
		.stream = p->stream, .pid = (uint32_t)p->pid, .what = (uint16_t)what,
		.time_ns = evr_mono_ns(),
	};
	char *argv1[1] = { (char *)why };
	int err;

	if (what == EVR_TRACE_PROC_ATTACHED && pi) {
		rec.ppid = pi->ppid;
		rec.start_realtime_ns = pi->start_realtime_ns;
		err = evr_trace_mux_proc(m->mux, &rec, p->name, pi->argc, pi->argv);
	} else {
		err = evr_trace_mux_proc(m->mux, &rec, p->name, why ? 1 : 0, why ? argv1 : NULL);
	}
	if (err < 0) {
		evr_cli_error(CMD, "cannot write %s: %s", m->o->output_name, strerror(-err));
		m->failed = true;
		m->err = err;
	}
	return err;
}

/* The session every process gets (its ring size depends on its CPUs). */
static struct evr_attach_opts attach_opts(const struct record_opts *o, struct evr_client *c)
{
	const struct evr_process_info *pi = evr_client_process(c);

	return (struct evr_attach_opts){
		.providers = o->providers,
		.mode = o->mode,
		.counter_interval_ms = o->counter_interval_ms,
		.stack_depth = o->stack_depth,
		.ring_size = o->buffer_size ? evr_cli_ring_share(o->buffer_size, pi->nr_cpus) : 0,
	};
}

/*
 * The watch's attach thread, once connected: start the session there. A
 * session start waits for the agent (its memory made, the enable masks
 * recomputed: about 10 ms here); processes found together start side by side
 * instead of one after the other in the loop. @arg: the record_opts, alive as
 * long as the program.
 */
static int watch_start(const void *arg, struct evr_client *c, char *err, size_t errlen)
{
	const struct evr_attach_opts ao = attach_opts(arg, c);

	return evr_client_start(c, &ao, err, errlen);
}

static int sideband_emit(void *ctx, uint32_t kind, const void *data, size_t len)
{
	return evr_trace_writer_chunk(ctx, kind, data, (uint32_t)len);
}

/* The recorder's side band, into @arg's stream: the module map first, then samples. */
static int sideband_cb(struct evr_recorder *rec, struct evr_trace_writer *w, uint64_t now_ns,
		       bool final, void *arg)
{
	struct mproc *p = arg;
	int ret = 0;

	(void)rec;
	(void)now_ns;
	if (!p->sb_started) {
		p->sb_started = true;
		ret = evr_sideband_start(p->sb, sideband_emit, w);
	}
	if (ret == 0)
		ret = final ? evr_sideband_finish(p->sb, sideband_emit, w)
			    : evr_sideband_poll(p->sb, sideband_emit, w);
	return ret;
}

/* evr_sideband_open_fn through the broker: a perf map created after the sandbox. */
static int open_perf_map(void *ctx, pid_t pid, uid_t owner)
{
	char err[512];

	return evr_broker_open_perf_map(ctx, pid, owner, err, sizeof(err));
}

/*
 * @p's side band, when one is asked for (before the sandbox: its module map,
 * its perf events; added to the recorder once it started). Return: 0, or
 * -errno with a line in @err.
 */
static int proc_sideband(struct multi *m, struct mproc *p, char *err, size_t errlen)
{
	const struct record_opts *o = m->o;
	struct evr_sideband_opts so = { .pid = p->pid, .sample_hz = o->sample_hz,
					.syscalls = o->syscalls, .syscall_list = o->syscall_list };
	int ret;

	if (!o->stack_depth && !o->sample_hz && !o->heap_rate && !o->syscalls)
		return 0;
	err[0] = '\0';
	ret = evr_sideband_new(&so, &p->sb, err, errlen);
	if (ret < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-ret));
		return ret;
	}
	/* A JIT may start its perf map later, which the confined recorder could not open. */
	if (!evr_sideband_has_perf_map(p->sb) && m->broker)
		evr_sideband_set_perf_map_opener(p->sb, open_perf_map, m->broker);
	return 0;
}

/* Once the recorder writes its stream: @p's side band into it. Return: 0, -errno with @err. */
static int proc_sideband_add(const struct record_opts *o, struct mproc *p, char *err,
			     size_t errlen)
{
	int ret;

	if (!p->sb)
		return 0;
	/* As record.c: often enough for the sampling and system-call rings. */
	ret = evr_recorder_add_sideband(p->rec, o->syscalls ? 10 : o->sample_hz ? 100 : 1000,
					sideband_cb, p);
	if (ret < 0)
		snprintf(err, errlen, "cannot add the side band: %s", strerror(-ret));
	return ret;
}

static int ep_add(struct multi *m, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return fd >= 0 && epoll_ctl(m->epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? fd : -1;
}

static void ep_del(struct multi *m, int *fd)
{
	if (*fd >= 0)
		(void)epoll_ctl(m->epfd, EPOLL_CTL_DEL, *fd, NULL);
	*fd = -1;
}

/*
 * Put @p (m->procs[@idx]) in the loop's epoll set: its doorbell, and its pidfd
 * and socket for its death, which its readers then no longer poll() for. A
 * process whose descriptors cannot be watched is looked at every DRAIN_MS.
 */
static void proc_watch(struct multi *m, struct mproc *p, uint32_t idx)
{
	struct evr_client_wait_set ws;
	uint64_t tag = (uint64_t)idx * 4u;

	p->ws = (struct evr_client_wait_set){ .doorbell = -1, .pidfd = -1, .sock = -1 };
	p->packet_size = evr_client_shm(p->c)->packet_size;
	p->ready = true;
	p->polled = true;
	if (m->epfd < 0)
		return;
	evr_client_wait_set(p->c, &ws);
	/* Edge-triggered: every ring is an edge (an eventfd wakes its waiters at each
	 * write), so its count need not be read back: a system call less a wake-up. */
	p->ws.doorbell = ep_add(m, ws.doorbell, tag + EV_DOORBELL, EPOLLIN | EPOLLET);
	p->ws.pidfd = ep_add(m, ws.pidfd, tag + EV_PIDFD, EPOLLIN);
	p->ws.sock = ep_add(m, ws.sock, tag + EV_SOCK, EPOLLIN | EPOLLRDHUP);
	if (p->ws.doorbell >= 0 && (p->ws.pidfd >= 0 || p->ws.sock >= 0)) {
		p->polled = false;
		evr_client_watch_alive(p->c);
	}
}

static void proc_unwatch(struct multi *m, struct mproc *p)
{
	ep_del(m, &p->ws.doorbell);
	ep_del(m, &p->ws.pidfd);
	ep_del(m, &p->ws.sock);
}

/*
 * Start recording process @c (connected; its session started when @started,
 * else not yet; ours from now on).
 * Return: 0; -errno after printing why (the process is then not recorded; a
 * write error stops everything).
 */
/* @found: how --all's watch found it, for its line (NULL: named by the user). */
static int proc_start(struct multi *m, pid_t pid, struct evr_client *c, bool started,
		      const char *found)
{
	struct evr_recorder_opts ro = {
		.attach = attach_opts(m->o, c),
		.client = EVR_RECORD_CLIENT_NAME,
		.flags = (started ? EVR_RECORDER_SESSION_STARTED : 0) | EVR_RECORDER_FLUSH_ALIGNED |
			 m->o->crc_flags,
		.log = log_warning,
		.mux = m->mux,
	};
	struct mproc *p;
	char err[512];
	int ret;

	if (m->n == m->cap) {
		uint32_t cap = m->cap ? 2 * m->cap : 16;
		struct mproc **np = realloc(m->procs, cap * sizeof(*np));

		if (!np) {
			evr_client_free(c);
			return -ENOMEM;
		}
		m->procs = np;
		m->cap = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		evr_client_free(c);
		return -ENOMEM;
	}
	p->pid = pid;
	p->c = c;
	evr_watch_short_name(evr_client_process(c), p->name, sizeof(p->name));
	ro.log_arg = p;
	ret = evr_recorder_new(c, &ro, &p->rec, err, sizeof(err));
	if (ret == 0)
		ret = proc_sideband(m, p, err, sizeof(err));
	if (ret == 0)
		ret = evr_recorder_start(p->rec, -1, err, sizeof(err));
	if (ret == 0)
		ret = proc_sideband_add(m->o, p, err, sizeof(err));
	if (ret < 0) {
		struct evr_recorder_stats st;

		evr_recorder_stats(p->rec, &st);
		evr_cli_warn(CMD, "process %d (%s) is not recorded: %s", (int)pid, p->name, err);
		if (st.write_failed) {
			m->failed = true;
			m->err = ret;
		}
		evr_recorder_free(p->rec);
		evr_sideband_free(p->sb);
		evr_client_free(c);
		free(p);
		return ret;
	}
	p->stream = evr_recorder_stream(p->rec);
	m->procs[m->n] = p;
	proc_watch(m, p, m->n);
	m->n++;
	(void)table_line(m, p, EVR_TRACE_PROC_ATTACHED, NULL);
	/* Tests wait for this line: the process's session runs. */
	fprintf(stderr, "evring record: + process %d (%s), stream %u%s%s\n", (int)pid, p->name,
		p->stream, found ? ", found by " : "", found ? found : "");
	return 0;
}

/* The watch's news (connect_only): a process connected, or could not be. */
static void watch_changed(struct evr_watch *w, struct evr_watch_proc *wp,
			  const struct evr_watch_change *ch)
{
	struct multi *m = the_multi;

	(void)w;
	if (ch->to == EVR_WATCH_LIVE && wp->client) {
		struct evr_client *c = wp->client;

		wp->client = NULL;	/* ours now: the watch reads nothing of it */
		if (!proc_find(m, wp->pid))
			(void)proc_start(m, wp->pid, c, true, evr_watch_found_name(wp->found));
		else
			evr_client_free(c);
	} else if (ch->to == EVR_WATCH_FAILED && ch->from == EVR_WATCH_ATTACHING) {
		evr_cli_warn(CMD, "process %d is not recorded: %s", (int)wp->pid, wp->err);
	}
}

static const struct evr_watch_ops watch_ops = {
	EVR_WATCH_OPS_SIZES(struct evr_watch_proc, struct evr_watch_counter),
	.start = watch_start,
	.changed = watch_changed,
};

/* Finish @p's stream: its END chunk, and the table's line on how it ended. */
static void proc_finish(struct multi *m, struct mproc *p, bool interrupted)
{
	struct evr_recorder_stats st;
	char err[512];
	int ret;

	if (p->finished)
		return;
	p->finished = true;
	proc_unwatch(m, p);
	ret = evr_recorder_stop(p->rec, interrupted ? EVR_TRACE_END_INTERRUPTED : 0, err,
				sizeof(err));
	evr_recorder_stats(p->rec, &st);
	if (ret < 0) {
		evr_cli_error(CMD, "process %d: %s", (int)p->pid, err);
		if (st.write_failed) {
			m->failed = true;
			m->err = ret;
		}
	}
	switch (st.stop) {
	case EVR_RECORDER_STOP_ENDED:
		p->how = EVR_TRACE_PROC_EXITED;
		break;
	case EVR_RECORDER_STOP_GONE:
		p->how = EVR_TRACE_PROC_DIED;
		break;
	case EVR_RECORDER_STOP_ERROR:
	case EVR_RECORDER_RUNNING:
		p->how = EVR_TRACE_PROC_FAILED;
		break;
	default:
		p->how = EVR_TRACE_PROC_DETACHED;
	}
	if (!m->failed)
		(void)table_line(m, p, p->how, p->how == EVR_TRACE_PROC_FAILED ? err : NULL);
	if (p->how == EVR_TRACE_PROC_EXITED || p->how == EVR_TRACE_PROC_DIED)
		fprintf(stderr, "evring record: - process %d (%s) %s: %" PRIu64 " events, %"
			PRIu64 " lost\n", (int)p->pid, p->name,
			p->how == EVR_TRACE_PROC_EXITED ? "exited" : "died", st.events, st.lost);
}

/* Attach to the processes named on the command line (each must be there). */
static int attach_named(struct multi *m)
{
	const struct record_opts *o = m->o;
	pid_t pids[128];
	uint32_t n = 0;
	char err[512];
	int ret;

	for (uint32_t i = 0; i < o->npids; i++)
		pids[n++] = o->pids[i];
	for (uint32_t i = 0; i < o->nnames; i++) {
		ret = evr_cli_pid_of_name(CMD, o->names[i], &pids[n]);
		if (ret < 0)
			return ret;
		n++;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct evr_client *c;

		if (proc_find(m, pids[i]))
			continue;	/* named twice */
		if (m->watching) {
			/* --all too: through the watch, which then knows it (attached
			 * here, at once: an error is the user's). */
			ret = evr_watch_add(&m->watch, pids[i], true, err, sizeof(err), NULL);
			if (ret < 0) {
				evr_cli_error(CMD, "%s", err);
				return ret;
			}
			if (!proc_find(m, pids[i]))
				return m->err ? m->err : -EIO;	/* proc_start() said why */
			continue;
		}
		ret = evr_cli_connect(m->broker, pids[i], EVR_RECORD_CLIENT_NAME, &c, err,
				      sizeof(err));
		if (ret < 0) {
			evr_cli_error(CMD, "%s", err);
			return ret;
		}
		ret = proc_start(m, pids[i], c, false, NULL);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int live_count(const struct multi *m)
{
	int k = 0;

	for (uint32_t i = 0; i < m->n; i++)
		k += !m->procs[i]->finished;
	return k;
}

/*
 * After a step of @p that left nothing ready (@spans taken): when to look at it
 * next. Return: true when it should be stepped again at once.
 */
static bool proc_plan(struct mproc *p, uint32_t nr_rings, int spans)
{
	uint64_t now = evr_mono_ns(), bytes = 0;
	int ret;

	/* What its writers published and we took, its rings' positions summed. */
	for (uint32_t i = 0; i < nr_rings; i++)
		bytes += evr_client_span_pos(p->c, i);

	if (!p->win_ns) {
		/* From its first step on: not the stream's header nor the backlog. */
		p->win_ns = now;
		p->win_bytes = bytes;
	} else if (now - p->win_ns >= FAST_WINDOW_NS) {
		/* At this rate, would its doorbell ring FAST_PACKETS times a second? */
		p->fast = (unsigned __int128)(bytes - p->win_bytes) * 1000000000u >=
			  (unsigned __int128)FAST_PACKETS * p->packet_size * (now - p->win_ns);
		p->win_ns = now;
		p->win_bytes = bytes;
	}
	p->due = evr_recorder_due_ns(p->rec);
	if (p->polled || p->fast) {
		if (p->due > now + DRAIN_NS)
			p->due = now + DRAIN_NS;
		return false;
	}
	/* The doorbell rings when a packet completes; a whole one may have just now. */
	ret = evr_client_span_arm(p->c);
	if (ret == 0)
		return false;
	if (ret < 0 || !spans) {
		/* Nothing taken, yet something said to wait (a packet completed
		 * meanwhile, or garbage): the next round, not a spin. */
		if (p->due > now + 1000000u)
			p->due = now + 1000000u;
		return false;
	}
	p->ready = true;
	return true;
}

/*
 * Step every live recorder that is due: woken by its descriptors, or its own
 * deadline passed. Return: true when one should be stepped again before
 * sleeping (it stopped at EVR_RECORDER_STEP_MAX spans, or more came).
 */
static bool step_due(struct multi *m)
{
	uint64_t now = evr_mono_ns();
	bool more = false;

	for (uint32_t i = 0; i < m->n && !m->failed; i++) {
		struct mproc *p = m->procs[i];
		struct evr_recorder_stats st;
		char err[512];
		int n;

		if (p->finished || (!p->ready && p->due > now))
			continue;
		p->ready = false;
		n = evr_recorder_step(p->rec, err, sizeof(err));
		if (n < 0) {
			evr_cli_error(CMD, "process %d: %s", (int)p->pid, err);
			evr_recorder_stats(p->rec, &st);
			if (st.write_failed) {
				m->failed = true;
				m->err = n;
			}
			proc_finish(m, p, false);
			continue;
		}
		evr_recorder_stats(p->rec, &st);
		if (st.stop != EVR_RECORDER_RUNNING) {
			proc_finish(m, p, false);
			continue;
		}
		if (n >= (int)EVR_RECORDER_STEP_MAX) {
			p->ready = true;
			more = true;
			continue;
		}
		more |= proc_plan(p, st.nr_rings, n);
	}
	return more;
}

/* What epoll said: mark the processes to step; a death is asked about now. */
static void take_events(struct multi *m, const struct epoll_event *ev, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t tag = ev[i].data.u64;
		struct mproc *p;

		if (tag == EV_WATCH) {
			m->watch_fired = true;
			continue;
		}
		if (tag / 4u >= m->n)
			continue;
		p = m->procs[tag / 4u];
		if (p->finished)
			continue;
		p->ready = true;
		if (tag % 4u == EV_DOORBELL)
			continue;
		evr_client_check_alive(p->c);
		if (evr_client_state(p->c) != EVR_CLIENT_LIVE) {
			/* Readable for good now (level-triggered): out of the set. */
			ep_del(m, &p->ws.pidfd);
			ep_del(m, &p->ws.sock);
		}
	}
}

/*
 * Sleep until a descriptor fires (a doorbell, a death, the watch's inotify), a
 * signal, @deadline_ns, or the first process's own deadline; while attaches
 * are under way, DRAIN_MS at most (their threads wake no one).
 */
static void wait_events(struct multi *m, uint64_t deadline_ns)
{
	uint64_t now = evr_mono_ns(), until = now + RESCAN_MS * 1000000ull;
	struct epoll_event ev[WAKE_MAX];
	int n;

	for (uint32_t i = 0; i < m->n; i++)
		if (!m->procs[i]->finished && m->procs[i]->due < until)
			until = m->procs[i]->due;
	if (deadline_ns && deadline_ns < until)
		until = deadline_ns;
	if (m->watching) {
		uint64_t wd = evr_watch_due_ns(&m->watch);

		if (!wd)
			wd = now + DRAIN_NS;
		if (wd < until)
			until = wd;
	}
	if (m->epfd < 0) {
		struct pollfd pfd = { .fd = m->watching ? evr_watch_fd(&m->watch) : -1,
				      .events = POLLIN };

		if (until > now + DRAIN_NS)
			until = now + DRAIN_NS;
		if (until > now)
			(void)poll(&pfd, 1, (int)((until - now + 999999) / 1000000u));
		return;
	}
	n = epoll_wait(m->epfd, ev, WAKE_MAX,
		       until <= now ? 0 : (int)((until - now + 999999) / 1000000u));
	if (n > 0)
		take_events(m, ev, n);
}

static void summary(struct multi *m, uint64_t t0, uint64_t t1)
{
	uint64_t events = 0, lost = 0;
	double secs = (double)(t1 - t0) / 1e9;
	char by[32];

	for (uint32_t i = 0; i < m->n; i++) {
		struct mproc *p = m->procs[i];
		struct evr_recorder_stats st;
		static const char *const how[] = {
			[EVR_TRACE_PROC_EXITED] = "exited", [EVR_TRACE_PROC_DIED] = "died",
			[EVR_TRACE_PROC_DETACHED] = "runs on", [EVR_TRACE_PROC_FAILED] = "failed",
		};

		evr_recorder_stats(p->rec, &st);
		events += st.events;
		lost += st.lost;
		fprintf(stderr, "evring record:   process %d (%s), stream %u: %" PRIu64 " events, %"
			PRIu64 " lost, %s\n", (int)p->pid, p->name, p->stream, st.events, st.lost,
			p->how < sizeof(how) / sizeof(how[0]) && how[p->how] ? how[p->how] : "?");
	}
	fprintf(stderr, "evring record: %" PRIu64 " events, %s, %" PRIu64 " lost, %.2f s, "
		"%u processes, file %s\n", events,
		evr_fmt_bytes(evr_trace_mux_bytes(m->mux), by, sizeof(by)), lost, secs, m->n,
		m->o->output_name);
}

/*
 * End every recording still running: first ask every process for its threads
 * (evr_recorder_stop_begin(): no wait), then take each answer and ask the
 * process to stop its session (evr_recorder_stop_request(): no wait for that),
 * so that they stop side by side, then finish them one by one under one
 * deadline for all. Processes stopped since their last look cost one 100 ms
 * wait for their thread lists in all and one grace for their stops; none at
 * all when they already left a thread list unanswered: their rings are read
 * from their memory as they are. One stopped after it answered its last look
 * (nothing here can tell) is seen stopped within 100 ms of the wait for its
 * stop (evr_client_stop_wait() reads its state) and not waited for further.
 */
static void stop_all(struct multi *m)
{
	uint64_t deadline = evr_mono_ns() + STOP_WAIT_MS * 1000000ull;
	uint32_t unanswered = 0;

	for (uint32_t i = 0; i < m->n; i++)
		if (!m->procs[i]->finished)
			evr_recorder_stop_begin(m->procs[i]->rec);
	for (uint32_t i = 0; i < m->n; i++)
		if (!m->procs[i]->finished)
			evr_recorder_stop_request(m->procs[i]->rec, deadline);
	for (uint32_t i = 0; i < m->n; i++) {
		struct mproc *p = m->procs[i];
		struct evr_recorder_stats st;

		if (p->finished)
			continue;
		proc_finish(m, p, evr_cli_stop_signal != 0);
		evr_recorder_stats(p->rec, &st);
		if (!st.unanswered)
			continue;
		unanswered++;
		/* Tests read this line: not waited for, read from its memory. */
		fprintf(stderr, "evring record: ? process %d (%s) did not answer the stop (%s): read "
			"as it was, %" PRIu64 " events, %" PRIu64 " lost\n", (int)p->pid, p->name,
			st.stop_stopped ? "stopped: not waited for further" :
			st.stop_waited ? "waited for" : "not waited for: a question had gone unanswered",
			st.events, st.lost);
	}
	if (unanswered)
		fprintf(stderr, "evring record: %u of %u processes did not answer the stop; stopping took "
			"%.3f s in all\n", unanswered, m->n,
			(double)(evr_mono_ns() + STOP_WAIT_MS * 1000000ull - deadline) / 1e9);
}

static int run_loop(struct multi *m)
{
	const struct record_opts *o = m->o;
	uint64_t t0 = evr_mono_ns(), deadline = o->duration_ns ? t0 + o->duration_ns : 0;
	struct evr_trace_end e = { 0 };
	int ret = 0;

	fprintf(stderr, "evring record: recording %s into %s (Ctrl-C to stop)\n",
		o->all ? "every process with an agent" : "the processes named", o->output_name);
	while (!evr_cli_stop_signal && !m->failed) {
		bool more;

		if (deadline && evr_mono_ns() >= deadline)
			break;
		if (m->watching) {
			uint64_t now = evr_mono_ns(), wd = evr_watch_due_ns(&m->watch);

			/* Its inotify descriptor is read only when epoll said so. */
			if (m->watch_fired || m->epfd < 0 || !wd || now >= wd) {
				m->watch_fired = false;
				if (evr_watch_scan_due(&m->watch, now))
					(void)evr_watch_scan(&m->watch);
			}
			/* Takes finished attaches: watch_changed() starts their recorders. */
			(void)evr_watch_poll(&m->watch);
		}
		more = step_due(m);
		/* What the round wrote, every stream's chunks: one write(). */
		ret = evr_trace_mux_flush(m->mux);
		if (ret < 0 && !m->failed) {
			evr_cli_error(CMD, "cannot write %s: %s", o->output_name, strerror(-ret));
			m->failed = true;
			m->err = ret;
		}
		/* Without --all, the recording ends with the last process. */
		if (!m->watching && !live_count(m))
			break;
		if (!more)
			wait_events(m, deadline);
	}
	stop_all(m);
	for (uint32_t i = 0; i < m->n; i++) {
		struct evr_recorder_stats st;

		evr_recorder_stats(m->procs[i]->rec, &st);
		e.events += st.events;
		e.lost += st.lost;
	}
	if (!m->failed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		e.end_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		e.end_mono_ns = evr_mono_ns();
		e.flags = evr_cli_stop_signal ? EVR_TRACE_END_INTERRUPTED : 0;
		ret = evr_trace_mux_end(m->mux, &e);
		if (ret < 0) {
			evr_cli_error(CMD, "cannot write %s: %s", o->output_name, strerror(-ret));
			m->err = ret;
		}
	}
	summary(m, t0, evr_mono_ns());
	m->cpu_end = evr_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	m->events = e.events;
	return m->err;
}

int evr_record_multi_run(const struct record_opts *o)
{
	struct multi m = { .o = o, .out_fd = -1, .epfd = -1 };
	int ret;

	the_multi = &m;
	/* Without it (no memory), every process is looked at every DRAIN_MS. */
	m.epfd = epoll_create1(EPOLL_CLOEXEC);
	ret = evr_record_open_output(o, &m.out_fd, &m.created);
	if (ret < 0)
		return ret;
	ret = evr_trace_mux_new(m.out_fd, &m.mux);
	if (ret == 0)
		ret = evr_trace_mux_gather(m.mux, true);
	if (ret < 0) {
		evr_cli_error(CMD, "cannot write %s: %s", o->output_name, strerror(-ret));
		goto out;
	}
	/* No SA_RESTART there: a signal ends the poll() at once. */
	evr_record_catch_signals();
	if (!o->flags.no_sandbox) {
		char err[512];

		/* Forked now: nothing has started a thread yet. */
		ret = evr_broker_new(NULL, &m.broker, err, sizeof(err));
		if (ret < 0) {
			evr_cli_error(CMD, "%s", err);
			goto out;
		}
	}
	if (o->all) {
		const struct evr_watch_opts wo = {
			.client_name = EVR_RECORD_CLIENT_NAME,
			.broker = m.broker,
			.notify = true,
			.notify_broker = true,
			.rescan_ms = RESCAN_MS,
			.check_ms = EVR_WATCH_CHECK_MS,
			.connect_only = true,
			.ops = &watch_ops,
			.spec_arg = o,
		};

		ret = evr_watch_init(&m.watch, &wo);
		if (ret < 0) {
			evr_cli_error(CMD, "cannot watch for processes: %s", strerror(-ret));
			goto out;
		}
		m.watching = true;
		if (m.epfd >= 0 && evr_watch_fd(&m.watch) >= 0)
			(void)ep_add(&m, evr_watch_fd(&m.watch), EV_WATCH, EPOLLIN);
	}
	ret = attach_named(&m);
	if (ret < 0)
		goto out;
	if (!o->flags.no_sandbox) {
		struct evr_sandbox_opts so = {
			.allow = EVR_SANDBOX_WAIT | EVR_SANDBOX_SOCKETS | EVR_SANDBOX_THREADS |
				 EVR_SANDBOX_SESSIONS,
		};
		char err[512];

		ret = evr_sandbox_enter(&so, err, sizeof(err));
		if (ret < 0) {
			evr_cli_error(CMD, "%s", err);
			goto out;
		}
	}
	if (o->flags.sandbox_probe)
		evr_cli_sandbox_probe(CMD);
	if (m.watching) {
		/* The processes there now: attached before the first round. */
		ret = evr_watch_scan(&m.watch);
		if (ret < 0) {
			evr_cli_error(CMD, "cannot list the processes: %s", strerror(-ret));
			goto out;
		}
	}
	m.cpu_start = evr_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	ret = run_loop(&m);
out:
	if (m.watching)
		evr_watch_fini(&m.watch);
	for (uint32_t i = 0; i < m.n; i++) {
		evr_recorder_free(m.procs[i]->rec);
		evr_sideband_free(m.procs[i]->sb);	/* after the recorder, which borrowed it */
		evr_client_free(m.procs[i]->c);
		free(m.procs[i]);
	}
	free(m.procs);
	if (m.created && (!m.mux || (ret < 0 && !m.n)))
		unlink(o->output);
	evr_trace_mux_free(m.mux);
	evr_broker_free(m.broker);
	if (m.epfd >= 0)
		close(m.epfd);
	if (m.out_fd >= 0 && close(m.out_fd) < 0 && ret == 0) {
		evr_cli_error(CMD, "cannot write %s: %s", o->output_name, strerror(errno));
		ret = -EIO;
	}
	the_multi = NULL;
	evr_cli_cpu_line(CMD, m.cpu_start, m.cpu_end, evr_clock_ns(CLOCK_PROCESS_CPUTIME_ID),
			 m.events);
	return ret;
}
