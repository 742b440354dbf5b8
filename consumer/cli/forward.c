// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring forward: attach to processes (or start one), run one session on each,
 * and hand every event and counter sample, decoded once, to the sinks named by
 * --to, each behind its own filter (forward.h has the threads and the
 * accounting; forward-sinks.c parses, opens and sums them up).
 *
 * --all: the watch (consumer/watch/, connect_only, as record --all uses it)
 * finds every process with an agent, now and later, and connects and starts
 * its session on an attach thread; the loop takes the finished attaches each
 * round and adds them as sources. The forwarder is not confined (record and
 * the monitor are): its sinks open files and sockets while it runs.
 *
 * The loop reads every source in turn (a bounded number of records each), lets
 * the sinks format and queue, and sleeps on a source's doorbell when nothing
 * was read, at most POLL_MS, so that half-filled packets of every source are
 * seen within that time. It ends on Ctrl-C/SIGTERM, after --duration, once
 * every source's session has ended and been drained, or when every sink has
 * failed; then it stops the sessions still running, drains them, and gives the
 * sinks until --flush-timeout to deliver what they queued.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/watch.h>

#include "cli.h"
#include "forward-cli.h"
#include "forward.h"

#define CMD "forward"
#define CLIENT_NAME "evring forward"
#define POLL_MS 100
#define ATTACH_POLL_MS 10	/* --all: how often to look for finished attaches */
#define RESCAN_MS 1000		/* --all: list the processes anyway this often */
#define TICK_NS 100000000u
#define RECORDS_PER_ROUND 4096u
#define MAX_SOURCES 64u
#define MAX_SINKS 16u

struct fwd_opts {
	pid_t pids[MAX_SOURCES];
	uint32_t npids;
	char **program;
	const char *providers;
	bool providers_given;		/* --providers was given */
	const char *to[MAX_SINKS];
	uint32_t nto;
	uint64_t duration_ns;
	uint64_t buffer_size;
	const char *buffer_arg;
	uint32_t counter_interval_ms;	/* 0: the default (see pick_interval) */
	uint64_t flush_ns;
	bool all;			/* --all: every process with an agent, late ones too */
};

enum fwd_stop { STOP_NONE, STOP_SIGNAL, STOP_DURATION, STOP_ENDED, STOP_SINKS };

struct source {
	struct evr_fwd_source src;
	struct evr_client *c;
	uint64_t events, lost;
	bool drained;
	bool gone;		/* drained, and the producer died rather than ended it */
};

struct fwd {
	const struct fwd_opts *o;
	/* Each its own allocation, kept to the end: sinks may keep &so->src (graphite's
	 * event counts). */
	struct source **so;
	uint32_t nso, cap;
	struct evr_watch watch;		/* --all */
	bool watching;
	int err;			/* a source that could not be added: -ENOMEM */
	struct evr_fwd_sink sinks[MAX_SINKS];
	uint32_t nsinks;
	struct evr_launch launch;
	bool launched;
	int64_t rt_offset_ns;		/* CLOCK_REALTIME - CLOCK_MONOTONIC */
	enum fwd_stop stop;
	uint64_t t_start, t_tick;
	double cpu_start;		/* the forwarder's CPU seconds at t_start */
	uint32_t wait_next;		/* the source to sleep on next */
	uint64_t seen_full[MAX_SINKS];	/* each outbox's dropped_full at the last tick */
	bool behind[MAX_SINKS];		/* said it is dropping, not yet caught up */
	struct evr_field_value vals[EVR_SCHEMA_MAX_FIELDS];
};

enum { OPT_PROVIDERS = EVR_OPT_FIRST_OWN, OPT_TO, OPT_DURATION, OPT_BUFFER, OPT_COUNTERS,
       OPT_FLUSH, OPT_ALL };

