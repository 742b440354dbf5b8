// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for per-CPU ring writes in rseq critical sections
 * (<evring/ring-rseq.h>): more writer threads than CPUs, signal handlers that
 * write events at random points of the interrupted write (inside its critical
 * sections, inside its slow path under the ring lock), the lock-held and
 * no-registration drops, the settling of an append interrupted before its
 * commit, and the rseq fence that the write path's shortcut relies on.
 * Payloads check themselves and conservation is exact: emitted == received + lost.
 *
 * Tests that need rseq are skipped where it is unavailable (another
 * architecture, ThreadSanitizer, glibc.pthread.rseq=0, a kernel without it).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <ucontext.h>

#include <evring/ring-rseq.h>

#include "ring-fixture.h"
#include "evr-unit.h"

/* The abort handlers' section; the linker defines its bounds when it exists. */
extern const char __start___rseq_failure[] __attribute__((weak));
extern const char __stop___rseq_failure[] __attribute__((weak));

static bool rseq_usable(void)
{
	return EVR_HAVE_RSEQ && __rseq_size > 0 && evr_rseq_cpu(evr_rseq_area()) >= 0;
}

static uint32_t event_id_of(uint64_t seq)
{
	return (uint32_t)(seq * 2654435761u) | 1u;
}

static int rseq_write_seq(struct ring_fx *f, struct rseq *rs, uint64_t seq, uint64_t stream,
			  uint32_t len)
{
	uint8_t buf[256];
	struct evr_rseq_rec rec;

	assert_true(evr_rseq_pad_size(len) <= sizeof(buf));
	memset(buf, 0, sizeof(buf));	/* the padding the write path copies */
	pl_fill(buf, len, seq, stream);
	evr_rseq_rec_init(&rec, event_id_of(seq), seq, (uint32_t)stream + 1, buf, len);
	return evr_ring_rseq_write(f->w, f->nr, rs, &rec);
}

/* Every ring: take the lock as the session's stop does, report losses in-band. */
static void flush_all(struct ring_fx *f, uint64_t ts)
{
	for (uint32_t i = 0; i < f->nr; i++) {
		uint32_t unlocked = 0;

		assert_true(atomic_compare_exchange_strong(&f->w[i].lock, &unlocked, 1));
		evr_ring_writer_flush_locked(&f->w[i], ts);
		atomic_store_explicit(&f->w[i].lock, 0, memory_order_release);
	}
}

/* ---- threads and signal handlers, exact accounting --------------------------------- */

#define RS_MAX_WRITERS 32u
#define RS_HANDLER_CAP 200000u	/* events one thread's signal handler may write */
#if defined(__SANITIZE_ADDRESS__)
#define RS_EVENTS 200000u
#else
#define RS_EVENTS 1000000u
#endif

struct rs_ctx {
	struct ring_fx *f;
	uint32_t writers;	/* streams 0..writers-1: threads; writers..2*writers-1: handlers */
	uint64_t n;		/* events per writer thread */
	atomic_uint writers_left;
	atomic_bool drained;	/* reader: everything written is read and released */
	atomic_bool flushed;
	atomic_ullong drop_nospc, drop_busy, drop_again;
	atomic_ullong aborted_by_signal;	/* handler found the thread in an abort handler */
	atomic_ullong signals;
	uint64_t handler_emitted[RS_MAX_WRITERS];
	struct thread_err err;
	/* reader */
	uint8_t *seen[2 * RS_MAX_WRITERS];
	int64_t *last;		/* [stream][ring]: -1 none */
	uint64_t received, lost;
};

static struct rs_ctx *rs_cur;
static _Thread_local int rs_me = -1;
static _Thread_local uint64_t rs_hseq;

static void rs_count(struct rs_ctx *c, int ret)
{
	if (ret == -ENOSPC)
		atomic_fetch_add(&c->drop_nospc, 1);
	else if (ret == -EBUSY)
		atomic_fetch_add(&c->drop_busy, 1);
	else if (ret != 0)
		atomic_fetch_add(&c->drop_again, 1);
}

static void rs_handler(int sig, siginfo_t *si, void *uc_)
{
	struct rs_ctx *c = rs_cur;
	ucontext_t *uc = uc_;
	const char *ip = (const char *)uc->uc_mcontext.gregs[REG_RIP];
	int saved = errno;

	(void)sig;
	(void)si;
	/* The kernel moved the interrupted thread to an abort handler: a critical
	 * section was cut short and will be restarted after we return. */
	if (__start___rseq_failure && ip >= __start___rseq_failure && ip < __stop___rseq_failure)
		atomic_fetch_add_explicit(&c->aborted_by_signal, 1, memory_order_relaxed);
	if (rs_me >= 0 && rs_hseq < RS_HANDLER_CAP) {
		uint64_t seq = rs_hseq++;

		rs_count(c, rseq_write_seq(c->f, evr_rseq_area(), seq,
					   c->writers + (uint32_t)rs_me, PL_HDR + (uint32_t)(seq % 29)));
	}
	errno = saved;
}

