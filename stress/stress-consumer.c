// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The consumer child of evring-stress: attaches to one producer by PID with the
 * client API, starts a session with its own filter, ring size and loss policy,
 * and checks every record it reads:
 *  - the payload decodes by its schema, its length and checksum are right;
 *  - its kind is one the session's filter selects, its thread index is valid;
 *  - per (thread, kind, ring) sequence numbers strictly increase (a thread's
 *    writes into one ring are in ring order; across rings the reader's order is
 *    not time order, so only per ring is order a promise);
 *  - no (thread, kind, seq) is seen twice, in any ring (a bitmap per pair).
 * It reports what it received per (thread, kind), the losses the session told
 * it about, and every violation; the orchestrator, which knows what the
 * producer emitted, checks conservation (received + lost == emitted).
 *
 * Stable consumers read until told "stop", then stop the session and drain it.
 * Churn consumers also stop on their own after a random time or number of
 * events, either by stopping the session and draining it (their interior
 * sequence gaps must then be covered by the losses reported) or by just closing
 * the connection.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <evring/consumer.h>

#include "stress.h"

/* ---- a set of sequence numbers: a bitmap in chunks allocated on first use ---- */

#define SEQSET_CHUNK_BITS	(1u << 18)	/* 32 KiB per chunk */

struct seqset {
	uint64_t **chunks;
	size_t nchunks;
};

/* Return 1 if @seq was already in the set, 0 if it was added, -ENOMEM. */
static int seqset_test_and_set(struct seqset *s, uint64_t seq)
{
	size_t ci = (size_t)(seq / SEQSET_CHUNK_BITS);
	uint64_t bit = seq % SEQSET_CHUNK_BITS;
	uint64_t *chunk, mask;

	if (ci >= s->nchunks) {
		size_t n = s->nchunks ? s->nchunks : 4;
		uint64_t **v;

		while (n <= ci)
			n *= 2;
		v = realloc(s->chunks, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + s->nchunks, 0, (n - s->nchunks) * sizeof(*v));
		s->chunks = v;
		s->nchunks = n;
	}
	chunk = s->chunks[ci];
	if (!chunk) {
		chunk = calloc(SEQSET_CHUNK_BITS / 64, sizeof(uint64_t));
		if (!chunk)
			return -ENOMEM;
		s->chunks[ci] = chunk;
	}
	mask = 1ull << (bit % 64);
	if (chunk[bit / 64] & mask)
		return 1;
	chunk[bit / 64] |= mask;
	return 0;
}

static void seqset_fini(struct seqset *s)
{
	for (size_t i = 0; i < s->nchunks; i++)
		free(s->chunks[i]);
	free(s->chunks);
}

/* ---- the consumer ---- */

enum viol_class {
#define X(name) VIOL_##name,
	STRESS_VIOL_CLASSES(X)
#undef X
	VIOL_NR_,
};

static const char *const viol_names[] = {
#define X(name) #name,
	STRESS_VIOL_CLASSES(X)
#undef X
};

/* Violations of a class beyond this many are counted, not described. */
#define VIOL_DESCRIBED 5

struct pair_stats {
	uint64_t count;
	uint64_t min, max;
	struct seqset seen;
};

struct consumer {
	/* options */
	pid_t pid;
	unsigned filter;
	uint32_t mode;
	uint64_t ring_size;
	uint32_t packet_size;
	uint32_t nthreads;
	bool churn;
	bool detach_close;		/* churn: close the connection instead of stopping */
	uint64_t max_ms;		/* churn: read this long at most */
	uint64_t max_events;		/* churn: read this many records at most */
	const char *fault;		/* --inject-fault: dup, corrupt, drop */
	/* state */
	struct evr_client *client;
	uint32_t nr_rings;
	struct pair_stats *pairs;	/* [thread][kind] */
	uint64_t *last;			/* [thread][kind][ring]: last seq, 0 none */
	uint64_t received, lost, records;
	uint64_t viol[VIOL_NR_];
	bool fault_done;
	bool stopped;			/* we asked the producer to stop the session */
};

__attribute__((format(printf, 3, 4)))
static void viol(struct consumer *c, enum viol_class cls, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	if (c->viol[cls]++ >= VIOL_DESCRIBED)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	stress_report(STRESS_REP_FD, "viol %s %s\n", viol_names[cls], text);
}