static const struct evr_cli_option longopts[] = {
	EVR_CLI_OPTIONS_PID("attach to process PID (repeatable)"),
	{ "name", required_argument, 'n', "NAME",
	  "attach to the one process named NAME (repeatable)" },
	{ "all", no_argument, OPT_ALL, NULL,
	  "every process of yours with libevring's agent, and\n"
	  "those that start while forwarding" },
	{ "to", required_argument, OPT_TO, "SINK",
	  "where to send them (repeatable), each with its own\n"
	  "filter: KIND[:ARG][,KEY=VALUE...]\n"
	  "  jsonl[:PATH]        JSON lines to PATH (- stdout)\n"
	  "  graphite:HOST:PORT  counters to carbon (plaintext)\n"
	  "  journald[:SOCKET]   one journal entry per event\n"
	  "  lttng               evring:* LTTng-UST tracepoints\n"
	  "filter keys: level=N, provider=GLOB, event=GLOB,\n"
	  "keywords=0xMASK, what=events|counters|all, max-rate=N" },
	{ "providers", required_argument, OPT_PROVIDERS, "LIST",
	  "Name[:0xKEYWORDS[:LEVEL[:k=v;...]]],... (default: '*';\n"
	  "only counters when every sink takes only counters)" },
	{ "counter-interval", required_argument, OPT_COUNTERS, "TIME",
	  "sample counters every TIME (e.g. 1s; default:\n"
	  "none, or 1s when a sink takes only counters)" },
	{ "duration", required_argument, OPT_DURATION, "TIME",
	  "stop after TIME (500ms, 30s, 5m, 1h)" },
	{ "buffer-size", required_argument, OPT_BUFFER, "SIZE",
	  "session buffer per process, split over its rings" },
	{ "flush-timeout", required_argument, OPT_FLUSH, "TIME",
	  "how long sinks may take to deliver at exit (default 5s)" },
	EVR_CLI_OPTION_HELP,
	{ 0 },
};

static void usage(FILE *f)
{
	evr_cli_usage(f,
		"Usage: evring forward -p PID | -n NAME | --all --to SINK [--to SINK...] [OPTIONS]\n"
		"       evring forward --to SINK [OPTIONS] -- PROGRAM [ARGS...]\n"
		"Forward the events and counters of running processes (or of PROGRAM from its\n"
		"first event) to other tools, live; each item carries its process's pid.\n",
		longopts,
		"Stops on Ctrl-C/SIGTERM, after --duration, or when the processes exit (with\n"
		"--all: Ctrl-C/SIGTERM or --duration only).\n");
}

/* Return: 1 run, 0 done (--help), -EINVAL. */
static int parse_argv(int argc, char **argv, struct fwd_opts *o)
{
	struct evr_cli_getopt g;
	struct evr_cli_flags flags = { 0 };
	int c, r;

	o->providers = "*";
	o->flush_ns = 5000000000ull;
	evr_cli_getopt_init(&g, "+:", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case 'p':
		case 'n':
			if (o->npids == MAX_SOURCES) {
				evr_cli_error(CMD, "%s: at most %u processes",
					      c == 'p' ? "--pid" : "--name", MAX_SOURCES);
				return -EINVAL;
			}
			if (c == 'p' && evr_cli_parse_pid(CMD, "--pid", optarg, &o->pids[o->npids]) < 0)
				return -EINVAL;
			/* The one process of that name (an error says why not: exit 1). */
			if (c == 'n' && (r = evr_cli_pid_of_name(CMD, optarg, &o->pids[o->npids])) < 0)
				return r;
			o->npids++;
			break;
		case OPT_ALL:
			o->all = true;
			break;
		case OPT_TO:
			if (o->nto == MAX_SINKS) {
				evr_cli_error(CMD, "--to: at most %u sinks", MAX_SINKS);
				return -EINVAL;
			}
			o->to[o->nto++] = optarg;
			break;
		case OPT_PROVIDERS:
			if (evr_cli_parse_providers(CMD, optarg, &o->providers) < 0)
				return -EINVAL;
			o->providers_given = true;
			break;
		case OPT_DURATION:
			if (evr_parse_duration(CMD, "--duration", optarg, &o->duration_ns) < 0)
				return -EINVAL;
			break;
		case OPT_FLUSH:
			if (evr_parse_duration(CMD, "--flush-timeout", optarg, &o->flush_ns) < 0)
				return -EINVAL;
			break;
		case OPT_COUNTERS:
			if (evr_cli_parse_counter_interval(CMD, optarg, &o->counter_interval_ms) < 0)
				return -EINVAL;
			break;
		case OPT_BUFFER:
			if (evr_parse_size(CMD, "--buffer-size", optarg, &o->buffer_size) < 0)
				return -EINVAL;
			o->buffer_arg = optarg;
			break;
		default:
			r = evr_cli_common_opt(CMD, c, argv, usage, &flags);
			if (r <= 0)
				return r;
		}
	}
	if (evr_cli_program_operand(CMD, argc, argv, &o->program) < 0)
		return -EINVAL;
	if ((o->npids || o->all) && o->program) {
		evr_cli_error(CMD, "-- PROGRAM and -p, -n or --all exclude each other");
		return -EINVAL;
	}
	if (!o->npids && !o->program && !o->all) {
		evr_cli_error(CMD, "say what to forward: -p PID, -n NAME, --all or -- PROGRAM "
			      "[ARGS...] (try evring forward --help)");
		return -EINVAL;
	}
	if (!o->nto) {
		evr_cli_error(CMD, "say where to: --to jsonl:PATH (try evring forward --help)");
		return -EINVAL;
	}
	return 1;
}

