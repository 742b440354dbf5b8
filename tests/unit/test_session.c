// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for in-process sessions through the public API only
 * (<evring/evring.h>, libevring): typed events and their payload encoding,
 * enablement, keyword/level filtering, session limits and errors, oversized
 * payloads, dynamic/JSON/run-time events, provider callbacks, and sessions
 * started and stopped while writer threads run.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include <evring/evring.h>

#define SMALL_RING (64u * 1024u)
#define MAX_SESSIONS 64 /* per process, as evr_session_start() documents */

/* ---- providers --------------------------------------------------------------------- */

#define TYPES_EVENTS(EVENT)                                                                   \
	EVENT(ty_ints, "Ints", 1, EVR_LEVEL_INFO, 0x1, (u8, a), (u16, b), (u32, c), (u64, d), \
	      (i8, e), (i16, f), (i32, g), (i64, h))                                          \
	EVENT(ty_mixed, "Mixed", 2, EVR_LEVEL_INFO, 0x1, (f32, x), (f64, y), (bool, flag),    \
	      (ptr, p), (str, s), (bytes, blob), (json, doc))                                 \
	EVENT(ty_empty, "Empty", 3, EVR_LEVEL_INFO, 0x0, )                                    \
	EVENT(ty_blob, "Blob", 4, EVR_LEVEL_INFO, 0x1, (bytes, data))

EVR_PROVIDER_DECLARE(ty, TYPES_EVENTS)
EVR_PROVIDER_DEFINE(ty, "Types", TYPES_EVENTS)

/*
 * What "Filt:0x1:4" and "Filt:0x2:5" each want is spelled out in the test. B and E
 * open and close an activity: their opcodes must not change how levels filter.
 */
#define FILT_EVENTS(EVENT)                                                 \
	EVENT(fi_a, "A", 1, EVR_LEVEL_INFO, 0x1, (u32, n))                 \
	EVENT(fi_b, "B", 2, EVR_START(EVR_LEVEL_VERBOSE), 0x2, (u32, n))   \
	EVENT(fi_c, "C", 3, EVR_LEVEL_VERBOSE, 0x1, (u32, n))   \
	EVENT(fi_d, "D", 4, EVR_LEVEL_INFO, 0x0, (u32, n))      \
	EVENT(fi_e, "E", 5, EVR_STOP(EVR_LEVEL_ERROR), 0x3, (u32, n))     \
	EVENT(fi_f, "F", 6, EVR_LEVEL_LOGALWAYS, 0x2, (u32, n)) \
	EVENT(fi_g, "G", 7, EVR_LEVEL_CRITICAL, 0x4, (u32, n))

EVR_PROVIDER_DECLARE(fi, FILT_EVENTS)
EVR_PROVIDER_DEFINE(fi, "Filt", FILT_EVENTS)

/* Fixed sizes for every number of payload words, with fields that straddle words. */
#define WORDS_EVENTS(EVENT)                                                                    \
	EVENT(wd_1, "W1", 1, EVR_LEVEL_INFO, 0x1, (u8, a))                                     \
	EVENT(wd_2, "W2", 2, EVR_LEVEL_INFO, 0x1, (u8, a), (u64, b), (u32, c), (u16, d))       \
	EVENT(wd_3, "W3", 3, EVR_LEVEL_INFO, 0x1, (u64, a), (u64, b), (bool, c))               \
	EVENT(wd_4, "W4", 4, EVR_LEVEL_INFO, 0x1, (u32, a), (u64, b), (u64, c), (u64, d),     \
	      (i32, e))                                                                        \
	EVENT(wd_5, "W5", 5, EVR_LEVEL_INFO, 0x1, (u64, a), (u64, b), (u64, c), (u64, d),     \
	      (i8, e))

EVR_PROVIDER_DECLARE(wd, WORDS_EVENTS)
EVR_PROVIDER_DEFINE(wd, "Words", WORDS_EVENTS)

/*
 * Variable sizes: a string or bytes last (copied straight from the caller's
 * memory, after 0, 1, 8 and 20 bytes of fixed fields), one last after 24 bytes
 * (packed first), and both between fixed fields.
 */
#define VAR_EVENTS(EVENT)                                                             \
	EVENT(var_bytes, "Bytes", 1, EVR_LEVEL_INFO, 0x1, (u64, seq), (bytes, b))     \
	EVENT(var_str, "Str", 2, EVR_LEVEL_INFO, 0x1, (u64, seq), (str, s))           \
	EVENT(var_mid, "Mid", 3, EVR_LEVEL_INFO, 0x1, (u8, x), (str, s), (u16, y),    \
	      (bytes, b))                                                             \
	EVENT(var_only, "Only", 4, EVR_LEVEL_INFO, 0x1, (str, s))                     \
	EVENT(var_u8b, "U8b", 5, EVR_LEVEL_INFO, 0x1, (u8, x), (bytes, b))            \
	EVENT(var_p20, "P20", 6, EVR_LEVEL_INFO, 0x1, (u64, seq), (u64, x),           \
	      (u32, y), (json, s))                                                    \
	EVENT(var_p24, "P24", 7, EVR_LEVEL_INFO, 0x1, (u64, seq), (u64, x),           \
	      (u64, y), (bytes, b))

EVR_PROVIDER_DECLARE(varp, VAR_EVENTS)
EVR_PROVIDER_DEFINE(varp, "Var", VAR_EVENTS)

#define LATE_EVENTS(EVENT) EVENT(late_ev, "LateEvent", 1, EVR_LEVEL_INFO, 0x1, (u64, v))

EVR_PROVIDER_DECLARE(latep, LATE_EVENTS)
EVR_PROVIDER_DEFINE(latep, "Late", LATE_EVENTS)

#define RACE_EVENTS(EVENT) \
	EVENT(race_ev, "Tick", 1, EVR_LEVEL_INFO, 0x1, (u32, thread), (u64, seq), (u32, check))

EVR_PROVIDER_DECLARE(racep, RACE_EVENTS)
EVR_PROVIDER_DEFINE(racep, "Race", RACE_EVENTS)

/* ---- reading a session back ---------------------------------------------------------------- */

struct got_rec {
	uint32_t type, event_id, tid, ring, len;
	uint64_t lost;
	uint8_t *payload;
};

struct got {
	struct got_rec *v;
	size_t n, cap;
	uint64_t events, lost;
};

static void got_push(struct got *g, const struct evr_record *rec)
{
	struct got_rec *x;

	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 64;
		g->v = realloc(g->v, g->cap * sizeof(*g->v));
		assert_non_null(g->v);
	}
	x = &g->v[g->n++];
	*x = (struct got_rec){.type = rec->type,
			      .event_id = rec->event_id,
			      .tid = rec->tid,
			      .ring = rec->ring,
			      .len = rec->len,
			      .lost = rec->lost};
	if (rec->type == EVR_REC_EVENT) {
		g->events++;
		x->payload = malloc(rec->len ? rec->len : 1);
		assert_non_null(x->payload);
		memcpy(x->payload, rec->payload, rec->len);
	} else {
		g->lost += rec->lost;
	}
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].payload);
	free(g->v);
	memset(g, 0, sizeof(*g));
}

/* Stop @s and read everything it recorded, final losses included. */
static void stop_and_collect(struct evr_session *s, struct evr_reader *r, struct got *g)
{
	struct evr_reader_stats st;
	struct evr_record rec;

	evr_session_stop(s);
	while (evr_reader_next(r, &rec) > 0)
		got_push(g, &rec);
	assert_true(evr_reader_ended(r));
	evr_reader_get_stats(r, &st);
	assert_true(st.events == g->events);
	assert_true(st.lost == g->lost);
	assert_true(st.corrupt == 0);
}

static struct evr_session *start(const char *providers, uint32_t mode, uint64_t ring_size)
{
	struct evr_session_opts o = {.providers = providers, .ring_size = ring_size, .mode = mode};
	struct evr_session *s = NULL;
	char err[256] = "";
	int ret;

	ret = evr_session_start(&o, &s, err, sizeof(err));
	if (ret < 0)
		print_error("session \"%s\": %d %s\n", providers, ret, err);
	assert_int_equal(ret, 0);
	assert_non_null(s);
	return s;
}

static struct evr_reader *reader_of(struct evr_session *s, uint32_t flags)
{
	struct evr_reader *r = NULL;

	assert_int_equal(evr_session_reader_new(s, flags, &r), 0);
	assert_non_null(r);
	return r;
}

/* Name of the event a record came from, as "Provider/Event". */
static const char *event_name(uint32_t rid, char *buf, size_t len)
{
	const struct evr_event *ev = evr_event_by_rid(rid);

	assert_non_null(ev);
	snprintf(buf, len, "%s/%s", ev->provider->name, ev->desc->name);
	return buf;
}

/* Payload decoding, per the encoding at the top of evring.h. */
struct cur {
	const uint8_t *p;
	uint32_t left;
};

static void take(struct cur *c, void *dst, uint32_t n)
{
	assert_true(c->left >= n);
	memcpy(dst, c->p, n);
	c->p += n;
	c->left -= n;
}

static uint64_t take_u(struct cur *c, uint32_t n)
{
	uint64_t v = 0;

	take(c, &v, n); /* little endian */
	return v;
}

/* A length-prefixed field: returns a pointer into the payload and its length. */
static const uint8_t *take_var(struct cur *c, uint32_t *ret_len)
{
	const uint8_t *p;

	*ret_len = (uint32_t)take_u(c, 4);
	assert_true(c->left >= *ret_len);
	p = c->p;
	c->p += *ret_len;
	c->left -= *ret_len;
	return p;
}