static void *rs_writer(void *arg)
{
	struct rs_ctx *c = rs_cur;
	int me = (int)(intptr_t)arg;
	sigset_t set;

	rs_me = me;
	for (uint64_t seq = 0; seq < c->n; seq++)
		rs_count(c, rseq_write_seq(c->f, evr_rseq_area(), seq, (uint64_t)me,
					   PL_HDR + (uint32_t)(seq % 37)));
	/* No handler runs after its count is taken. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	c->handler_emitted[me] = rs_hseq;
	atomic_fetch_sub_explicit(&c->writers_left, 1, memory_order_release);
	return NULL;
}

static bool rs_account(struct rs_ctx *c, uint32_t ring, const struct evr_record *rec)
{
	uint32_t streams = 2 * c->writers;
	uint64_t seq, stream;
	int64_t *last;

	if (rec->type == EVR_REC_LOST) {
		c->lost += rec->lost;
		return true;
	}
	if (!pl_check(rec->payload, rec->len, &seq, &stream) || stream >= streams ||
	    rec->tid != stream + 1 || rec->ring != ring || rec->event_id != event_id_of(seq) ||
	    seq >= (stream < c->writers ? c->n : RS_HANDLER_CAP)) {
		thread_fail(&c->err, "bad record on ring %u", ring);
		return false;
	}
	last = &c->last[stream * c->f->nr + ring];
	if ((int64_t)seq <= *last) {
		thread_fail(&c->err, "stream %llu ring %u: seq %llu after %lld",
			    (unsigned long long)stream, ring, (unsigned long long)seq,
			    (long long)*last);
		return false;
	}
	if (c->seen[stream][seq / 8] & (1u << (seq % 8))) {
		thread_fail(&c->err, "stream %llu: seq %llu twice", (unsigned long long)stream,
			    (unsigned long long)seq);
		return false;
	}
	c->seen[stream][seq / 8] |= (uint8_t)(1u << (seq % 8));
	*last = (int64_t)seq;
	c->received++;
	return true;
}

/*
 * One gating reader per ring, drained round-robin. Once the writers are done it
 * drains and releases everything, says so, and after the flush (which now has
 * room for its LOST records) reads what the flush wrote.
 */
static void *rs_reader(void *arg)
{
	struct rs_ctx *c = arg;
	struct evr_ring_reader *r[EVR_MAX_RINGS];
	struct evr_record rec;
	bool flushed = false;

	for (uint32_t i = 0; i < c->f->nr; i++)
		r[i] = reader_new(c->f, i, EVR_READER_GATING);
	for (;;) {
		bool progress = false;

		for (uint32_t i = 0; i < c->f->nr; i++) {
			for (int k = 0; k < 256 && evr_ring_reader_next(r[i], &rec) > 0; k++) {
				progress = true;
				if (!rs_account(c, i, &rec))
					goto out;
			}
			evr_ring_reader_release(r[i]);
		}
		if (progress)
			continue;
		if (flushed)
			break;
		/* Pairs with the store-release after the final flush. */
		flushed = atomic_load_explicit(&c->flushed, memory_order_acquire);
		if (flushed)
			continue;	/* one more pass, after the flush */
		/* Pairs with the store-release of writers_left by the last writer. */
		if (!atomic_load_explicit(&c->writers_left, memory_order_acquire))
			/* Pairs with the acquire load before the flush. */
			atomic_store_explicit(&c->drained, true, memory_order_release);
		sched_yield();
	}
out:
	for (uint32_t i = 0; i < c->f->nr; i++) {
		if (r[i]->corrupt)
			thread_fail(&c->err, "ring %u: %llu corrupt packets", i,
				    (unsigned long long)r[i]->corrupt);
		/* Every loss was reported in-band, none only in the counters. */
		if (r[i]->lost != c->f->w[i].ctl->lost_total ||
		    r[i]->events != c->f->w[i].ctl->events_total)
			thread_fail(&c->err, "ring %u: read %llu events %llu lost, counted %llu %llu",
				    i, (unsigned long long)r[i]->events,
				    (unsigned long long)r[i]->lost,
				    (unsigned long long)c->f->w[i].ctl->events_total,
				    (unsigned long long)c->f->w[i].ctl->lost_total);
		free(r[i]);
	}
	return NULL;
}

static void test_ring_rseq_write_threads_and_signals_account_exactly(void **state)
{
	struct rs_ctx c = {.n = RS_EVENTS};
	struct sigaction sa = {.sa_sigaction = rs_handler, .sa_flags = SA_SIGINFO | SA_RESTART};
	pthread_t tw[RS_MAX_WRITERS], tr;
	uint64_t emitted = 0;
	uint32_t ncpu = (uint32_t)get_nprocs_conf();
	struct ring_fx f;

	(void)state;
	if (!rseq_usable())
		EVR_SKIP("no usable rseq registration here (glibc < 2.35, glibc.pthread.rseq=0, TSan, or an old kernel)");
	fx_setup(&f, ncpu, PSIZE_MIN, 16 * PSIZE_MIN, EVR_MODE_DISCARD);
	c.f = &f;
	c.writers = 2 * (uint32_t)get_nprocs() + 1;
	if (c.writers > RS_MAX_WRITERS)
		c.writers = RS_MAX_WRITERS;
	c.last = malloc(sizeof(*c.last) * 2 * c.writers * f.nr);
	assert_non_null(c.last);
	for (uint32_t i = 0; i < 2 * c.writers * f.nr; i++)
		c.last[i] = -1;
	for (uint32_t s = 0; s < 2 * c.writers; s++) {
		c.seen[s] = calloc((s < c.writers ? c.n : RS_HANDLER_CAP) / 8 + 1, 1);
		assert_non_null(c.seen[s]);
	}
	rs_cur = &c;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&c.writers_left, c.writers);

	assert_int_equal(pthread_create(&tr, NULL, rs_reader, &c), 0);
	for (uint32_t i = 0; i < c.writers; i++)
		assert_int_equal(pthread_create(&tw[i], NULL, rs_writer, (void *)(intptr_t)i), 0);
	/* Interrupt the writers wherever they are until they are all done. */
	for (uint32_t k = 0; atomic_load_explicit(&c.writers_left, memory_order_acquire); k++) {
		if (pthread_kill(tw[k % c.writers], SIGUSR1) == 0)
			atomic_fetch_add_explicit(&c.signals, 1, memory_order_relaxed);
		if (k % 8 == 0)
			sched_yield();
	}
	for (uint32_t i = 0; i < c.writers; i++)
		assert_int_equal(pthread_join(tw[i], NULL), 0);
	/* Wait for the reader to have made room for the flush's LOST records
	 * (pairs with its store-release of drained). */
	while (!atomic_load_explicit(&c.drained, memory_order_acquire) &&
	       !atomic_load(&c.err.failed))
		sched_yield();
	flush_all(&f, UINT64_MAX);
	/* Pairs with the acquire load in rs_reader(). */
	atomic_store_explicit(&c.flushed, true, memory_order_release);
	assert_int_equal(pthread_join(tr, NULL), 0);
	signal(SIGUSR1, SIG_DFL);

	for (uint32_t i = 0; i < c.writers; i++)
		emitted += c.n + c.handler_emitted[i];
	print_message("%u writers on %d CPUs, %llu signals (%llu found a section aborted): "
		      "emitted %llu received %llu lost %llu (ring full %llu, ring locked %llu, "
		      "other %llu)\n",
		      c.writers, get_nprocs(), (unsigned long long)c.signals,
		      (unsigned long long)c.aborted_by_signal, (unsigned long long)emitted,
		      (unsigned long long)c.received, (unsigned long long)c.lost,
		      (unsigned long long)c.drop_nospc, (unsigned long long)c.drop_busy,
		      (unsigned long long)c.drop_again);
	assert_no_thread_error(&c.err);
	assert_true(c.received + c.lost == emitted);
	assert_true(c.lost == c.drop_nospc + c.drop_busy + c.drop_again);
	for (uint32_t s = 0; s < 2 * c.writers; s++)
		free(c.seen[s]);
	free(c.last);
	fx_teardown(&f);
}

