// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The write path. Callers have already seen a nonzero event mask (inline check).
 * Here: RCU read-side lock (liburcu-bp, inlined with _LGPL_SOURCE: a TLS counter
 * and a compiler barrier when sys_membarrier is available), load the session
 * table, re-read the mask inside the critical section (a mask bit read before it
 * could belong to a session slot that has since been reused), then one write per
 * interested session into its ring for this CPU: in per-CPU mode an rseq
 * critical section (<evring/ring-rseq.h>), otherwise the try-lock. The timestamp,
 * thread id and the record's header are computed once for all sessions. No lock
 * is waited on, nothing is allocated, no system call is made.
 *
 * The common case, one per-CPU session, is laid out on its own so that it
 * needs almost no stack frame; more sessions, try-lock sessions and the
 * built-in events' per-session filter go through write_rcu(), out of line.
 * The registry keeps, in each event, the rings of the one per-CPU session that
 * wants it (evr_event.percpu): one load instead of table, slot, session and
 * rings. One rseq critical section loads those rings, appends and publishes,
 * and is itself the read side that protects them; the session table's grace
 * period waits for it with membarrier's rseq fence
 * (evr_session_table_synchronize()). The payload is in words (the generated
 * fire functions of fixed-size events of up to 32 bytes) or in memory (every
 * other write). If that section must restart or take the slow path, the write
 * starts again below, under the RCU read lock.
 *
 * Payloads reach the rings in whole 8-byte words (struct evr_rseq_rec): the
 * generated fire functions and evr_event_write_padded() supply them padded,
 * evr_event_write() pads a copy when the length needs it.
 *
 * Everything but that shortcut is out of line, in write_slow() and
 * write_slow_q*(), which the public functions reach by a tail call: their frame
 * then lies directly on the frame of the code that wrote the event, and a
 * session that asks for stacks walks from it (write_rcu_stacks(), stack.c).
 * So this file is built without frame pointers: the one-section path keeps
 * every register, and only the slow path sets up a frame (two instructions).
 * A public function that cannot tail-call (its payload is padded in a buffer
 * of its own) has a frame anyway, for that buffer, and the walk goes through it.
 */
#define _LGPL_SOURCE
#include <urcu-bp.h>

#include "registry-internal.h"
#include "stack-internal.h"
#include "write-internal.h"

static inline bool builtin_wants(const struct evr_provider_priv *pp, unsigned int slot,
				 uint8_t level, uint64_t keywords)
{
	return evr_level_match((uint8_t)atomic_load_explicit(&pp->sess_level[slot],
							     memory_order_relaxed), level) &&
	       evr_keywords_match(atomic_load_explicit(&pp->sess_keywords[slot],
						       memory_order_relaxed), keywords);
}

/*
 * write_stack_cut() - the record of a session that asked for @k frames of the
 * @n captured in @buf (stack block, frames, payload): sessions of several
 * depths on one event, a rare case kept out of write_rcu_stacks().
 */
static __attribute__((noinline)) void
write_stack_cut(struct evr_session *s, struct rseq *rs, uint32_t *cpu, const uint64_t *buf,
		uint32_t n, uint32_t k, bool truncated, uint32_t len, uint32_t rid, uint64_t ts,
		uint32_t tid)
{
	uint32_t alen = (len + 7u) & ~7u;
	uint64_t cut[1u + k + alen / 8u];
	struct evr_rseq_rec rec;

	cut[0] = (uint64_t)k | (uint64_t)EVR_STACK_KIND_FP << 16 |
		 (uint64_t)(truncated || k < n ? EVR_STACK_F_TRUNCATED : 0) << 24;
	memcpy(cut + 1, buf + 1, 8u * k);
	memcpy(cut + 1 + k, buf + 1 + n, alen);
	evr_rseq_rec_init(&rec, rid, ts, tid, cut, 8u + 8u * k + len);
	evr_rseq_rec_set_flags(&rec, EVR_REC_F_STACK);
	evr_session_write_rec_rcu(s, rs, &rec, cpu);
}

