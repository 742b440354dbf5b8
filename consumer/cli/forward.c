// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring forward: attach to processes (or start one), run one session on each,
 * and hand every event and counter sample, decoded once, to the sinks named by
 * --to, each behind its own filter (forward.h has the threads and the
 * accounting).
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <evring/consumer.h>

#include "cli.h"
#include "forward.h"

#define CMD "forward"
#define CLIENT_NAME "evring forward"
#define POLL_MS 100
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
};

enum fwd_stop { STOP_NONE, STOP_SIGNAL, STOP_DURATION, STOP_ENDED, STOP_SINKS };

struct source {
	struct evr_fwd_source src;
	struct evr_client *c;
	uint64_t events, lost;
	bool drained;
	bool said_end;
};

struct fwd {
	const struct fwd_opts *o;
	struct source so[MAX_SOURCES];
	uint32_t nso;
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

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: evring forward -p PID [-p PID...] --to SINK [--to SINK...] [OPTIONS]\n"
		"       evring forward --to SINK [OPTIONS] -- PROGRAM [ARGS...]\n"
		"Forward the events and counters of running processes (or of PROGRAM from its\n"
		"first event) to other tools, live.\n"
		"  -p, --pid PID            attach to process PID (repeatable)\n"
		"  -n, --name NAME          attach to the one process named NAME (repeatable)\n"
		"      --to SINK            where to send them (repeatable), each with its own\n"
		"                           filter: KIND[:ARG][,KEY=VALUE...]\n"
		"                             jsonl[:PATH]        JSON lines to PATH (- stdout)\n"
		"                             graphite:HOST:PORT  counters to carbon (plaintext)\n"
		"                             journald[:SOCKET]   one journal entry per event\n"
		"                             lttng               evring:* LTTng-UST tracepoints\n"
		"                           filter keys: level=N, provider=GLOB, event=GLOB,\n"
		"                           keywords=0xMASK, what=events|counters|all, max-rate=N\n"
		"      --providers LIST     Name[:0xKEYWORDS[:LEVEL[:k=v;...]]],... (default: '*';\n"
		"                           only counters when every sink takes only counters)\n"
		"      --counter-interval TIME  sample counters every TIME (e.g. 1s; default:\n"
		"                           none, or 1s when a sink takes only counters)\n"
		"      --duration TIME      stop after TIME (500ms, 30s, 5m, 1h)\n"
		"      --buffer-size SIZE   session buffer per process, split over its rings\n"
		"      --flush-timeout TIME how long sinks may take to deliver at exit (default 5s)\n"
		"Stops on Ctrl-C/SIGTERM, after --duration, or when the processes exit.\n");
}

/* Return: 1 run, 0 done (--help), -EINVAL. */
static int parse_argv(int argc, char **argv, struct fwd_opts *o)
{
	enum { OPT_PROVIDERS = EVR_OPT_FIRST_OWN, OPT_TO, OPT_DURATION, OPT_BUFFER,
	       OPT_COUNTERS, OPT_FLUSH };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "name", required_argument, NULL, 'n' },
		{ "to", required_argument, NULL, OPT_TO },
		{ "providers", required_argument, NULL, OPT_PROVIDERS },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "buffer-size", required_argument, NULL, OPT_BUFFER },
		{ "counter-interval", required_argument, NULL, OPT_COUNTERS },
		{ "flush-timeout", required_argument, NULL, OPT_FLUSH },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct evr_cli_flags flags = { 0 };
	int c, r;

	o->providers = "*";
	o->flush_ns = 5000000000ull;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:n:h", longopts, NULL)) != -1) {
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
	if (o->npids && o->program) {
		evr_cli_error(CMD, "-p and -- PROGRAM exclude each other");
		return -EINVAL;
	}
	if (!o->npids && !o->program) {
		evr_cli_error(CMD, "say what to forward: -p PID, -n NAME or -- PROGRAM [ARGS...] "
			      "(try evring forward --help)");
		return -EINVAL;
	}
	if (!o->nto) {
		evr_cli_error(CMD, "say where to: --to jsonl:PATH (try evring forward --help)");
		return -EINVAL;
	}
	return 1;
}