/* ---- deterministic paths ------------------------------------------------------------ */

/* Run the calling thread on CPU 0 only; returns false if that is not allowed here. */
static bool pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		return false;
	sched_yield();
	return evr_rseq_cpu(evr_rseq_area()) == 0;
}

static void unpin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < get_nprocs_conf() && i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

static void expect_event_seq(struct evr_ring_reader *r, uint64_t seq, uint64_t stream)
{
	struct evr_record rec;
	uint64_t s = 0, t = 0;

	assert_int_equal(evr_ring_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, EVR_REC_EVENT);
	assert_true(pl_check(rec.payload, rec.len, &s, &t));
	assert_true(s == seq && t == stream);
	assert_int_equal(rec.tid, stream + 1);
}

static void expect_lost_n(struct evr_ring_reader *r, uint64_t n)
{
	struct evr_record rec;

	assert_int_equal(evr_ring_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, EVR_REC_LOST);
	assert_true(rec.lost == n);
}

/*
 * The thread pinned to CPU 0 (skipped where it cannot be, or without rseq), a
 * discard-mode session with a ring per CPU, and a gating reader of CPU 0's ring.
 */
static struct evr_ring_reader *cpu0_setup(struct ring_fx *f)
{
	if (!rseq_usable() || !pin_cpu0()) {
		unpin();
		EVR_SKIP(rseq_usable() ? "this thread may not run on CPU 0" : "no usable rseq registration here (glibc < 2.35, glibc.pthread.rseq=0, TSan, or an old kernel)");
	}
	fx_setup(f, (uint32_t)get_nprocs_conf(), PSIZE_MIN, RING_MIN, EVR_MODE_DISCARD);
	return reader_new(f, 0, EVR_READER_GATING);
}

