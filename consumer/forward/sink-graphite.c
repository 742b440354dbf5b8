// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The graphite sink: counter samples (and, with events=1, event counts) in
 * carbon's plaintext protocol over TCP, "PATH VALUE TIMESTAMP\n".
 *
 *   --to graphite:HOST:PORT[,prefix=P][,instance=pid|comm][,events=1][,queue=SIZE]
 *
 * Paths: PREFIX.COMM[.PID].PROVIDER.COUNTER.STAT, each component reduced to
 * [A-Za-z0-9_-] (anything else becomes '_', never empty), PREFIX (default
 * "evring") kept as given but for the same rule per dot-separated part. Stats
 * per kind: mean counters .mean .min .max .stddev (when values were recorded)
 * and .count; rates .rate (per second) and .increment; gauges .value;
 * histograms .count .sum and .p50 .p90 .p99 (when values were recorded). The
 * timestamp is the end of the sample's interval, in whole seconds of
 * CLOCK_REALTIME. events=1 adds PREFIX.COMM[.PID].PROVIDER.events.EVENT.count per
 * second: the events that passed the filter.
 *
 * Each sample's lines are one outbox message, so a sample is sent whole or
 * dropped whole; the outbox drops the oldest samples when the receiver falls
 * behind (the newest values matter most). The worker keeps one connection and
 * pipelines: it never waits for acknowledgements, but follows them to count
 * as sent only what the receiver confirmed, and as dropped ("unconfirmed")
 * what a connection took with it when it died (see "What counts as sent").
 * After a connection dies it waits (100 ms doubling to 10 s; only confirmed
 * data resets the back-off, not a connect) and resends from the first
 * message not written whole, so no half line ever reaches the receiver on a
 * new connection (carbon discards the partial line of a lost connection).
 * Before each batch the worker checks whether the receiver closed the
 * connection (it never sends anything), so an idle close costs nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "forward.h"

#define OUTBOX_BYTES (4u << 20)
#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 10000u
#define CONNECT_TIMEOUT_MS 2000
#define SNDBUF_BYTES (64 << 10)
#define EVENT_BUCKETS 256u
/* Sent means confirmed: see "What counts as sent" below. */
#define CONFIRM_MS 1000u
#define SLOT_MS 100u
#define SETTLE_MS 1000
#define FLIGHTS 256u

struct flight {
	uint64_t end;			/* bytes of the connection up to its last message */
	uint64_t items;
};

struct acked_slot {
	uint64_t slot;			/* now / SLOT_MS when acknowledged */
	uint64_t items;
};

struct ev_count {
	const struct evr_fwd_source *src;
	const struct evr_schema_event *ev;
	uint64_t n;
};

struct graphite {
	struct evr_fwd_sink *s;
	char host[256], port[16];
	char *prefix;
	bool instance, events;
	struct evr_strbuf line;
	/* events=1: counts since the last flush (reader thread). */
	struct ev_count counts[EVENT_BUCKETS];
	uint32_t ncounts;
	uint64_t counts_since_ns;
	/* The worker's connection. */
	int fd;
	uint32_t backoff_ms;
	bool said_down;
	uint64_t written;		/* bytes written on this connection */
	struct flight flights[FLIGHTS];	/* a FIFO from first_flight */
	uint32_t first_flight, nflights;
	struct acked_slot acked[CONFIRM_MS / SLOT_MS + 1];	/* oldest first */
	uint32_t nacked;
	uint64_t unconfirmed;		/* items; read once the worker is joined */
	_Atomic uint64_t connects, failures;
};

/* Append @s (@n bytes) reduced to [A-Za-z0-9_-], runs of others as one '_'. */
static int put_component(struct evr_strbuf *sb, const char *s, size_t n)
{
	size_t start = sb->len;
	bool under = false;
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		unsigned char c = (unsigned char)s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-';

		if (ok) {
			r = evr_strbuf_append(sb, (const char *)&c, 1);
			under = false;
		} else if (!under) {
			r = evr_strbuf_append(sb, "_", 1);
			under = true;
		}
	}
	if (r == 0 && sb->len == start)
		r = evr_strbuf_append(sb, "_", 1);
	return r;
}