/* ---- sinks ------------------------------------------------------------------------------ */

static int parse_sinks(struct fwd *f)
{
	return evr_fwd_sinks_parse(f->sinks, &f->nsinks, f->o->to, f->o->nto,
				   f->o->all || f->o->npids > 1);
}

static void close_sinks(struct fwd *f)
{
	evr_fwd_sinks_close(f->sinks, f->nsinks, evr_mono_ns() + f->o->flush_ns);
}

/* ---- reading ---------------------------------------------------------------------------- */

static void dispatch(struct fwd *f, struct source *so, const struct evr_event_view *v)
{
	struct evr_fwd_event e = { .src = &so->src, .v = v, .nvals = -EBADMSG };
	struct evr_counter_sample cs;
	struct evr_fwd_counter fc;
	bool counter = false;

	e.realtime_ns = (uint64_t)((int64_t)v->ts_ns + f->rt_offset_ns);
	if (v->type == EVR_REC_LOST) {
		so->lost += v->lost;
		/* A sink that shows losses takes each LOST record as one more item. */
		for (uint32_t i = 0; i < f->nsinks; i++)
			if (f->sinks[i].ops->lost) {
				f->sinks[i].st.offered++;
				f->sinks[i].ops->lost(&f->sinks[i], &e);
			}
		return;
	}
	so->events++;
	if (v->schema) {
		e.nvals = evr_decode_fields(v->schema, v->payload, v->len, f->vals);
		if (e.nvals >= 0)
			e.vals = f->vals;
		counter = evr_counter_sample_from_view(v, &cs) == 1;
	}
	if (counter)
		fc = (struct evr_fwd_counter){ .src = &so->src, .s = &cs, .e = &e,
					       .realtime_ns = e.realtime_ns };
	for (uint32_t i = 0; i < f->nsinks; i++) {
		struct evr_fwd_sink *s = &f->sinks[i];
		bool limited;

		s->st.offered++;
		if (!evr_fwd_filter_pass(&s->filter, &e, counter, &limited)) {
			if (limited)
				s->st.rate_limited++;
			else
				s->st.filtered++;
			continue;
		}
		if (counter && s->ops->counter)
			s->ops->counter(s, &fc);
		else
			s->ops->event(s, &e);
	}
}

/* Read up to RECORDS_PER_ROUND records of @so. Return: records read, or -errno. */
static int pump(struct fwd *f, struct source *so)
{
	struct evr_event_view v;
	int n = 0, r = 0;

	if (so->drained)
		return 0;
	while (n < (int)RECORDS_PER_ROUND) {
		r = evr_client_next(so->c, &v);
		if (r <= 0)
			break;
		dispatch(f, so, &v);
		n++;
	}
	evr_client_release(so->c);
	if (r < 0) {
		evr_cli_error(CMD, "cannot read the session of process %d: %s", (int)so->src.pid,
			      strerror(-r));
		return r;
	}
	if (n == 0 && evr_client_drained(so->c))
		so->drained = true;
	return n;
}

/*
 * Say when a sink starts dropping because its receiver does not keep up, and
 * when it has caught up again (nothing waits behind the batch in delivery, and
 * no new drop): once per episode, so that a stalled receiver is visible while
 * it happens. Not "the queue is empty": a sink that holds what it wrote until
 * the peer acknowledges it (graphite) keeps a batch in flight for as long as a
 * steady stream lasts.
 */
