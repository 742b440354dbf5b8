// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of in-process listeners (<evring/listener.h>, libevring's public
 * API only): every event of a known sequence from several threads arrives
 * once with its typed fields; losses are reported exactly (delivered + lost
 * == written) when the listener is held up; events a callback writes do not
 * come back to it; counters arrive aggregated at the listener's interval with
 * exact totals; flush from a callback is refused; bad options are errors;
 * stopping or freeing a listener whose callback is slow waits for the call in
 * progress only, and counts what it drops.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <evring/listener.h>

#define SEQ_EVENTS(EVENT)                                                                     \
	EVENT(sq_tick, "Tick", 1, EVR_LEVEL_INFO, 0x1, (u32, thread), (u64, seq), (i16, neg),  \
	      (f64, half), (bool, odd))                                                       \
	EVENT(sq_text, "Text", 2, EVR_LEVEL_VERBOSE, 0x2, (u64, seq), (str, s), (bytes, b),   \
	      (json, j))                                                                      \
	EVENT(sq_echo, "Echo", 3, EVR_LEVEL_INFO, 0x4, (u64, seq))

EVR_PROVIDER_DECLARE(sq, SEQ_EVENTS)
EVR_PROVIDER_DEFINE(sq, "ListenSeq", SEQ_EVENTS)

#define THREADS 3
#define PER_THREAD 20000u

struct seen {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint8_t *got[THREADS];		/* per thread: how often each seq arrived */
	uint64_t texts, echoes, bad;
	/* hold-up test */
	bool hold;
	bool holding;
	uint64_t events, lost;
	/* counters test */
	double inc_total, mean_sum, min, max, gauge;
	uint64_t mean_count, samples;
	uint32_t interval_ms;
	/* own-events test */
	bool echo_back;
	int flush_from_cb;
	struct evr_listener *self;
};

static void seen_init(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->min = 1e300;
	s->max = -1e300;
}