/* CPU 0's ring was read to its end, and nothing in it was corrupt. */
static void cpu0_teardown(struct evr_ring_reader *r, struct ring_fx *f)
{
	struct evr_record rec;

	assert_int_equal(evr_ring_reader_next(r, &rec), 0);
	assert_int_equal(r->corrupt, 0);
	free(r);
	fx_teardown(f);
}

static void test_ring_rseq_write_locked_ring_counts_lost(void **state)
{
	struct evr_ring_reader *r;
	struct ring_fx f;

	(void)state;
	r = cpu0_setup(&f);
	assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), 0, 3, PL_HDR + 5), 0);
	assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), 1, 3, PL_HDR), 0);
	/* A slow path holding the lock (preempted, or interrupted by us). */
	atomic_store(&f.w[0].lock, 1);
	assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), 2, 3, PL_HDR), -EBUSY);
	assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), 3, 3, PL_HDR), -EBUSY);
	atomic_store(&f.w[0].lock, 0);
	assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), 4, 3, PL_HDR + 1), 0);
	unpin();
	expect_event_seq(r, 0, 3);
	expect_event_seq(r, 1, 3);
	expect_lost_n(r, 2);
	expect_event_seq(r, 4, 3);
	cpu0_teardown(r, &f);
}

struct busy_holder {
	struct ring_fx *f;
	atomic_int ready, writer_waiting, released;
};

/* A slow path of another thread on CPU 0, preempted with the ring's lock held:
 * it finishes only when CPU 0 runs it again. */
static void *busy_holder_main(void *arg)
{
	struct busy_holder *h = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		return NULL;
	atomic_store(&h->f->w[0].lock, 424242);
	atomic_store(&h->ready, 1);
	while (!atomic_load(&h->writer_waiting))
		sched_yield();
	atomic_store_explicit(&h->f->w[0].lock, 0, memory_order_release);
	atomic_store(&h->released, 1);
	return NULL;
}

/*
 * A writer that finds its CPU's ring locked by another thread's slow path yields
 * the CPU to it and writes once it let go, instead of dropping the event; one
 * that finds its own lock (a signal handler interrupting its slow path) drops
 * at once, counted.
 */
static void test_ring_rseq_write_yields_to_preempted_holder(void **state)
{
	struct busy_holder h = { 0 };
	struct evr_ring_reader *r;
	struct ring_fx f;
	pthread_t t;

	(void)state;
	r = cpu0_setup(&f);
	assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), 0, 3, PL_HDR), 0);
	/* Its own lock (stream 3 writes as tid 4): dropped. */
	atomic_store(&f.w[0].lock, 4);
	assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), 1, 3, PL_HDR), -EBUSY);
	atomic_store(&f.w[0].lock, 0);
	/* Another thread's, preempted on this CPU: written once it ran. */
	h.f = &f;
	assert_int_equal(pthread_create(&t, NULL, busy_holder_main, &h), 0);
	while (!atomic_load(&h.ready))
		sched_yield();
	atomic_store(&h.writer_waiting, 1);
	assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), 2, 3, PL_HDR + 3), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&h.released), 1);
	unpin();
	expect_event_seq(r, 0, 3);
	expect_lost_n(r, 1);
	expect_event_seq(r, 2, 3);
	cpu0_teardown(r, &f);
}

static void test_ring_rseq_write_without_registration_counts_lost(void **state)
{
	struct rseq fake = {.cpu_id = (uint32_t)RSEQ_CPU_ID_UNINITIALIZED};
	struct rseq *rs = &fake;
	struct evr_ring_reader *r;
	struct ring_fx f;

	(void)state;
	/* Without glibc's registration (glibc.pthread.rseq=0), the real area says so. */
	if (__rseq_size == 0)
		rs = evr_rseq_area();
	assert_true(evr_rseq_cpu(rs) < 0);
	fx_setup(&f, 2, PSIZE_MIN, RING_MIN, EVR_MODE_DISCARD);
	r = reader_new(&f, 0, EVR_READER_GATING);
	assert_int_equal(rseq_write_seq(&f, rs, 0, 1, PL_HDR), -EAGAIN);
	assert_int_equal(rseq_write_seq(&f, rs, 1, 1, PL_HDR), -EAGAIN);
	flush_all(&f, 10);
	expect_lost_n(r, 2);
	free(r);
	fx_teardown(&f);
}