static void watch_outbox(struct fwd *f, uint32_t i)
{
	struct evr_fwd_sink *s = &f->sinks[i];
	struct evr_fwd_outbox_stats os;

	if (!s->outbox)
		return;
	evr_fwd_outbox_stats(s->outbox, &os);
	if (os.dropped_full > f->seen_full[i] && !f->behind[i]) {
		f->behind[i] = true;
		fprintf(stderr, "evring forward: %s: the receiver is not keeping up; dropping, "
			"counted\n", s->spec.text);
	} else if (f->behind[i] && os.dropped_full == f->seen_full[i] && os.waiting == 0) {
		f->behind[i] = false;
		fprintf(stderr, "evring forward: %s: caught up (%" PRIu64 " dropped so far)\n",
			s->spec.text, os.dropped_full);
	}
	f->seen_full[i] = os.dropped_full;
}

static void tick(struct fwd *f, uint64_t now)
{
	if (now - f->t_tick < TICK_NS)
		return;
	f->t_tick = now;
	for (uint32_t i = 0; i < f->nsinks; i++) {
		if (f->sinks[i].ops->tick)
			f->sinks[i].ops->tick(&f->sinks[i], now);
		watch_outbox(f, i);
	}
}

/*
 * @so was drained to its end: say so when there are several processes (tests
 * wait for this line), and with --all give its session's memory back at once
 * (a forwarder that runs for days sees many processes come and go).
 */
static void source_ended(struct fwd *f, struct source *so)
{
	so->gone = evr_client_state(so->c) == EVR_CLIENT_GONE;
	if (f->nso > 1 || f->watching)
		fprintf(stderr, "evring forward: - process %d (%s) %s: %" PRIu64 " events, %"
			PRIu64 " lost\n", (int)so->src.pid, so->src.comm,
			so->gone ? "died (or exited without ending the session)" :
				   "exited (it ended the session)", so->events, so->lost);
	if (f->watching) {
		evr_client_free(so->c);
		so->c = NULL;
	}
}

/* --all: take the finished attaches (watch_changed() adds their sources). */
static void watch_round(struct fwd *f)
{
	if (!f->watching)
		return;
	if (evr_watch_scan_due(&f->watch, evr_mono_ns()))
		(void)evr_watch_scan(&f->watch);
	(void)evr_watch_poll(&f->watch);
}

/* --all: is an attach thread still at work (its result is polled for, not signalled)? */
static bool attaching(const struct fwd *f)
{
	for (uint32_t i = 0; f->watching && i < f->watch.n; i++)
		if (f->watch.procs[i]->state == EVR_WATCH_ATTACHING)
			return true;
	return false;
}

/*
 * Nothing was read: sleep on the doorbell of a source (one at a time, in
 * turn; the others' half-filled packets wait at most @wait_ms), and with
 * --all on the watch's inotify too, so that a process that appears is
 * attached at once.
 */
static void wait_round(struct fwd *f, uint64_t wait_ms)
{
	int wfd = f->watching ? evr_watch_fd(&f->watch) : -1;
	struct source *so = NULL;

	if (attaching(f) && wait_ms > ATTACH_POLL_MS)
		wait_ms = ATTACH_POLL_MS;
	for (uint32_t k = 0; k < f->nso && !so; k++) {
		so = f->so[f->wait_next++ % f->nso];
		if (so->drained)
			so = NULL;
	}
	/* -EINTR (a signal) and timeouts just end the round. */
	if (so) {
		(void)evr_client_wait_fd(so->c, wfd, (int)wait_ms);
	} else {
		struct pollfd pfd = { .fd = wfd, .events = POLLIN };

		(void)poll(&pfd, 1, (int)wait_ms);
	}
}