/* Count one good event; @ring already checked. */
static void account(struct consumer *c, unsigned t, unsigned k, uint32_t ring, uint64_t seq)
{
	struct pair_stats *ps = &c->pairs[t * STRESS_NKINDS + k];
	uint64_t *last = &c->last[((size_t)t * STRESS_NKINDS + k) * c->nr_rings + ring];
	int r;

	if (seq <= *last)
		viol(c, VIOL_order,
		     "thread %u %s: seq %" PRIu64 " after seq %" PRIu64 " in ring %u", t,
		     stress_kinds[k].name, seq, *last, ring);
	else
		*last = seq;
	r = seqset_test_and_set(&ps->seen, seq);
	if (r < 0) {
		viol(c, VIOL_read, "out of memory for the sequence bitmap");
		return;
	}
	if (r) {
		viol(c, VIOL_duplicate, "thread %u %s: seq %" PRIu64 " received twice (ring %u)",
		     t, stress_kinds[k].name, seq, ring);
		return;
	}
	c->received++;
	if (!ps->count || seq < ps->min)
		ps->min = seq;
	if (seq > ps->max)
		ps->max = seq;
	ps->count++;
}

static void check_event(struct consumer *c, const struct evr_event_view *v)
{
	struct evr_field_value vals[STRESS_NFIELDS];
	const struct evr_schema_event *ev = v->schema;
	uint64_t seq, sum;
	uint32_t t, len;
	const void *data;
	int k, n;

	if (!ev) {
		viol(c, VIOL_schema, "record with event id %u has no description", v->rid);
		return;
	}
	if (strcmp(ev->provider, STRESS_PROVIDER_NAME)) {
		viol(c, VIOL_filter, "event %s/%s of a provider the filter does not name",
		     ev->provider, ev->name);
		return;
	}
	k = stress_kind_by_id(ev->id);
	if (k < 0 || strcmp(ev->name, stress_kinds[k].name) || ev->nfields != STRESS_NFIELDS) {
		viol(c, VIOL_schema, "unexpected description: %s id %u with %u fields", ev->name,
		     ev->id, ev->nfields);
		return;
	}
	n = evr_decode_fields(ev, v->payload, v->len, vals);
	if (n != STRESS_NFIELDS) {
		viol(c, VIOL_decode, "%s record of %u bytes does not decode (%d)", ev->name,
		     v->len, n);
		return;
	}
	t = (uint32_t)vals[0].u;
	seq = vals[1].u;
	data = vals[2].b.data;
	len = vals[2].b.len;
	sum = vals[3].u;
	if (c->fault && !c->fault_done && !strcmp(c->fault, "corrupt")) {
		/* Deliberate: this event's checksum no longer matches. */
		c->fault_done = true;
		sum ^= 1;
	}
	if (sum != stress_checksum((uint32_t)k, t, seq, data, len)) {
		viol(c, VIOL_corrupt, "%s thread %u seq %" PRIu64 ": checksum mismatch (%u bytes)",
		     ev->name, t, seq, len);
		return;
	}
	if (t >= c->nthreads || seq == 0) {
		viol(c, VIOL_range, "%s: thread %u seq %" PRIu64 " out of range", ev->name, t, seq);
		return;
	}
	if (len != stress_payload_len(t, (uint32_t)k, seq)) {
		viol(c, VIOL_corrupt, "%s thread %u seq %" PRIu64 ": payload of %u bytes, not %u",
		     ev->name, t, seq, len, stress_payload_len(t, (uint32_t)k, seq));
		return;
	}
	if (!(stress_filters[c->filter].kinds & (1u << k))) {
		viol(c, VIOL_filter, "%s event delivered to a session with filter \"%s\"", ev->name,
		     stress_filters[c->filter].spec);
		return;
	}
	if (v->ring >= c->nr_rings) {
		viol(c, VIOL_range, "ring %u of %u", v->ring, c->nr_rings);
		return;
	}
	if (c->fault && !c->fault_done && !strcmp(c->fault, "drop")) {
		c->fault_done = true;	/* Deliberate: not counted at all. */
		return;
	}
	account(c, t, (unsigned)k, v->ring, seq);
	if (c->fault && !c->fault_done && !strcmp(c->fault, "dup")) {
		/* Deliberate: counted twice, as if it had been read from another ring too. */
		uint32_t other = (v->ring ^ 1u) < c->nr_rings ? v->ring ^ 1u : v->ring;

		c->fault_done = true;
		account(c, t, (unsigned)k, other, seq);
	}
}

/*
 * Read what is there now. Return 1 something was read, 0 nothing, -errno.
 * Discard mode: space is handed back to the writers after each batch.
 */