/*
 * An append interrupted between its stores of {head, tid_events} and its commit
 * leaves one record unpublished, which its writer writes again: the slow path
 * takes it back. A ctl->head that is no such record's start (a consumer wrote
 * it) is published again, never adopted.
 */
static void test_ring_rseq_settle_takes_back_an_interrupted_append(void **state)
{
	struct evr_ring_reader *r;
	struct evr_record rec;
	uint8_t buf[64];
	struct ring_fx f;
	uint64_t h, te;

	(void)state;
	fx_setup(&f, 1, PSIZE_MIN, RING_MIN, EVR_MODE_DISCARD);
	r = reader_new(&f, 0, EVR_READER_GATING);
	pl_fill(buf, PL_HDR, 0, 0);
	assert_int_equal(evr_ring_write_locked(&f.w[0], 1, 1, 1, buf, PL_HDR), 0);
	assert_int_equal(evr_ring_write_locked(&f.w[0], 1, 2, 1, buf, PL_HDR), 0);
	h = f.w[0].head;
	te = f.w[0].tid_events;

	/* Published up to the second record's start: the interrupted state. */
	__atomic_store_n(&f.w[0].ctl->head, h - 40, __ATOMIC_RELAXED);
	evr_ring_settle_locked(&f.w[0]);
	assert_true(f.w[0].head == h - 40);
	assert_true(f.w[0].tid_events == te - 1);
	assert_true(__atomic_load_n(&f.w[0].ctl->head, __ATOMIC_RELAXED) == h - 40);
	/* Written again (ts 3), it is read once. */
	assert_int_equal(evr_ring_write_locked(&f.w[0], 1, 3, 1, buf, PL_HDR), 0);
	assert_true(f.w[0].head == h);
	assert_int_equal(evr_ring_reader_next(r, &rec), 1);
	assert_true(rec.type == EVR_REC_EVENT && rec.ts == 1 && rec.tid == 1);
	assert_int_equal(evr_ring_reader_next(r, &rec), 1);
	assert_true(rec.type == EVR_REC_EVENT && rec.ts == 3);
	assert_int_equal(evr_ring_reader_next(r, &rec), 0);
	assert_int_equal(r->corrupt, 0);

	/*
	 * A thread new to the packet: THREAD and EVENT record, interrupted before
	 * the commit. Both are taken back, and the packet's thread is forgotten:
	 * written again, the event names its thread again.
	 */
	h = f.w[0].head;
	te = f.w[0].tid_events;
	assert_int_equal(evr_ring_write_locked(&f.w[0], 1, 4, 2, buf, PL_HDR), 0);
	assert_true(f.w[0].head == h + EVR_REC_THREAD_ASIZE + 40);
	__atomic_store_n(&f.w[0].ctl->head, h, __ATOMIC_RELAXED);
	evr_ring_settle_locked(&f.w[0]);
	assert_true(f.w[0].head == h);
	assert_true(f.w[0].tid_events == (uint32_t)te);
	assert_int_equal(evr_ring_write_locked(&f.w[0], 1, 5, 2, buf, PL_HDR), 0);
	assert_true(f.w[0].head == h + EVR_REC_THREAD_ASIZE + 40);
	assert_int_equal(evr_ring_reader_next(r, &rec), 1);
	assert_true(rec.type == EVR_REC_EVENT && rec.ts == 5 && rec.tid == 2);
	assert_int_equal(evr_ring_reader_next(r, &rec), 0);
	assert_int_equal(r->corrupt, 0);

	/* Values a consumer may have stored: ahead, far behind, in the header. */
	h = f.w[0].head;
	te = f.w[0].tid_events;
	{
		const uint64_t bad[] = { h + 40, h + 4096, h - 4096, h & ~(uint64_t)(PSIZE_MIN - 1), 0 };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			__atomic_store_n(&f.w[0].ctl->head, bad[i], __ATOMIC_RELAXED);
			evr_ring_settle_locked(&f.w[0]);
			assert_true(f.w[0].head == h && f.w[0].tid_events == te);
			assert_true(__atomic_load_n(&f.w[0].ctl->head, __ATOMIC_RELAXED) == h);
		}
	}
	free(r);
	fx_teardown(&f);
}

/* ---- the var section's copy ------------------------------------------------------- */

#if EVR_HAVE_RSEQ
/* The byte @i of the test's variable part for event @seq. */
static uint8_t var_byte(uint64_t seq, uint32_t i)
{
	return (uint8_t)(seq * 31u + i * 7u + 1u);
}

/*
 * Write event @seq through evr_ring_rseq_append_var_rcu() on CPU 0: @plen
 * bytes of fixed fields, then @n bytes at @src; the slow path when the section
 * asks for it (a packet switch).
 */