static void seen_fini(struct seen *s)
{
	for (int i = 0; i < THREADS; i++)
		free(s->got[i]);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

static bool str_is(const struct evr_field_value *v, const char *want)
{
	return v->b.len == strlen(want) && !memcmp(v->b.data, want, v->b.len);
}

static void on_event(const struct evr_event_view *ev, const struct evr_field_value *f, void *ctx)
{
	struct seen *s = ctx;
	const struct evr_schema_event *sc = ev->schema;

	pthread_mutex_lock(&s->lock);
	while (s->hold) {
		s->holding = true;
		pthread_cond_broadcast(&s->cond);
		pthread_cond_wait(&s->cond, &s->lock);
	}
	s->events++;
	if (!strcmp(sc->provider, "ListenSeq") && !strcmp(sc->name, "Tick")) {
		uint64_t seq = f[1].u;
		uint32_t t = (uint32_t)f[0].u;

		/* Names and types come with the event, as an attached consumer sees them. */
		if (sc->nfields != 5 || strcmp(sc->fields[1].name, "seq") ||
		    sc->fields[3].type != EVR_FT_F64 || t >= THREADS || seq >= PER_THREAD ||
		    f[2].i != -(int64_t)(seq % 1000) || f[3].f != (double)seq / 2 ||
		    f[4].u != (seq & 1) || sc->level != EVR_LEVEL_INFO || sc->keywords != 0x1)
			s->bad++;
		else if (s->got[t])
			s->got[t][seq]++;
	} else if (!strcmp(sc->name, "Text")) {
		if (!str_is(&f[1], "hello, listener") || f[2].b.len != 3 ||
		    memcmp(f[2].b.data, "\x00\x01\x02", 3) || !str_is(&f[3], "{\"k\":[1,2]}"))
			s->bad++;
		s->texts++;
	} else if (!strcmp(sc->name, "Echo")) {
		s->echoes++;
	}
	if (s->flush_from_cb == 1)
		s->flush_from_cb = evr_listener_flush(s->self, 0) == -EDEADLK ? 2 : 3;
	pthread_mutex_unlock(&s->lock);
	/* Written from the dispatch thread: must not come back to this listener. */
	if (s->echo_back && !strcmp(sc->name, "Tick"))
		sq_echo(f[1].u);
}

static void on_lost(uint64_t count, void *ctx)
{
	struct seen *s = ctx;

	pthread_mutex_lock(&s->lock);
	s->lost += count;
	pthread_mutex_unlock(&s->lock);
}

static void *writer(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;

	for (uint64_t i = 0; i < PER_THREAD; i++)
		sq_tick(t, i, (int16_t)-(int64_t)(i % 1000), (double)i / 2, i & 1);
	return NULL;
}

static void run_writers(int n)
{
	pthread_t th[THREADS];

	for (uintptr_t i = 0; i < (uintptr_t)n; i++)
		assert_int_equal(pthread_create(&th[i], NULL, writer, (void *)i), 0);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

/* Copies of what the callbacks saw, taken under the lock (no assert holds it). */
static void snapshot(struct seen *s, uint64_t *ret_bad, uint64_t *ret_lost, uint64_t *ret_texts,
		     uint64_t *ret_once, uint64_t *ret_more)
{
	pthread_mutex_lock(&s->lock);
	*ret_bad = s->bad;
	*ret_lost = s->lost;
	*ret_texts = s->texts;
	*ret_once = *ret_more = 0;
	for (int t = 0; t < THREADS; t++)
		for (uint32_t i = 0; i < PER_THREAD; i++) {
			*ret_once += s->got[t][i] == 1;
			*ret_more += s->got[t][i] > 1;
		}
	memset(s->got[0], 0, PER_THREAD);
	pthread_mutex_unlock(&s->lock);
}

static void test_listener_every_event_once(void **state)
{
	struct evr_listener_opts o = { .providers = "ListenSeq", .ring_size = 4u << 20,
				       .on_event = on_event, .on_lost = on_lost };
	struct evr_listener_stats st;
	uint64_t bad, lost, texts, once, more;
	struct evr_listener *l;
	struct seen s;
	char err[256];

	seen_init(&s);
	for (int i = 0; i < THREADS; i++)
		s.got[i] = calloc(PER_THREAD, 1);
	o.ctx = &s;
	assert_int_equal(evr_listener_new(&o, &l, err, sizeof(err)), 0);
	/* One writer: no ring is ever busy, rings hold it all: every event, once. */
	run_writers(1);
	sq_text(7, "hello, listener", "\x00\x01\x02", 3, "{\"k\":[1,2]}");
	assert_int_equal(evr_listener_flush(l, 60000), 0);
	/* Everything written before the flush has been dispatched by now. */
	snapshot(&s, &bad, &lost, &texts, &once, &more);
	assert_int_equal(bad, 0);
	assert_int_equal(lost, 0);
	assert_int_equal(texts, 1);
	assert_int_equal(once, PER_THREAD);
	assert_int_equal(more, 0);
	evr_listener_get_stats(l, &st);
	assert_int_equal(st.events, PER_THREAD + 1);
	assert_int_equal(st.undecoded + st.lost + st.own + st.counters, 0);

	/* Several writers at once, more than CPUs maybe: an event finding every
	 * ring busy is dropped and counted, never duplicated. */
	run_writers(THREADS);
	assert_int_equal(evr_listener_flush(l, 60000), 0);
	snapshot(&s, &bad, &lost, &texts, &once, &more);
	assert_int_equal(bad, 0);
	assert_int_equal(more, 0);
	assert_int_equal(once + lost, THREADS * PER_THREAD);
	evr_listener_get_stats(l, &st);
	assert_int_equal(st.events + st.lost, (THREADS + 1) * PER_THREAD + 1);
	evr_listener_free(l);
	seen_fini(&s);
}

/* A callback that blocks: the writers never wait; the session drops and counts. */
static void test_listener_held_up_counts_losses(void **state)
{
	struct evr_listener_opts o = { .providers = "ListenSeq:0x1", .ring_size = 64u << 10,
				       .on_event = on_event, .on_lost = on_lost };
	struct evr_listener_stats st;
	struct evr_listener *l;
	struct seen s;
	char err[256];

	seen_init(&s);
	o.ctx = &s;
	s.hold = true;
	assert_int_equal(evr_listener_new(&o, &l, err, sizeof(err)), 0);
	sq_tick(0, 0, 0, 0, 0);
	pthread_mutex_lock(&s.lock);
	while (!s.holding)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	/* The dispatch thread is stuck in the callback; 60000 events into 64 KiB rings. */
	run_writers(THREADS);
	pthread_mutex_lock(&s.lock);
	s.hold = false;
	pthread_cond_broadcast(&s.cond);
	pthread_mutex_unlock(&s.lock);
	/* Stops: what the callback has not had yet is dropped; final losses are counted. */
	assert_int_equal(evr_listener_stop(l, &st), 0);
	assert_int_equal(s.bad, 0);
	assert_true(st.lost > 0);
	assert_true(s.lost <= st.lost);		/* on_lost is not called once stopping */
	assert_int_equal(s.events, st.events);
	assert_int_equal(st.events + st.lost + st.dropped, 1 + THREADS * PER_THREAD);
	evr_listener_free(l);
	seen_fini(&s);
}

/*
 * A slow callback: the first call blocks on a pipe the test controls, with
 * every event of a writer queued behind it. free() (and stop()) must not
 * dispatch that queue: once the in-flight callback returns, the rest is
 * dropped and counted. The pipe is written only after the session has left the
 * provider's mask, which stop does after it stopped delivering.
 */
struct slow {
	int gate[2];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t calls;
	bool in_callback;
};

static void on_slow(const struct evr_event_view *ev, const struct evr_field_value *f, void *ctx)
{
	struct slow *sl = ctx;
	bool first;
	char c;

	(void)ev;
	(void)f;
	pthread_mutex_lock(&sl->lock);
	first = sl->calls++ == 0;
	sl->in_callback = true;
	pthread_cond_broadcast(&sl->cond);
	pthread_mutex_unlock(&sl->lock);
	if (first)
		while (read(sl->gate[0], &c, 1) < 0 && errno == EINTR)
			;
}

static void *open_gate_once_stopped(void *arg)
{
	struct slow *sl = arg;

	/* The session leaves the mask in evr_session_stop(), after the listener stopped
	 * delivering: a state polled, as nothing signals it. */
	while (atomic_load(&sq.mask) != 0) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	assert_int_equal(write(sl->gate[1], "x", 1), 1);
	return NULL;
}

static void slow_start(struct slow *sl, struct evr_listener **ret)
{
	struct evr_listener_opts o = { .providers = "ListenSeq:0x1", .ring_size = 4u << 20,
				       .on_event = on_slow, .ctx = sl };
	char err[256];

	memset(sl, 0, sizeof(*sl));
	assert_int_equal(pipe(sl->gate), 0);
	pthread_mutex_init(&sl->lock, NULL);
	pthread_cond_init(&sl->cond, NULL);
	assert_int_equal(evr_listener_new(&o, ret, err, sizeof(err)), 0);
	sq_tick(0, 0, 0, 0, 0);
	pthread_mutex_lock(&sl->lock);
	while (!sl->in_callback)
		pthread_cond_wait(&sl->cond, &sl->lock);
	pthread_mutex_unlock(&sl->lock);
	/* The dispatch thread is in the callback: PER_THREAD events queue behind it. */
	run_writers(1);
}

static void slow_fini(struct slow *sl)
{
	close(sl->gate[0]);
	close(sl->gate[1]);
	pthread_cond_destroy(&sl->cond);
	pthread_mutex_destroy(&sl->lock);
}

static void test_listener_free_bounded_by_callback(void **state)
{
	struct evr_listener *l;
	struct slow sl;
	pthread_t gate;

	(void)state;
	slow_start(&sl, &l);
	assert_int_equal(pthread_create(&gate, NULL, open_gate_once_stopped, &sl), 0);
	evr_listener_free(l);
	pthread_join(gate, NULL);
	/* Only the callback in progress ran: nothing queued was dispatched. */
	assert_int_equal(sl.calls, 1);
	slow_fini(&sl);
}

static void test_listener_stop_counts_dropped(void **state)
{
	struct evr_listener_stats st, again;
	struct evr_listener *l;
	struct slow sl;
	pthread_t gate;

	(void)state;
	slow_start(&sl, &l);
	assert_int_equal(pthread_create(&gate, NULL, open_gate_once_stopped, &sl), 0);
	assert_int_equal(evr_listener_stop(l, &st), 0);
	pthread_join(gate, NULL);
	assert_int_equal(sl.calls, 1);
	assert_int_equal(st.events, 1);
	/* Delivered + dropped (+ lost, none with 4 MiB rings) == emitted. */
	assert_int_equal(st.lost, 0);
	assert_int_equal(st.dropped, PER_THREAD);
	assert_int_equal(st.events + st.dropped + st.lost, 1 + PER_THREAD);
	/* Stopped: again the same counts; a flush has nothing to wait for. */
	assert_int_equal(evr_listener_stop(l, &again), 0);
	assert_memory_equal(&st, &again, sizeof(st));
	assert_int_equal(evr_listener_flush(l, -1), 0);
	evr_listener_free(l);
	slow_fini(&sl);
}

static void test_listener_own_events_skipped(void **state)
{
	struct evr_listener_opts o = { .providers = "ListenSeq", .on_event = on_event };
	struct evr_listener_stats st;
	uint64_t echoes;
	int from_cb;
	struct evr_listener *l;
	struct seen s;
	char err[256];

	seen_init(&s);
	o.ctx = &s;
	s.echo_back = true;
	s.flush_from_cb = 1;
	assert_int_equal(evr_listener_new(&o, &l, err, sizeof(err)), 0);
	s.self = l;
	for (uint64_t i = 0; i < 100; i++)
		sq_tick(0, i, (int16_t)-(int64_t)(i % 1000), (double)i / 2, i & 1);
	assert_int_equal(evr_listener_flush(l, 60000), 0);
	evr_listener_get_stats(l, &st);
	pthread_mutex_lock(&s.lock);
	echoes = s.echoes;
	from_cb = s.flush_from_cb;
	pthread_mutex_unlock(&s.lock);
	assert_int_equal(echoes, 0);
	assert_int_equal(from_cb, 2);	/* -EDEADLK */
	assert_int_equal(st.events, 100);
	/* Each Echo a callback wrote was read (a flush later) and skipped. */
	sq_tick(0, 100, -100, 50, 0);
	assert_int_equal(evr_listener_flush(l, 60000), 0);
	evr_listener_get_stats(l, &st);
	assert_true(st.own >= 100);
	evr_listener_free(l);
	seen_fini(&s);
}

/* ---- counters --------------------------------------------------------------------------- */

#define CNT_EVENTS(EVENT) EVENT(cn_unused, "Unused", 1, EVR_LEVEL_INFO, 0x1, (u8, x))

EVR_PROVIDER_DECLARE(cn, CNT_EVENTS)
EVR_PROVIDER_DEFINE(cn, "ListenCounters", CNT_EVENTS)

static double gauge_42(void *ctx)
{
	return 42;
}

static void on_counter(const struct evr_counter_sample *c, void *ctx)
{
	struct seen *s = ctx;

	if (strcmp(c->provider, "ListenCounters"))
		return;
	pthread_mutex_lock(&s->lock);
	s->samples++;
	s->interval_ms = c->interval_ms;
	if (c->name_len == 3 && !memcmp(c->name, "ops", 3)) {
		s->inc_total += c->increment;
	} else if (c->name_len == 7 && !memcmp(c->name, "latency", 7)) {
		if (c->count) {
			s->mean_count += c->count;
			s->mean_sum += c->mean * (double)c->count;
			if (c->min < s->min)
				s->min = c->min;
			if (c->max > s->max)
				s->max = c->max;
		}
	} else if (c->name_len == 5 && !memcmp(c->name, "depth", 5)) {
		s->gauge = c->value;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void test_listener_counters_totals(void **state)
{
	struct evr_counter_desc ops = { .name = "ops", .kind = EVR_COUNTER_INCREMENT };
	struct evr_counter_desc lat = { .name = "latency", .unit = "us", .kind = EVR_COUNTER_MEAN };
	struct evr_counter_desc dep = { .name = "depth", .kind = EVR_COUNTER_GAUGE, .poll = gauge_42 };
	struct evr_listener_opts o = { .providers = "ListenCounters", .counter_interval_ms = 20,
				       .on_counter = on_counter };
	struct evr_counter *c_ops, *c_lat, *c_dep;
	struct evr_listener *l;
	struct seen s;
	char err[256];

	seen_init(&s);
	o.ctx = &s;
	assert_int_equal(evr_counter_create(&cn, &ops, &c_ops), 0);
	assert_int_equal(evr_counter_create(&cn, &lat, &c_lat), 0);
	assert_int_equal(evr_counter_create(&cn, &dep, &c_dep), 0);
	assert_int_equal(evr_listener_new(&o, &l, err, sizeof(err)), 0);
	for (int i = 1; i <= 5000; i++) {
		evr_counter_add(c_ops, (double)(i % 7 + 1));
		evr_counter_record(c_lat, (double)(i % 100 + 1));
	}
	double want_inc = 0, want_sum = 0;

	for (int i = 1; i <= 5000; i++) {
		want_inc += i % 7 + 1;
		want_sum += i % 100 + 1;
	}
	/* Wait for the totals themselves: each value lands whole in one interval, but
	 * the counters' samples of one interval are separate events, and free() drops
	 * what is still queued, so wait for every total, not only the mean's. */
	pthread_mutex_lock(&s.lock);
	while (s.mean_count < 5000 || s.gauge != 42 || s.inc_total < want_inc) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 60;
		if (pthread_cond_timedwait(&s.cond, &s.lock, &ts) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&s.lock);
	evr_listener_free(l);
	assert_int_equal(s.interval_ms, 20);
	assert_int_equal(s.mean_count, 5000);
	assert_true(s.inc_total == want_inc);
	assert_true(s.mean_sum > want_sum - 1e-6 && s.mean_sum < want_sum + 1e-6);
	assert_true(s.min == 1 && s.max == 100);
	evr_counter_free(c_ops);
	evr_counter_free(c_lat);
	evr_counter_free(c_dep);
	seen_fini(&s);
}

static void test_listener_bad_options(void **state)
{
	struct evr_listener_opts o = { 0 };
	struct evr_listener *l = NULL;
	char err[256];

	assert_int_equal(evr_listener_new(NULL, &l, err, sizeof(err)), -EINVAL);
	assert_int_equal(evr_listener_new(&o, &l, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no providers"));
	o.providers = "Bad:zz";
	assert_int_equal(evr_listener_new(&o, &l, err, sizeof(err)), -EINVAL);
	o.providers = "ListenSeq";
	o.counter_interval_ms = 5;
	assert_int_equal(evr_listener_new(&o, &l, err, sizeof(err)), -EINVAL);
	assert_null(l);
	evr_listener_free(NULL);
	assert_int_equal(evr_listener_flush(NULL, 0), -EINVAL);
	assert_int_equal(evr_listener_stop(NULL, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listener_every_event_once),
		cmocka_unit_test(test_listener_held_up_counts_losses),
		cmocka_unit_test(test_listener_free_bounded_by_callback),
		cmocka_unit_test(test_listener_stop_counts_dropped),
		cmocka_unit_test(test_listener_own_events_skipped),
		cmocka_unit_test(test_listener_counters_totals),
		cmocka_unit_test(test_listener_bad_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