/* ---- sinks ------------------------------------------------------------------------------ */

static const struct evr_fwd_sink_ops *find_kind(const char *kind)
{
	for (uint32_t i = 0; evr_fwd_sink_kinds[i]; i++)
		if (!strcmp(evr_fwd_sink_kinds[i]->kind, kind))
			return evr_fwd_sink_kinds[i];
	return NULL;
}

/* Parse every --to (usage errors: -EINVAL) before attaching to anything. */
static int parse_sinks(struct fwd *f)
{
	char err[512];

	for (uint32_t i = 0; i < f->o->nto; i++) {
		struct evr_fwd_sink *s = &f->sinks[f->nsinks];
		int r = evr_fwd_spec_parse(f->o->to[i], &s->spec, err, sizeof(err));

		if (r < 0) {
			evr_cli_error(CMD, "%s", err);
			return r;
		}
		f->nsinks++;
		s->ops = find_kind(s->spec.kind);
		if (!s->ops) {
			evr_cli_error(CMD, "--to %s: unknown sink '%s' (jsonl, graphite, journald, lttng)", s->spec.text,
				      s->spec.kind);
			return -EINVAL;
		}
		r = evr_fwd_filter_init(&s->filter, &s->spec, s->ops->what, s->ops->default_level,
					s->ops->keys, err, sizeof(err));
		if (r == 0 && s->ops->check)
			r = s->ops->check(s, err, sizeof(err));
		if (r < 0) {
			evr_cli_error(CMD, "%s", err);
			return r;
		}
	}
	return 0;
}

/* Open every sink. Return: 0, or -errno. */
static int open_sinks(struct fwd *f)
{
	char err[512];

	for (uint32_t i = 0; i < f->nsinks; i++) {
		struct evr_fwd_sink *s = &f->sinks[i];
		int r = s->ops->open(s, err, sizeof(err));

		if (r < 0) {
			evr_cli_error(CMD, "%s", r == -ENOMEM ? "out of memory" : err);
			/* Options were checked before: a file or receiver that fails is no
			 * usage error. */
			return r == -EINVAL ? -EIO : r;
		}
	}
	return 0;
}

static void close_sinks(struct fwd *f)
{
	uint64_t deadline = evr_mono_ns() + f->o->flush_ns;

	for (uint32_t i = 0; i < f->nsinks; i++)
		if (f->sinks[i].priv)
			f->sinks[i].ops->close(&f->sinks[i], deadline);
}

static bool all_sinks_failed(struct fwd *f)
{
	for (uint32_t i = 0; i < f->nsinks; i++)
		if (!atomic_load_explicit(&f->sinks[i].error, memory_order_relaxed))
			return false;
	return true;
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

static void say_ended(struct fwd *f, struct source *so)
{
	enum evr_client_state st = evr_client_state(so->c);

	if (so->said_end || f->nso < 2)
		return;
	so->said_end = true;
	fprintf(stderr, "evring forward: process %d %s\n", (int)so->src.pid,
		st == EVR_CLIENT_GONE ? "died (or exited without ending the session)" :
					"exited (it ended the session)");
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
		if (all_sinks_failed(f)) {
			f->stop = STOP_SINKS;
			return 0;
		}
		for (uint32_t i = 0; i < f->nso; i++) {
			int r = pump(f, &f->so[i]);

			if (r < 0)
				return r;
			got += r;
			if (f->so[i].drained)
				say_ended(f, &f->so[i]);
			else
				live++;
		}
		tick(f, evr_mono_ns());
		if (!live) {
			f->stop = STOP_ENDED;
			return 0;
		}
		if (!got) {
			uint64_t wait_ms = POLL_MS;
			struct source *so;

			if (f->o->duration_ns) {
				uint64_t left = f->t_start + f->o->duration_ns - evr_mono_ns();

				if ((int64_t)left <= 0)
					continue;
				if (left / 1000000u + 1 < wait_ms)
					wait_ms = left / 1000000u + 1;
			}
			do
				so = &f->so[f->wait_next++ % f->nso];
			while (so->drained);
			/* -EINTR (a signal) and timeouts just end the round. */
			(void)evr_client_wait(so->c, (int)wait_ms);
		}
	}
}