static void var_write(struct ring_fx *f, struct evr_ring_writer *_Atomic *rings, uint64_t seq,
		      uint32_t plen, const uint8_t *src, uint32_t n, uint32_t tid)
{
	uint64_t p[3] = { 0, 0, 0 };
	int ret;

	for (uint32_t i = 0; i < plen; i++)
		((uint8_t *)p)[i] = (uint8_t)(0xf0u ^ var_byte(seq, i + 1000u));
	do
		ret = evr_ring_rseq_append_var_rcu(rings, evr_rseq_area(), 0, seq,
						   evr_rseq_event_w0(event_id_of(seq), plen + n),
						   tid, p[0], p[1], p[2], plen, src, n);
	while (ret == 1);
	if (ret == 2) {
		uint8_t buf[evr_rseq_pad_size(plen + n)];
		struct evr_rseq_rec rec;

		memset(buf, 0, sizeof(buf));
		memcpy(buf, p, plen);
		memcpy(buf + plen, src, n);
		evr_rseq_rec_init(&rec, event_id_of(seq), seq, tid, buf, plen + n);
		ret = evr_ring_rseq_write(f->w, f->nr, evr_rseq_area(), &rec);
	}
	assert_int_equal(ret, 0);
}
#endif

/*
 * Every length from 0 to 300 bytes (each size class of the copy, and a loop
 * past them), after 4 to 24 bytes of fixed fields, with 32-byte moves and
 * without: the record holds exactly the fields and the bytes, its padding is
 * zero, nothing past the record is written, and the bytes are read from
 * memory that ends where they do (a PROT_NONE page follows).
 */
static void test_ring_rseq_var_copies_every_length_exactly(void **state)
{
#if EVR_HAVE_RSEQ
	static const uint32_t plens[] = { 4, 12, 20, 24, 9 };
	struct evr_ring_writer *_Atomic rings;
	const uint8_t saved_avx2 = evr_ring_copy_avx2;
	long page = sysconf(_SC_PAGESIZE);
	struct evr_ring_reader *r;
	uint64_t seq = 0, checked = 0;
	struct ring_fx f;
	uint8_t *map;

	(void)state;
	if (!rseq_usable() || !pin_cpu0()) {
		unpin();
		EVR_SKIP(rseq_usable() ? "this thread may not run on CPU 0" : "no usable rseq registration here (glibc < 2.35, glibc.pthread.rseq=0, TSan, or an old kernel)");
	}
	/* Room for every record: 2 x 301 of at most 352 bytes. */
	fx_setup(&f, (uint32_t)get_nprocs_conf(), PSIZE_MIN, 16 * RING_MIN, EVR_MODE_DISCARD);
	r = reader_new(&f, 0, EVR_READER_GATING);
	rings = f.w;
	map = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + page, (size_t)page, PROT_NONE), 0);
	for (int wide = 0; wide <= 1; wide++) {
		if (wide && !__builtin_cpu_supports("avx2")) {
			print_message("no AVX2 here: the 32-byte copy is not tested\n");
			break;
		}
		evr_ring_copy_avx2 = (uint8_t)wide;
		for (uint32_t n = 0; n <= 300; n++) {
			const uint32_t plen = plens[n % 5], tid = 1u + (n / 7u) % 2u;
			uint8_t *src = map + page - n;
			struct evr_ring_writer *w = &f.w[0];
			uint64_t pos = w->head, end, guard;
			struct evr_record rec;

			for (uint32_t i = 0; i < n; i++)
				src[i] = var_byte(seq, i);
			/* Poison what follows the write position, within the ring. */
			guard = (w->ring_mask + 1) - (pos & w->ring_mask);
			memset(w->data + (pos & w->ring_mask), 0xa5, guard < 512 ? guard : 512);
			var_write(&f, &rings, seq, plen, src, n, tid);
			end = w->head;
			if (end - pos < 512 && (end & w->ring_mask) > (pos & w->ring_mask)) {
				/* The section wrote this record (no packet switch): past its
				 * end, the poison is intact. */
				const uint8_t *q = w->data + (end & w->ring_mask);
				uint64_t left = (w->ring_mask + 1) - (end & w->ring_mask);

				for (uint64_t i = 0; i < 512 - (end - pos) && i < left; i++)
					assert_int_equal(q[i], 0xa5);
			}
			do
				assert_int_equal(evr_ring_reader_next(r, &rec), 1);
			while (rec.type != EVR_REC_EVENT);
			assert_int_equal(rec.event_id, event_id_of(seq));
			assert_true(rec.ts == seq);
			assert_int_equal(rec.tid, tid);
			assert_int_equal(rec.len, plen + n);
			for (uint32_t i = 0; i < plen; i++)
				assert_int_equal(((const uint8_t *)rec.payload)[i],
						 (uint8_t)(0xf0u ^ var_byte(seq, i + 1000u)));
			assert_memory_equal((const uint8_t *)rec.payload + plen, src, n);
			for (uint32_t k = rec.len; k % 8; k++)
				assert_int_equal(((const uint8_t *)rec.payload)[k], 0);
			checked++;
			seq++;
		}
	}
	evr_ring_copy_avx2 = saved_avx2;
	unpin();
	munmap(map, 2 * (size_t)page);
	print_message("%llu records checked\n", (unsigned long long)checked);
	cpu0_teardown(r, &f);