/* PREFIX.COMM[.PID] */
static int put_head(struct graphite *g, const struct evr_fwd_source *src)
{
	const char *p = g->prefix;
	int r = 0;

	g->line.len = 0;
	while (r == 0 && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);

		if (n)
			r = put_component(&g->line, p, n) ?: evr_strbuf_append(&g->line, ".", 1);
		p += n + (dot ? 1 : 0);
	}
	r = r ?: put_component(&g->line, src->comm, strlen(src->comm));
	if (r == 0 && g->instance)
		r = evr_strbuf_printf(&g->line, ".%d", (int)src->pid);
	return r;
}

/* One line: HEAD.PROVIDER.NAME.STAT VALUE TS (@head_len: where HEAD.PROVIDER.NAME ends). */
static int put_line(struct evr_strbuf *sb, size_t head_len, const char *stat, double v,
		    uint64_t ts)
{
	char num[40];
	int r;

	if (!isfinite(v))
		return 0;	/* carbon drops NaN, and has no spelling for infinities */
	/* %.17g: the double exactly, so what is stored is what was sampled. */
	snprintf(num, sizeof(num), "%.17g", v);
	r = evr_strbuf_append(sb, sb->buf, head_len);
	return r ?: evr_strbuf_printf(sb, ".%s %s %" PRIu64 "\n", stat, num, ts);
}

/* The lines after @from as one message standing for @weight items. */
static void push(struct graphite *g, size_t from, uint64_t weight)
{
	if (evr_fwd_outbox_push(g->s->outbox, g->line.buf + from, (uint32_t)(g->line.len - from),
				(uint32_t)weight) == -EMSGSIZE)
		g->s->st.too_large += weight;
}

static void graphite_counter(struct evr_fwd_sink *s, const struct evr_fwd_counter *c)
{
	struct graphite *g = s->priv;
	const struct evr_counter_sample *cs = c->s;
	uint64_t ts = c->realtime_ns / 1000000000u;
	size_t head;
	int r;

	r = put_head(g, c->src) ?: evr_strbuf_append(&g->line, ".", 1);
	r = r ?: put_component(&g->line, cs->provider, strlen(cs->provider));
	r = r ?: evr_strbuf_append(&g->line, ".", 1);
	r = r ?: put_component(&g->line, cs->name, cs->name_len);
	if (r < 0) {
		s->st.too_large++;
		return;
	}
	/* The lines follow the head, which each line copies from the start. */
	head = g->line.len;
	switch (cs->kind) {
	case EVR_SAMPLE_MEAN:
		r = put_line(&g->line, head, "count", (double)cs->count, ts);
		if (cs->count) {
			r = r ?: put_line(&g->line, head, "mean", cs->mean, ts);
			r = r ?: put_line(&g->line, head, "min", cs->min, ts);
			r = r ?: put_line(&g->line, head, "max", cs->max, ts);
			r = r ?: put_line(&g->line, head, "stddev", cs->stddev, ts);
		}
		break;
	case EVR_SAMPLE_RATE:
		r = put_line(&g->line, head, "rate", cs->rate_per_s, ts);
		r = r ?: put_line(&g->line, head, "increment", cs->increment, ts);
		break;
	case EVR_SAMPLE_GAUGE:
		r = put_line(&g->line, head, "value", cs->value, ts);
		break;
	case EVR_SAMPLE_HISTOGRAM:
		r = put_line(&g->line, head, "count", (double)cs->count, ts);
		r = r ?: put_line(&g->line, head, "sum", cs->sum, ts);
		if (cs->count) {
			r = r ?: put_line(&g->line, head, "p50", cs->p50, ts);
			r = r ?: put_line(&g->line, head, "p90", cs->p90, ts);
			r = r ?: put_line(&g->line, head, "p99", cs->p99, ts);
		}
		break;
	}
	if (r < 0 || g->line.len == head) {
		s->st.too_large++;
		return;
	}
	push(g, head, 1);
}

/* events=1: count the event; the counts go out once a second (tick). */
static void graphite_event(struct evr_fwd_sink *s, const struct evr_fwd_event *e)
{
	struct graphite *g = s->priv;

	if (!g->events || !e->v->schema) {
		s->st.filtered++;	/* not a metric: nothing to send */
		return;
	}
	/* The count message stands for the events it counts (its weight). */
	for (uint32_t i = 0; i < g->ncounts; i++)
		if (g->counts[i].ev == e->v->schema && g->counts[i].src == e->src) {
			if (g->counts[i].n == UINT32_MAX)
				break;
			g->counts[i].n++;
			return;
		}
	if (g->ncounts == EVENT_BUCKETS) {
		s->st.too_large++;	/* more event types than counted at once */
		return;
	}
	g->counts[g->ncounts++] = (struct ev_count){ .src = e->src, .ev = e->v->schema, .n = 1 };
}

