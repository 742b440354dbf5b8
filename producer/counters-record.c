// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Counters: recording a value (evr_counter_record(), evr_counter_add(),
 * evr_histogram_record()) in a few nanoseconds, wait-free, and folding what was
 * recorded into cumulative totals on the counters thread.
 *
 * Protocol
 * --------
 * Accumulators. Each thread that records owns a block (struct ctr_thread),
 * found through a TLS pointer, with a table, indexed by counter index, of its
 * accumulators (struct ctr_acc), one per counter it records into. An
 * accumulator has two cells (histograms also two bucket arrays), one per parity
 * of the global epoch E. While recording, only the owner writes its cells, with
 * plain (relaxed) loads and stores: no atomic read-modify-write, no barrier.
 *
 * Epochs. E only grows; the counters thread advances it at every tick of any
 * session and when a session starts. A record loads E and adds its value to
 * cell[E & 1]. After advancing E from g to g+1, the counters thread waits until
 * no record that loaded g is still running, folds cell[g & 1] of every
 * accumulator into the counter's cumulative totals (and its min and max into
 * the running extremes of every sampling session), and clears it for epoch g+2.
 * Every record thus lands, whole, in exactly one epoch, and a session's
 * interval is a run of whole epochs: its count, sums, min and max describe the
 * same records. Sessions take differences of the cumulative totals between
 * their own ticks (counters.c), so they never disturb each other.
 *
 * In flight. t->seq is odd while its owner is inside a record (or allocating).
 *   record:  seq = s + 1; compiler barrier; p = load-acquire(E) & 1;
 *            update cell[p]; store-release(seq, s + 2)
 *   advance: store(E, g + 1); membarrier(); s0 = load-acquire(seq);
 *            if s0 is odd, wait until seq != s0; fold and clear cell[g & 1]
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) runs a full barrier on every CPU
 * that runs one of our threads. A record that loaded g did so before that
 * barrier on its CPU, so its odd seq (stored before the load, in program
 * order) is visible to the advance, which then waits for it; a record whose odd
 * seq the advance does not see loads g + 1. One wait covers every record of
 * epoch g, and the record path has no barrier at all. The store-release of seq
 * pairs with the advance's acquire loads (the cells of a finished record are
 * visible to the fold); the clearing of cell[g & 1] comes before the
 * store of E = g + 2 (seq_cst, so also a release) that recorders load-acquire
 * before they use that parity again. Where membarrier is unavailable, both
 * sides issue a seq_cst fence instead (the store-buffering pattern).
 *
 * Nesting. A signal handler that records while its thread is inside a record
 * (seq odd) must not touch the thread's cells: the interrupted
 * read-modify-write would overwrite its update. It sees the odd seq and takes
 * the fallback: the counter's shared cells, updated with atomic
 * read-modify-writes (lock-free; a sum's compare-and-swap retries only when
 * another fallback record raced on it). The fallback also serves threads
 * without a block (first record inside a handler that interrupted the slow
 * path, out of memory, a thread past its exit hook). It uses E the same way,
 * with a per-parity in-flight count instead of seq: increment inflight[E & 1]
 * (seq_cst), re-check E (else undo and retry), update, decrement (release).
 * The advance waits for inflight[g & 1] == 0 (its seq_cst store of E and
 * seq_cst load of the count: one side sees the other), and clears the shared
 * cells by atomic exchange, so that a record it stopped waiting for is never
 * lost. A handler that interrupts a record before its odd store runs a whole
 * record of its own first; the interrupted record then stores a stale odd seq
 * (the sequence goes back by 2, which the advance's "changed" test tolerates),
 * loads E only after it, and reads the cells the handler left: nothing lost.
 *
 * Memory. Blocks, tables and accumulators come from per-thread chunks of
 * anonymous memory (mmap: async-signal-safe, no allocator lock, and histogram
 * buckets are backed only where touched). A table grows by copy; the old one
 * stays in the chunks. An accumulator of a freed counter is stale (its id is
 * not the id of the counter that took its index): reused in place by a counter
 * of the same kind, else kept on a per-thread spare list by kind.
 *
 * Thread exit. A pthread key destructor marks the block dead (store-release;
 * pairs with the advance's acquire load). The next advance folds both of its
 * cells (a thread may die having recorded in the epoch just begun), unlinks the
 * block and unmaps its chunks. Records that the exiting thread makes later
 * (other TLS destructors) take the fallback.
 *
 * The thread list is pushed by recorders (CAS on its head) and read and pruned
 * only under the counters lock, so removal needs no more than one CAS on the
 * head (or a plain store into a predecessor: pushers never write an interior
 * link).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "counters-record-internal.h"

#define CHUNK_SIZE (64u << 10)
#define CHUNK_HDR 64u
#define TAB_MIN 16u
/* How the fold waits for a record in flight: spin, yield, then sleep until a
 * deadline (a recorder preempted mid-record on a loaded machine). */
#define WAIT_SPINS 256
#define WAIT_YIELDS 64
#define WAIT_SLEEP_NS 20000
#define WAIT_MAX_NS 2000000000ull
#define KINDS EVR_COUNTER_KIND_MAX_

struct ctr_chunk {
	struct ctr_chunk *next;
	size_t len;
};

struct ctr_acc {
	_Atomic uint64_t id; /* the counter's: store-release by the owner, acquire by the fold */
	uint32_t kind;
	struct ctr_acc *spare_next;
	struct evr_ctr_cell cell[2];
	_Atomic uint64_t buckets[]; /* HISTOGRAM: 2 * EVR_HIST_BUCKETS, parity-major */
};

struct ctr_tab {
	uint32_t cap;
	_Atomic(struct ctr_acc *) slot[];
};

struct ctr_thread {
	_Atomic uint32_t seq; /* odd: inside a record or the slow path */
	_Atomic uint32_t dead;
	_Atomic(struct ctr_tab *) tab;
	struct ctr_thread *next;
	/* The owner's; the counters thread's once dead. */
	struct ctr_chunk *chunks;
	char *bump, *bump_end;
	struct ctr_acc *spare[KINDS];
	/* The counters thread's: an odd seq it gave up waiting on. */
	uint32_t stuck_seq;
} __attribute__((aligned(64)));

_Atomic uint64_t evr_ctr_sampled;
static _Atomic uint64_t ctr_epoch;
/* membarrier(2) unusable: a seq_cst fence in every record. Set before any
 * session samples (published by the release of evr_ctr_sampled). */
static _Atomic bool ctr_fence;
static _Atomic(struct ctr_thread *) ctr_threads;
static __thread struct ctr_thread *ctr_self __attribute__((tls_model("initial-exec")));
/* The block of threads that cannot have one: odd seq, so every record takes
 * the fallback. Never written. */
static struct ctr_thread ctr_none = {.seq = 1};
/* Both written at load (ctr_init()): EVR_LOAD_DATA. */
EVR_LOAD_DATA static pthread_key_t ctr_key;
EVR_LOAD_DATA static _Atomic bool ctr_key_ok;
/* Counter indices in use and the last id given; counters lock. */
static uint64_t *idx_used;
static uint32_t idx_words;
static uint64_t last_id;

/* ---- the cells ------------------------------------------------------------------------- */

static inline void own_inc(_Atomic uint64_t *a)
{
	atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

static inline void own_add(_Atomic double *a, double v)
{
	atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

static inline void own_mean(struct evr_ctr_cell *k, double v)
{
	own_inc(&k->count);
	own_add(&k->sum, v);
	own_add(&k->sumsq, v * v);
	if (v < atomic_load_explicit(&k->min, memory_order_relaxed))
		atomic_store_explicit(&k->min, v, memory_order_relaxed);
	if (v > atomic_load_explicit(&k->max, memory_order_relaxed))
		atomic_store_explicit(&k->max, v, memory_order_relaxed);
}

static void cell_reset(struct evr_ctr_cell *k)
{
	atomic_store_explicit(&k->count, 0, memory_order_relaxed);
	atomic_store_explicit(&k->sum, 0, memory_order_relaxed);
	atomic_store_explicit(&k->sumsq, 0, memory_order_relaxed);
	atomic_store_explicit(&k->min, INFINITY, memory_order_relaxed);
	atomic_store_explicit(&k->max, -INFINITY, memory_order_relaxed);
}

/*
 * The bucket of @v: what frexp() gives (v = m * 2^e, 0.5 <= m < 1, sub-bucket
 * from the top 4 bits of 2m - 1), read from the bits of the double: every
 * bucketed value (>= 2^-32) is normal.
 */
static inline uint32_t hist_index(double v)
{
	uint64_t b;
	int e;

	if (!(v >= 0x1p-32)) /* NaN too */
		return 0;
	if (v >= 0x1p64)
		return EVR_HIST_BUCKETS - 1;
	memcpy(&b, &v, sizeof(b));
	e = (int)(b >> 52) - 1022;
	return 1u + (uint32_t)(e - EVR_HIST_EXP_MIN) * EVR_HISTOGRAM_SUB_BUCKETS +
	       (uint32_t)(b >> (52 - 4) & (EVR_HISTOGRAM_SUB_BUCKETS - 1));
}
_Static_assert(EVR_HISTOGRAM_SUB_BUCKETS == 16, "hist_index() takes 4 mantissa bits");

/* ---- the fast path ----------------------------------------------------------------------- */

/* Whether @r records now: its kind, and a session samples it. */
static inline bool ctr_on(const struct evr_ctr_rec *r, uint32_t kind)
{
	/* Acquire: pairs with the release in evr_counters_session_begin_locked(), which
	 * comes after evr_ctr_sampler_start() set ctr_fence. */
	uint64_t sampled = atomic_load_explicit(&evr_ctr_sampled, memory_order_acquire);

	if (EVR_LIKELY(!sampled) || !r || r->kind != kind)
		return false;
	return sampled & atomic_load_explicit(&r->ev->mask, memory_order_relaxed);
}

/* This thread's live accumulator of @r, or NULL. Context: the owner. */
static inline struct ctr_acc *acc_find(struct ctr_thread *t, const struct evr_ctr_rec *r)
{
	struct ctr_tab *tab = atomic_load_explicit(&t->tab, memory_order_relaxed);
	struct ctr_acc *a;

	if (EVR_UNLIKELY(!tab || r->idx >= tab->cap))
		return NULL;
	a = atomic_load_explicit(&tab->slot[r->idx], memory_order_relaxed);
	if (EVR_UNLIKELY(!a || atomic_load_explicit(&a->id, memory_order_relaxed) != r->id))
		return NULL;
	return a;
}

/* Open a record at even seq @s; returns the parity of the epoch it is in. */
static inline uint32_t rec_enter(struct ctr_thread *t, uint32_t s)
{
	atomic_store_explicit(&t->seq, s + 1, memory_order_relaxed);
	/* The odd seq before the load of E (see "In flight"); membarrier() in
	 * evr_ctr_advance_locked() is the barrier. */
	atomic_signal_fence(memory_order_seq_cst);
	if (EVR_UNLIKELY(atomic_load_explicit(&ctr_fence, memory_order_relaxed)))
		atomic_thread_fence(memory_order_seq_cst); /* pairs with the advance's fence */
	/* Pairs with the seq_cst store of E in evr_ctr_advance_locked(): this
	 * parity's cells were cleared before it. */
	return (uint32_t)atomic_load_explicit(&ctr_epoch, memory_order_acquire) & 1;
}

static inline void rec_exit(struct ctr_thread *t, uint32_t s)
{
	/* Pairs with the acquire loads of seq in quiesce(): the cells are in. */
	atomic_store_explicit(&t->seq, s + 2, memory_order_release);
}

static void record_slow(struct evr_ctr_rec *r, double v);

/*
 * This thread's block and its accumulator of @r, with the block's even seq in
 * @ret_seq, or false (then the slow path).
 */
static inline bool fast_get(const struct evr_ctr_rec *r, struct ctr_thread **ret_t,
			    struct ctr_acc **ret_a, uint32_t *ret_seq)
{
	struct ctr_thread *t = ctr_self;
	uint32_t s;

	if (EVR_UNLIKELY(!t))
		return false;
	s = atomic_load_explicit(&t->seq, memory_order_relaxed);
	if (EVR_UNLIKELY(s & 1)) /* nested in a record of this thread */
		return false;
	*ret_a = acc_find(t, r);
	if (EVR_UNLIKELY(!*ret_a))
		return false;
	*ret_t = t;
	*ret_seq = s;
	return true;
}

static inline void hist_own(struct ctr_acc *a, uint32_t p, double v, uint32_t bucket)
{
	own_inc(&a->cell[p].count);
	own_add(&a->cell[p].sum, v);
	own_inc(&a->buckets[(size_t)p * EVR_HIST_BUCKETS + bucket]);
}

void evr_counter_record(struct evr_counter *c, double v)
{
	struct evr_ctr_rec *r = (struct evr_ctr_rec *)c;
	struct ctr_thread *t;
	struct ctr_acc *a;
	uint32_t s;

	if (!ctr_on(r, EVR_COUNTER_MEAN))
		return;
	if (EVR_UNLIKELY(!fast_get(r, &t, &a, &s))) {
		record_slow(r, v);
		return;
	}
	own_mean(&a->cell[rec_enter(t, s)], v);
	rec_exit(t, s);
}

void evr_counter_add(struct evr_counter *c, double delta)
{
	struct evr_ctr_rec *r = (struct evr_ctr_rec *)c;
	struct ctr_thread *t;
	struct ctr_acc *a;
	uint32_t s;

	if (!ctr_on(r, EVR_COUNTER_INCREMENT))
		return;
	if (EVR_UNLIKELY(!fast_get(r, &t, &a, &s))) {
		record_slow(r, delta);
		return;
	}
	own_add(&a->cell[rec_enter(t, s)].sum, delta);
	rec_exit(t, s);
}

void evr_histogram_record(struct evr_counter *c, double v)
{
	struct evr_ctr_rec *r = (struct evr_ctr_rec *)c;
	struct ctr_thread *t;
	struct ctr_acc *a;
	uint32_t s, b;

	if (!ctr_on(r, EVR_COUNTER_HISTOGRAM))
		return;
	if (EVR_UNLIKELY(!fast_get(r, &t, &a, &s))) {
		record_slow(r, v);
		return;
	}
	b = hist_index(v);
	hist_own(a, rec_enter(t, s), v, b);
	rec_exit(t, s);
}

/* ---- the slow path: a block, an accumulator, or the fallback ----------------------------- */

static inline void add_double(_Atomic double *a, double v)
{
	double cur = atomic_load_explicit(a, memory_order_relaxed);

	while (!atomic_compare_exchange_weak_explicit(a, &cur, cur + v, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

/* The fallback: @r's shared cells. See "Nesting". */
static void fb_record(struct evr_ctr_rec *r, double v)
{
	struct evr_ctr_fallback *f = &r->fb;
	struct evr_ctr_cell *k;
	uint64_t e;
	uint32_t p;
	double cur;

	for (;;) {
		e = atomic_load_explicit(&ctr_epoch, memory_order_seq_cst);
		p = (uint32_t)e & 1;
		/* seq_cst, like the re-check of E: against the advance's seq_cst
		 * store of E and load of inflight in fb_wait(). */
		atomic_fetch_add_explicit(&f->inflight[p], 1, memory_order_seq_cst);
		if (atomic_load_explicit(&ctr_epoch, memory_order_seq_cst) == e)
			break;
		atomic_fetch_sub_explicit(&f->inflight[p], 1, memory_order_relaxed);
	}
	k = &f->cell[p];
	switch (r->kind) {
	case EVR_COUNTER_MEAN:
		atomic_fetch_add_explicit(&k->count, 1, memory_order_relaxed);
		add_double(&k->sum, v);
		add_double(&k->sumsq, v * v);
		cur = atomic_load_explicit(&k->min, memory_order_relaxed);
		while (v < cur && !atomic_compare_exchange_weak_explicit(&k->min, &cur, v,
									 memory_order_relaxed,
									 memory_order_relaxed))
			;
		cur = atomic_load_explicit(&k->max, memory_order_relaxed);
		while (v > cur && !atomic_compare_exchange_weak_explicit(&k->max, &cur, v,
									 memory_order_relaxed,
									 memory_order_relaxed))
			;
		break;
	case EVR_COUNTER_INCREMENT:
		add_double(&k->sum, v);
		break;
	case EVR_COUNTER_HISTOGRAM:
		atomic_fetch_add_explicit(&f->buckets[(size_t)p * EVR_HIST_BUCKETS + hist_index(v)],
					  1, memory_order_relaxed);
		atomic_fetch_add_explicit(&k->count, 1, memory_order_relaxed);
		add_double(&k->sum, v);
		break;
	}
	/* Pairs with the acquire load in fb_wait(): the updates come first. */
	atomic_fetch_sub_explicit(&f->inflight[p], 1, memory_order_release);
}

/* Library memory for @t: 64-byte aligned, zeroed when new. Context: the owner, odd seq. */
static void *arena_alloc(struct ctr_thread *t, size_t size)
{
	void *p;

	size = (size + 63) & ~(size_t)63;
	if ((size_t)(t->bump_end - t->bump) < size) {
		size_t len = size + CHUNK_HDR <= CHUNK_SIZE ?
				     CHUNK_SIZE :
				     (size + CHUNK_HDR + 4095) & ~(size_t)4095;
		struct ctr_chunk *ch =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (ch == MAP_FAILED)
			return NULL;
		ch->len = len;
		ch->next = t->chunks;
		t->chunks = ch;
		t->bump = (char *)ch + CHUNK_HDR;
		t->bump_end = (char *)ch + len;
	}
	p = t->bump;
	t->bump += size;
	return p;
}

/* Give this thread a block. NULL: it records through the fallback from now on. */
static struct ctr_thread *thread_register(void)
{
	struct ctr_thread *t = NULL, *head;
	struct ctr_chunk *ch;

	/* Records nested in this one take the fallback meanwhile (odd seq). One
	 * instruction: a handler that ran before it registered the thread. */
	if (!__atomic_compare_exchange_n(&ctr_self, &t, &ctr_none, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return t == &ctr_none ? NULL : t;
	if (!atomic_load_explicit(&ctr_key_ok, memory_order_relaxed))
		return NULL;
	ch = mmap(NULL, CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ch == MAP_FAILED)
		return NULL;
	_Static_assert(sizeof(struct ctr_chunk) <= CHUNK_HDR, "chunk header");
	ch->len = CHUNK_SIZE;
	t = (struct ctr_thread *)(void *)((char *)ch + CHUNK_HDR);
	t->chunks = ch;
	t->bump = (char *)(t + 1);
	t->bump_end = (char *)ch + CHUNK_SIZE;
	/* The exit hook; glibc keeps keys below 32 in the thread descriptor, no
	 * allocation (the key is created at load, among the first). */
	if (pthread_setspecific(ctr_key, t) != 0) {
		munmap(ch, CHUNK_SIZE);
		return NULL;
	}
	head = atomic_load_explicit(&ctr_threads, memory_order_relaxed);
	do
		t->next = head;
	/* Release: pairs with the acquire load of the head in
	 * evr_ctr_advance_locked(): the block is initialized. */
	while (!atomic_compare_exchange_weak_explicit(&ctr_threads, &head, t, memory_order_release,
						      memory_order_relaxed));
	atomic_signal_fence(memory_order_seq_cst);
	ctr_self = t;
	return t;
}

static void thread_exit(void *arg)
{
	struct ctr_thread *t = arg;

	ctr_self = &ctr_none;
	atomic_signal_fence(memory_order_seq_cst);
	/* Pairs with the acquire load of dead in evr_ctr_advance_locked(): every
	 * record of this thread is in its cells. The block is not ours any more. */
	atomic_store_explicit(&t->dead, 1, memory_order_release);
}

static size_t acc_size(uint32_t kind)
{
	return sizeof(struct ctr_acc) +
	       (kind == EVR_COUNTER_HISTOGRAM ? 2 * EVR_HIST_BUCKETS * sizeof(uint64_t) : 0);
}

/* An accumulator of @r for @t, published in its table. Context: the owner, odd seq. */
static struct ctr_acc *acc_make(struct ctr_thread *t, const struct evr_ctr_rec *r)
{
	struct ctr_tab *tab = atomic_load_explicit(&t->tab, memory_order_relaxed);
	struct ctr_acc *a, *old;
	bool fresh = false;

	if (!tab || r->idx >= tab->cap) {
		struct ctr_tab *nt;
		uint32_t cap = TAB_MIN;

		while (cap <= r->idx)
			cap *= 2;
		nt = arena_alloc(t, sizeof(*nt) + cap * sizeof(nt->slot[0]));
		if (!nt)
			return NULL;
		nt->cap = cap;
		for (uint32_t i = 0; tab && i < tab->cap; i++)
			atomic_store_explicit(&nt->slot[i],
					      atomic_load_explicit(&tab->slot[i],
								   memory_order_relaxed),
					      memory_order_relaxed);
		/* Pairs with the acquire load of t->tab in fold_thread(). The old
		 * table stays valid (in the chunks) for a fold reading it now. */
		atomic_store_explicit(&t->tab, nt, memory_order_release);
		tab = nt;
	}
	old = atomic_load_explicit(&tab->slot[r->idx], memory_order_relaxed);
	if (old && old->kind == r->kind) {
		/* Stale (its counter was freed), same kind: reused in place. The
		 * fold skips it until its id is @r's. */
		a = old;
	} else {
		a = t->spare[r->kind];
		if (a) {
			t->spare[r->kind] = a->spare_next;
		} else {
			a = arena_alloc(t, acc_size(r->kind));
			if (!a)
				return NULL;
			a->kind = r->kind;
			fresh = true; /* zeroed buckets */
		}
		if (old) {
			old->spare_next = t->spare[old->kind];
			t->spare[old->kind] = old;
		}
	}
	for (int p = 0; p < 2; p++)
		cell_reset(&a->cell[p]);
	if (a->kind == EVR_COUNTER_HISTOGRAM && !fresh)
		for (uint32_t i = 0; i < 2 * EVR_HIST_BUCKETS; i++)
			atomic_store_explicit(&a->buckets[i], 0, memory_order_relaxed);
	/* Pairs with the acquire load of the id in fold_thread(): reset cells. */
	atomic_store_explicit(&a->id, r->id, memory_order_release);
	/* Pairs with the acquire load of the slot in fold_thread(). */
	atomic_store_explicit(&tab->slot[r->idx], a, memory_order_release);
	return a;
}

/*
 * A record that missed the fast path: this thread's first (a block), its first
 * into @r (an accumulator), or one nested in a record (the fallback).
 */
static __attribute__((noinline)) void record_slow(struct evr_ctr_rec *r, double v)
{
	struct ctr_thread *t = ctr_self;
	struct ctr_acc *a;
	uint32_t s, p;

	if (!t)
		t = thread_register();
	if (!t)
		goto fallback;
	s = atomic_load_explicit(&t->seq, memory_order_relaxed);
	if (s & 1)
		goto fallback;
	a = acc_find(t, r);
	if (!a) {
		/* Odd while allocating: a nested record takes the fallback. */
		atomic_store_explicit(&t->seq, s + 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		a = acc_make(t, r);
		rec_exit(t, s);
		if (!a)
			goto fallback;
		/* A handler may have recorded since: its seq. */
		s = atomic_load_explicit(&t->seq, memory_order_relaxed);
	}
	p = rec_enter(t, s);
	switch (r->kind) {
	case EVR_COUNTER_MEAN:
		own_mean(&a->cell[p], v);
		break;
	case EVR_COUNTER_INCREMENT:
		own_add(&a->cell[p].sum, v);
		break;
	case EVR_COUNTER_HISTOGRAM:
		hist_own(a, p, v, hist_index(v));
		break;
	}
	rec_exit(t, s);
	return;
fallback:
	fb_record(r, v);
}

/* ---- the fold (counters thread) ------------------------------------------------------------ */

struct waiter {
	int rounds;
	uint64_t deadline;
};

/* One more round of waiting; false once past the deadline. */
static bool wait_more(struct waiter *w)
{
	uint64_t now;

	if (w->rounds < WAIT_SPINS + WAIT_YIELDS) {
		if (w->rounds++ < WAIT_SPINS)
			__builtin_ia32_pause();
		else
			sched_yield();
		return true;
	}
	now = evr_clock_gettime_ns(CLOCK_MONOTONIC);
	if (!w->deadline)
		w->deadline = now + WAIT_MAX_NS;
	if (now >= w->deadline)
		return false;
	nanosleep(&(struct timespec){.tv_nsec = WAIT_SLEEP_NS}, NULL);
	return true;
}

/*
 * Wait until @t has no record in flight that began before now (see "In
 * flight"). False when one is still in flight after WAIT_MAX_NS: a handler that
 * never returned into the record it interrupted (longjmp). Its cells are then
 * left alone, folded at a later advance if it ever moves on or exits (records
 * land in a later epoch, whole); meanwhile its records take the fallback
 * (odd seq), and later advances do not wait for it again.
 */
static bool quiesce(struct ctr_thread *t)
{
	/* Acquire: pairs with the store-release of seq in rec_exit(). */
	uint32_t s0 = atomic_load_explicit(&t->seq, memory_order_acquire);
	struct waiter w = {0};

	if (!(s0 & 1))
		return true;
	if (s0 == t->stuck_seq)
		return false;
	while (atomic_load_explicit(&t->seq, memory_order_acquire) == s0) {
		if (!wait_more(&w)) {
			t->stuck_seq = s0;
			return false;
		}
	}
	return true;
}

static inline uint64_t take_u64(_Atomic uint64_t *a, bool shared)
{
	uint64_t v;

	if (shared)
		return atomic_exchange_explicit(a, 0, memory_order_relaxed);
	v = atomic_load_explicit(a, memory_order_relaxed);
	if (v)
		atomic_store_explicit(a, 0, memory_order_relaxed);
	return v;
}

static inline double take_f64(_Atomic double *a, double reset, bool shared)
{
	double v;

	if (shared)
		return atomic_exchange_explicit(a, reset, memory_order_relaxed);
	v = atomic_load_explicit(a, memory_order_relaxed);
	atomic_store_explicit(a, reset, memory_order_relaxed);
	return v;
}

/*
 * Fold one epoch's cell @k (and buckets @b) into @r and clear it. @shared: the
 * fallback's, which late records may still update (atomic exchanges).
 */
static void fold_cell(struct evr_ctr_rec *r, struct evr_ctr_cell *k, _Atomic uint64_t *b,
		      uint64_t slots, bool shared)
{
	uint64_t n;
	double mn, mx;

	if (r->kind == EVR_COUNTER_INCREMENT) {
		r->sum += take_f64(&k->sum, 0, shared);
		return;
	}
	n = take_u64(&k->count, shared);
	if (!n)
		return;
	r->count += n;
	r->sum += take_f64(&k->sum, 0, shared);
	if (r->kind == EVR_COUNTER_HISTOGRAM) {
		for (uint32_t i = 0; i < EVR_HIST_BUCKETS; i++)
			r->buckets[i] += take_u64(&b[i], shared);
		return;
	}
	r->sumsq += take_f64(&k->sumsq, 0, shared);
	mn = take_f64(&k->min, INFINITY, shared);
	mx = take_f64(&k->max, -INFINITY, shared);
	for (; slots; slots &= slots - 1) {
		unsigned int i = (unsigned int)__builtin_ctzll(slots);

		r->smin[i] = mn < r->smin[i] ? mn : r->smin[i];
		r->smax[i] = mx > r->smax[i] ? mx : r->smax[i];
	}
}

static bool recorded(const struct evr_ctr_rec *r)
{
	return r->kind == EVR_COUNTER_MEAN || r->kind == EVR_COUNTER_INCREMENT ||
	       r->kind == EVR_COUNTER_HISTOGRAM;
}

/* Fold @t's cells of parity @p (both when @dead) of every counter in @list. */
static void fold_thread(struct ctr_thread *t, struct evr_ctr_rec *list, uint32_t p, uint64_t slots,
			bool dead)
{
	/* Acquire: pairs with the store-release in acc_make(). */
	struct ctr_tab *tab = atomic_load_explicit(&t->tab, memory_order_acquire);

	if (!tab)
		return;
	for (struct evr_ctr_rec *r = list; r; r = r->next) {
		struct ctr_acc *a;

		if (!recorded(r) || r->idx >= tab->cap)
			continue;
		/* Acquire: pairs with the store-releases in acc_make(). */
		a = atomic_load_explicit(&tab->slot[r->idx], memory_order_acquire);
		if (!a || atomic_load_explicit(&a->id, memory_order_acquire) != r->id)
			continue;
		for (uint32_t q = 0; q < 2; q++) {
			if (q == p || dead)
				fold_cell(r, &a->cell[q],
					  r->kind == EVR_COUNTER_HISTOGRAM ?
						  &a->buckets[(size_t)q * EVR_HIST_BUCKETS] :
						  NULL,
					  slots, false);
		}
	}
}

/*
 * Wait until no fallback record of @r is in epoch parity @p (at most
 * WAIT_MAX_NS: the exchanges in fold_cell() lose nothing anyway).
 */
static void fb_wait(struct evr_ctr_rec *r, uint32_t p)
{
	struct waiter w = {0};

	/* seq_cst: see fb_record(); also acquire, pairing with its release. */
	while (atomic_load_explicit(&r->fb.inflight[p], memory_order_seq_cst))
		if (!wait_more(&w))
			return;
}

/* Unlink dead @t (after @prev, NULL: maybe the head); returns @t's predecessor now. */
static struct ctr_thread *thread_unlink(struct ctr_thread *prev, struct ctr_thread *t)
{
	struct ctr_thread *head = t;

	if (prev) {
		prev->next = t->next; /* pushers never write an interior link */
		return prev;
	}
	/* Acquire (on failure too): pairs with the CAS-release in
	 * thread_register(), for the links of threads pushed since. */
	if (atomic_compare_exchange_strong_explicit(&ctr_threads, &head, t->next,
						    memory_order_acquire, memory_order_acquire))
		return NULL;
	/* Threads were pushed in front of it since: it is interior now. */
	for (prev = head; prev->next != t; prev = prev->next)
		;
	prev->next = t->next;
	return prev;
}

static void thread_free(struct ctr_thread *t)
{
	struct ctr_chunk *ch = t->chunks, *next;

	/* The block is in one of its chunks: read the links first. */
	for (; ch; ch = next) {
		next = ch->next;
		munmap(ch, ch->len);
	}
}

void evr_ctr_advance_locked(struct evr_ctr_rec *list, uint64_t slots)
{
	uint64_t g = atomic_load_explicit(&ctr_epoch, memory_order_relaxed);
	uint32_t p = (uint32_t)g & 1;
	struct ctr_thread *t, *prev = NULL, *next;

	/* seq_cst: against fb_record() (see there); a release for rec_enter():
	 * the cells of parity 1 - p were cleared by the previous advance. */
	atomic_store_explicit(&ctr_epoch, g + 1, memory_order_seq_cst);
	if (atomic_load_explicit(&ctr_fence, memory_order_relaxed) ||
	    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) < 0)
		atomic_thread_fence(memory_order_seq_cst); /* pairs with rec_enter()'s */
	/* Acquire: pairs with the CAS-release in thread_register(). */
	for (t = atomic_load_explicit(&ctr_threads, memory_order_acquire); t; t = next) {
		/* Acquire: pairs with the store-release in thread_exit(). */
		bool dead = atomic_load_explicit(&t->dead, memory_order_acquire);

		next = t->next;
		if (dead || quiesce(t))
			fold_thread(t, list, p, slots, dead);
		if (dead) {
			prev = thread_unlink(prev, t);
			thread_free(t);
		} else {
			prev = t;
		}
	}
	for (struct evr_ctr_rec *r = list; r; r = r->next) {
		if (!recorded(r))
			continue;
		fb_wait(r, p);
		fold_cell(r, &r->fb.cell[p],
			  r->fb.buckets ? &r->fb.buckets[(size_t)p * EVR_HIST_BUCKETS] : NULL,
			  slots, true);
	}
}

void evr_ctr_sampler_start(void)
{
	/* Once per process (and again in a child: the registration is per mm). */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) < 0)
		atomic_store_explicit(&ctr_fence, true, memory_order_relaxed);
}

/* ---- counter lifetime ---------------------------------------------------------------------- */

int evr_ctr_rec_init_locked(struct evr_ctr_rec *r, uint32_t kind)
{
	uint32_t i;

	r->kind = kind;
	for (i = 0; i < idx_words * 64u && (idx_used[i / 64] >> (i % 64) & 1); i++)
		;
	if (i == idx_words * 64u) {
		uint32_t n = idx_words ? 2 * idx_words : 1;
		uint64_t *u = realloc(idx_used, n * sizeof(*u));

		if (!u)
			return -ENOMEM;
		memset(u + idx_words, 0, (n - idx_words) * sizeof(*u));
		idx_used = u;
		idx_words = n;
	}
	if (kind == EVR_COUNTER_HISTOGRAM) {
		r->buckets = calloc(EVR_HIST_BUCKETS, sizeof(*r->buckets));
		r->fb.buckets = calloc(2 * EVR_HIST_BUCKETS, sizeof(*r->fb.buckets));
		if (!r->buckets || !r->fb.buckets)
			return -ENOMEM;
	}
	for (int p = 0; p < 2; p++) {
		atomic_init(&r->fb.inflight[p], 0);
		cell_reset(&r->fb.cell[p]);
	}
	for (uint32_t s = 0; s < EVR_MAX_SESSIONS; s++) {
		r->smin[s] = INFINITY;
		r->smax[s] = -INFINITY;
	}
	idx_used[i / 64] |= 1ull << (i % 64);
	r->idx = i;
	r->id = ++last_id;
	return 0;
}

void evr_ctr_rec_fini_locked(struct evr_ctr_rec *r)
{
	if (r->id)
		idx_used[r->idx / 64] &= ~(1ull << (r->idx % 64));
	r->id = 0;
	free(r->buckets);
	free((void *)r->fb.buckets);
	r->buckets = NULL;
	r->fb.buckets = NULL;
}

void evr_ctr_fork_child_locked(struct evr_ctr_rec *list)
{
	/* Only this thread exists here; the others' blocks go at the next advance. */
	for (struct ctr_thread *t = atomic_load_explicit(&ctr_threads, memory_order_relaxed); t;
	     t = t->next)
		if (t != ctr_self)
			atomic_store_explicit(&t->dead, 1, memory_order_relaxed);
	for (struct evr_ctr_rec *r = list; r; r = r->next)
		for (int p = 0; p < 2; p++)
			atomic_store_explicit(&r->fb.inflight[p], 0, memory_order_relaxed);
}

__attribute__((constructor)) static void ctr_init(void)
{
	atomic_store_explicit(&ctr_key_ok, pthread_key_create(&ctr_key, thread_exit) == 0,
			      memory_order_relaxed);
}

void evr_ctr_fini(void)
{
	/* The exit hook must not outlive this code (dlclose()); threads that exit
	 * after this leave their blocks behind. */
	if (atomic_exchange_explicit(&ctr_key_ok, false, memory_order_relaxed))
		pthread_key_delete(ctr_key);
}