static void expect_var(struct cur *c, const void *want, uint32_t want_len)
{
	uint32_t len;
	const uint8_t *p = take_var(c, &len);

	assert_int_equal(len, want_len);
	assert_memory_equal(p, want, want_len);
}

/* ---- typed events ------------------------------------------------------------------------ */

static void test_event_typed_fields_encode_as_documented(void **state)
{
	static const uint8_t blob[5] = {0, 1, 2, 0xfe, 0xff};
	const char *doc = "{\"k\":[1,2]}";
	struct evr_session *s;
	struct evr_reader *r;
	struct got g = {0};
	char name[64];
	uint32_t n;
	int seen[4] = {0};

	(void)state;
	s = start("Types", EVR_MODE_DISCARD, SMALL_RING);
	r = reader_of(s, EVR_READER_GATING);
	assert_int_equal(ty_ints(0xab, 0xbeef, 0xdeadbeefu, 0x0123456789abcdefull, -2, -30000,
				 INT32_MIN, INT64_MIN + 1),
			 0);
	assert_int_equal(ty_mixed(1.5f, -0.125, true, (const void *)(uintptr_t)0x1234567890ull,
				  "héllo", blob, sizeof(blob), doc),
			 0);
	assert_int_equal(ty_mixed(0.0f, 1e300, false, NULL, "", NULL, 0, NULL), 0);
	assert_int_equal(ty_empty(), 0);
	stop_and_collect(s, r, &g);
	evr_reader_free(r);
	evr_session_free(s);

	assert_true(g.lost == 0);
	assert_int_equal(g.events, 4);
	for (size_t i = 0; i < g.n; i++) {
		const struct got_rec *x = &g.v[i];
		const struct evr_event *ev = evr_event_by_rid(x->event_id);
		struct cur c = {x->payload, x->len};

		assert_int_equal(x->type, EVR_REC_EVENT);
		assert_int_equal(x->tid, (uint32_t)gettid());
		assert_non_null(ev);
		assert_string_equal(ev->provider->name, "Types");
		if (ev == &ty_ints__event) {
			assert_string_equal(event_name(x->event_id, name, sizeof(name)),
					    "Types/Ints");
			assert_int_equal(ev->desc->nfields, 8);
			assert_int_equal(ev->desc->fields[6].type, EVR_TYPE_I32);
			assert_string_equal(ev->desc->fields[6].name, "g");
			assert_int_equal(x->len, 1 + 2 + 4 + 8 + 1 + 2 + 4 + 8);
			assert_int_equal(take_u(&c, 1), 0xab);
			assert_int_equal(take_u(&c, 2), 0xbeef);
			assert_int_equal(take_u(&c, 4), 0xdeadbeefu);
			assert_true(take_u(&c, 8) == 0x0123456789abcdefull);
			assert_int_equal((int8_t)take_u(&c, 1), -2);
			assert_int_equal((int16_t)take_u(&c, 2), -30000);
			assert_true((int32_t)take_u(&c, 4) == INT32_MIN);
			assert_true((int64_t)take_u(&c, 8) == INT64_MIN + 1);
			seen[0]++;
		} else if (ev == &ty_mixed__event && seen[1] == 0) {
			float f;
			double d;

			assert_string_equal(event_name(x->event_id, name, sizeof(name)),
					    "Types/Mixed");
			assert_int_equal(ev->desc->fields[2].type, EVR_TYPE_BOOL);
			take(&c, &f, 4);
			assert_true(f == 1.5f);
			take(&c, &d, 8);
			assert_true(d == -0.125);
			assert_int_equal(take_u(&c, 1), 1);
			assert_true(take_u(&c, 8) == 0x1234567890ull);
			expect_var(&c, "héllo", (uint32_t)strlen("héllo"));
			expect_var(&c, blob, sizeof(blob));
			expect_var(&c, doc, (uint32_t)strlen(doc));
			seen[1]++;
		} else if (ev == &ty_mixed__event) {
			float f;
			double d;

			/* Zero values, an empty string, and NULL str/bytes/json as length 0. */
			take(&c, &f, 4);
			assert_true(f == 0.0f);
			take(&c, &d, 8);
			assert_true(d == 1e300);
			assert_int_equal(take_u(&c, 1), 0);
			assert_true(take_u(&c, 8) == 0);
			assert_int_equal(take_u(&c, 4), 0);
			take_var(&c, &n);
			assert_int_equal(n, 0);
			take_var(&c, &n);
			assert_int_equal(n, 0);
			seen[2]++;
		} else {
			assert_ptr_equal(ev, &ty_empty__event);
			assert_string_equal(event_name(x->event_id, name, sizeof(name)),
					    "Types/Empty");
			assert_int_equal(ev->desc->nfields, 0);
			assert_int_equal(ev->desc->id, 3);
			assert_int_equal(x->len, 0);
			seen[3]++;
		}
		assert_int_equal(c.left, 0);
	}
	assert_int_equal(seen[0] + seen[1] + seen[2] + seen[3], 4);
	assert_true(seen[0] == 1 && seen[1] == 1 && seen[2] == 1 && seen[3] == 1);
	got_free(&g);
}

/*
 * Whether events get the shortcut to a per-CPU session's rings here: glibc
 * registered rseq, EVR_RSEQ=0 is not set, the build is x86-64 without
 * ThreadSanitizer (<evring/ring-rseq.h>), and the kernel has membarrier's
 * rseq fence, which the shortcut's grace period needs (Linux 5.10+).
 */
static bool expect_percpu(void)
{
#if defined(__x86_64__) && defined(RSEQ_SIG) && !defined(__SANITIZE_THREAD__)
	const char *env = getenv("EVR_RSEQ");
	long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	return __rseq_size > 0 && !(env && strcmp(env, "0") == 0) && cmds > 0 &&
	       (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ);
#else
	return false;
#endif
}

static void test_event_enabled_follows_sessions(void **state)
{
	struct evr_session *s, *s2;

	(void)state;
	assert_false(ty_ints_enabled());
	assert_false(ty_empty_enabled());
	assert_false(evr_provider_enabled(&ty, EVR_LEVEL_LOGALWAYS, 0));
	/* Disabled events cost nothing and write nothing. */
	assert_int_equal(ty_ints(1, 2, 3, 4, 5, 6, 7, 8), 0);

	s = start("Types:0x1:4", EVR_MODE_DISCARD, SMALL_RING);
	/* One session with a ring per CPU: the write path's shortcut to its rings. */
	assert_true((atomic_load(&ty_ints__event.percpu) != NULL) == expect_percpu());
	assert_true(ty_ints_enabled());
	assert_true(ty_empty_enabled());
	assert_true(evr_provider_enabled(&ty, EVR_LEVEL_INFO, 0x1));
	assert_true(evr_provider_enabled(&ty, EVR_LEVEL_INFO, 0x3));
	assert_true(evr_provider_enabled(&ty, EVR_LEVEL_INFO, 0));
	assert_true(evr_provider_enabled(&ty, EVR_LEVEL_LOGALWAYS, 0x1));
	assert_false(evr_provider_enabled(&ty, EVR_LEVEL_VERBOSE, 0x1));
	assert_false(evr_provider_enabled(&ty, EVR_LEVEL_INFO, 0x2));
	assert_false(evr_provider_enabled(&ty, EVR_LEVEL_LOGALWAYS, 0x2));
	/* Another provider is not affected. */
	assert_false(fi_d_enabled());
	assert_false(evr_provider_enabled(&fi, EVR_LEVEL_LOGALWAYS, 0));

	/* A second session widens the aggregate: max level, union of keywords. */
	s2 = start("Types:0x2:5", EVR_MODE_OVERWRITE, SMALL_RING);
	assert_true(evr_provider_enabled(&ty, EVR_LEVEL_VERBOSE, 0x2));
	assert_true(evr_provider_enabled(&ty, EVR_LEVEL_VERBOSE, 0x1));
	assert_false(evr_provider_enabled(&ty, EVR_LEVEL_VERBOSE, 0x4));
	/* Empty (keywords 0) is in both sessions: no shortcut, the general path
	 * writes both. Ints (keyword 0x1) is still in s alone. */
	assert_null(atomic_load(&ty_empty__event.percpu));
	assert_true((atomic_load(&ty_ints__event.percpu) != NULL) == expect_percpu());
	evr_session_free(s2);
	assert_true((atomic_load(&ty_empty__event.percpu) != NULL) == expect_percpu());
	assert_true((atomic_load(&ty_ints__event.percpu) != NULL) == expect_percpu());
	assert_false(evr_provider_enabled(&ty, EVR_LEVEL_VERBOSE, 0x1));
	assert_true(evr_provider_enabled(&ty, EVR_LEVEL_INFO, 0x1));

	evr_session_stop(s);
	assert_null(atomic_load(&ty_ints__event.percpu));
	assert_null(atomic_load(&ty_empty__event.percpu));
	assert_false(ty_ints_enabled());
	assert_false(ty_empty_enabled());
	assert_false(evr_provider_enabled(&ty, EVR_LEVEL_LOGALWAYS, 0));
	evr_session_stop(s); /* idempotent */
	evr_session_free(s);
	evr_session_free(NULL);
}

/* ---- keyword and level filtering -------------------------------------------------------------- */