static int forward_loop(struct fwd *f)
{
	for (;;) {
		uint64_t now = evr_mono_ns();
		uint32_t live = 0;
		int got = 0;

		if (evr_cli_stop_signal) {
			f->stop = STOP_SIGNAL;
			return 0;
		}
		if (f->o->duration_ns && now - f->t_start >= f->o->duration_ns) {
			f->stop = STOP_DURATION;
			return 0;
		}
		if (evr_fwd_sinks_failed(f->sinks, f->nsinks)) {
			f->stop = STOP_SINKS;
			return 0;
		}
		watch_round(f);
		if (f->err)
			return f->err;
		for (uint32_t i = 0; i < f->nso; i++) {
			struct source *so = f->so[i];
			bool was = so->drained;
			int r = pump(f, so);

			if (r < 0)
				return r;
			got += r;
			if (!so->drained)
				live++;
			else if (!was)
				source_ended(f, so);
		}
		tick(f, evr_mono_ns());
		/* With --all, no process is no reason to stop: more may come. */
		if (!live && !f->watching) {
			f->stop = STOP_ENDED;
			return 0;
		}
		if (!got) {
			uint64_t wait_ms = POLL_MS;

			if (f->o->duration_ns) {
				uint64_t left = f->t_start + f->o->duration_ns - evr_mono_ns();

				if ((int64_t)left <= 0)
					continue;
				if (left / 1000000u + 1 < wait_ms)
					wait_ms = left / 1000000u + 1;
			}
			wait_round(f, wait_ms);
		}
	}
}

/* Stop the sessions still running (each flushes its rings), then drain them. */
static int finish(struct fwd *f)
{
	char err[512];

	for (uint32_t i = 0; i < f->nso; i++) {
		struct source *so = f->so[i];

		if (so->drained || evr_client_state(so->c) != EVR_CLIENT_LIVE)
			continue;
		if (evr_client_stop(so->c, err, sizeof(err)) < 0 &&
		    evr_client_state(so->c) != EVR_CLIENT_GONE)
			evr_cli_warn(CMD, "could not stop the session of process %d cleanly: %s",
				     (int)so->src.pid, err);
	}
	for (uint32_t i = 0; i < f->nso; i++) {
		struct source *so = f->so[i];
		int r;

		do
			r = pump(f, so);
		while (r > 0);
		if (r < 0)
			return r;
		if (!so->drained)
			evr_cli_warn(CMD, "the session of process %d did not end cleanly: records "
				     "still being written when forwarding stopped were not read",
				     (int)so->src.pid);
	}
	return 0;
}

/* ---- attaching ------------------------------------------------------------------------- */

static void fill_source(struct source *so)
{
	const struct evr_process_info *pi = evr_client_process(so->c);
	const char *s = pi->argc && pi->argv[0] && *pi->argv[0] ? pi->argv[0] : pi->exe;
	const char *slash;

	so->src.pid = (pid_t)pi->pid;
	if (!s || !*s)
		s = "unknown";
	slash = strrchr(s, '/');
	if (slash && slash[1])
		s = slash + 1;
	snprintf(so->src.comm, sizeof(so->src.comm), "%s", s);
	snprintf(so->src.host, sizeof(so->src.host), "%s", pi->hostname ? pi->hostname : "");
}

/*
 * The session every process gets, fixed before the first attach. Static: with
 * --all the watch's attach threads start sessions with it, and may outlive
 * run() (the watch's rule: what they read is the whole program's).
 */
struct fwd_session {
	const char *providers;		/* a literal, or argv's */
	uint32_t interval_ms;
	uint64_t buffer_size;		/* --buffer-size in all, or 0 */
	const char *buffer_arg;
};

static struct fwd_session the_session;
static struct fwd *the_fwd;		/* for the watch's hooks: one forwarder per program */

/* The session for the process of @c; --buffer-size in all to one ring's size. */
static int session_opts(const struct fwd_session *ss, struct evr_client *c,
			struct evr_attach_opts *ret, char *err, size_t errlen)
{
	uint32_t nr_rings = evr_client_process(c)->nr_cpus;
	uint64_t min = (uint64_t)EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN;
	uint64_t p2;

	*ret = (struct evr_attach_opts){
		.providers = ss->providers,
		.mode = EVR_MODE_DISCARD,
		.counter_interval_ms = ss->interval_ms,
	};
	if (!ss->buffer_size)
		return 0;
	/* A power of two, rounded down; min is one too: the share is under it exactly
	 * when the quotient is. */
	p2 = evr_cli_ring_share(ss->buffer_size, nr_rings);
	if (p2 < min) {
		snprintf(err, errlen, "--buffer-size %s is too small: process %d has %u rings "
			 "and each needs at least %llu KiB", ss->buffer_arg,
			 (int)evr_client_process(c)->pid, nr_rings,
			 (unsigned long long)(min / 1024));
		return -EINVAL;
	}
	ret->ring_size = p2 < EVR_RING_SIZE_MAX ? p2 : EVR_RING_SIZE_MAX;
	return 0;
}