static void graphite_tick(struct evr_fwd_sink *s, uint64_t now_ns)
{
	struct graphite *g = s->priv;
	struct timespec rt;

	if (!g->events)
		return;
	if (!g->counts_since_ns)
		g->counts_since_ns = now_ns;
	if (now_ns - g->counts_since_ns < 1000000000u)
		return;
	g->counts_since_ns = now_ns;
	clock_gettime(CLOCK_REALTIME, &rt);
	for (uint32_t i = 0; i < g->ncounts; i++) {
		struct ev_count *c = &g->counts[i];
		size_t head;
		int r;

		r = put_head(g, c->src) ?: evr_strbuf_append(&g->line, ".", 1);
		r = r ?: put_component(&g->line, c->ev->provider, strlen(c->ev->provider));
		r = r ?: evr_strbuf_append(&g->line, ".events.", 8);
		r = r ?: put_component(&g->line, c->ev->name, strlen(c->ev->name));
		head = g->line.len;
		r = r ?: put_line(&g->line, head, "count", (double)c->n, (uint64_t)rt.tv_sec);
		if (r == 0)
			push(g, head, c->n);
		else
			s->st.too_large += c->n;
	}
	/* Every type again from zero: a type that stops firing stops being sent. */
	g->ncounts = 0;
}

/* ---- the worker: connection, back-off, sending -------------------------------------------- */

/*
 * What counts as sent. A write() only hands bytes to our kernel, and plaintext
 * carbon answers nothing; so the worker follows each connection's bytes:
 *
 *   written ──(TCP ACK: SIOCOUTQ no longer holds them)──▶ acknowledged
 *           ──(the connection still up CONFIRM_MS later)──▶ confirmed: sent
 *
 * Acknowledged is not read: a receiver that closes with unread data (or with
 * SO_LINGER 0) resets the connection and its kernel discards what it had
 * acknowledged. So what a dead connection held, written or acknowledged within
 * CONFIRM_MS, is counted dropped as "unconfirmed" (the outbox has already let
 * it go: delivery never waits for acknowledgements, so a receiver with a small
 * window costs throughput nothing). At exit, what is still in that window is
 * settled by half-closing and waiting up to SETTLE_MS for the receiver's answer:
 * its orderly close (it read everything) confirms it, a reset does not.
 *
 * The bookkeeping is per batch, not per message: a bounded FIFO of (end offset,
 * items) for written bytes, coalescing into its last entry when full, and one
 * bucket of items per SLOT_MS of acknowledgement time.
 */
static void disconnect(struct graphite *g)
{
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
}

/* One connection attempt to any address of host:port. Return: 0 or -errno. */
static int try_connect(struct graphite *g)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *ai = NULL;
	int r, err = -EHOSTUNREACH;

	r = getaddrinfo(g->host, g->port, &hints, &ai);
	if (r)
		return r == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		socklen_t len = sizeof(err);

		if (fd < 0) {
			err = -errno;
			continue;
		}
		/* What the kernel holds unsent hides a stalled receiver from the
		 * queue's accounting: keep it small (autotuning would grow it to
		 * megabytes), so the outbox, which says so, does the dropping. */
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){ SNDBUF_BYTES }, sizeof(int));
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
			err = -errno;
			close(fd);
			continue;
		}
		if (poll(&p, 1, CONNECT_TIMEOUT_MS) <= 0) {
			err = -ETIMEDOUT;
			close(fd);
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
			err = -(err ? err : errno);
			close(fd);
			continue;
		}
		g->fd = fd;
		err = 0;
		break;
	}
	freeaddrinfo(ai);
	return err;
}

/*
 * Did the receiver close or reset the connection? (It never sends a byte.)
 * Return: NULL if not, else what happened, in words.
 */