/* Names of the events in @g, in the order read, as one string "A,D,E". */
static void names_of(const struct got *g, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < g->n; i++) {
		const struct evr_event *ev;

		assert_int_equal(g->v[i].type, EVR_REC_EVENT);
		ev = evr_event_by_rid(g->v[i].event_id);
		assert_non_null(ev);
		assert_ptr_equal(ev->provider, &fi);
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "",
					ev->desc->name);
		assert_true(off < len);
	}
}

static void test_session_start_filters_by_keywords_and_level(void **state)
{
	struct evr_session *s1, *s2;
	struct evr_reader *r1, *r2;
	struct got g1 = {0}, g2 = {0};
	char names[128];

	(void)state;
	s1 = start("Filt:0x1:4", EVR_MODE_DISCARD, SMALL_RING);
	s2 = start("Other,Filt:0x2:5", EVR_MODE_OVERWRITE, SMALL_RING);
	r1 = reader_of(s1, EVR_READER_GATING);
	r2 = reader_of(s2, 0);
	/* The inline checks agree with what is delivered below. */
	assert_true(fi_a_enabled() && fi_b_enabled() && fi_d_enabled() && fi_e_enabled() &&
		    fi_f_enabled());
	assert_false(fi_c_enabled());
	assert_false(fi_g_enabled());
	fi_a(1);
	fi_b(2);
	fi_c(3);
	fi_d(4);
	fi_e(5);
	fi_f(6);
	fi_g(7);
	stop_and_collect(s1, r1, &g1);
	stop_and_collect(s2, r2, &g2);

	/* A: kw 1 lvl 4 | B: kw 2 lvl 5 | C: kw 1 lvl 5 | D: no kw | E: kw 3 lvl 2 |
	 * F: kw 2 LogAlways | G: kw 4. */
	names_of(&g1, names, sizeof(names));
	assert_string_equal(names, "A,D,E");
	names_of(&g2, names, sizeof(names));
	assert_string_equal(names, "B,D,E,F");
	for (size_t i = 0; i < g1.n; i++) {
		uint32_t n;

		memcpy(&n, g1.v[i].payload, 4);
		assert_int_equal(n, evr_event_by_rid(g1.v[i].event_id)->desc->id);
	}
	assert_true(g1.lost == 0 && g2.lost == 0);
	evr_reader_free(r1);
	evr_reader_free(r2);
	evr_session_free(s1);
	evr_session_free(s2);
	got_free(&g1);
	got_free(&g2);
	assert_false(fi_d_enabled());
}

/* ---- limits and errors ------------------------------------------------------------------- */

static void test_session_start_65th_session_is_busy(void **state)
{
	struct evr_session_opts o = {.providers = "Types", .ring_size = SMALL_RING};
	struct evr_session *s[MAX_SESSIONS], *extra = NULL;
	char err[256] = "";

	(void)state;
	for (int i = 0; i < MAX_SESSIONS; i++)
		s[i] = start(i % 2 ? "Types" : "Nobody", (uint32_t)(i % 2), SMALL_RING);
	assert_int_equal(evr_session_start(&o, &extra, err, sizeof(err)), -EBUSY);
	assert_null(extra);
	assert_string_equal(err, "the process already has 64 sessions, the maximum");
	/* A freed slot can be used again. */
	evr_session_free(s[17]);
	s[17] = start("Types", EVR_MODE_DISCARD, SMALL_RING);
	assert_int_equal(evr_session_start(&o, &extra, NULL, 0), -EBUSY);
	for (int i = 0; i < MAX_SESSIONS; i++)
		evr_session_free(s[i]);
	assert_false(ty_ints_enabled());
	extra = start("Types", EVR_MODE_DISCARD, SMALL_RING);
	evr_session_free(extra);
}

static void expect_start_error(const struct evr_session_opts *o, int want, const char *msg)
{
	struct evr_session *s = NULL;
	char err[256];

	memset(err, 'x', sizeof(err));
	err[sizeof(err) - 1] = 0;
	assert_int_equal(evr_session_start(o, &s, err, sizeof(err)), want);
	assert_null(s);
	if (strcmp(err, msg) != 0)
		print_error("got \"%s\"\n", err);
	assert_string_equal(err, msg);
	assert_int_equal(evr_session_start(o, &s, NULL, 0), want);
	assert_null(s);
}

static void test_session_start_bad_options_fail(void **state)
{
	struct evr_session_opts o = {.providers = "Types:0xZZ", .ring_size = SMALL_RING};
	struct evr_session *s = NULL;

	(void)state;
	expect_start_error(
		&o, -EINVAL,
		"provider 1 \"Types:0xZZ\": keywords \"0xZZ\" is not a hexadecimal number");
	o.providers = "Types,Filt:1:loud";
	expect_start_error(&o, -EINVAL,
			   "provider 2 \"Filt:1:loud\": level \"loud\" is not 0-5 or a level name "
			   "(logalways, critical, error, warning, informational, verbose)");
	o.providers = "";
	expect_start_error(&o, -EINVAL, "provider list is empty");
	o.providers = NULL;
	expect_start_error(&o, -EINVAL, "no providers given");
	o.providers = "Types";
	o.mode = 2;
	expect_start_error(&o, -EINVAL, "mode is neither discard nor overwrite");
	o.mode = EVR_MODE_DISCARD;
	o.ring_size = 3 * SMALL_RING;
	expect_start_error(&o, -EINVAL, "ring size 196608 is not a power of two up to 4 GiB");
	o.ring_size = SMALL_RING;
	o.packet_size = 64 * 1024;
	expect_start_error(&o, -EINVAL, "ring size 65536 is less than 4 packets");
	assert_int_equal(evr_session_start(NULL, &s, NULL, 0), -EINVAL);
	o.packet_size = 0;
	assert_int_equal(evr_session_start(&o, NULL, NULL, 0), -EINVAL);
	assert_null(s);
	assert_false(ty_ints_enabled());
}

/*
 * Every way into the rings gives the same bytes, padded with zeros: the
 * generated fire functions (payload words in registers, 1 to 4 words, and in
 * memory beyond 32 bytes), evr_event_write() of any length (padded copy), and
 * evr_event_write_padded(); in one session (the inline path) and in two (the
 * general one). The padding is checked in place, where a gating reader reads.
 */
struct wd_expect {
	uint8_t bytes[48];
	uint32_t len;
	uint32_t event_id;
};

static void wd_put(struct wd_expect *e, uint32_t *o, uint64_t v, uint32_t n)
{
	memcpy(e->bytes + *o, &v, n);
	*o += n;
}

static struct evr_event *wd_rt8;	/* Words/RT8: one u64, defined at run time */

static uint32_t wd_fire_all(struct wd_expect *e, uint64_t x)
{
	uint32_t n = 0, o;

	assert_int_equal(wd_1((uint8_t)x), 0);
	o = 0, wd_put(&e[n], &o, (uint8_t)x, 1);
	e[n].len = o, e[n++].event_id = wd_1__event.rid;

	assert_int_equal(wd_2((uint8_t)(x >> 3), x * 7, (uint32_t)(x ^ 0xa5a5a5a5u), (uint16_t)~x), 0);
	o = 0, wd_put(&e[n], &o, (uint8_t)(x >> 3), 1), wd_put(&e[n], &o, x * 7, 8);
	wd_put(&e[n], &o, (uint32_t)(x ^ 0xa5a5a5a5u), 4), wd_put(&e[n], &o, (uint16_t)~x, 2);
	e[n].len = o, e[n++].event_id = wd_2__event.rid;

	assert_int_equal(wd_3(~x, x << 9, x & 1), 0);
	o = 0, wd_put(&e[n], &o, ~x, 8), wd_put(&e[n], &o, x << 9, 8), wd_put(&e[n], &o, x & 1, 1);
	e[n].len = o, e[n++].event_id = wd_3__event.rid;

	assert_int_equal(wd_4((uint32_t)x, x + 1, x + 2, ~x, -(int32_t)(x & 0xffff)), 0);
	o = 0, wd_put(&e[n], &o, (uint32_t)x, 4), wd_put(&e[n], &o, x + 1, 8);
	wd_put(&e[n], &o, x + 2, 8), wd_put(&e[n], &o, ~x, 8);
	wd_put(&e[n], &o, (uint32_t)-(int32_t)(x & 0xffff), 4);
	e[n].len = o, e[n++].event_id = wd_4__event.rid;

	assert_int_equal(wd_5(x, x * 3, x * 5, x * 11, (int8_t)-x), 0);
	o = 0, wd_put(&e[n], &o, x, 8), wd_put(&e[n], &o, x * 3, 8), wd_put(&e[n], &o, x * 5, 8);
	wd_put(&e[n], &o, x * 11, 8), wd_put(&e[n], &o, (uint8_t)-x, 1);
	e[n].len = o, e[n++].event_id = wd_5__event.rid;

	/* A run-time event of 8 bytes through evr_event_writev(): the length is a
	 * whole number of words, so there is no padding to write. */
	assert_int_equal(evr_event_writev(wd_rt8, (const union evr_value[]){ { .u = ~x * 3 } }, 1),
			 0);
	o = 0, wd_put(&e[n], &o, ~x * 3, 8);
	e[n].len = o, e[n++].event_id = wd_rt8->rid;

	/* Any length through evr_event_write() and evr_event_write_padded(). */
	for (uint32_t len = 0; len <= 40; len++) {
		uint8_t buf[48] = {0};

		for (uint32_t i = 0; i < len; i++)
			buf[i] = (uint8_t)(x + 31 * i + len);
		assert_int_equal(evr_event_write(&wd_5__event, buf, len), 0);
		memcpy(e[n].bytes, buf, len);
		e[n].len = len, e[n++].event_id = wd_5__event.rid;
		assert_int_equal(evr_event_write_padded(&wd_1__event, buf, len), 0);
		memcpy(e[n].bytes, buf, len);
		e[n].len = len, e[n++].event_id = wd_1__event.rid;
	}
	return n;
}