/* Counters: as asked, else every second when some sink is for counters. */
static uint32_t pick_interval(const struct fwd *f)
{
	if (f->o->counter_interval_ms)
		return f->o->counter_interval_ms;
	for (uint32_t i = 0; i < f->nsinks; i++)
		if (f->sinks[i].filter.what == EVR_FWD_COUNTERS ||
		    f->sinks[i].ops->what == EVR_FWD_COUNTERS)
			return 1000;
	return 0;
}

/*
 * The session's providers: as given; else every provider, and when every sink
 * takes only counters, only their Counter* events (keywords 0, LogAlways, as
 * clrtop asks), so that the other events are not even written for us.
 */
static const char *pick_providers(const struct fwd *f)
{
	if (f->o->providers_given)
		return f->o->providers;
	for (uint32_t i = 0; i < f->nsinks; i++)
		if (f->sinks[i].filter.what != EVR_FWD_COUNTERS)
			return f->o->providers;
	return "*:0x0:0";
}

/*
 * Start the session on @c, connected.
 * Return: 0, -EINVAL (--buffer-size too small for it: the user's), or -errno
 * (-EPROTO for what the agent refused), with a line in @err.
 */
static int session_start(const struct fwd_session *ss, struct evr_client *c, char *err,
			 size_t errlen)
{
	struct evr_attach_opts ao;
	int r = session_opts(ss, c, &ao, err, errlen);

	if (r < 0)
		return r;
	r = evr_client_start(c, &ao, err, errlen);
	return r == -EINVAL ? -EPROTO : r;
}

/*
 * A new source for @c (connected; takes ownership: freed on failure).
 * Return: the source, or NULL: out of memory (said, and f->err set).
 */
static struct source *source_add(struct fwd *f, struct evr_client *c)
{
	struct source *so;

	if (f->nso == f->cap) {
		uint32_t cap = f->cap ? 2 * f->cap : 16;
		struct source **n = realloc(f->so, cap * sizeof(*n));

		if (!n)
			goto oom;
		f->so = n;
		f->cap = cap;
	}
	so = calloc(1, sizeof(*so));
	if (!so)
		goto oom;
	so->c = c;
	fill_source(so);
	f->so[f->nso++] = so;
	return so;
oom:
	evr_client_free(c);
	evr_cli_error(CMD, "out of memory");
	f->err = -ENOMEM;
	return NULL;
}

/* The watch's attach thread, once connected: start the session there. */
static int watch_start(const void *arg, struct evr_client *c, char *err, size_t errlen)
{
	return session_start(arg, c, err, errlen);
}

/* The watch's news (connect_only): a process connected (its session runs), or could not be. */
static void watch_changed(struct evr_watch *w, struct evr_watch_proc *wp,
			  const struct evr_watch_change *ch)
{
	struct fwd *f = the_fwd;
	struct source *so;

	(void)w;
	if (ch->to == EVR_WATCH_LIVE && wp->client) {
		struct evr_client *c = wp->client;

		wp->client = NULL;	/* ours now: the watch reads nothing of it */
		so = source_add(f, c);
		/* Tests wait for this line: the process's session runs. */
		if (so)
			fprintf(stderr, "evring forward: + process %d (%s)\n", (int)so->src.pid,
				so->src.comm);
	} else if (ch->to == EVR_WATCH_FAILED && ch->from == EVR_WATCH_ATTACHING) {
		evr_cli_warn(CMD, "process %d is not forwarded: %s", (int)wp->pid, wp->err);
	}
}

static const struct evr_watch_ops watch_ops = {
	EVR_WATCH_OPS_SIZES(struct evr_watch_proc, struct evr_watch_counter),
	.start = watch_start,
	.changed = watch_changed,
};

static int start_watch(struct fwd *f)
{
	const struct evr_watch_opts wo = {
		.client_name = CLIENT_NAME,
		.notify = true,
		.rescan_ms = RESCAN_MS,
		.check_ms = EVR_WATCH_CHECK_MS,
		.connect_only = true,
		.ops = &watch_ops,
		.spec_arg = &the_session,
	};
	int r = evr_watch_init(&f->watch, &wo);

	if (r < 0) {
		evr_cli_error(CMD, "cannot watch for processes: %s", strerror(-r));
		return r;
	}
	f->watching = true;
	return 0;
}