static const char *peer_closed(struct graphite *g)
{
	struct pollfd p = { .fd = g->fd, .events = POLLIN | POLLRDHUP };
	socklen_t len = sizeof(int);
	int err = 0;
	char c;

	if (poll(&p, 1, 0) <= 0)
		return NULL;
	if (p.revents & POLLERR) {
		(void)getsockopt(g->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		return err == ECONNRESET || err == EPIPE || !err ?
			"the receiver reset the connection" : strerror(err);
	}
	if (p.revents & (POLLHUP | POLLRDHUP))
		return "the receiver closed the connection";
	/* Bytes from a receiver that talks: read and ignore them; EOF is a close. */
	return recv(g->fd, &c, 1, MSG_DONTWAIT) == 0 ? "the receiver closed the connection" : NULL;
}

/* @items whose last byte is the connection's byte @end were written whole. */
static void track_written(struct graphite *g, uint64_t end, uint64_t items)
{
	if (!items)
		return;
	if (g->nflights == FLIGHTS) {
		/* Coarser, never wrong: the last entry now ends later. */
		struct flight *last = &g->flights[(g->first_flight + FLIGHTS - 1) % FLIGHTS];

		last->end = end;
		last->items += items;
		return;
	}
	g->flights[(g->first_flight + g->nflights++) % FLIGHTS] =
		(struct flight){ .end = end, .items = items };
}

/*
 * Confirm what was acknowledged at least CONFIRM_MS ago (@slot: now): it is
 * sent, and leaves the bookkeeping (the outbox counted it delivered already).
 */
static void confirm_old(struct graphite *g, uint64_t slot)
{
	uint32_t k = 0;

	while (k < g->nacked && g->acked[k].slot + CONFIRM_MS / SLOT_MS <= slot)
		k++;
	if (!k)
		return;
	memmove(g->acked, g->acked + k, (g->nacked - k) * sizeof(g->acked[0]));
	g->nacked -= k;
	/* Data confirmed on this connection: the receiver is healthy again. */
	g->backoff_ms = BACKOFF_MIN_MS;
}

/* Move what TCP acknowledged since the last look into the current slot. */
static void note_acks(struct graphite *g)
{
	uint64_t slot = evr_mono_ns() / (SLOT_MS * 1000000u), acked, items = 0;
	int unacked;

	confirm_old(g, slot);
	if (g->fd < 0 || !g->nflights || ioctl(g->fd, SIOCOUTQ, &unacked) < 0 || unacked < 0)
		return;
	acked = g->written - (uint64_t)unacked;
	while (g->nflights && g->flights[g->first_flight].end <= acked) {
		items += g->flights[g->first_flight].items;
		g->first_flight = (g->first_flight + 1) % FLIGHTS;
		g->nflights--;
	}
	if (!items)
		return;
	if (g->nacked && g->acked[g->nacked - 1].slot == slot)
		g->acked[g->nacked - 1].items += items;
	else	/* room: confirm_old() left only slots of the last CONFIRM_MS */
		g->acked[g->nacked++] = (struct acked_slot){ .slot = slot, .items = items };
}

/* Everything the connection held is lost with it: count it unconfirmed. */
static void forget_connection(struct graphite *g)
{
	for (uint32_t i = 0; i < g->nflights; i++)
		g->unconfirmed += g->flights[(g->first_flight + i) % FLIGHTS].items;
	for (uint32_t i = 0; i < g->nacked; i++)
		g->unconfirmed += g->acked[i].items;
	g->nflights = g->nacked = 0;
	g->written = 0;
	disconnect(g);
}

/* Wait the back-off, then double it. Return: true if the outbox is cancelled. */
static bool back_off(struct graphite *g)
{
	uint32_t ms = g->backoff_ms;

	g->backoff_ms = ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms * 2;
	return evr_fwd_outbox_sleep(g->s->outbox, ms);
}

/*
 * The connection died (@why): count what it held, say so, and wait before the
 * next one. The back-off is not reset by a connect, only by confirmed data:
 * a receiver that accepts and resets is retried at 100, 200, 400 ms...
 * Return: true if cancelled.
 */
static bool connection_lost(struct graphite *g, const char *why)
{
	note_acks(g);
	forget_connection(g);
	fprintf(stderr, "evring forward: %s: %s; reconnecting in %u ms\n", g->s->spec.text, why,
		g->backoff_ms);
	return back_off(g);
}

/* Connected, or back off. Return: 0 connected, -EAGAIN not yet, -ECANCELED. */
static int ensure_connected(struct graphite *g)
{
	const char *why = g->fd >= 0 ? peer_closed(g) : NULL;
	int r;

	if (g->fd >= 0 && !why)
		return 0;
	if (g->fd >= 0 && connection_lost(g, why))
		return -ECANCELED;
	r = try_connect(g);
	if (r == 0) {
		atomic_fetch_add_explicit(&g->connects, 1, memory_order_relaxed);
		if (g->said_down)
			fprintf(stderr, "evring forward: %s: connected again\n", g->s->spec.text);
		g->said_down = false;
		return 0;
	}
	atomic_fetch_add_explicit(&g->failures, 1, memory_order_relaxed);
	if (!g->said_down)
		fprintf(stderr, "evring forward: %s: cannot connect: %s; retrying\n",
			g->s->spec.text, strerror(-r));
	g->said_down = true;
	return back_off(g) ? -ECANCELED : -EAGAIN;
}

static int deliver(void *ctx, const char *const *msg, const uint32_t *len,
		   const uint32_t *weight, uint32_t n)
{
	struct graphite *g = ctx;
	size_t total = 0, done = 0;
	uint64_t items = 0, base;
	uint32_t whole = 0;
	int r, err = 0;

	r = ensure_connected(g);
	if (r == -ECANCELED)
		return r;
	if (r < 0)
		return 0;	/* nothing taken; the outbox offers the batch again */
	for (uint32_t i = 0; i < n; i++)
		total += len[i];
	base = g->written;
	while (done < total) {
		struct pollfd p = { .fd = g->fd, .events = POLLOUT };
		ssize_t w;

		r = poll(&p, 1, 100);
		if (r <= 0) {
			/* A receiver that stopped reading: keep the connection, let
			 * the outbox drop the oldest meanwhile. */
			if (evr_fwd_outbox_cancelled(g->s->outbox))
				break;
			note_acks(g);
			continue;
		}
		w = send(g->fd, msg[0] + done, total - done, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			err = errno;
			break;
		}
		done += (size_t)w;
	}
	g->written = base + done;
	/* Messages that went out whole; the rest go again, from a line start. */
	for (total = 0; whole < n && total + len[whole] <= done; whole++) {
		total += len[whole];
		items += weight[whole];
	}
	track_written(g, base + total, items);
	note_acks(g);
	if (err) {
		char why[128];

		snprintf(why, sizeof(why), "sending failed: %s", strerror(err));
		if (connection_lost(g, why) && !whole)
			return -ECANCELED;
	}
	if (!whole && evr_fwd_outbox_cancelled(g->s->outbox))
		return -ECANCELED;
	return (int)whole;
}

/*
 * After the worker stopped: settle what the connection still holds. Half-close
 * and wait up to SETTLE_MS (and no later than @deadline_ns) for the receiver's
 * answer: an orderly close means it read everything; a reset loses it all; no
 * answer confirms what TCP acknowledged and loses what it did not.
 */
static void settle_at_exit(struct graphite *g, uint64_t deadline_ns)
{
	uint64_t end = evr_mono_ns() + (uint64_t)SETTLE_MS * 1000000u;
	struct pollfd p = { .fd = g->fd, .events = POLLIN | POLLRDHUP };
	char c[64];

	if (g->fd < 0)
		return;
	note_acks(g);
	if (end > deadline_ns)
		end = deadline_ns;
	(void)shutdown(g->fd, SHUT_WR);
	/* Confirmed is what leaves the bookkeeping; forget_connection() counts the
	 * rest unconfirmed. */
	while (g->nflights || g->nacked) {
		uint64_t now = evr_mono_ns();
		ssize_t n;

		if (poll(&p, 1, now < end ? (int)((end - now) / 1000000u) : 0) <= 0) {
			note_acks(g);	/* no answer: the acknowledged stand */
			g->nacked = 0;
			break;
		}
		n = recv(g->fd, c, sizeof(c), MSG_DONTWAIT);
		if (n > 0)
			continue;	/* a receiver that talks; wait for its close */
		if (n == 0)		/* its orderly close: it read up to our FIN */
			g->nflights = g->nacked = 0;
		break;			/* or reset: all of it unconfirmed */
	}
	forget_connection(g);
}

/* ---- the sink -------------------------------------------------------------------------- */

static int parse_target(struct graphite *g, const char *arg)
{
	const char *colon;
	char *end;
	long port;

	if (!arg || !*arg)
		return -EINVAL;
	if (arg[0] == '[') {		/* [::1]:2003 */
		const char *rb = strchr(arg, ']');

		if (!rb || rb[1] != ':' || (size_t)(rb - arg - 1) >= sizeof(g->host))
			return -EINVAL;
		memcpy(g->host, arg + 1, (size_t)(rb - arg - 1));
		colon = rb + 1;
	} else {
		colon = strrchr(arg, ':');
		if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof(g->host))
			return -EINVAL;
		memcpy(g->host, arg, (size_t)(colon - arg));
	}
	port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || port <= 0 || port > 65535)
		return -EINVAL;
	snprintf(g->port, sizeof(g->port), "%ld", port);
	return 0;
}