#else
	(void)state;
	EVR_SKIP("built without rseq support (EVR_HAVE_RSEQ is 0 on this architecture)");
#endif
}

#if EVR_HAVE_RSEQ
/* One 20-byte event through the words section on CPU 0, as a fire function writes it. */
static __attribute__((noinline)) int words_append(struct evr_ring_writer *_Atomic *rings,
						  uint64_t seq)
{
	return evr_ring_rseq_append_w3_rcu(rings, evr_rseq_area(), 0, seq,
					   evr_rseq_event_w0(7, 20), 4, seq, ~seq, 3, 0);
}

#endif

/*
 * A full ring (discard mode, the gating reader behind): the section counts each
 * drop itself, through the mem, words and var sections alike (lost_fast and
 * its shared mirror, fast_end = 0), and returns without the slow path
 * (lost_async and lost_pending do not move); a reader of a producer that died
 * now counts every drop once (evr_ring_ctl_lost()); once the reader has
 * released, the next write reports them all in one LOST record before itself.
 */
static void test_ring_rseq_full_ring_drops_in_the_section(void **state)
{
#if EVR_HAVE_RSEQ
	struct evr_ring_writer *_Atomic rings;
	struct evr_ring_reader *r;
	uint64_t seq = 0, written, fast0, async0, pending0, lost;
	static const uint8_t bytes[200] = { 1, 2, 3 };
	struct evr_record rec;
	struct ring_fx f;
	struct evr_ring_writer *w;
	int ret;

	(void)state;
	r = cpu0_setup(&f);
	w = &f.w[0];
	rings = f.w;
	while ((ret = rseq_write_seq(&f, evr_rseq_area(), seq, 3, PL_HDR + 8)) == 0)
		seq++;
	assert_int_equal(ret, -ENOSPC);
	written = seq++;
	/* The first drop may be the slow path's (the packet switch that found no
	 * room); from then on the section's. */
	fast0 = w->lost_fast;
	async0 = atomic_load(&w->lost_async);
	pending0 = w->lost_pending;
	for (int k = 0; k < 1000; k++)
		assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), seq++, 3, PL_HDR + (k % 50)),
				 -ENOSPC);
	for (int k = 0; k < 100; k++) {
		/* 0: dropped and counted, nothing left to do (var_write() takes the
		 * slow path otherwise, and asserts that it wrote). */
		assert_int_equal(words_append(&rings, seq++), 0);
		var_write(&f, &rings, seq++, 12, bytes, sizeof(bytes), 4);
	}
	assert_true(w->lost_fast == fast0 + 1200);
	assert_true(atomic_load(&w->lost_async) == async0 && w->lost_pending == pending0);
	assert_true(w->fast_end == 0);
	assert_true(w->ctl->lost_fast_total == w->lost_fast);
	lost = seq - written;
	assert_true(evr_ring_ctl_lost(w->ctl) == lost);

	for (uint64_t i = 0; i < written; i++)
		expect_event_seq(r, i, 3);
	assert_int_equal(evr_ring_reader_next(r, &rec), 0);
	evr_ring_reader_release(r);
	assert_int_equal(rseq_write_seq(&f, evr_rseq_area(), seq, 3, PL_HDR), 0);
	assert_true(w->lost_fast_absorbed == w->lost_fast);
	assert_true(w->ctl->lost_fast_absorbed == w->lost_fast);
	assert_true(evr_ring_ctl_lost(w->ctl) == lost);
	unpin();
	expect_lost_n(r, lost);
	expect_event_seq(r, seq, 3);
	cpu0_teardown(r, &f);
#else
	(void)state;
	EVR_SKIP("built without rseq support (EVR_HAVE_RSEQ is 0 on this architecture)");
#endif
}

/* ---- the fence: evr_rseq_synchronize() ------------------------------------------- */

#if EVR_HAVE_RSEQ
/* Keep the calling thread on @cpu if allowed (best effort). */
static void pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

static uint64_t fence_aborts, fence_entered, fence_last, fence_go, fence_stop;
static uint64_t fence_log[1024];	/* [gen % 1024] = gen: section gen committed */

/*
 * Round after round, a critical section that waits inside for fence_go, saying
 * so with its number in fence_entered, then commits by logging its number;
 * fence_last is the last number that committed.
 */