static int attach(struct fwd *f)
{
	struct evr_client *c;
	char err[512];
	int r;

	if (f->o->program) {
		r = evr_client_launch(f->o->program, CLIENT_NAME, &f->launch, &c, err,
				      sizeof(err));
		f->launched = true;
		if (r == 0 && !source_add(f, c))
			return f->err;
		if (r == 0)
			r = session_start(&the_session, c, err, sizeof(err));
		if (r < 0)
			evr_cli_error(CMD, "%s", err);
		return r;
	}
	if (f->o->all) {
		r = start_watch(f);
		if (r < 0)
			return r;
	}
	for (uint32_t i = 0; i < f->o->npids; i++) {
		pid_t pid = f->o->pids[i];
		bool dup = false;

		for (uint32_t k = 0; k < f->nso; k++)
			dup |= f->so[k]->src.pid == pid;
		if (dup)
			continue;	/* named twice */
		if (f->watching) {
			/* --all too: through the watch, which then knows it (attached here,
			 * at once: an error is the user's). */
			r = evr_watch_add(&f->watch, pid, true, err, sizeof(err), NULL);
		} else {
			r = evr_client_connect(pid, CLIENT_NAME, &c, err, sizeof(err));
			if (r == 0 && !source_add(f, c))
				return f->err;
			if (r == 0)
				r = session_start(&the_session, c, err, sizeof(err));
		}
		if (r < 0) {
			evr_cli_error(CMD, "%s", err);
			return r;
		}
		if (f->err)
			return f->err;
	}
	/*
	 * --all: the processes there now, each attached on a thread of its own (a
	 * stopped one holds up nobody), all of them before forwarding starts, so
	 * that the line that says so names them.
	 */
	if (f->watching) {
		r = evr_watch_scan(&f->watch);
		if (r < 0) {
			evr_cli_error(CMD, "cannot list the processes: %s", strerror(-r));
			return r;
		}
		for (;;) {
			(void)evr_watch_poll(&f->watch);
			if (f->err)
				return f->err;
			if (!attaching(f) || evr_cli_stop_signal)
				break;
			(void)poll(NULL, 0, ATTACH_POLL_MS);
		}
	}
	return 0;
}

/* ---- the end -------------------------------------------------------------------------- */

/* CPU time of the whole forwarder (reader and workers), seconds. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void summary(struct fwd *f)
{
	double secs = (double)(evr_mono_ns() - f->t_start) / 1e9;
	double cpu = cpu_s() - f->cpu_start;
	uint64_t events = 0;
	char why[256];

	for (uint32_t i = 0; i < f->nso; i++) {
		fprintf(stderr, "evring forward: process %d (%s): %" PRIu64 " events, %" PRIu64
			" lost by the producer, %.2f s\n", (int)f->so[i]->src.pid, f->so[i]->src.comm,
			f->so[i]->events, f->so[i]->lost, secs);
		events += f->so[i]->events;
	}
	/* What forwarding cost: every thread of the forwarder, sinks' workers included. */
	fprintf(stderr, "evring forward: cpu %.3f s, %.2f us per event\n", cpu,
		events ? cpu * 1e6 / (double)events : 0.0);
	for (uint32_t i = 0; i < f->nsinks; i++)
		evr_fwd_sink_summary(&f->sinks[i]);
	switch (f->stop) {
	case STOP_SIGNAL:
		snprintf(why, sizeof(why), "stopped by %s", strsignal(evr_cli_stop_signal));
		break;
	case STOP_DURATION:
		snprintf(why, sizeof(why), "stopped after --duration");
		break;
	case STOP_ENDED:
		snprintf(why, sizeof(why), f->nso > 1 ? "the processes ended" :
			 f->so[0]->gone ?
			 "the process died (or exited without ending the session)" :
			 "the process exited (it ended the session)");
		break;
	case STOP_SINKS:
		snprintf(why, sizeof(why), "stopped: every sink failed");
		break;
	case STOP_NONE:
		snprintf(why, sizeof(why), "stopped by an error");
		break;
	}
	if (f->launched && f->launch.pid > 0) {
		char st[128];

		evr_launch_describe(&f->launch, st, sizeof(st));
		fprintf(stderr, "evring forward: %s; %s %s\n", why, f->o->program[0], st);
	} else {
		fprintf(stderr, "evring forward: %s\n", why);
	}
}

