// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr-forward-producer: counters with values a test can predict, for the
 * Graphite tests of evring forward and for comparing an in-process listener
 * with an attached clrtop.
 *
 * Provider "FwdCheck":
 *   ops      incrementing: iteration i adds i % 7 + 1
 *   latency  mean: 12.5 every time (so every interval's mean, min and max are
 *            12.5 whatever its phase), or with --vary i % 100 + 1
 *   depth    gauge: 42
 *   Op       event (u64 seq), one per iteration
 *
 *   Note     a warning defined at run time (evr_event_define), written once with
 *            --note: fields text (str: "first line\nsecond line"), "a-b" (u32 1),
 *            "a_b" (u32 2), "9lives" (u32 3), and a 70-character name (u32 4): names
 *            that sinks such as journald must map
 *
 *   evr-forward-producer [--ops N] [--sessions K] [--listen MS] [--vary] [--note]
 *                        [--in-callback]
 *
 * Prints "ready PID"; waits until K sessions (the listener's included) enable
 * FwdCheck; runs N iterations (and writes Note) and prints "recorded OPS_TOTAL N".
 * With --in-callback the iterations run inside FwdCheck's enable callback, at the
 * call that reports the K-th session: at the very moment the session that
 * enabled it is published, before its evr_session_start() returns. With --listen
 * (an in-process listener sampling every MS ms) waits until the listener has
 * received every value and prints its totals:
 *   "listener ops=T count=N sum=S min=A max=B depth=D"
 * then keeps running (the gauge stays sampled) until stdin ends.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <evring/listener.h>

#define CHECK_EVENTS(EVENT) EVENT(fc_op, "Op", 1, EVR_LEVEL_INFO, 0x1, (u64, seq))

EVR_PROVIDER_DECLARE(fc, CHECK_EVENTS)
EVR_PROVIDER_DEFINE(fc, "FwdCheck", CHECK_EVENTS)

/* What the iterations need, from main() or from the enable callback. */
struct run {
	struct evr_counter *ops, *lat;
	unsigned long n, sessions;
	bool vary;
	double ops_total;
	_Atomic bool armed;	/* the counters exist: the callback may run them */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void run_ops(struct run *r)
{
	for (unsigned long i = 1; i <= r->n; i++) {
		evr_counter_add(r->ops, (double)(i % 7 + 1));
		r->ops_total += (double)(i % 7 + 1);
		evr_counter_record(r->lat, r->vary ? (double)(i % 100 + 1) : 12.5);
		fc_op(i);
	}
}

/* FwdCheck's enable callback (--in-callback): runs under the registry lock, on
 * the thread that starts the session (the agent's, for clrtop's). */
static void on_enable(struct evr_provider *p, bool enabled, uint8_t level, uint64_t keywords,
		      const struct evr_provider_spec *args, void *ctx)
{
	struct run *r = ctx;

	(void)enabled, (void)level, (void)keywords, (void)args;
	if (!atomic_load(&r->armed) ||
	    (unsigned long)__builtin_popcountll(atomic_load(&p->mask)) < r->sessions)
		return;
	pthread_mutex_lock(&r->lock);
	if (!r->done) {
		run_ops(r);
		r->done = true;
		pthread_cond_broadcast(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
}

struct totals {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	double ops, sum, min, max, depth;
	uint64_t count;
};

static double depth_42(void *ctx)
{
	return 42;
}

static bool name_is(const struct evr_counter_sample *s, const char *n)
{
	return s->name_len == strlen(n) && !memcmp(s->name, n, s->name_len);
}

static void on_counter(const struct evr_counter_sample *s, void *ctx)
{
	struct totals *t = ctx;

	if (strcmp(s->provider, "FwdCheck"))
		return;
	pthread_mutex_lock(&t->lock);
	if (name_is(s, "ops")) {
		t->ops += s->increment;
	} else if (name_is(s, "latency") && s->count) {
		t->count += s->count;
		t->sum += s->mean * (double)s->count;
		t->min = s->min < t->min ? s->min : t->min;
		t->max = s->max > t->max ? s->max : t->max;
	} else if (name_is(s, "depth")) {
		t->depth = s->value;
	}
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void usage(void)
{
	fprintf(stderr, "usage: evr-forward-producer [--ops N] [--sessions K] [--listen MS] "
		"[--vary] [--note] [--in-callback]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ops", required_argument, NULL, 'o' },
		{ "sessions", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "vary", no_argument, NULL, 'v' },
		{ "note", no_argument, NULL, 'N' },
		{ "in-callback", no_argument, NULL, 'C' },
		{ 0 },
	};
	struct evr_counter_desc dops = { .name = "ops", .kind = EVR_COUNTER_INCREMENT };
	struct evr_counter_desc dlat = { .name = "latency", .kind = EVR_COUNTER_MEAN };
	struct evr_counter_desc ddep = { .name = "depth", .kind = EVR_COUNTER_GAUGE,
					 .poll = depth_42 };
	struct totals t = { .min = 1e300, .max = -1e300 };
	struct run run = { .n = 1000, .sessions = 1 };
	struct evr_counter *dep;
	struct evr_listener *l = NULL;
	unsigned long listen_ms = 0;
	bool note = false, in_callback = false;
	struct evr_event *note_ev = NULL;
	char err[256], buf[64];
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			run.n = strtoul(optarg, NULL, 10);
			break;
		case 's':
			run.sessions = strtoul(optarg, NULL, 10);
			break;
		case 'l':
			listen_ms = strtoul(optarg, NULL, 10);
			break;
		case 'v':
			run.vary = true;
			break;
		case 'N':
			note = true;
			break;
		case 'C':
			in_callback = true;
			break;
		default:
			usage();
		}
	}
	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cond, NULL);
	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.cond, NULL);
	if (in_callback) {
		/* The constructor registered FwdCheck; a callback is set before registering. */
		evr_provider_unregister(&fc);
		fc.callback = on_enable;
		fc.callback_ctx = &run;
		if (evr_provider_register(&fc) < 0) {
			fprintf(stderr, "evr-forward-producer: cannot register FwdCheck again\n");
			return 1;
		}
	}
	if (evr_counter_create(&fc, &dops, &run.ops) < 0 ||
	    evr_counter_create(&fc, &dlat, &run.lat) < 0 ||
	    evr_counter_create(&fc, &ddep, &dep) < 0) {
		fprintf(stderr, "evr-forward-producer: cannot create the counters\n");
		return 1;
	}
	if (note) {
		static const struct evr_field_desc f[] = {
			{ "text", EVR_TYPE_STR }, { "a-b", EVR_TYPE_U32 }, { "a_b", EVR_TYPE_U32 },
			{ "9lives", EVR_TYPE_U32 },
			{ "a_field_name_that_is_far_longer_than_journald_would_ever_take_as_is",
			  EVR_TYPE_U32 },
		};
		struct evr_event_desc d = { .name = "Note", .id = 2, .level = EVR_LEVEL_WARNING,
					    .keywords = 0x2, .nfields = 5, .fields = f };

		if (evr_event_define(&fc, &d, &note_ev) < 0) {
			fprintf(stderr, "evr-forward-producer: cannot define Note\n");
			return 1;
		}
	}
	if (listen_ms) {
		struct evr_listener_opts o = { .providers = "FwdCheck:0x0:0",
					       .counter_interval_ms = (uint32_t)listen_ms,
					       .on_counter = on_counter, .ctx = &t };

		if (evr_listener_new(&o, &l, err, sizeof(err)) < 0) {
			fprintf(stderr, "evr-forward-producer: listener: %s\n", err);
			return 1;
		}
	}
	atomic_store(&run.armed, true);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (in_callback) {
		pthread_mutex_lock(&run.lock);
		while (!run.done)
			pthread_cond_wait(&run.cond, &run.lock);
		pthread_mutex_unlock(&run.lock);
	} else {
		/* The sessions that will see the values: poll the provider's mask itself. */
		while ((unsigned long)__builtin_popcountll(atomic_load(&fc.mask)) < run.sessions) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
		run_ops(&run);
	}
	if (note_ev) {
		union evr_value v[5] = { { .s = "first line\nsecond line" }, { .u = 1 }, { .u = 2 },
					 { .u = 3 }, { .u = 4 } };

		evr_event_writev(note_ev, v, 5);
	}
	printf("recorded %.17g %lu\n", run.ops_total, run.n);
	fflush(stdout);
	if (l) {
		pthread_mutex_lock(&t.lock);
		while (t.count < run.n || t.ops < run.ops_total || t.depth != 42)
			pthread_cond_wait(&t.cond, &t.lock);
		printf("listener ops=%.17g count=%llu sum=%.17g min=%.17g max=%.17g depth=%.17g\n",
		       t.ops, (unsigned long long)t.count, t.sum, t.min, t.max, t.depth);
		pthread_mutex_unlock(&t.lock);
		fflush(stdout);
	}
	while (read(0, buf, sizeof(buf)) > 0)
		;
	evr_listener_free(l);
	evr_counter_free(run.ops);
	evr_counter_free(run.lat);
	evr_counter_free(dep);
	return 0;
}