static void *fence_helper(void *arg)
{
	struct rseq *rs = evr_rseq_area();
	uint64_t gen = 0;

	pin_to_cpu(1);
	(void)arg;
	while (!__atomic_load_n(&fence_stop, __ATOMIC_RELAXED)) {
		gen++;
		__asm__ __volatile__ goto(EVR_RSEQ_CS_DESC("3", "1f", "2f", "4f")
					  ".pushsection __rseq_failure, \"ax\"\n\t"
					  EVR_RSEQ_ABORT_SIG
					  "4:\n\t"
					  "jmp %l[aborted]\n\t"
					  ".popsection\n\t"
					  EVR_RSEQ_ARM("3b")
					  "1:\n\t"
					  "5:\n\t"
					  "cmpq $0, (%[go])\n\t"
					  "jne 6f\n\t"
					  "movq %[gen], (%[entered])\n\t"	/* waits with go == 0 */
					  "cmpq $0, (%[stop])\n\t"
					  "je 5b\n\t"
					  "6:\n\t"
					  "movq %[gen], %%rax\n\t"
					  "andq $1023, %%rax\n\t"
					  "movq %[gen], (%[log],%%rax,8)\n\t"	/* commit */
					  "2:\n\t"
					  :
					  : [gen] "r"(gen), [entered] "r"(&fence_entered),
					    [go] "r"(&fence_go), [stop] "r"(&fence_stop),
					    [log] "r"(fence_log), [rs] "r"(rs)
					  : "rax", "memory", "cc"
					  : aborted);
		evr_rseq_clear_cs(rs);
		__atomic_store_n(&fence_last, gen, __ATOMIC_RELEASE);
		continue;
aborted:
		__atomic_add_fetch(&fence_aborts, 1, __ATOMIC_RELAXED);
		continue;
	}
	return NULL;
}
#endif

/*
 * A section that was running when evr_rseq_synchronize() was called never
 * commits after it returns: the session table's grace period relies on it for
 * the writers that load a session's rings inside their section.
 */
static void test_ring_rseq_synchronize_aborts_running_sections(void **state)
{
#if EVR_HAVE_RSEQ
	pthread_t th;
	uint64_t last = 0;
	int rounds = 0;

	(void)state;
	if (rseq_usable())
		evr_rseq_fence_register();	/* what the producer does at start-up */
	if (!rseq_usable() || !evr_rseq_fence_ok || get_nprocs() < 2)
		EVR_SKIP("%s", !rseq_usable() ? "no usable rseq registration here (glibc < 2.35, glibc.pthread.rseq=0, TSan, or an old kernel)" : !evr_rseq_fence_ok ?
			 "the kernel has no MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ" : "one CPU only");
	pin_to_cpu(0);
	__atomic_store_n(&fence_stop, 0, __ATOMIC_RELAXED);
	assert_int_equal(pthread_create(&th, NULL, fence_helper, NULL), 0);
	for (; rounds < 50; rounds++) {
		uint64_t g, c;

		__atomic_store_n(&fence_go, 0, __ATOMIC_SEQ_CST);
		/* A section that saw this round's go == 0: it began after the last commit. */
		while ((g = __atomic_load_n(&fence_entered, __ATOMIC_ACQUIRE)) <= last)
			sched_yield();
		evr_rseq_synchronize();
		__atomic_store_n(&fence_go, 1, __ATOMIC_SEQ_CST);
		while ((c = __atomic_load_n(&fence_last, __ATOMIC_ACQUIRE)) < g)
			sched_yield();
		/* g was running (or was preempted, which aborts it too): it never commits. */
		assert_true(__atomic_load_n(&fence_log[g % 1024], __ATOMIC_RELAXED) != g);
		last = c;
	}
	__atomic_store_n(&fence_stop, 1, __ATOMIC_SEQ_CST);
	assert_int_equal(pthread_join(th, NULL), 0);
	unpin();
	print_message("%d rounds, no section committed after the fence (%llu aborts)\n", rounds, (unsigned long long)fence_aborts);
#else
	(void)state;
	EVR_SKIP("built without rseq support (EVR_HAVE_RSEQ is 0 on this architecture)");
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_rseq_write_threads_and_signals_account_exactly),
		cmocka_unit_test(test_ring_rseq_write_locked_ring_counts_lost),
		cmocka_unit_test(test_ring_rseq_write_yields_to_preempted_holder),
		cmocka_unit_test(test_ring_rseq_write_without_registration_counts_lost),
		cmocka_unit_test(test_ring_rseq_settle_takes_back_an_interrupted_append),
		cmocka_unit_test(test_ring_rseq_var_copies_every_length_exactly),
		cmocka_unit_test(test_ring_rseq_full_ring_drops_in_the_section),
		cmocka_unit_test(test_ring_rseq_synchronize_aborts_running_sections),
	};

	return evr_unit_run(tests);
}