/* The options, checked (@g may be a scratch copy). Return: 0 or -EINVAL with @err. */
static int parse_opts(struct evr_fwd_sink *s, struct graphite *g, size_t *ret_queue, char *err,
		      size_t errlen)
{
	const char *inst = evr_fwd_spec_get(&s->spec, "instance");
	const char *events = evr_fwd_spec_get(&s->spec, "events");

	if (parse_target(g, s->spec.arg) < 0) {
		snprintf(err, errlen, "--to %s: say where carbon listens: graphite:HOST:PORT "
			 "(e.g. graphite:127.0.0.1:2003)", s->spec.text);
		return -EINVAL;
	}
	if (inst && strcmp(inst, "pid") && strcmp(inst, "comm")) {
		snprintf(err, errlen, "--to %s: instance= takes 'pid' or 'comm'", s->spec.text);
		return -EINVAL;
	}
	if (events && strcmp(events, "0") && strcmp(events, "1")) {
		snprintf(err, errlen, "--to %s: events= takes 0 or 1", s->spec.text);
		return -EINVAL;
	}
	/*
	 * Several processes: the pid in the path unless told otherwise, or two of one
	 * name would write the same series (carbon keeps the last write of a slot:
	 * silently one process's values, or a mix). instance=comm: the user knows
	 * the names are unique and wants series that outlive a restart.
	 */
	g->instance = inst ? !strcmp(inst, "pid") : s->many;
	g->events = events && !strcmp(events, "1");
	return evr_fwd_queue_size(s, OUTBOX_BYTES, ret_queue, err, errlen);
}