static void wd_check(struct evr_session *s, struct evr_reader *r, const struct wd_expect *e,
		     uint32_t n)
{
	struct evr_record rec;
	uint32_t i = 0;

	evr_session_stop(s);
	while (evr_reader_next(r, &rec) > 0) {
		const uint8_t *p = rec.payload;

		assert_int_equal(rec.type, EVR_REC_EVENT);
		assert_true(i < n);
		assert_int_equal(rec.event_id, e[i].event_id);
		assert_int_equal(rec.len, e[i].len);
		assert_memory_equal(p, e[i].bytes, rec.len);
		for (uint32_t k = rec.len; k % 8; k++)
			assert_int_equal(p[k], 0);
		i++;
	}
	assert_int_equal(i, n);
}

static cpu_set_t pinned_from;

/* Keep this thread on the CPU it runs on (one ring), until unpin(). */
static void pin_to_current_cpu(void)
{
	cpu_set_t one;
	int cpu = sched_getcpu();

	assert_true(cpu >= 0);
	assert_int_equal(sched_getaffinity(0, sizeof(pinned_from), &pinned_from), 0);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
}

static void unpin(void)
{
	assert_int_equal(sched_setaffinity(0, sizeof(pinned_from), &pinned_from), 0);
}

static void test_event_write_paths_agree_and_pad_with_zeros(void **state)
{
	static struct wd_expect e[128];
	struct evr_session *s1, *s2;
	struct evr_reader *r1, *r2;
	uint32_t n;

	static const struct evr_field_desc rt8_fields[] = { { "v", EVR_TYPE_U64 } };
	static const struct evr_event_desc rt8 = {
		.name = "RT8", .id = 8, .level = EVR_LEVEL_INFO, .keywords = 0x1,
		.nfields = 1, .fields = rt8_fields,
	};

	(void)state;
	if (!wd_rt8)
		assert_int_equal(evr_event_define(&wd, &rt8, &wd_rt8), 0);
	/* One thread on one CPU, so that the one ring's order is the firing order. */
	pin_to_current_cpu();
	assert_int_equal(evr__event_write_q1(&wd_1__event, 9, 1), -EINVAL);
	assert_int_equal(evr__event_write_q3(&wd_3__event, 16, 1, 2, 3), -EINVAL);
	for (int sessions = 1; sessions <= 2; sessions++) {
		for (uint64_t x = 1; x < 1u << 20; x = x * 37 + 5) {
			s1 = start("Words", EVR_MODE_DISCARD, SMALL_RING);
			r1 = reader_of(s1, EVR_READER_GATING);
			s2 = sessions == 2 ? start("Words", EVR_MODE_DISCARD, SMALL_RING) : NULL;
			r2 = s2 ? reader_of(s2, EVR_READER_GATING) : NULL;
			n = wd_fire_all(e, x);
			assert_true(n <= sizeof(e) / sizeof(e[0]));
			wd_check(s1, r1, e, n);
			if (s2)
				wd_check(s2, r2, e, n);
			evr_reader_free(r1);
			evr_session_free(s1);
			if (s2) {
				evr_reader_free(r2);
				evr_session_free(s2);
			}
		}
	}
	unpin();
}

/*
 * Strings and byte arrays of the sizes around the fast path's bounds (one
 * word, the 32 bytes that fit in registers, 256) decode exactly: in one
 * session (one critical section, payload copied from memory) and in two (the
 * general path), over enough rounds that the ring wraps several times, each
 * round shifted by a filler event so that different records meet the packet
 * ends. The bytes and the strings end right before an inaccessible page (a
 * string's terminator is the last readable byte): reading a byte past them
 * would crash. Other strings are followed by readable bytes that must not be
 * copied.
 */
struct var_expect {
	uint32_t event_id, len;
	uint8_t bytes[1600];
};

static void var_put(struct var_expect *e, const void *v, uint32_t n)
{
	assert_true(e->len + n <= sizeof(e->bytes));
	memcpy(e->bytes + e->len, v, n);
	e->len += n;
}

static void var_put_var(struct var_expect *e, const void *v, uint32_t n)
{
	var_put(e, &n, 4);
	var_put(e, v, n);
}

static void var_check(struct evr_reader *r, const struct var_expect *e, uint32_t n)
{
	struct evr_record rec;
	uint32_t i = 0;
	int ret;

	while ((ret = evr_reader_next(r, &rec)) > 0) {
		const uint8_t *p = rec.payload;

		assert_int_equal(rec.type, EVR_REC_EVENT);
		assert_true(i < n);
		assert_int_equal(rec.event_id, e[i].event_id);
		assert_int_equal(rec.len, e[i].len);
		assert_memory_equal(p, e[i].bytes, rec.len);
		for (uint32_t k = rec.len; k % 8; k++)
			assert_int_equal(p[k], 0);
		i++;
	}
	assert_true(ret == 0);
	assert_int_equal(i, n);
	evr_reader_release(r);
}

static void test_event_variable_payloads_decode_exactly(void **state)
{
	static const uint32_t sizes[] = { 0,   1,   2,   3,   4,   5,   7,   8,   15,  16,
					  17,  20,  31,  32,  33,  63,  64,  65,  95,  96,
					  97,  100, 127, 128, 129, 159, 160, 161, 191, 192,
					  193, 200, 223, 224, 225, 243, 244, 255, 256, 257,
					  300, 1000 };
	static struct var_expect e[7 * sizeof(sizes) / sizeof(sizes[0]) + 1];
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map, *edge, other[1100];
	uint64_t seq = 0;

	(void)state;
	map = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + page, (size_t)page, PROT_NONE), 0);
	edge = map + page;
	pin_to_current_cpu();
	for (int sessions = 1; sessions <= 2; sessions++) {
		struct evr_session *s1 = start("Var", EVR_MODE_DISCARD, SMALL_RING);
		struct evr_reader *r1 = reader_of(s1, EVR_READER_GATING);
		struct evr_session *s2 =
			sessions == 2 ? start("Var", EVR_MODE_DISCARD, SMALL_RING) : NULL;
		struct evr_reader *r2 = s2 ? reader_of(s2, EVR_READER_GATING) : NULL;
		struct evr_reader_stats st;

		/* ~24 KB a round: 40 rounds wrap the 64 KiB ring 15 times. */
		for (uint32_t round = 0; round < 40; round++) {
			uint32_t n = 0;

			/* The filler: 8 * round bytes, to shift what meets a packet end. */
			memset(other, (int)round, sizeof(other));
			assert_int_equal(var_bytes(seq, other, 8 * round), 0);
			e[n] = (struct var_expect){ .event_id = var_bytes__event.rid };
			var_put(&e[n], &seq, 8), var_put_var(&e[n], other, 8 * round), n++;
			seq++;
			for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
				uint32_t len = sizes[k];
				uint8_t *b = edge - len;
				char *str = (char *)edge - 1 - len;
				uint8_t x = (uint8_t)seq;
				uint16_t y = (uint16_t)~seq;

				for (uint32_t i = 0; i < len; i++)
					b[i] = (uint8_t)(seq * 7 + i);
				assert_int_equal(var_bytes(seq, b, len), 0);
				e[n] = (struct var_expect){ .event_id = var_bytes__event.rid };
				var_put(&e[n], &seq, 8), var_put_var(&e[n], b, len), n++;

				/* Terminator at the edge: the last readable byte. */
				for (uint32_t i = 0; i < len; i++)
					str[i] = (char)('A' + (seq + i) % 26);
				str[len] = 0;
				assert_int_equal(var_str(seq, str), 0);
				e[n] = (struct var_expect){ .event_id = var_str__event.rid };
				var_put(&e[n], &seq, 8), var_put_var(&e[n], str, len), n++;

				/* A string followed by bytes that are not its own, then bytes
				 * that end at the edge. */
				memset(other, 'z', sizeof(other));
				for (uint32_t i = 0; i < len / 2; i++)
					other[i] = (uint8_t)('a' + (seq + i) % 26);
				other[len / 2] = 0;
				assert_int_equal(var_mid(x, (const char *)other, y, b, len), 0);
				e[n] = (struct var_expect){ .event_id = var_mid__event.rid };
				var_put(&e[n], &x, 1), var_put_var(&e[n], other, len / 2);
				var_put(&e[n], &y, 2), var_put_var(&e[n], b, len), n++;

				/* The last field alone, and after 1, 20 and 24 bytes. */
				assert_int_equal(var_only(str), 0);
				e[n] = (struct var_expect){ .event_id = var_only__event.rid };
				var_put_var(&e[n], str, len), n++;
				assert_int_equal(var_u8b(x, b, len), 0);
				e[n] = (struct var_expect){ .event_id = var_u8b__event.rid };
				var_put(&e[n], &x, 1), var_put_var(&e[n], b, len), n++;
				assert_int_equal(var_p20(seq, ~seq, (uint32_t)seq, str), 0);
				e[n] = (struct var_expect){ .event_id = var_p20__event.rid };
				uint64_t nseq = ~seq;
				uint32_t sseq = (uint32_t)seq;
				var_put(&e[n], &seq, 8), var_put(&e[n], &nseq, 8);
				var_put(&e[n], &sseq, 4), var_put_var(&e[n], str, len), n++;
				assert_int_equal(var_p24(seq, ~seq, seq * 3, b, len), 0);
				e[n] = (struct var_expect){ .event_id = var_p24__event.rid };
				uint64_t tseq = seq * 3;
				var_put(&e[n], &seq, 8), var_put(&e[n], &nseq, 8);
				var_put(&e[n], &tseq, 8), var_put_var(&e[n], b, len), n++;
				seq++;
			}
			var_check(r1, e, n);
			if (r2)
				var_check(r2, e, n);
		}
		evr_session_stop(s1);
		var_check(r1, e, 0);
		evr_reader_get_stats(r1, &st);
		assert_true(st.lost == 0 && st.corrupt == 0);
		evr_reader_free(r1);
		evr_session_free(s1);
		if (s2) {
			evr_session_stop(s2);
			var_check(r2, e, 0);
			evr_reader_get_stats(r2, &st);
			assert_true(st.lost == 0 && st.corrupt == 0);
			evr_reader_free(r2);
			evr_session_free(s2);
		}
	}
	unpin();
	munmap(map, 2 * (size_t)page);
}