static int read_batch(struct consumer *c)
{
	struct evr_event_view v;
	int n = 0, r = 0;

	while (n < 4096) {
		r = evr_client_next(c->client, &v);
		if (r <= 0)
			break;
		n++;
		c->records++;
		if (v.type == EVR_REC_LOST)
			c->lost += v.lost;
		else if (v.type == EVR_REC_EVENT)
			check_event(c, &v);
	}
	if (n)
		evr_client_release(c->client);
	if (r < 0) {
		viol(c, VIOL_read, "evr_client_next: %s", strerror(-r));
		return r;
	}
	return n > 0;
}

/* A command from the orchestrator: 1 "stop" (or EOF: it is gone), 0 none. */
static int cmd_pending(void)
{
	struct pollfd pfd = { .fd = STRESS_CMD_FD, .events = POLLIN };
	char buf[64];
	ssize_t n;

	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	n = read(STRESS_CMD_FD, buf, sizeof(buf));
	if (n < 0 && errno == EINTR)
		return 0;
	/* The only command is "stop"; EOF means the orchestrator died. */
	return 1;
}

/*
 * Once a session is stopped and drained, the producer's own ring counters are
 * final: every event it offered the session was either written (events_total)
 * or dropped and counted (evr_ring_ctl_lost()). What this consumer received and
 * was told it lost must add up to exactly that, whenever it attached. This is
 * the exact check for churning consumers, whose share of the emission cannot be
 * known from outside the producer.
 */
static void check_ring_totals(struct consumer *c)
{
	const struct evr_shm_hdr *h = evr_client_shm(c->client);
	uint64_t offered = 0;

	if (!h)
		return;
	for (uint32_t i = 0; i < h->nr_rings; i++) {
		const struct evr_ring_ctl *ctl = evr_shm_ring_ctl(h, i);

		offered += __atomic_load_n(&ctl->events_total, __ATOMIC_RELAXED) +
			   evr_ring_ctl_lost(ctl);
	}
	if (c->received + c->lost != offered)
		viol(c, VIOL_conservation,
		     "received %" PRIu64 " + lost %" PRIu64 " != %" PRIu64
		     " offered to the session's rings",
		     c->received, c->lost, offered);
}

/* Stop the session and read it to its end. */
static int stop_and_drain(struct consumer *c)
{
	char err[256];
	int r;

	r = evr_client_stop(c->client, err, sizeof(err));
	if (r < 0) {
		viol(c, VIOL_state, "evr_client_stop: %s", err);
		return r;
	}
	c->stopped = true;
	while (!evr_client_drained(c->client)) {
		r = read_batch(c);
		if (r < 0)
			return r;
		if (r == 0 && !evr_client_drained(c->client)) {
			/* Ended: everything is published; nothing left means drained. */
			r = evr_client_wait(c->client, 1000);
			if (r < 0) {
				viol(c, VIOL_read, "evr_client_wait: %s", strerror(-r));
				return r;
			}
			if (r == 0 && read_batch(c) == 0 && !evr_client_drained(c->client)) {
				viol(c, VIOL_state, "session ended but never drained (state %d)",
				     evr_client_state(c->client));
				return -ETIMEDOUT;
			}
		}
	}
	check_ring_totals(c);
	return 0;
}

static int consume(struct consumer *c)
{
	uint64_t deadline = c->churn ? stress_now_ns() + c->max_ms * 1000000u : UINT64_MAX;

	for (;;) {
		enum evr_client_state st;
		int r;

		if (cmd_pending())
			break;
		if (c->churn && (stress_now_ns() >= deadline || c->records >= c->max_events))
			break;
		r = read_batch(c);
		if (r < 0)
			return r;
		st = evr_client_state(c->client);
		if (st != EVR_CLIENT_LIVE) {
			viol(c, VIOL_state, "session %s while running",
			     st == EVR_CLIENT_GONE ? "lost its producer" : "ended by the producer");
			return -EPIPE;
		}
		if (r == 0) {
			/* Bounded, so that a command or the churn deadline is seen. */
			r = evr_client_wait(c->client, 50);
			if (r < 0) {
				viol(c, VIOL_read, "evr_client_wait: %s", strerror(-r));
				return r;
			}
		}
	}
	if (c->churn && c->detach_close)
		return 0;
	return stop_and_drain(c);
}