/* Stop the sessions still running (each flushes its rings), then drain them. */
static int finish(struct fwd *f)
{
	char err[512];

	for (uint32_t i = 0; i < f->nso; i++) {
		struct source *so = &f->so[i];

		if (so->drained || evr_client_state(so->c) != EVR_CLIENT_LIVE)
			continue;
		if (evr_client_stop(so->c, err, sizeof(err)) < 0 &&
		    evr_client_state(so->c) != EVR_CLIENT_GONE)
			evr_cli_warn(CMD, "could not stop the session of process %d cleanly: %s",
				     (int)so->src.pid, err);
	}
	for (uint32_t i = 0; i < f->nso; i++) {
		struct source *so = &f->so[i];
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

/* --buffer-size in all, to one ring's size: a power of two, rounded down. */
static int ring_size_for(const struct fwd_opts *o, uint32_t nr_rings, uint64_t *ret)
{
	uint64_t min = (uint64_t)EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN;
	uint64_t p2;

	*ret = 0;
	if (!o->buffer_size)
		return 0;
	p2 = evr_cli_ring_share(o->buffer_size, nr_rings);
	/* min is a power of two: the share is under it exactly when the quotient is. */
	if (p2 < min) {
		evr_cli_error(CMD, "--buffer-size %s is too small: the process has %u rings and "
			      "each needs at least %llu KiB", o->buffer_arg, nr_rings,
			      (unsigned long long)(min / 1024));
		return -EINVAL;
	}
	*ret = p2 < EVR_RING_SIZE_MAX ? p2 : EVR_RING_SIZE_MAX;
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

static int start_session(struct fwd *f, struct source *so)
{
	struct evr_attach_opts ao = {
		.providers = pick_providers(f),
		.mode = EVR_MODE_DISCARD,
		.counter_interval_ms = pick_interval(f),
	};
	char err[512];
	int r;

	fill_source(so);
	r = ring_size_for(f->o, evr_client_process(so->c)->nr_cpus, &ao.ring_size);
	if (r < 0)
		return r;
	r = evr_client_start(so->c, &ao, err, sizeof(err));
	if (r < 0) {
		evr_cli_error(CMD, "%s", err);
		return r == -EINVAL ? -EPROTO : r;
	}
	return 0;
}

static int attach(struct fwd *f)
{
	char err[512];
	int r;

	if (f->o->program) {
		struct source *so = &f->so[f->nso++];

		r = evr_client_launch(f->o->program, CLIENT_NAME, &f->launch, &so->c, err,
				      sizeof(err));
		f->launched = true;
		if (r < 0) {
			evr_cli_error(CMD, "%s", err);
			return r;
		}
		return start_session(f, so);
	}
	for (uint32_t i = 0; i < f->o->npids; i++) {
		struct source *so = &f->so[f->nso];

		r = evr_client_connect(f->o->pids[i], CLIENT_NAME, &so->c, err, sizeof(err));
		if (r < 0) {
			evr_cli_error(CMD, "%s", err);
			return r;
		}
		f->nso++;
		r = start_session(f, so);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- the end -------------------------------------------------------------------------- */

static void sink_summary(struct evr_fwd_sink *s)
{
	struct evr_fwd_outbox_stats os = { 0 };
	uint64_t sent = s->st.sent, dropped = s->st.dropped;
	char why[400] = "", extra[256] = "";
	size_t n = 0;
	int err;

	if (s->outbox) {
		evr_fwd_outbox_stats(s->outbox, &os);
		sent = os.delivered - s->st.sent_adjust - s->st.unconfirmed;
		dropped = os.dropped_full + os.dropped_close + os.dropped_failed +
			  s->st.unconfirmed;
	}
	dropped += s->st.too_large + s->st.rate_limited;
#define WHY(cnt, text)                                                                         \
	if ((cnt) && n < sizeof(why))                                                          \
		n += (size_t)snprintf(why + n, sizeof(why) - n, "%s%" PRIu64 " " text,         \
				      n ? ", " : " (", (uint64_t)(cnt))
	WHY(os.dropped_full, "the sink fell behind");
	WHY(os.dropped_close, "undelivered at exit");
	WHY(os.dropped_failed, "after the sink failed");
	WHY(s->st.unconfirmed, "unconfirmed: the connection died under them");
	WHY(s->st.too_large, "too large");
	WHY(s->st.rate_limited, "over max-rate");
	if (s->outbox == NULL && s->st.dropped && n < sizeof(why))
		n += (size_t)snprintf(why + n, sizeof(why) - n, "%s%" PRIu64 " %s", n ? ", " : " (",
				      s->st.dropped, s->st.dropped_why ? s->st.dropped_why :
				      "refused by the receiver");
#undef WHY
	if (n && n < sizeof(why))
		snprintf(why + n, sizeof(why) - n, ")");
	if (s->st.connects > 1 || s->st.connect_failures)
		snprintf(extra, sizeof(extra), "%" PRIu64 " connection%s, %" PRIu64
			 " failed attempt%s", s->st.connects, s->st.connects == 1 ? "" : "s",
			 s->st.connect_failures, s->st.connect_failures == 1 ? "" : "s");
	fprintf(stderr, "evring forward: %s: %" PRIu64 " sent, %" PRIu64 " dropped%s, %" PRIu64
		" filtered%s%s\n", s->spec.text, sent, dropped, why, s->st.filtered,
		*extra ? ", " : "", extra);
	/* Pairs with the release store in evr_fwd_sink_fail(): why is written. */
	err = atomic_load_explicit(&s->error, memory_order_acquire);
	if (err)
		evr_cli_error(CMD, "%s: %s", s->spec.text, s->why);
}

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
			" lost by the producer, %.2f s\n", (int)f->so[i].src.pid, f->so[i].src.comm,
			f->so[i].events, f->so[i].lost, secs);
		events += f->so[i].events;
	}
	/* What forwarding cost: every thread of the forwarder, sinks' workers included. */
	fprintf(stderr, "evring forward: cpu %.3f s, %.2f us per event\n", cpu,
		events ? cpu * 1e6 / (double)events : 0.0);
	for (uint32_t i = 0; i < f->nsinks; i++)
		sink_summary(&f->sinks[i]);
	switch (f->stop) {
	case STOP_SIGNAL:
		snprintf(why, sizeof(why), "stopped by %s", strsignal(evr_cli_stop_signal));
		break;
	case STOP_DURATION:
		snprintf(why, sizeof(why), "stopped after --duration");
		break;
	case STOP_ENDED:
		snprintf(why, sizeof(why), f->nso > 1 ? "the processes ended" :
			 evr_client_state(f->so[0].c) == EVR_CLIENT_GONE ?
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
	else
		n += (size_t)snprintf(line, sizeof(line), "forwarding process%s",
				      f->nso > 1 ? "es" : "");
	for (uint32_t i = 0; !f->launched && i < f->nso && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %d", i ? "," : "",
				      (int)f->so[i].src.pid);
	if (!f->launched && n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, " to");
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
	r = parse_sinks(f);
	if (r < 0)
		goto out;
	evr_cli_catch_stop_signals();
	r = open_sinks(f);
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
		r = evr_client_resume(f->so[0].c, err, sizeof(err));
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
	for (uint32_t i = 0; i < f->nso; i++)
		evr_client_free(f->so[i].c);
	evr_launch_fini(&f->launch);
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