/*
 * Strings and byte arrays from threads that share one CPU, so that they
 * preempt each other inside the write path's critical section, while a storm
 * of signals interrupts them there and the handler writes events of its own
 * (a write nested in an interrupted one, whose section the kernel aborts):
 * every record comes back whole, in each thread's order, and what was written
 * is exactly what was read plus what was reported lost. The handler counts
 * the times it found its thread moved to an abort handler (the 4 bytes before
 * the interrupted address are the rseq signature).
 */
#define VS_WRITERS 3u
#if defined(__SANITIZE_ADDRESS__)
#define VS_EVENTS 40000u
#else
#define VS_EVENTS 200000u
#endif
#define VS_HANDLER_CAP 100000u
#define VS_HANDLER_BIT (1ull << 39)

static const uint32_t vs_sizes[] = { 0,  1,  3,   4,   7,   8,   15,  16,  31,  32,
				     33, 64, 65,  100, 127, 128, 129, 200, 255, 256 };
#define VS_NSIZES (sizeof(vs_sizes) / sizeof(vs_sizes[0]))

static _Atomic uint32_t vs_tids[VS_WRITERS];
static atomic_uint vs_left;
static atomic_ullong vs_aborted;
static uint64_t vs_handler_emitted[VS_WRITERS];
static _Thread_local int vs_me = -1;
static _Thread_local uint64_t vs_hseq;

static uint8_t vs_byte(uint64_t seq, uint32_t i)
{
	return (uint8_t)(seq * 31 + i * 7 + (seq >> 40));
}

/* The string a handler writes as event @seq: @seq % 50 letters. */
static uint32_t vs_str(uint64_t seq, char *buf)
{
	uint32_t n = (uint32_t)(seq % 50);

	for (uint32_t i = 0; i < n; i++)
		buf[i] = (char)('a' + (vs_byte(seq, i) % 26));
	buf[n] = 0;
	return n;
}

static void vs_handler(int sig, siginfo_t *si, void *uc_)
{
	const ucontext_t *uc = uc_;
	const uint8_t *ip = (const uint8_t *)uc->uc_mcontext.gregs[REG_RIP];
	const uint32_t rseq_sig = RSEQ_SIG;
	int saved = errno;
	char str[64];

	(void)sig, (void)si;
	if (vs_me < 0)
		return;
	/* Only a writer's own code runs here: its text is readable. */
	if (memcmp(ip - 4, &rseq_sig, 4) == 0)
		atomic_fetch_add_explicit(&vs_aborted, 1, memory_order_relaxed);
	if (vs_hseq < VS_HANDLER_CAP) {
		uint64_t seq = (uint64_t)vs_me << 40 | VS_HANDLER_BIT | vs_hseq++;

		vs_str(seq, str);
		var_str(seq, str);
	}
	errno = saved;
}

static void *vs_writer(void *arg)
{
	const int me = (int)(intptr_t)arg;
	uint8_t buf[256];
	sigset_t set;

	atomic_store(&vs_tids[me], (uint32_t)gettid());
	vs_me = me;
	for (uint64_t k = 0; k < VS_EVENTS; k++) {
		uint64_t seq = (uint64_t)me << 40 | k;
		uint32_t len = vs_sizes[k % VS_NSIZES];

		for (uint32_t i = 0; i < len; i++)
			buf[i] = vs_byte(seq, i);
		var_bytes(seq, buf, len);
	}
	/* No handler writes after its count is taken. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	vs_handler_emitted[me] = vs_hseq;
	atomic_fetch_sub_explicit(&vs_left, 1, memory_order_release);
	return NULL;
}

/* Interrupt the writers wherever they are until they are all done; returns the count. */
static pthread_t *vs_signal_to;

static void *vs_signaller(void *arg)
{
	uintptr_t n = 0;

	(void)arg;
	for (uint32_t k = 0; atomic_load_explicit(&vs_left, memory_order_acquire); k++)
		if (pthread_kill(vs_signal_to[k % VS_WRITERS], SIGUSR1) == 0)
			n++;
	return (void *)n;
}

struct vs_reader {
	uint8_t *seen[2 * VS_WRITERS];	/* [stream]: bit per seq */
	int64_t *last;			/* [stream * nr_rings + ring], -1 = none */
	uint32_t nr_rings;
	uint64_t received, lost;
};

static void vs_account(struct vs_reader *v, const struct evr_record *rec)
{
	const uint8_t *p = rec->payload;
	uint64_t seq, k;
	uint32_t thread, stream, n;
	int64_t *last;
	bool handler;

	if (rec->type == EVR_REC_LOST) {
		v->lost += rec->lost;
		return;
	}
	assert_int_equal(rec->type, EVR_REC_EVENT);
	assert_true(rec->len >= 12);
	memcpy(&seq, p, 8);
	memcpy(&n, p + 8, 4);
	thread = (uint32_t)(seq >> 40);
	handler = (seq & VS_HANDLER_BIT) != 0;
	k = seq & (VS_HANDLER_BIT - 1);
	assert_true(thread < VS_WRITERS);
	assert_int_equal(rec->tid, atomic_load(&vs_tids[thread]));
	assert_int_equal(rec->len, 12 + n);
	if (handler) {
		char str[64];

		assert_int_equal(rec->event_id, var_str__event.rid);
		assert_true(k < VS_HANDLER_CAP);
		assert_int_equal(n, vs_str(seq, str));
		assert_memory_equal(p + 12, str, n);
	} else {
		assert_int_equal(rec->event_id, var_bytes__event.rid);
		assert_true(k < VS_EVENTS);
		assert_int_equal(n, vs_sizes[k % VS_NSIZES]);
		for (uint32_t i = 0; i < n; i++)
			if (p[12 + i] != vs_byte(seq, i))
				fail_msg("thread %u seq %llu: byte %u of %u is %u, not %u", thread,
					 (unsigned long long)k, i, n, p[12 + i], vs_byte(seq, i));
	}
	for (uint32_t i = rec->len; i % 8; i++)
		assert_int_equal(p[i], 0);
	/* One stream's events on one ring come back in the order written (in
	 * per-CPU mode they all share one ring; with the try-lock, a writer that
	 * finds its ring taken tries the others). */
	stream = thread + (handler ? VS_WRITERS : 0);
	assert_true(rec->ring < v->nr_rings);
	last = &v->last[stream * v->nr_rings + rec->ring];
	if ((int64_t)k <= *last)
		fail_msg("stream %u ring %u: seq %llu after %lld", stream, rec->ring,
			 (unsigned long long)k, (long long)*last);
	*last = (int64_t)k;
	assert_false(v->seen[stream][k / 8] & (1u << (k % 8)));
	v->seen[stream][k / 8] |= (uint8_t)(1u << (k % 8));
	v->received++;
}

static void test_event_variable_payloads_survive_preemption_and_signals(void **state)
{
	struct sigaction sa = { .sa_sigaction = vs_handler, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct evr_session *s = start("Var", EVR_MODE_DISCARD, 16 * SMALL_RING);
	struct evr_reader *r = reader_of(s, EVR_READER_GATING);
	struct vs_reader v = { .received = 0 };
	struct evr_reader_stats st;
	struct evr_record rec;
	pthread_t tw[VS_WRITERS], ts;
	uint64_t emitted = 0;
	uintptr_t signals;
	pthread_attr_t attr;
	cpu_set_t one;

	(void)state;
	v.nr_rings = evr_session_shm(s)->nr_rings;
	v.last = malloc(sizeof(*v.last) * 2 * VS_WRITERS * v.nr_rings);
	assert_non_null(v.last);
	for (uint32_t i = 0; i < 2 * VS_WRITERS * v.nr_rings; i++)
		v.last[i] = -1;
	for (uint32_t i = 0; i < 2 * VS_WRITERS; i++) {
		v.seen[i] = calloc((i < VS_WRITERS ? VS_EVENTS : VS_HANDLER_CAP) / 8 + 1, 1);
		assert_non_null(v.seen[i]);
	}
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&vs_left, VS_WRITERS);
	/* The writers share the CPU this thread runs on now; the reader is free. */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setaffinity_np(&attr, sizeof(one), &one), 0);
	for (uint32_t i = 0; i < VS_WRITERS; i++)
		assert_int_equal(pthread_create(&tw[i], &attr, vs_writer, (void *)(intptr_t)i), 0);
	pthread_attr_destroy(&attr);
	vs_signal_to = tw;
	assert_int_equal(pthread_create(&ts, NULL, vs_signaller, NULL), 0);
	while (atomic_load_explicit(&vs_left, memory_order_acquire)) {
		while (evr_reader_next(r, &rec) > 0)
			vs_account(&v, &rec);
		evr_reader_release(r);
	}
	for (uint32_t i = 0; i < VS_WRITERS; i++)
		assert_int_equal(pthread_join(tw[i], NULL), 0);
	assert_int_equal(pthread_join(ts, (void **)&signals), 0);
	signal(SIGUSR1, SIG_DFL);
	evr_session_stop(s);
	while (evr_reader_next(r, &rec) > 0)
		vs_account(&v, &rec);
	assert_true(evr_reader_ended(r));
	evr_reader_get_stats(r, &st);
	for (uint32_t i = 0; i < VS_WRITERS; i++)
		emitted += VS_EVENTS + vs_handler_emitted[i];
	print_message("%u writers on one CPU, %llu signals (%llu found a section aborted): "
		      "emitted %llu received %llu lost %llu\n",
		      VS_WRITERS, (unsigned long long)signals,
		      (unsigned long long)atomic_load(&vs_aborted), (unsigned long long)emitted,
		      (unsigned long long)v.received, (unsigned long long)v.lost);
	assert_true(st.corrupt == 0);
	assert_true(st.events == v.received && st.lost == v.lost);
	assert_true(v.received + v.lost == emitted);
	for (uint32_t i = 0; i < 2 * VS_WRITERS; i++)
		free(v.seen[i]);
	free(v.last);
	evr_reader_free(r);
	evr_session_free(s);
}