static int graphite_check(struct evr_fwd_sink *s, char *err, size_t errlen)
{
	struct graphite scratch;
	size_t q;

	return parse_opts(s, &scratch, &q, err, errlen);
}

static int graphite_open(struct evr_fwd_sink *s, char *err, size_t errlen)
{
	const char *prefix = evr_fwd_spec_get(&s->spec, "prefix");
	struct graphite *g;
	size_t qsize;
	int r;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->s = s;
	g->fd = -1;
	g->backoff_ms = BACKOFF_MIN_MS;
	r = parse_opts(s, g, &qsize, err, errlen);
	if (r < 0) {
		free(g);
		return r;
	}
	g->prefix = strdup(prefix ? prefix : "evring");
	if (!g->prefix) {
		free(g);
		return -ENOMEM;
	}
	/* events=1 widens what the sink takes, unless what= said otherwise. */
	if (g->events && !evr_fwd_spec_get(&s->spec, "what"))
		s->filter.what = EVR_FWD_ALL;
	r = evr_fwd_outbox_new(qsize, EVR_FWD_DROP_OLDEST, deliver, g, &s->outbox);
	if (r < 0) {
		snprintf(err, errlen, "--to %s: cannot start its sender: %s", s->spec.text,
			 strerror(-r));
		free(g->prefix);
		free(g);
		return r;
	}
	s->priv = g;
	return 0;
}

static void graphite_close(struct evr_fwd_sink *s, uint64_t deadline_ns)
{
	struct graphite *g = s->priv;

	if (!g)
		return;
	/* Counts of the last partial second go too. */
	if (g->events) {
		g->counts_since_ns = 1;
		graphite_tick(s, evr_mono_ns());
	}
	evr_fwd_outbox_close(s->outbox, deadline_ns);
	/* The worker has been joined: its connection and counts are ours now. */
	settle_at_exit(g, deadline_ns);
	s->st.unconfirmed = g->unconfirmed;
	s->st.connects = atomic_load_explicit(&g->connects, memory_order_relaxed);
	s->st.connect_failures = atomic_load_explicit(&g->failures, memory_order_relaxed);
	s->priv = NULL;
	free(g->line.buf);
	free(g->prefix);
	free(g);
}

static const char *const graphite_keys[] = { "prefix", "instance", "events", "queue", NULL };

const struct evr_fwd_sink_ops evr_fwd_sink_graphite = {
	.kind = "graphite",
	.what = EVR_FWD_COUNTERS,
	.default_level = -1,
	.keys = graphite_keys,
	.check = graphite_check,
	.open = graphite_open,
	.event = graphite_event,
	.counter = graphite_counter,
	.tick = graphite_tick,
	.close = graphite_close,
};