static void report(struct consumer *c)
{
	/* Gaps are only covered by losses when the session was drained to its end. */
	stress_report(STRESS_REP_FD, "report %" PRIu64 " %" PRIu64 " %d\n", c->received, c->lost,
		      c->stopped ? 1 : 0);
	for (uint32_t t = 0; t < c->nthreads; t++)
		for (unsigned k = 0; k < STRESS_NKINDS; k++) {
			struct pair_stats *ps = &c->pairs[t * STRESS_NKINDS + k];

			if (!ps->count)
				continue;
			stress_report(STRESS_REP_FD,
				      "tk %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
				      t, k, ps->count, ps->min, ps->max,
				      ps->max - ps->min + 1 - ps->count);
		}
	for (unsigned i = 0; i < VIOL_NR_; i++)
		if (c->viol[i] > VIOL_DESCRIBED)
			stress_report(STRESS_REP_FD, "viol %s %" PRIu64 " more like these\n",
				      viol_names[i], c->viol[i] - VIOL_DESCRIBED);
	stress_report(STRESS_REP_FD, "end\n");
}

static int parse(struct consumer *c, int argc, char **argv, long *ret_parent)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "filter", required_argument, NULL, 'f' },
		{ "mode", required_argument, NULL, 'm' },
		{ "ring-size", required_argument, NULL, 'r' },
		{ "packet-size", required_argument, NULL, 'k' },
		{ "threads", required_argument, NULL, 't' },
		{ "churn", no_argument, NULL, 'c' },
		{ "detach-close", no_argument, NULL, 'd' },
		{ "max-ms", required_argument, NULL, 'M' },
		{ "max-events", required_argument, NULL, 'E' },
		{ "inject-fault", required_argument, NULL, 'F' },
		{ "parent", required_argument, NULL, 'P' },
		{ 0 }
	};
	int o;

	while ((o = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (o) {
		case 'p':
			c->pid = (pid_t)strtol(optarg, NULL, 10);
			break;
		case 'f':
			c->filter = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'm':
			c->mode = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			c->ring_size = strtoull(optarg, NULL, 10);
			break;
		case 'k':
			c->packet_size = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 't':
			c->nthreads = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'c':
			c->churn = true;
			break;
		case 'd':
			c->detach_close = true;
			break;
		case 'M':
			c->max_ms = strtoull(optarg, NULL, 10);
			break;
		case 'E':
			c->max_events = strtoull(optarg, NULL, 10);
			break;
		case 'F':
			c->fault = optarg;
			break;
		case 'P':
			*ret_parent = strtol(optarg, NULL, 10);
			break;
		default:
			return -EINVAL;
		}
	}
	if (c->filter >= STRESS_NFILTERS || c->nthreads < 1 || c->nthreads > STRESS_MAX_THREADS)
		return -EINVAL;
	return 0;
}

int stress_consumer_main(int argc, char **argv)
{
	struct consumer c = { .nthreads = 1 };
	struct evr_attach_opts ao = { 0 };
	char err[512];
	long parent = 0;
	uint64_t t0;
	int r, status = 0;

	if (parse(&c, argc, argv, &parent) < 0)
		return 2;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		return 2;
	t0 = stress_now_ns();
	r = evr_client_connect(c.pid, c.churn ? "evring-stress churn" : "evring-stress",
			       &c.client, err, sizeof(err));
	if (r < 0) {
		stress_report(STRESS_REP_FD, "error attach: %s\n", err);
		return 2;
	}
	ao.providers = stress_filters[c.filter].spec;
	ao.ring_size = c.ring_size;
	ao.packet_size = c.packet_size;
	ao.mode = c.mode;
	r = evr_client_start(c.client, &ao, err, sizeof(err));
	if (r < 0) {
		stress_report(STRESS_REP_FD, "error start session: %s\n", err);
		evr_client_free(c.client);
		return 2;
	}
	c.nr_rings = evr_client_shm(c.client)->nr_rings;
	c.pairs = calloc((size_t)c.nthreads * STRESS_NKINDS, sizeof(*c.pairs));
	c.last = calloc((size_t)c.nthreads * STRESS_NKINDS * c.nr_rings, sizeof(*c.last));
	if (!c.pairs || !c.last) {
		stress_report(STRESS_REP_FD, "error out of memory\n");
		status = 2;
		goto out;
	}
	stress_report(STRESS_REP_FD, "started %u %u %" PRIu64 "\n",
		      evr_client_shm(c.client)->session_id, c.nr_rings, stress_now_ns() - t0);
	/* What went wrong is in the report; the exit status says it was delivered. */
	(void)consume(&c);
	evr_client_free(c.client);
	c.client = NULL;
	report(&c);
out:
	evr_client_free(c.client);
	if (c.pairs)
		for (size_t i = 0; i < (size_t)c.nthreads * STRESS_NKINDS; i++)
			seqset_fini(&c.pairs[i].seen);
	free(c.pairs);
	free(c.last);
	return status;
}