/*
 * A full ring: string and bytes events written past it are dropped in the
 * write path's critical section (counted in the ring's lost_fast_total, with
 * no slow path), a reader of a producer that died now would count each once,
 * and once the reader has caught up the next event follows one LOST record
 * that counts them all.
 */
static void test_event_variable_payloads_dropped_when_full_are_counted(void **state)
{
	struct evr_session *s = start("Var", EVR_MODE_DISCARD, SMALL_RING);
	struct evr_reader *r = reader_of(s, EVR_READER_GATING);
	const struct evr_shm_hdr *h = evr_session_shm(s);
	static const uint8_t b[200] = { 7, 7, 7 };
	char str[201];
	const struct evr_ring_ctl *ctl;
	bool percpu;
	uint64_t n = 0, lost, events = 0, reported = 0, before;
	struct evr_record rec;
	int cpu;

	(void)state;
#if defined(__SANITIZE_THREAD__)
	percpu = false;		/* libevring takes the try-lock under TSan */
#else
	percpu = __rseq_size > 0 && h->nr_rings > 1;
#endif
	pin_to_current_cpu();
	cpu = sched_getcpu();
	assert_true(cpu >= 0 && (uint32_t)cpu < h->nr_rings);
	ctl = evr_shm_ring_ctl(h, (uint32_t)cpu);
	/* Three times what the ring holds. */
	for (; n < 3 * SMALL_RING / 224; n++)
		var_bytes(n, b, sizeof(b));
	before = __atomic_load_n(&ctl->lost_fast_total, __ATOMIC_RELAXED);
	/* None fits: whatever room the last packet has left, less than this. */
	memset(str, 's', sizeof(str) - 1);
	str[sizeof(str) - 1] = 0;
	for (uint64_t k = 0; k < 1000; k++, n++) {
		if (k % 2)
			var_bytes(n, b, sizeof(b));
		else
			var_str(n, str);
	}
	lost = evr_ring_ctl_lost(ctl);
	print_message("%llu events, %llu lost, %llu of them in the section (%llu before)\n",
		      (unsigned long long)n, (unsigned long long)lost,
		      (unsigned long long)__atomic_load_n(&ctl->lost_fast_total, __ATOMIC_RELAXED),
		      (unsigned long long)before);
	/* Per-CPU: the section dropped the last 1000; with the try-lock, never. */
	assert_true(__atomic_load_n(&ctl->lost_fast_total, __ATOMIC_RELAXED) ==
		    (percpu ? before + 1000 : 0));
	assert_true(lost >= 1000 && lost < n);
	while (evr_reader_next(r, &rec) > 0)
		if (rec.type == EVR_REC_EVENT)
			events++;
		else
			reported += rec.lost;
	evr_reader_release(r);
	assert_true(events + lost == n);
	/* Caught up: the next event reports them, before itself. */
	var_bytes(n, b, 8);
	assert_int_equal(evr_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, EVR_REC_LOST);
	assert_true(reported + rec.lost == lost);
	assert_int_equal(evr_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, EVR_REC_EVENT);
	assert_int_equal(rec.len, 8 + 4 + 8);
	assert_true(evr_ring_ctl_lost(ctl) == lost);
	evr_reader_release(r);
	unpin();
	evr_session_stop(s);
	evr_reader_free(r);
	evr_session_free(s);
}

static void test_event_write_too_big_counts_one_lost(void **state)
{
	uint8_t *buf = calloc(1, EVR_MAX_PAYLOAD + 1);
	struct evr_session *s;
	struct evr_reader *r;
	struct got g = {0};

	(void)state;
	assert_non_null(buf);
	for (uint32_t i = 0; i <= EVR_MAX_PAYLOAD; i++)
		buf[i] = (uint8_t)(i * 13);
	s = start("Types", EVR_MODE_DISCARD, SMALL_RING);
	r = reader_of(s, EVR_READER_GATING);
	assert_int_equal(evr_event_write(&ty_blob__event, buf, EVR_MAX_PAYLOAD + 1), -EMSGSIZE);
	/* The largest payload still goes through, byte for byte. */
	assert_int_equal(evr_event_write(&ty_blob__event, buf, EVR_MAX_PAYLOAD), 0);
	stop_and_collect(s, r, &g);
	assert_true(g.lost == 1);
	assert_true(g.events == 1);
	for (size_t i = 0; i < g.n; i++) {
		if (g.v[i].type != EVR_REC_EVENT)
			continue;
		assert_int_equal(g.v[i].len, EVR_MAX_PAYLOAD);
		assert_memory_equal(g.v[i].payload, buf, EVR_MAX_PAYLOAD);
	}
	evr_reader_free(r);
	evr_session_free(s);
	got_free(&g);

	/* The typed path: a bytes field that makes the payload too big. */
	s = start("Types", EVR_MODE_OVERWRITE, SMALL_RING);
	r = reader_of(s, 0);
	assert_int_equal(ty_blob(buf, EVR_MAX_PAYLOAD - 4 + 1), -EMSGSIZE);
	assert_int_equal(ty_blob(buf, EVR_MAX_PAYLOAD - 4), 0);
	stop_and_collect(s, r, &g);
	assert_true(g.lost == 1);
	assert_true(g.events == 1);
	evr_reader_free(r);
	evr_session_free(s);
	got_free(&g);
	/* Nobody listening: nothing to count, still refused. */
	assert_int_equal(evr_event_write(&ty_blob__event, buf, EVR_MAX_PAYLOAD + 1), -EMSGSIZE);
	free(buf);
}

/* ---- dynamic, JSON and run-time events --------------------------------------------------- */

struct builtin_rec {
	char name[32];
	uint64_t keywords;
	uint8_t level;
	char data[64];
	uint32_t data_len;
	const char *event; /* "Dynamic" or "Json" */
};

static void decode_builtin(const struct got_rec *x, struct builtin_rec *b)
{
	const struct evr_event *ev = evr_event_by_rid(x->event_id);
	struct cur c = {x->payload, x->len};
	const uint8_t *p;
	uint32_t n;

	assert_non_null(ev);
	assert_ptr_equal(ev->provider, &ty);
	b->event = ev->desc->name;
	p = take_var(&c, &n);
	assert_true(n < sizeof(b->name));
	memcpy(b->name, p, n);
	b->name[n] = 0;
	b->keywords = take_u(&c, 8);
	b->level = (uint8_t)take_u(&c, 1);
	p = take_var(&c, &b->data_len);
	assert_true(b->data_len < sizeof(b->data));
	memcpy(b->data, p, b->data_len);
	b->data[b->data_len] = 0;
	assert_int_equal(c.left, 0);
}