/*
 * write_rcu_stacks() - write_rcu() when sessions @smask (within @mask) want the
 * writer's stack with this event: the stack is captured once, from frame @fp
 * (write_slow*()'s), at the largest depth they ask for, and each of them gets
 * an EVENT record with a stack block (<evring/abi.h>) of at most its own
 * depth; the other sessions get the plain record. The frames are captured
 * straight into the record's buffer, the payload copied after them.
 */
static __attribute__((noinline)) void
write_rcu_stacks(struct evr_session_table *t, uint64_t mask, uint64_t smask,
		 const struct evr_provider_priv *pp, struct evr_event *ev, const void *payload,
		 uint32_t len, bool filter, uint8_t level, uint64_t keywords, uintptr_t fp)
{
	uint32_t alen = (len + 7u) & ~7u, depth = 0, n, cpu = UINT32_MAX;
	struct evr_rseq_rec srec;
	bool truncated;
	struct rseq *rs;
	uint64_t ts = evr_clock_now();
	uint32_t tid = evr_thread_id();

	for (uint64_t b = smask; b; b &= b - 1) {
		uint32_t d = atomic_load_explicit(&pp->sess_stack_depth[__builtin_ctzll(b)],
						  memory_order_relaxed);

		if (d > depth)
			depth = d;
	}
	/* The record must fit: frames beyond what the payload leaves room for are cut. */
	if (len + sizeof(struct evr_stack_hdr) > EVR_MAX_PAYLOAD)
		depth = 0;
	else if (depth > (EVR_MAX_PAYLOAD - len - sizeof(struct evr_stack_hdr)) / 8u)
		depth = (EVR_MAX_PAYLOAD - len - (uint32_t)sizeof(struct evr_stack_hdr)) / 8u;
	/* Block and payload in one buffer, the frames captured in place: no copy of them. */
	uint64_t buf[1u + depth + alen / 8u];

	n = evr_stack_capture(fp, buf + 1, depth);
	truncated = n & EVR_STACK_CAPTURE_TRUNCATED;
	n &= ~EVR_STACK_CAPTURE_TRUNCATED;
	/* Whole words, a few of them: no call to memcpy(). */
	for (uint32_t w = 0; w < alen / 8u; w++)
		memcpy(&buf[1 + n + w], (const uint8_t *)payload + 8u * w, 8);
	/* struct evr_stack_hdr {nframes, kind, flags, reserved} as one word. */
	buf[0] = (uint64_t)n | (uint64_t)EVR_STACK_KIND_FP << 16 |
		 (uint64_t)(truncated ? EVR_STACK_F_TRUNCATED : 0) << 24;
	evr_rseq_rec_init(&srec, ev->rid, ts, tid, buf, 8u + 8u * n + len);
	evr_rseq_rec_set_flags(&srec, EVR_REC_F_STACK);
	rs = evr_rseq_area();
	do {
		unsigned int i = (unsigned int)__builtin_ctzll(mask);
		struct evr_session *s = t->slot[i];
		uint32_t k;

		mask &= mask - 1;
		if (filter && !builtin_wants(pp, i, level, keywords))
			continue;
		if (!(smask & (1ull << i))) {
			struct evr_rseq_rec rec;

			evr_rseq_rec_init(&rec, ev->rid, ts, tid, payload, len);
			evr_session_write_rec_rcu(s, rs, &rec, &cpu);
			continue;
		}
		k = atomic_load_explicit(&pp->sess_stack_depth[i], memory_order_relaxed);
		if (EVR_UNLIKELY(k < n))
			write_stack_cut(s, rs, &cpu, buf, n, k, truncated, len, ev->rid, ts, tid);
		else
			evr_session_write_rec_rcu(s, rs, &srec, &cpu);
	} while (mask);
}

/*
 * write_rcu() - write a padded payload into every session of @mask (already
 * masked by the live table @t). @filter: for built-in events, the level and
 * keywords of this write, checked per session. @fp: where a stack starts
 * (evr_stack_capture()).
 */
