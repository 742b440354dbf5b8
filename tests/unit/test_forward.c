// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of evring forward's plumbing (consumer/forward/): sink specs, the
 * per-sink filter, and the outbox (its order, its bounds, both drop policies,
 * and that every message pushed is delivered or counted exactly once, with a
 * real worker thread: the TSan build checks its locking).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <evring/abi.h>

#include "forward.h"

/* ---- specs and filters -------------------------------------------------------------------- */

static void test_spec_parse_forms(void **state)
{
	struct evr_fwd_spec s;
	char err[256];

	assert_int_equal(evr_fwd_spec_parse("graphite:127.0.0.1:2003,prefix=a.b,level=3", &s, err,
					    sizeof(err)), 0);
	assert_string_equal(s.kind, "graphite");
	assert_string_equal(s.arg, "127.0.0.1:2003");
	assert_int_equal(s.nkv, 2);
	assert_string_equal(evr_fwd_spec_get(&s, "prefix"), "a.b");
	assert_null(evr_fwd_spec_get(&s, "nope"));
	evr_fwd_spec_fini(&s);

	assert_int_equal(evr_fwd_spec_parse("lttng", &s, err, sizeof(err)), 0);
	assert_string_equal(s.kind, "lttng");
	assert_null(s.arg);
	assert_int_equal(s.nkv, 0);
	evr_fwd_spec_fini(&s);

	assert_int_equal(evr_fwd_spec_parse("jsonl:-,event=A,event=B", &s, err, sizeof(err)), 0);
	assert_string_equal(evr_fwd_spec_get(&s, "event"), "B");	/* the last one */
	evr_fwd_spec_fini(&s);

	assert_int_equal(evr_fwd_spec_parse("jsonl:x,novalue", &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'novalue' is not KEY=VALUE"));
	assert_int_equal(evr_fwd_spec_parse(":x", &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(evr_fwd_spec_parse("", &s, err, sizeof(err)), -EINVAL);
}

static const struct evr_schema_event ev_info = { .provider = "MiniRT", .name = "GCStart",
						 .level = 4, .keywords = 0x1 };
static const struct evr_schema_event ev_verbose = { .provider = "MiniRT", .name = "Alloc",
						    .level = 5, .keywords = 0x2 };
static const struct evr_schema_event ev_always = { .provider = "Other", .name = "Beat",
						   .level = 0, .keywords = 0 };

static bool pass(const char *spec, const struct evr_schema_event *ev, bool counter)
{
	static const char *const own[] = { "prefix", NULL };
	struct evr_event_view v = { .type = EVR_REC_EVENT, .schema = ev };
	struct evr_fwd_event e = { .v = &v };
	struct evr_fwd_filter f;
	struct evr_fwd_spec s;
	char err[256];
	bool limited, ok;

	assert_int_equal(evr_fwd_spec_parse(spec, &s, err, sizeof(err)), 0);
	assert_int_equal(evr_fwd_filter_init(&f, &s, EVR_FWD_EVENTS, -1, own, err, sizeof(err)), 0);
	ok = evr_fwd_filter_pass(&f, &e, counter, &limited);
	evr_fwd_filter_fini(&f);
	evr_fwd_spec_fini(&s);
	return ok;
}

static void test_filter_pass_keys(void **state)
{
	assert_true(pass("x", &ev_info, false));
	assert_false(pass("x", &ev_info, true));		/* counters: not by default here */
	assert_true(pass("x,what=all", &ev_info, true));
	assert_true(pass("x,level=info", &ev_info, false));
	assert_false(pass("x,level=warning", &ev_info, false));
	assert_true(pass("x,level=1", &ev_always, false));	/* LogAlways always */
	assert_false(pass("x,level=4", &ev_verbose, false));
	assert_true(pass("x,keywords=0x3", &ev_verbose, false));
	assert_false(pass("x,keywords=0x4", &ev_verbose, false));
	assert_true(pass("x,keywords=0x4", &ev_always, false));	/* no keywords: any */
	assert_true(pass("x,provider=Mini*", &ev_info, false));
	assert_false(pass("x,provider=Mini*", &ev_always, false));
	assert_true(pass("x,provider=Nope,provider=Other", &ev_always, false));
	assert_true(pass("x,event=GC*", &ev_info, false));
	assert_true(pass("x,event=MiniRT/GCStart", &ev_info, false));
	assert_false(pass("x,event=Other/GCStart", &ev_info, false));
	assert_true(pass("x,prefix=ignored", &ev_info, false));	/* the sink's own key */
}

static void test_filter_init_errors(void **state)
{
	static const char *const bad[] = { "x,level=loud", "x,keywords=zz", "x,what=some",
					   "x,max-rate=0", "x,max-rate=-1", "x,provider=",
					   "x,unknown=1" };
	struct evr_fwd_filter f;
	struct evr_fwd_spec s;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(evr_fwd_spec_parse(bad[i], &s, err, sizeof(err)), 0);
		assert_int_equal(evr_fwd_filter_init(&f, &s, EVR_FWD_ALL, -1, NULL, err,
						     sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, bad[i]));		/* names the spec */
		evr_fwd_spec_fini(&s);
	}
}

static void test_filter_max_rate_bucket(void **state)
{
	struct evr_event_view v = { .type = EVR_REC_EVENT, .schema = &ev_info };
	struct evr_fwd_event e = { .v = &v };
	struct evr_fwd_filter f;
	struct evr_fwd_spec s;
	char err[256];
	uint32_t passed = 0, limited_n = 0;
	bool limited;

	assert_int_equal(evr_fwd_spec_parse("x,max-rate=5", &s, err, sizeof(err)), 0);
	assert_int_equal(evr_fwd_filter_init(&f, &s, EVR_FWD_ALL, -1, NULL, err, sizeof(err)), 0);
	/* A burst: the bucket holds one second's worth, at most; refills are tiny here. */
	for (int i = 0; i < 100; i++) {
		if (evr_fwd_filter_pass(&f, &e, false, &limited))
			passed++;
		else if (limited)
			limited_n++;
	}
	assert_true(passed >= 5 && passed <= 6);
	assert_int_equal(passed + limited_n, 100);
	evr_fwd_filter_fini(&f);
	evr_fwd_spec_fini(&s);
}

/* ---- outbox ----------------------------------------------------------------------------------- */

struct sink_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool blocked;			/* deliver waits while set (a stalled receiver) */
	uint32_t take;			/* deliver takes at most this many per call (0: all) */
	uint64_t next;			/* the next message number expected */
	uint64_t got;
	bool order_ok;
	struct evr_fwd_outbox *o;
};

static int deliver(void *ctx, const char *const *msg, const uint32_t *len,
		   const uint32_t *weight, uint32_t n)
{
	struct sink_state *st = ctx;
	uint32_t k = st->take && st->take < n ? st->take : n;

	(void)weight;
	pthread_mutex_lock(&st->lock);
	while (st->blocked) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 20000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_mutex_unlock(&st->lock);
		if (evr_fwd_outbox_cancelled(st->o))
			return -ECANCELED;
		pthread_mutex_lock(&st->lock);
		pthread_cond_timedwait(&st->cond, &st->lock, &ts);
	}
	for (uint32_t i = 0; i < k; i++) {
		uint64_t v;

		/* Back to back: message i starts where i - 1 ended. */
		if (len[i] != sizeof(v) || (i && msg[i] != msg[i - 1] + len[i - 1]))
			st->order_ok = false;
		memcpy(&v, msg[i], sizeof(v));
		if (v < st->next)
			st->order_ok = false;
		st->next = v + 1;
		st->got++;
	}
	pthread_mutex_unlock(&st->lock);
	return (int)k;
}

static void state_init(struct sink_state *st)
{
	pthread_condattr_t ca;

	memset(st, 0, sizeof(*st));
	pthread_mutex_init(&st->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->cond, &ca);
	pthread_condattr_destroy(&ca);
	st->order_ok = true;
}

static void set_blocked(struct sink_state *st, bool b)
{
	pthread_mutex_lock(&st->lock);
	st->blocked = b;
	pthread_mutex_unlock(&st->lock);
	pthread_cond_broadcast(&st->cond);
}

static void test_outbox_delivers_all_in_order(void **state)
{
	struct evr_fwd_outbox_stats os;
	struct sink_state st;
	uint64_t pushed = 0;

	state_init(&st);
	st.take = 7;		/* partial deliveries: the rest must come first next time */
	assert_int_equal(evr_fwd_outbox_new(1 << 20, EVR_FWD_DROP_NEWEST, deliver, &st, &st.o), 0);
	for (uint64_t i = 0; i < 200000; i++)
		if (evr_fwd_outbox_push(st.o, &i, sizeof(i), 1) == 0)
			pushed++;
	evr_fwd_outbox_close(st.o, evr_mono_ns() + 60000000000ull);
	evr_fwd_outbox_stats(st.o, &os);
	assert_true(st.order_ok);
	assert_int_equal(os.delivered, st.got);
	assert_int_equal(os.delivered, pushed);
	assert_int_equal(os.delivered + os.dropped_full, 200000);
	assert_int_equal(os.dropped_close + os.dropped_failed + os.queued, 0);
	evr_fwd_outbox_free(st.o);
}

/* A stalled receiver: pushes never wait; the newest are dropped, counted; at close the
 * deadline bounds the wait and what is left is counted too. */
static void test_outbox_drop_newest_stalled(void **state)
{
	struct evr_fwd_outbox_stats os;
	struct sink_state st;

	state_init(&st);
	st.blocked = true;
	assert_int_equal(evr_fwd_outbox_new(4096, EVR_FWD_DROP_NEWEST, deliver, &st, &st.o), 0);
	for (uint64_t i = 0; i < 10000; i++)
		evr_fwd_outbox_push(st.o, &i, sizeof(i), 1);
	evr_fwd_outbox_close(st.o, evr_mono_ns() + 50000000u);
	evr_fwd_outbox_stats(st.o, &os);
	assert_int_equal(os.delivered, 0);
	assert_true(os.dropped_full > 9000);
	assert_int_equal(os.delivered + os.dropped_full + os.dropped_close, 10000);
	assert_int_equal(os.queued, 0);
	evr_fwd_outbox_free(st.o);
}

/* Metrics: the oldest go; once the receiver comes back, the newest arrive. */
static void test_outbox_drop_oldest_keeps_newest(void **state)
{
	struct evr_fwd_outbox_stats os;
	struct sink_state st;

	state_init(&st);
	st.blocked = true;
	assert_int_equal(evr_fwd_outbox_new(4096, EVR_FWD_DROP_OLDEST, deliver, &st, &st.o), 0);
	for (uint64_t i = 0; i < 10000; i++)
		assert_int_equal(evr_fwd_outbox_push(st.o, &i, sizeof(i), 1), 0);
	set_blocked(&st, false);
	evr_fwd_outbox_close(st.o, evr_mono_ns() + 60000000000ull);
	evr_fwd_outbox_stats(st.o, &os);
	assert_true(st.order_ok);
	assert_int_equal(st.next, 10000);		/* the last one arrived */
	assert_int_equal(os.delivered + os.dropped_full, 10000);
	assert_true(os.dropped_full > 9000);
	evr_fwd_outbox_free(st.o);
}

static void test_outbox_sizes(void **state)
{
	struct sink_state st;
	char big[4096] = { 0 };
	struct evr_fwd_outbox *o;

	state_init(&st);
	assert_int_equal(evr_fwd_outbox_new(100, EVR_FWD_DROP_NEWEST, deliver, &st, &o), -EINVAL);
	assert_int_equal(evr_fwd_outbox_new(8192, EVR_FWD_DROP_NEWEST, deliver, &st, &o), 0);
	/* More than half the queue: refused outright, not counted by the outbox. */
	assert_int_equal(evr_fwd_outbox_push(o, big, sizeof(big), 1), -EMSGSIZE);
	evr_fwd_outbox_free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_parse_forms),
		cmocka_unit_test(test_filter_pass_keys),
		cmocka_unit_test(test_filter_init_errors),
		cmocka_unit_test(test_filter_max_rate_bucket),
		cmocka_unit_test(test_outbox_delivers_all_in_order),
		cmocka_unit_test(test_outbox_drop_newest_stalled),
		cmocka_unit_test(test_outbox_drop_oldest_keeps_newest),
		cmocka_unit_test(test_outbox_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