static void test_dynamic_write_filters_per_session(void **state)
{
	struct evr_session *s1, *s2;
	struct evr_reader *r1, *r2;
	struct got g1 = {0}, g2 = {0};
	struct builtin_rec b;

	(void)state;
	s1 = start("Types:0x1:4", EVR_MODE_DISCARD, SMALL_RING);
	s2 = start("Types:0x2:5", EVR_MODE_DISCARD, SMALL_RING);
	r1 = reader_of(s1, EVR_READER_GATING);
	r2 = reader_of(s2, EVR_READER_GATING);
	assert_int_equal(evr_dynamic_write(&ty, "a", EVR_LEVEL_INFO, 0x1, "A", 1), 0);
	assert_int_equal(evr_dynamic_write(&ty, "b", EVR_LEVEL_VERBOSE, 0x2, "BB", 2), 0);
	assert_int_equal(evr_dynamic_write(&ty, "c", EVR_LEVEL_VERBOSE, 0x1, "C", 1), 0);
	assert_int_equal(evr_dynamic_write(&ty, "d", EVR_LEVEL_WARNING, 0, NULL, 0), 0);
	assert_int_equal(evr_dynamic_write(&ty, "e", EVR_LEVEL_INFO, 0x4, "E", 1), 0);
	assert_int_equal(evr_json_write(&ty, "j1", EVR_LEVEL_INFO, 0x3, "{\"x\":1}"), 0);
	assert_int_equal(evr_json_write(&ty, "j2", EVR_LEVEL_VERBOSE, 0x1, "{}"), 0);
	assert_int_equal(evr_dynamic_write(NULL, "x", 0, 0, NULL, 0), -EINVAL);
	assert_int_equal(evr_dynamic_write(&ty, NULL, 0, 0, NULL, 0), -EINVAL);
	assert_int_equal(evr_json_write(&ty, "x", 0, 0, NULL), -EINVAL);
	stop_and_collect(s1, r1, &g1);
	stop_and_collect(s2, r2, &g2);

	assert_true(g1.lost == 0 && g2.lost == 0);
	assert_int_equal(g1.n, 3);
	decode_builtin(&g1.v[0], &b);
	assert_string_equal(b.event, "Dynamic");
	assert_string_equal(b.name, "a");
	assert_true(b.keywords == 0x1 && b.level == EVR_LEVEL_INFO);
	assert_string_equal(b.data, "A");
	decode_builtin(&g1.v[1], &b);
	assert_string_equal(b.event, "Dynamic");
	assert_string_equal(b.name, "d");
	assert_true(b.keywords == 0 && b.level == EVR_LEVEL_WARNING && b.data_len == 0);
	decode_builtin(&g1.v[2], &b);
	assert_string_equal(b.event, "Json");
	assert_string_equal(b.name, "j1");
	assert_true(b.keywords == 0x3 && b.level == EVR_LEVEL_INFO);
	assert_string_equal(b.data, "{\"x\":1}");

	assert_int_equal(g2.n, 3);
	decode_builtin(&g2.v[0], &b);
	assert_string_equal(b.name, "b");
	assert_string_equal(b.data, "BB");
	assert_true(b.keywords == 0x2 && b.level == EVR_LEVEL_VERBOSE);
	decode_builtin(&g2.v[1], &b);
	assert_string_equal(b.name, "d");
	decode_builtin(&g2.v[2], &b);
	assert_string_equal(b.event, "Json");
	assert_string_equal(b.name, "j1");

	evr_reader_free(r1);
	evr_reader_free(r2);
	evr_session_free(s1);
	evr_session_free(s2);
	got_free(&g1);
	got_free(&g2);
}

static void test_event_define_after_start_is_delivered(void **state)
{
	static const struct evr_field_desc fields[] = {
		{"x", EVR_TYPE_U32}, {"s", EVR_TYPE_STR},   {"y", EVR_TYPE_F32},
		{"z", EVR_TYPE_I16}, {"b", EVR_TYPE_BYTES}, {"ok", EVR_TYPE_BOOL},
	};
	static const struct evr_field_desc bad_fields[] = {{"q", 99}};
	struct evr_event_desc d = {
		.name = "Runtime",
		.id = 100,
		.level = EVR_LEVEL_INFO,
		.keywords = 0x1,
		.nfields = 6,
		.fields = fields,
	};
	struct evr_event_desc d_off = {
		.name = "RuntimeOff",
		.id = 101,
		.level = EVR_LEVEL_INFO,
		.keywords = 0x8,
		.nfields = 1,
		.fields = fields,
	};
	union evr_value v[6] = {
		{.u = 0xcafef00du},	    {.s = "run"}, {.f = 2.5}, {.i = -7},
		{.b = {"\x01\x02\x03", 3}}, {.u = 1},
	};
	struct evr_event *ev = NULL, *ev_off = NULL, *bad = NULL;
	struct evr_session *s;
	struct evr_reader *r;
	struct got g = {0};
	char name[64];
	int seen_rt = 0, seen_late = 0;

	(void)state;
	/* The "Late" provider comes and goes while the session runs. */
	evr_provider_unregister(&latep);
	assert_false(late_ev_enabled());
	s = start("Types:0x1:4,Late", EVR_MODE_DISCARD, SMALL_RING);
	r = reader_of(s, EVR_READER_GATING);

	assert_int_equal(evr_event_define(&ty, &d, &ev), 0);
	assert_non_null(ev);
	assert_int_equal(evr_event_define(&ty, &d_off, &ev_off), 0);
	assert_true(evr_event_enabled(ev));
	assert_false(evr_event_enabled(ev_off));
	d.fields = bad_fields;
	d.nfields = 1;
	assert_int_equal(evr_event_define(&ty, &d, &bad), -EINVAL);
	assert_null(bad);
	assert_int_equal(evr_event_writev(ev, v, 5), -EINVAL);
	assert_int_equal(evr_event_writev(ev, v, 6), 0);
	assert_int_equal(evr_event_writev(ev_off, v, 1), 0);

	assert_int_equal(evr_provider_register(&latep), 0);
	assert_int_equal(evr_provider_register(&latep), 0); /* already registered */
	assert_true(late_ev_enabled());
	assert_int_equal(late_ev(42), 0);
	stop_and_collect(s, r, &g);

	assert_true(g.lost == 0);
	assert_int_equal(g.events, 2);
	for (size_t i = 0; i < g.n; i++) {
		const struct got_rec *x = &g.v[i];
		struct cur c = {x->payload, x->len};

		if (evr_event_by_rid(x->event_id) == ev) {
			float f;

			assert_string_equal(event_name(x->event_id, name, sizeof(name)),
					    "Types/Runtime");
			assert_int_equal(take_u(&c, 4), 0xcafef00du);
			expect_var(&c, "run", 3);
			take(&c, &f, 4);
			assert_true(f == 2.5f);
			assert_int_equal((int16_t)take_u(&c, 2), -7);
			expect_var(&c, "\x01\x02\x03", 3);
			assert_int_equal(take_u(&c, 1), 1);
			seen_rt++;
		} else {
			assert_string_equal(event_name(x->event_id, name, sizeof(name)),
					    "Late/LateEvent");
			assert_true(take_u(&c, 8) == 42);
			seen_late++;
		}
		assert_int_equal(c.left, 0);
	}
	assert_true(seen_rt == 1 && seen_late == 1);
	evr_reader_free(r);
	evr_session_free(s);
	got_free(&g);
}

/* ---- provider callback ---------------------------------------------------------------- */

struct cb_call {
	bool enabled;
	uint8_t level;
	uint64_t keywords;
	bool has_args;
	char k[16];
};

struct cb_log {
	int n;
	struct cb_call v[8];
};

static void cb_fn(struct evr_provider *p, bool enabled, uint8_t level, uint64_t keywords,
		  const struct evr_provider_spec *args, void *ctx)
{
	struct cb_log *log = ctx;
	struct cb_call *c;
	const char *k;

	if (log->n == 8)
		return;
	c = &log->v[log->n++];
	*c = (struct cb_call){
		.enabled = enabled, .level = level, .keywords = keywords, .has_args = args != NULL};
	k = args ? evr_provider_spec_arg(args, "k") : NULL;
	snprintf(c->k, sizeof(c->k), "%s", k ? k : "-");
	(void)p;
}

static void test_provider_register_callback_sees_enable_changes(void **state)
{
	static struct cb_log log;
	static struct evr_provider cbp = {.name = "Cb", .callback = cb_fn, .callback_ctx = &log};
	struct evr_session *s1, *s2, *s3;

	(void)state;
	assert_int_equal(evr_provider_register(&cbp), 0);
	assert_int_equal(log.n, 0);
	s1 = start("Cb:0x5:3:k=v", EVR_MODE_DISCARD, SMALL_RING);
	assert_int_equal(log.n, 1);
	assert_true(log.v[0].enabled && log.v[0].level == 3 && log.v[0].keywords == 0x5);
	assert_true(log.v[0].has_args);
	assert_string_equal(log.v[0].k, "v");
	assert_true(evr_provider_enabled(&cbp, EVR_LEVEL_WARNING, 0x4));

	s2 = start("Cb:0x8:5", EVR_MODE_OVERWRITE, SMALL_RING);
	assert_int_equal(log.n, 2);
	assert_true(log.v[1].enabled && log.v[1].level == 5 && log.v[1].keywords == 0xd);
	assert_true(log.v[1].has_args);
	assert_string_equal(log.v[1].k, "-");

	/* A session that does not name the provider changes nothing. */
	s3 = start("Types", EVR_MODE_DISCARD, SMALL_RING);
	evr_session_free(s3);
	assert_int_equal(log.n, 2);

	evr_session_free(s2);
	assert_int_equal(log.n, 3);
	assert_true(log.v[2].enabled && log.v[2].level == 3 && log.v[2].keywords == 0x5);
	evr_session_free(s1);
	assert_int_equal(log.n, 4);
	assert_false(log.v[3].enabled);
	assert_int_equal(log.v[3].level, 0);
	assert_true(log.v[3].keywords == 0);
	assert_false(log.v[3].has_args);
	assert_false(evr_provider_enabled(&cbp, EVR_LEVEL_LOGALWAYS, 0));
	evr_provider_unregister(&cbp);
	evr_provider_unregister(&cbp); /* idempotent */
}

/* ---- sessions come and go while writers run ----------------------------------------------------- */

#define RACE_WRITERS 3u
#define RACE_CYCLES 200u

static atomic_bool race_stop;
static _Atomic uint32_t race_tids[RACE_WRITERS];
static atomic_uint race_ready;

static uint32_t race_check(uint32_t thread, uint64_t seq)
{
	uint64_t x = (seq + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)thread << 40;

	return (uint32_t)(x ^ x >> 29);
}