static __attribute__((noinline)) void
write_rcu(struct evr_session_table *t, uint64_t mask, struct evr_event *ev, const void *payload,
	  uint32_t len, bool filter, uint8_t level, uint64_t keywords, uintptr_t fp)
{
	/* Read once: unregistering the provider clears priv before its grace period. */
	const struct evr_provider_priv *pp = ev->provider ? ev->provider->priv : NULL;
	uint64_t smask = pp && !(ev->flags & EVR_EVENT_F_NOSTACK) ?
				 atomic_load_explicit(&pp->stack_slots, memory_order_relaxed) & mask : 0;
	uint32_t cpu = UINT32_MAX;
	struct evr_rseq_rec rec;
	struct rseq *rs;

	if (EVR_UNLIKELY(smask)) {
		write_rcu_stacks(t, mask, smask, pp, ev, payload, len, filter, level, keywords, fp);
		return;
	}

	evr_rseq_rec_init(&rec, ev->rid, evr_clock_now(), evr_thread_id(), payload, len);
	rs = evr_rseq_area();
	do {
		unsigned int i = (unsigned int)__builtin_ctzll(mask);
		struct evr_session *s = t->slot[i];

		mask &= mask - 1;
		if (filter && !builtin_wants(ev->provider->priv, i, level, keywords))
			continue;
		evr_session_write_rec_rcu(s, rs, &rec, &cpu);
	} while (mask);
}

/*
 * The public functions end in a tail call of a slow function of their own
 * signature (write_slow(), write_slow_q*()): the compiler must jump, not call,
 * for that function's frame to lie directly on the caller's. clang's musttail
 * makes it so (it wants the same signature on both sides); gcc 12 has no such
 * attribute and jumps on its own at -O1 and above, where no local of the public
 * function is passed. Where neither holds (-O0, a payload padded in a buffer of
 * the public function) the public function has a frame, and the walk goes
 * through it. tests/unit/test_stack.c checks every public function.
 */
#if defined(__has_attribute)
#if __has_attribute(musttail)
#define EVR_TAIL_CALL __attribute__((musttail))
#endif
#endif
#ifndef EVR_TAIL_CALL
#define EVR_TAIL_CALL
#endif

/*
 * The return value of the slow functions, always 0, hidden from the
 * optimizer: a compiler that saw the constant would return it from the public
 * function itself, after a call instead of a tail call.
 */
static inline int slow_done(void)
{
	int ret = 0;

	__asm__("" : "+r"(ret));
	return ret;
}

/*
 * slow_write() - the write path under the RCU read lock: every session of the
 * table that wants the event. @fp: the frame of the slow function (out of
 * line, which __builtin_frame_address() makes keep one), where stacks start.
 */
static inline __attribute__((always_inline)) int slow_write(struct evr_event *ev,
							    const void *payload, uint32_t len,
							    uintptr_t fp)
{
	struct evr_session_table *t;
	uint64_t mask;

	urcu_bp_read_lock();
	t = evr_session_table_get_rcu();
	mask = atomic_load_explicit(&ev->mask, memory_order_relaxed) & t->live;
	if (mask)
		write_rcu(t, mask, ev, payload, len, false, 0, 0, fp);
	urcu_bp_read_unlock();
	return slow_done();
}

/* The slow path of evr_event_write() and evr_event_write_padded(). */
static __attribute__((noinline)) int write_slow(struct evr_event *ev, const void *payload,
						uint32_t len)
{
	return slow_write(ev, payload, len, (uintptr_t)__builtin_frame_address(0));
}

#if EVR_HAVE_RSEQ
/*
 * fast_cpu() - whether an rseq section may write @ev, and where: one per-CPU
 * session wants it, and this thread runs on a CPU that session has a ring for.
 * The whole write is then one rseq critical section that loads the session's
 * rings itself, its own RCU read side (evr_ring_rseq_append_*_rcu()). Anything
 * else, and a section that must restart or take the slow path, is the slow
 * path's. The event's rings are first looked at outside, as a hint (the section
 * loads them again): an event without them, in several sessions say, would
 * otherwise read the clock twice, and rdtsc costs more than the section.
 * Return: true with *@rs and *@cpu set.
 */