static void say_started(struct fwd *f)
{
	char line[1024];
	size_t n = 0;

	if (f->launched)
		n += (size_t)snprintf(line, sizeof(line), "forwarding %s (pid %d) to",
				      f->o->program[0], (int)f->launch.pid);
	else if (f->watching)
		n += (size_t)snprintf(line, sizeof(line), "forwarding every process with an "
				      "agent (%u now%s", f->nso, f->nso ? ":" : "");
	else
		n += (size_t)snprintf(line, sizeof(line), "forwarding process%s",
				      f->nso > 1 ? "es" : "");
	for (uint32_t i = 0; !f->launched && i < f->nso && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %d", i ? "," : "",
				      (int)f->so[i]->src.pid);
	if (!f->launched && n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s to", f->watching ? ")" : "");
	for (uint32_t i = 0; i < f->nsinks && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %s", i ? "," : "",
				      f->sinks[i].spec.text);
	/* Tests wait for this line: every session runs and every sink is open. */
	fprintf(stderr, "evring forward: %s (Ctrl-C to stop)\n", line);
}

static int run(const struct fwd_opts *o)
{
	struct fwd *f = calloc(1, sizeof(*f));
	struct timespec rt, mono;
	char err[512];
	int r;

	if (!f) {
		evr_cli_error(CMD, "out of memory");
		return -ENOMEM;
	}
	f->o = o;
	f->launch = (struct evr_launch){ .pid = -1, .pidfd = -1 };
	the_fwd = f;
	r = parse_sinks(f);
	if (r < 0)
		goto out;
	the_session = (struct fwd_session){
		.providers = pick_providers(f),
		.interval_ms = pick_interval(f),
		.buffer_size = o->buffer_size,
		.buffer_arg = o->buffer_arg,
	};
	evr_cli_catch_stop_signals();
	r = evr_fwd_sinks_open(f->sinks, f->nsinks);
	if (r < 0)
		goto out;
	r = attach(f);
	if (r < 0)
		goto out;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	f->rt_offset_ns = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000 +
			  (rt.tv_nsec - mono.tv_nsec);
	say_started(f);
	f->t_start = evr_mono_ns();
	f->cpu_start = cpu_s();
	if (f->launched) {
		r = evr_client_resume(f->so[0]->c, err, sizeof(err));
		if (r < 0) {
			evr_cli_error(CMD, "cannot let %s run: %s", o->program[0], err);
			goto out;
		}
	}
	r = forward_loop(f);
	if (r == 0)
		r = finish(f);
	close_sinks(f);
	if (f->launched)
		evr_launch_reap(&f->launch, f->stop == STOP_ENDED ? 5000 :
					    f->stop == STOP_SIGNAL ? 2000 : 0);
	summary(f);
	for (uint32_t i = 0; i < f->nsinks && r == 0; i++)
		if (atomic_load(&f->sinks[i].error))
			r = -EIO;
out:
	if (r < 0 && f->launched && f->launch.pid > 0 && !f->t_start &&
	    evr_launch_kill(&f->launch) == 1)
		evr_cli_error(CMD, "%s (pid %d) was stopped because forwarding failed",
			      o->program[0], (int)f->launch.pid);
	close_sinks(f);
	for (uint32_t i = 0; i < f->nsinks; i++) {
		evr_fwd_filter_fini(&f->sinks[i].filter);
		evr_fwd_outbox_free(f->sinks[i].outbox);
		evr_fwd_spec_fini(&f->sinks[i].spec);
	}
	/* The watch first: it may still hold clients it connected. */
	if (f->watching)
		evr_watch_fini(&f->watch);
	for (uint32_t i = 0; i < f->nso; i++) {
		evr_client_free(f->so[i]->c);
		free(f->so[i]);
	}
	free(f->so);
	evr_launch_fini(&f->launch);
	the_fwd = NULL;
	free(f);
	return r;
}

int evr_cmd_forward(int argc, char **argv)
{
	struct fwd_opts o = { 0 };
	int r = parse_argv(argc, argv, &o);

	/* Past option parsing, -EINVAL from run() is a usage error only if it came
	 * from a --to spec (reported before attaching). */
	if (r <= 0)
		return evr_cli_exit_status(r);
	r = run(&o);
	return r == -EINVAL ? EVR_EXIT_USAGE : evr_cli_run_status(r);
}