static void *race_writer(void *arg)
{
	uint32_t thread = (uint32_t)(uintptr_t)arg;

	atomic_store(&race_tids[thread], (uint32_t)gettid());
	atomic_fetch_add(&race_ready, 1);
	for (uint64_t seq = 0; !atomic_load_explicit(&race_stop, memory_order_relaxed); seq++) {
		race_ev(thread, seq, race_check(thread, seq));
		/* Leave the other threads some CPU on a small machine. */
		if ((seq & 4095) == 0)
			sched_yield();
	}
	return NULL;
}

struct u64vec {
	uint64_t *v;
	size_t n, cap;
};

struct race_session {
	struct evr_session *s;
	struct evr_reader *r;
	uint32_t mode, nr_rings;
	struct u64vec seqs[RACE_WRITERS];
	int64_t *last; /* [thread * nr_rings + ring], -1 = none */
	uint64_t events, lost;
};

static void race_open(struct race_session *rs, uint32_t mode, uint64_t ring_size)
{
	memset(rs, 0, sizeof(*rs));
	rs->mode = mode;
	rs->s = start("Race", mode, ring_size);
	rs->r = reader_of(rs->s, mode == EVR_MODE_DISCARD ? EVR_READER_GATING : 0);
	rs->nr_rings = evr_session_shm(rs->s)->nr_rings;
	rs->last = malloc(sizeof(*rs->last) * RACE_WRITERS * rs->nr_rings);
	assert_non_null(rs->last);
	for (uint32_t i = 0; i < RACE_WRITERS * rs->nr_rings; i++)
		rs->last[i] = -1;
}

static void race_account(struct race_session *rs, const struct evr_record *rec)
{
	struct cur c = {rec->payload, rec->len};
	struct u64vec *sv;
	uint32_t thread, check;
	uint64_t seq;
	int64_t *last;

	if (rec->type == EVR_REC_LOST) {
		rs->lost += rec->lost;
		return;
	}
	assert_int_equal(rec->type, EVR_REC_EVENT);
	assert_int_equal(rec->event_id, race_ev__event.rid);
	assert_int_equal(rec->len, 16);
	thread = (uint32_t)take_u(&c, 4);
	seq = take_u(&c, 8);
	check = (uint32_t)take_u(&c, 4);
	assert_true(thread < RACE_WRITERS);
	assert_int_equal(check, race_check(thread, seq));
	assert_int_equal(rec->tid, atomic_load(&race_tids[thread]));
	assert_true(rec->ring < rs->nr_rings);
	/* One thread's events on one ring come back in the order written. */
	last = &rs->last[thread * rs->nr_rings + rec->ring];
	if ((int64_t)seq <= *last)
		print_error("thread %u ring %u: seq %llu after %lld\n", thread, rec->ring,
			    (unsigned long long)seq, (long long)*last);
	assert_true((int64_t)seq > *last);
	*last = (int64_t)seq;
	sv = &rs->seqs[thread];
	if (sv->n == sv->cap) {
		sv->cap = sv->cap ? 2 * sv->cap : 1024;
		sv->v = realloc(sv->v, sv->cap * sizeof(*sv->v));
		assert_non_null(sv->v);
	}
	sv->v[sv->n++] = seq;
	rs->events++;
}

static void race_read_some(struct race_session *rs, uint32_t max)
{
	struct evr_record rec;

	for (uint32_t i = 0; i < max && evr_reader_next(rs->r, &rec) > 0; i++)
		race_account(rs, &rec);
	evr_reader_release(rs->r);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Stop, drain, check: no duplicate, and every gap inside what was seen is covered by LOST. */
static void race_close(struct race_session *rs, uint64_t *ret_events, uint64_t *ret_lost)
{
	struct evr_reader_stats st;
	struct evr_record rec;
	uint64_t missing = 0;

	evr_session_stop(rs->s);
	while (evr_reader_next(rs->r, &rec) > 0)
		race_account(rs, &rec);
	assert_true(evr_reader_ended(rs->r));
	evr_reader_get_stats(rs->r, &st);
	assert_true(st.events == rs->events);
	assert_true(st.lost == rs->lost);
	assert_true(st.corrupt == 0);
	for (uint32_t t = 0; t < RACE_WRITERS; t++) {
		struct u64vec *sv = &rs->seqs[t];

		if (!sv->n)
			continue;
		qsort(sv->v, sv->n, sizeof(*sv->v), cmp_u64);
		for (size_t i = 1; i < sv->n; i++) {
			if (sv->v[i] == sv->v[i - 1])
				print_error("thread %u: seq %llu twice\n", t,
					    (unsigned long long)sv->v[i]);
			assert_true(sv->v[i] != sv->v[i - 1]);
		}
		missing += sv->v[sv->n - 1] - sv->v[0] + 1 - sv->n;
		free(sv->v);
	}
	if (missing > rs->lost)
		print_error("%llu events missing, %llu reported lost (mode %u)\n",
			    (unsigned long long)missing, (unsigned long long)rs->lost, rs->mode);
	assert_true(missing <= rs->lost);
	*ret_events += rs->events;
	*ret_lost += rs->lost;
	evr_reader_free(rs->r);
	evr_session_free(rs->s);
	free(rs->last);
	memset(rs, 0, sizeof(*rs));
}

static void test_session_stop_while_writers_run_accounts_every_gap(void **state)
{
	struct race_session live[3];
	pthread_t tw[RACE_WRITERS];
	uint64_t rnd = 0x0ddba11cafef00dull, events = 0, lost = 0, sessions = 0;
	uint32_t nlive = 0, max_live = 0;

	(void)state;
	atomic_store(&race_stop, false);
	for (uint32_t t = 0; t < RACE_WRITERS; t++)
		assert_int_equal(pthread_create(&tw[t], NULL, race_writer, (void *)(uintptr_t)t),
				 0);
	/* Record tids are checked against these: wait until all are known. */
	while (atomic_load(&race_ready) != RACE_WRITERS)
		sched_yield();

	for (uint32_t cycle = 0; cycle < RACE_CYCLES; cycle++) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		if (nlive < 3 && (nlive == 0 || (rnd >> 33) % 2)) {
			race_open(&live[nlive], (uint32_t)(rnd >> 40) % 2,
				  (rnd >> 45) % 2 ? SMALL_RING : 4 * SMALL_RING);
			nlive++;
			sessions++;
			if (nlive > max_live)
				max_live = nlive;
		}
		for (uint32_t i = 0; i < nlive; i++)
			race_read_some(&live[i], 200);
		/* Once: wait until every writer is seen writing into a live session. */
		for (uint32_t t = 0; cycle == 0 && t < RACE_WRITERS; t++) {
			while (live[0].seqs[t].n == 0) {
				sched_yield();
				race_read_some(&live[0], 200);
			}
		}
		if (nlive == 3 || (nlive > 0 && (rnd >> 50) % 3 == 0)) {
			uint32_t victim = (uint32_t)(rnd >> 52) % nlive;

			race_close(&live[victim], &events, &lost);
			live[victim] = live[--nlive];
		}
	}
	while (nlive)
		race_close(&live[--nlive], &events, &lost);
	atomic_store(&race_stop, true);
	for (uint32_t t = 0; t < RACE_WRITERS; t++)
		assert_int_equal(pthread_join(tw[t], NULL), 0);
	print_message("%llu sessions (up to %u at once): %llu events, %llu lost\n",
		      (unsigned long long)sessions, max_live, (unsigned long long)events,
		      (unsigned long long)lost);
	assert_true(max_live == 3);
	assert_true(events > 0);
	assert_false(race_ev_enabled());
}

/* EVR_START()/EVR_STOP() in the level column set the opcode and keep the level. */
static void test_event_line_opcodes(void **state)
{
	(void)state;
	assert_int_equal(fi_a__event.desc->opcode, EVR_OPCODE_INFO);
	assert_int_equal(fi_a__event.desc->level, EVR_LEVEL_INFO);
	assert_int_equal(fi_b__event.desc->opcode, EVR_OPCODE_START);
	assert_int_equal(fi_b__event.desc->level, EVR_LEVEL_VERBOSE);
	assert_int_equal(fi_e__event.desc->opcode, EVR_OPCODE_STOP);
	assert_int_equal(fi_e__event.desc->level, EVR_LEVEL_ERROR);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_typed_fields_encode_as_documented),
		cmocka_unit_test(test_event_line_opcodes),
		cmocka_unit_test(test_event_enabled_follows_sessions),
		cmocka_unit_test(test_session_start_filters_by_keywords_and_level),
		cmocka_unit_test(test_session_start_65th_session_is_busy),
		cmocka_unit_test(test_session_start_bad_options_fail),
		cmocka_unit_test(test_event_write_too_big_counts_one_lost),
		cmocka_unit_test(test_event_write_paths_agree_and_pad_with_zeros),
		cmocka_unit_test(test_event_variable_payloads_decode_exactly),
		cmocka_unit_test(test_event_variable_payloads_survive_preemption_and_signals),
		cmocka_unit_test(test_event_variable_payloads_dropped_when_full_are_counted),
		cmocka_unit_test(test_dynamic_write_filters_per_session),
		cmocka_unit_test(test_event_define_after_start_is_delivered),
		cmocka_unit_test(test_provider_register_callback_sees_enable_changes),
		cmocka_unit_test(test_session_stop_while_writers_run_accounts_every_gap),
	};

	/* An optional argument selects cases by name pattern. */
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