static inline __attribute__((always_inline)) bool fast_cpu(struct evr_event *ev,
							   struct rseq **rs, uint32_t *cpu)
{
	if (!atomic_load_explicit(&ev->percpu, memory_order_relaxed))
		return false;
	*rs = evr_rseq_area();
	*cpu = (uint32_t)evr_rseq_cpu(*rs);
	/* A per-CPU session has a ring for every CPU id below evr_ring_percpu_min;
	 * a negative cpu (no rseq registration) fails the bound too. */
	return EVR_LIKELY(*cpu < evr_ring_percpu_min);
}
#endif

/*
 * The clock and the thread id for the fast paths. @ready (a constant) says the
 * clock is the TSC and the thread's id known (write_ready()): then the path
 * calls no function before the slow path's. clock_gettime() for the monotonic
 * clock, or gettid() for a thread's first event, on it, even never taken, made
 * the compiler keep the arguments where a call preserves them: the write of a
 * 200-byte payload cost 0.9 ns more (evring-bench writer_only_bytes200). The
 * public functions check write_ready() first, and take a copy of the path
 * built with @ready false, out of line, when it is not.
 */
static inline bool write_ready(void)
{
	return EVR_LIKELY(evr_clock_tsc && evr_tls_tid);
}

static inline __attribute__((always_inline)) uint64_t write_now(const bool ready)
{
	return ready ? __rdtsc() : evr_clock_now();
}

static inline __attribute__((always_inline)) uint32_t write_tid(const bool ready)
{
	return ready ? evr_tls_tid : evr_thread_id();
}

/*
 * write_fast() - write a payload of at most EVR_MAX_PAYLOAD bytes: @k words
 * @q (a constant, 0..EVR_RSEQ_WORDS_MAX) in registers, or with @k < 0 the
 * padded bytes at @payload, in the one per-CPU session that wants the event,
 * inline and without a stack frame to speak of (fast_cpu()).
 * Return: 0 written; 1 when the slow path must write it (the caller's tail call).
 */
static inline __attribute__((always_inline)) int
write_fast(struct evr_event *ev, const void *payload, uint32_t len, const int k, uint64_t q0,
	   uint64_t q1, uint64_t q2, uint64_t q3, const bool ready)
{
#if EVR_HAVE_RSEQ
	struct rseq *rs;
	uint32_t cpu;

	if (!fast_cpu(ev, &rs, &cpu))
		return 1;
	if (k >= 0)
		return evr_ring_rseq_append_words_rcu(&ev->percpu, rs, cpu, write_now(ready),
						      evr_rseq_event_w0(ev->rid, len),
						      write_tid(ready), k, q0, q1, q2, q3) != 0;
	return evr_ring_rseq_append_mem_rcu(&ev->percpu, rs, cpu, write_now(ready),
					    evr_rseq_event_w0(ev->rid, len), write_tid(ready),
					    payload, (len + 7u) / 8u) != 0;
#else
	(void)ev, (void)payload, (void)len, (void)k, (void)q0, (void)q1, (void)q2, (void)q3;
	(void)ready;
	return 1;
#endif
}

int evr_event_write_padded(struct evr_event *ev, const void *payload, uint32_t len)
{
	if (EVR_UNLIKELY(len > EVR_MAX_PAYLOAD))
		return evr_event_write_too_big(ev);
	if (EVR_LIKELY(write_fast(ev, payload, len, -1, 0, 0, 0, 0, false) == 0))
		return 0;
	EVR_TAIL_CALL return write_slow(ev, payload, len);
}

int evr_event_write(struct evr_event *ev, const void *payload, uint32_t len)
{
	if (EVR_UNLIKELY(len > EVR_MAX_PAYLOAD))
		return evr_event_write_too_big(ev);
	if (len & 7u) {
		uint8_t buf[evr_rseq_pad_size(len)];
		const void *p = evr_rseq_rec_pad(buf, payload, len);

		/* No tail call with @buf: this function has a frame, for it. */
		if (EVR_LIKELY(write_fast(ev, p, len, -1, 0, 0, 0, 0, false) == 0))
			return 0;
		return write_slow(ev, p, len);
	}
	if (EVR_LIKELY(write_fast(ev, payload, len, -1, 0, 0, 0, 0, false) == 0))
		return 0;
	EVR_TAIL_CALL return write_slow(ev, payload, len);
}

/*
 * The generated fire functions of events whose payload has a fixed size of at
 * most 32 bytes pass it in registers, as whole words whose bytes past @len
 * are zero. @len must need exactly that many words. Each has its slow
 * function, of the same signature.
 */
#define EVR_WRITE_Q(n, ...)                                                                \
	static __attribute__((noinline)) int write_slow_q##n(struct evr_event *ev,         \
							     uint32_t len __VA_ARGS__)     \
	{                                                                                  \
		const uint64_t q[EVR_RSEQ_WORDS_MAX] = { EVR_Q_ARGS_##n };                 \
                                                                                           \
		return slow_write(ev, q, len, (uintptr_t)__builtin_frame_address(0));      \
	}                                                                                  \
	static __attribute__((noinline)) int write_cold_q##n(struct evr_event *ev,         \
							     uint32_t len __VA_ARGS__)     \
	{                                                                                  \
		if (write_fast(ev, NULL, len, (n), EVR_Q_ARGS_##n, false) == 0)            \
			return 0;                                                          \
		EVR_TAIL_CALL return write_slow_q##n(ev, len EVR_Q_NAMES_##n);             \
	}                                                                                  \
	int evr__event_write_q##n(struct evr_event *ev, uint32_t len __VA_ARGS__)         \
	{                                                                                  \
		if (EVR_UNLIKELY((len + 7u) / 8u != (n)))                                   \
			return -EINVAL;                                                    \
		if (!write_ready())                                                        \
			EVR_TAIL_CALL return write_cold_q##n(ev, len EVR_Q_NAMES_##n);     \
		if (EVR_LIKELY(write_fast(ev, NULL, len, (n), EVR_Q_ARGS_##n, true) == 0)) \
			return 0;                                                          \
		EVR_TAIL_CALL return write_slow_q##n(ev, len EVR_Q_NAMES_##n);             \
	}
#define EVR_Q_ARGS_0 0, 0, 0, 0
#define EVR_Q_ARGS_1 q0, 0, 0, 0
#define EVR_Q_ARGS_2 q0, q1, 0, 0
#define EVR_Q_ARGS_3 q0, q1, q2, 0
#define EVR_Q_ARGS_4 q0, q1, q2, q3
#define EVR_Q_NAMES_0
#define EVR_Q_NAMES_1 , q0
#define EVR_Q_NAMES_2 , q0, q1
#define EVR_Q_NAMES_3 , q0, q1, q2
#define EVR_Q_NAMES_4 , q0, q1, q2, q3

EVR_WRITE_Q(0)
EVR_WRITE_Q(1, , uint64_t q0)
EVR_WRITE_Q(2, , uint64_t q0, uint64_t q1)
EVR_WRITE_Q(3, , uint64_t q0, uint64_t q1, uint64_t q2)
EVR_WRITE_Q(4, , uint64_t q0, uint64_t q1, uint64_t q2, uint64_t q3)

/*
 * evr__event_write_v()'s slow path: the payload assembled in a buffer, for
 * every session. Also where the hand-written version's section leaves to.
 */
__attribute__((noinline)) int evr__event_write_v_slow(struct evr_event *ev, uint64_t q0,
						       uint64_t q1, uint64_t q2, const void *src,
						       uint64_t pn)
{
	const uint32_t plen = (uint32_t)(pn >> 32), n = (uint32_t)pn, len = plen + n;
	const uint64_t q[3] = { q0, q1, q2 };
	uint8_t buf[evr_rseq_pad_size(len)];

	memcpy(buf, q, plen);
	if (n)
		memcpy(buf + plen, src, n);
	evr_rseq_pad_zero(buf, len);
	return slow_write(ev, buf, len, (uintptr_t)__builtin_frame_address(0));
}

/*
 * evr__event_write_v()'s fast path, after the checks; @ready: see write_now().
 * Return: 0 written; 1 when the slow path must write it (the caller's tail call).
 */
static inline __attribute__((always_inline)) int
write_v_fast(struct evr_event *ev, uint64_t q0, uint64_t q1, uint64_t q2, const void *src,
	     uint64_t pn, const bool ready)
{
#if EVR_HAVE_RSEQ
	/* As write_fast(), with the bytes copied from @src inside the section. */
	const uint32_t plen = (uint32_t)(pn >> 32), n = (uint32_t)pn;
	struct rseq *rs;
	uint32_t cpu;

	if (!fast_cpu(ev, &rs, &cpu))
		return 1;
	return evr_ring_rseq_append_var_rcu(&ev->percpu, rs, cpu, write_now(ready),
					    evr_rseq_event_w0(ev->rid, plen + n), write_tid(ready),
					    q0, q1, q2, plen, src, n) != 0;
#else
	(void)ev, (void)q0, (void)q1, (void)q2, (void)src, (void)pn, (void)ready;
	return 1;
#endif
}

static __attribute__((noinline)) int write_v_cold(struct evr_event *ev, uint64_t q0, uint64_t q1,
						  uint64_t q2, const void *src, uint64_t pn)
{
	if (write_v_fast(ev, q0, q1, q2, src, pn, false) == 0)
		return 0;
	EVR_TAIL_CALL return evr__event_write_v_slow(ev, q0, q1, q2, src, pn);
}

int EVR_WRITE_V_C(struct evr_event *ev, uint64_t q0, uint64_t q1, uint64_t q2, const void *src,
		  uint64_t pn)
{
	const uint32_t plen = (uint32_t)(pn >> 32), n = (uint32_t)pn;

	if (EVR_UNLIKELY(plen < 4u || plen > 24u))
		return -EINVAL;
	if (EVR_UNLIKELY((uint64_t)plen + n > EVR_MAX_PAYLOAD))
		return evr_event_write_too_big(ev);
	if (!write_ready())
		EVR_TAIL_CALL return write_v_cold(ev, q0, q1, q2, src, pn);
	if (EVR_LIKELY(write_v_fast(ev, q0, q1, q2, src, pn, true) == 0))
		return 0;
	/* A tail call: the slow path's frame lies on the caller's (stacks). */
	EVR_TAIL_CALL return evr__event_write_v_slow(ev, q0, q1, q2, src, pn);
}


int evr_event_write_too_big(struct evr_event *ev)
{
	struct evr_session_table *t;
	uint64_t mask;
	uint32_t cpu = evr_cpu_current();

	urcu_bp_read_lock();
	t = evr_session_table_get_rcu();
	mask = atomic_load_explicit(&ev->mask, memory_order_relaxed) & t->live;
	for (; mask; mask &= mask - 1)
		evr_session_count_lost_rcu(t->slot[__builtin_ctzll(mask)], cpu);
	urcu_bp_read_unlock();
	return -EMSGSIZE;
}

static uint64_t encoded_size(const struct evr_event_desc *d, const union evr_value *v)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < d->nfields; i++) {
		switch (d->fields[i].type) {
		case EVR_TYPE_STR:
		case EVR_TYPE_JSON:
			n += 4 + (uint64_t)evr__strlen(v[i].s);
			break;
		case EVR_TYPE_BYTES:
			n += 4 + (uint64_t)(v[i].b.data ? v[i].b.len : 0);
			break;
		default:
			n += evr_type_size(d->fields[i].type);
		}
	}
	return n;
}

static void encode(const struct evr_event_desc *d, const union evr_value *v, uint8_t *p)
{
	for (uint32_t i = 0; i < d->nfields; i++) {
		uint32_t t = d->fields[i].type;

		switch (t) {
		case EVR_TYPE_STR:
		case EVR_TYPE_JSON:
			evr__put_var(&p, v[i].s, evr__strlen(v[i].s));
			break;
		case EVR_TYPE_BYTES:
			evr__put_var(&p, v[i].b.data, v[i].b.data ? v[i].b.len : 0);
			break;
		case EVR_TYPE_F32: {
			float f = (float)v[i].f;

			evr__put(&p, &f, 4);
			break;
		}
		case EVR_TYPE_F64:
			evr__put(&p, &v[i].f, 8);
			break;
		case EVR_TYPE_PTR:
			evr__put_u64(&p, (uint64_t)(uintptr_t)v[i].p);
			break;
		case EVR_TYPE_BOOL:
			evr__put_u8(&p, v[i].u ? 1 : 0);
			break;
		default:
			/* Integers: the low bytes, little endian. */
			evr__put(&p, &v[i].u, evr_type_size(t));
		}
	}
}

int evr_event_writev(struct evr_event *ev, const union evr_value *values, uint32_t n)
{
	uint64_t len;

	if (!ev || !ev->desc || n != ev->desc->nfields || (n && !values))
		return -EINVAL;
	if (!evr_event_enabled(ev))
		return 0;
	len = encoded_size(ev->desc, values);
	if (len > EVR_MAX_PAYLOAD)
		return evr_event_write_too_big(ev);
	uint8_t buf[evr_rseq_pad_size((uint32_t)len)];

	encode(ev->desc, values, buf);
	evr_rseq_pad_zero(buf, (uint32_t)len);
	/* No tail call with @buf: this function has a frame, for it. */
	if (EVR_LIKELY(write_fast(ev, buf, (uint32_t)len, -1, 0, 0, 0, 0, false) == 0))
		return 0;
	return write_slow(ev, buf, (uint32_t)len);
}

/*
 * Dynamic and Json events: encoded by their built-in schema (name, keywords,
 * level, then @last: the data or the JSON document), filtered per session by
 * this write's own level and keywords. Inlined into the public functions, whose
 * frame (which the buffer gives them) is then where stacks start.
 */
static inline __attribute__((always_inline)) int builtin_write(struct evr_provider *p, struct evr_event *ev, const char *name,
			 uint8_t level, uint64_t keywords, union evr_value last)
{
	const union evr_value v[4] = { { .s = name }, { .u = keywords }, { .u = level }, last };
	struct evr_session_table *t;
	uint64_t len, mask;

	if (!evr_provider_enabled(p, level, keywords))
		return 0;
	len = encoded_size(ev->desc, v);
	if (len > EVR_MAX_PAYLOAD)
		return evr_event_write_too_big(ev);
	uint8_t buf[evr_rseq_pad_size((uint32_t)len)];

	encode(ev->desc, v, buf);
	evr_rseq_pad_zero(buf, (uint32_t)len);
	urcu_bp_read_lock();
	t = evr_session_table_get_rcu();
	mask = atomic_load_explicit(&ev->mask, memory_order_relaxed) & t->live;
	if (mask)
		write_rcu(t, mask, ev, buf, (uint32_t)len, true, level, keywords,
			  (uintptr_t)__builtin_frame_address(0));
	urcu_bp_read_unlock();
	return 0;
}

int evr_dynamic_write(struct evr_provider *p, const char *name, uint8_t level,
		      uint64_t keywords, const void *data, uint32_t len)
{
	struct evr_provider_priv *pp;

	if (!p || !name)
		return -EINVAL;
	pp = p->priv;
	if (!pp)
		return -EINVAL;
	return builtin_write(p, pp->dynamic_ev, name, level, keywords,
			     (union evr_value){ .b = { data, len } });
}

int evr_json_write(struct evr_provider *p, const char *name, uint8_t level, uint64_t keywords,
		   const char *json)
{
	struct evr_provider_priv *pp;

	if (!p || !name || !json)
		return -EINVAL;
	pp = p->priv;
	if (!pp)
		return -EINVAL;
	return builtin_write(p, pp->json_ev, name, level, keywords, (union evr_value){ .s = json });
}
