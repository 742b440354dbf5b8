// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The built-in "Heap" provider: sampled allocations with call stacks, and the
 * frees of the sampled blocks (docs/memory.md, shared/research/memory.md).
 *
 * Nothing happens until a session enables the provider: then the enable
 * callback points the GOT slots of malloc, calloc, realloc, free,
 * aligned_alloc, posix_memalign, memalign, valloc, reallocarray, and mmap,
 * munmap and mremap (anonymous mappings, a kind of their own: Mmap and Munmap
 * events; mremap as the unmap of the old range and the mapping of the new) in
 * every loaded module at the hooks below (heap-got.c); when the last such session
 * ends it puts them back. The hooks stay mapped and keep working, so a thread
 * that entered one before the restore passes straight through. A child forked
 * while they were in has no session: the registry's fork handler switches the
 * provider off there, which puts its slots back (the patcher's flag is reset
 * first, its holder being a thread the child does not have), and ours empties
 * the tables (heap_fork_child()). Free and Munmap carry no stack
 * (EVR_EVENT_F_NOSTACK): consumers match them by address.
 *
 * Sampling (Poisson by bytes, as tcmalloc and Go do): every byte is marked
 * with probability 1/RATE. Each thread counts down the bytes until its next
 * mark (tls_left), drawn from an exponential distribution of mean RATE; an
 * allocation that takes the count below zero is sampled and a fresh count is
 * drawn. A block of S bytes is thus sampled with probability 1 - exp(-S/RATE),
 * which consumers divide by (the event carries S and RATE). The hook decides
 * before the call: when not sampling, it subtracts from the count and jumps to
 * the real function (no frame, no lock, no atomic); free()'s hook loads one
 * count of its page (below) and jumps.
 *
 * Frees: the addresses of sampled blocks live in two fixed open-addressing
 * tables (lock-free: insert and remove by compare-and-swap, a removed key
 * becomes a tombstone that later inserts reuse, or empty where an empty slot
 * follows it, probes bounded), a small near one that stays in cache and a big
 * far one for the blocks the near one has no room for (tab_insert()). A free
 * looks its address up only when its page has sampled blocks (filt), in the
 * far table only while it holds keys, and the Free event of a sampled block
 * is written before the real free, so the address cannot be handed out again
 * and sampled before its Free is written. A block the hash had no room for is
 * sampled anyway, flagged untracked, and consumers leave it out of what is in
 * use.
 *
 * Reentrancy: the sampled path sets a per-thread flag (initial-exec TLS, which
 * never allocates): an allocation made while it is set (by the write path's
 * first use of liburcu on a thread, or by a signal handler that interrupted
 * the sampled path) passes through unsampled. The hash and the write path are
 * lock-free and signal-safe; the only lock, the patcher's, is tried, never
 * waited for, from a hook.
 *
 * Modules loaded after the session started are patched from a sampled
 * allocation (every 8th of a thread) that finds dl_iterate_phdr()'s load count
 * changed. (Hooking
 * dlopen() itself would make libevring its caller, which changes the search
 * path of a dlopen() of a bare name: RUNPATH and $ORIGIN are the caller's.)
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <x86intrin.h>

#include "fmath-internal.h"
#include "heap-internal.h"
#include "registry-internal.h"

#define EVR_HEAP_DEFAULT_RATE (512u * 1024u)
#define NEAR_BITS 9u
#define NEAR_SIZE (1u << NEAR_BITS)
#define NEAR_PROBE 8u
#define TAB_BITS 18u
#define TAB_SIZE (1u << TAB_BITS)
#define MAX_PROBE 32u
#define TOMB ((uintptr_t)1)
#define FILT_BITS 20u
#define FILT_SIZE (1u << FILT_BITS)
#define MAP_SLOTS 1024u

/* Alloc's flags. */
#define HEAP_F_UNTRACKED 1u	/* its free will not be reported: leave it out of in-use */

#define TLS __thread __attribute__((tls_model("initial-exec")))

static const struct evr_field_desc alloc_fields[] = {
	{ "address", EVR_TYPE_PTR }, { "size", EVR_TYPE_U64 }, { "rate", EVR_TYPE_U64 },
	{ "flags", EVR_TYPE_U64 },
};
static const struct evr_field_desc free_fields[] = { { "address", EVR_TYPE_PTR } };
static const struct evr_event_desc alloc_desc = {
	.name = "Alloc", .id = 1, .level = EVR_LEVEL_LOGALWAYS, .nfields = 4, .fields = alloc_fields,
};
static const struct evr_event_desc free_desc = {
	.name = "Free", .id = 2, .level = EVR_LEVEL_LOGALWAYS, .nfields = 1, .fields = free_fields,
};
/* Anonymous mappings: Mmap has Alloc's fields; Munmap the address of the mapping's
 * Mmap and the bytes it lost (all of them, or a part). */
static const struct evr_field_desc munmap_fields[] = {
	{ "address", EVR_TYPE_PTR }, { "size", EVR_TYPE_U64 },
};
static const struct evr_event_desc mmap_desc = {
	.name = "Mmap", .id = 3, .level = EVR_LEVEL_LOGALWAYS, .nfields = 4, .fields = alloc_fields,
};
static const struct evr_event_desc munmap_desc = {
	.name = "Munmap", .id = 4, .level = EVR_LEVEL_LOGALWAYS, .nfields = 2,
	.fields = munmap_fields,
};
static struct evr_event alloc_ev = { .desc = &alloc_desc };
/* Frees and unmaps are matched by address: no stack, even where the session asks for them
 * (half the sampled path's bytes in the ring, and its walk, saved). */
static struct evr_event free_ev = { .desc = &free_desc, .flags = EVR_EVENT_F_NOSTACK };
static struct evr_event mmap_ev = { .desc = &mmap_desc };
static struct evr_event munmap_ev = { .desc = &munmap_desc, .flags = EVR_EVENT_F_NOSTACK };
static struct evr_event *const heap_events[] = { &alloc_ev, &free_ev, &mmap_ev, &munmap_ev,
						 NULL };

static TLS uint64_t tls_left;	/* bytes until this thread's next mark; 0: none drawn yet */
static TLS uint64_t tls_rng;	/* 0: not seeded */
static TLS uint32_t tls_gen;	/* heap_gen its count was drawn for */
static TLS uint8_t tls_busy;	/* in the sampled path */
static TLS uint8_t tls_samples;	/* this thread's samples, modulo 256 */

static _Atomic uint64_t heap_rate = EVR_HEAP_DEFAULT_RATE;
static _Atomic uint32_t heap_gen = 1;
static _Atomic bool heap_on;

/*
 * A key of a table of sampled blocks (0 empty, TOMB removed, else an address) beside
 * the estimated bytes its block stands for: one cache line for both, as the far table
 * is too big to stay in a cache.
 */
struct tab_ent {
	_Atomic uintptr_t key;
	_Atomic uint64_t w;
};

/*
 * How many keys of the tables each 4 KiB page of addresses has, the pages taken modulo
 * FILT_SIZE (4 GiB): a free whose page has none is told apart with one load,
 * never a look into a table. By page, not by a hash of the address: the blocks a
 * program frees one after the other lie near each other, so their counts share
 * a cache line (a hash made one free in five miss L1 in evring-bench-heap).
 * 256 MiB, not 32: glibc gives each thread's arena a heap aligned to 64 MiB, the
 * heaps of threads started together usually side by side, and taken modulo 32 MiB
 * two threads' blocks at the same offset in their heaps shared a count: a cache
 * line that each thread's samples wrote and the other's frees read, and each
 * thread's frees looked in the tables for the other's samples (evring-bench-heap
 * heap 2: 67,000-68,000 lookups for 8 M frees, 41,000 modulo 256 MiB, 2 x 20,000 on
 * one thread). Folding the higher bits into the index instead cost free()'s hook
 * three instructions (callgrind: 494.2 instructions a pair against 491.7).
 * A byte a page, indexed by the low 32 bits of the address shifted (the pages modulo
 * 4 GiB): free()'s hook is then a 32-bit move, a shift and a compare of a byte to
 * memory, where a 16-bit count modulo 256 MiB needed a move, a shift, a zero
 * extension of the index, a load and a test (callgrind: two instructions of each
 * free()), and 64 adjacent heaps are apart. A byte saturates at 255 (a 4 KiB page
 * holds at most 128 of glibc's blocks; more only where pages 4 GiB apart add up).
 */
/* In .bss, not in the tables' mapping: the hook addresses it without loading a pointer (1 MiB
 * of zero pages until a session enables Heap, which faults them in). */
static _Atomic uint8_t filt[FILT_SIZE];
/* The totals of all sampled blocks: what the Memory provider's counters show
 * (heap-counters.c). */
/* Striped by thread id, each stripe a cache line of its own: threads that sample at
 * the same time would otherwise pass one line back and forth for each sample and each
 * matched free (a reader sums them). A free adds to its own thread's stripe, so one
 * stripe's live bytes may go below 0; the sum does not. */
#define EST_STRIPES 16u
static struct {
	_Atomic int64_t live;
	_Atomic uint64_t allocated;
} __attribute__((aligned(64))) est[EST_STRIPES];

static inline uint32_t est_stripe(void)
{
	return evr_thread_id() & (EST_STRIPES - 1u);
}

/* The functions the hooks call, set before any slot points at a hook. */
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static void *(*real_aligned_alloc)(size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_reallocarray)(void *, size_t, size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);

/* ---- the hash of sampled addresses -------------------------------------------------- */

/* One open-addressing table of tab_ent: @mask + 1 entries, homes from the top @bits of
 * a multiplicative hash. */
struct htab {
	struct tab_ent *e;
	uint32_t mask, bits, probe;
};

static struct htab near_tab = { NULL, NEAR_SIZE - 1u, NEAR_BITS, NEAR_PROBE };
static struct htab far_tab = { NULL, TAB_SIZE - 1u, TAB_BITS, MAX_PROBE };
/* Keys in far_tab: a free looks there only when not 0 (and the key was not in near). */
static _Atomic uint32_t far_keys;

static inline uint32_t tab_home(const struct htab *t, uintptr_t a)
{
	return (uint32_t)(((uint64_t)a >> 4) * 0x9e3779b97f4a7c15ull >> (64u - t->bits));
}

static inline uint32_t filt_of(uintptr_t a)
{
	return (uint32_t)a >> 12;
}

static bool htab_insert(const struct htab *t, uintptr_t a, uint64_t w)
{
	uint32_t h = tab_home(t, a);

	for (uint32_t i = 0; i < t->probe; i++) {
		struct tab_ent *e = &t->e[(h + i) & t->mask];
		_Atomic uintptr_t *s = &e->key;
		uintptr_t v = atomic_load_explicit(s, memory_order_relaxed);

		if ((v == 0 || v == TOMB) &&
		    atomic_compare_exchange_strong_explicit(s, &v, a, memory_order_relaxed,
							    memory_order_relaxed)) {
			/* The key's remover reads it after the block was handed out: after this. */
			atomic_store_explicit(&e->w, w, memory_order_relaxed);
			return true;
		}
	}
	return false;
}

/*
 * Near first: it is small (8 KiB) and prefaulted, so while few sampled blocks are
 * alive at a time (the common case: a block stays sampled only as long as it
 * lives) no insert or free misses a cache or faults. A block whose near window is
 * full goes to the big table, counted in far_keys before it is there, so that its
 * free (after the block was handed out: after this) sees the count.
 */
static bool tab_insert(uintptr_t a, uint64_t w)
{
	if (!htab_insert(&near_tab, a, w)) {
		atomic_fetch_add_explicit(&far_keys, 1, memory_order_relaxed);
		if (!htab_insert(&far_tab, a, w)) {
			atomic_fetch_sub_explicit(&far_keys, 1, memory_order_relaxed);
			return false;
		}
	}
	atomic_fetch_add_explicit(&est[est_stripe()].live, (int64_t)w, memory_order_relaxed);
	/* Saturates: a page at the top stays "maybe" for good. A compare-and-swap, not a
	 * check and an add, so that two threads adding to 254 at once cannot wrap it to 0
	 * (the byte is that near its top; the sampled path can afford it). */
	for (uint8_t c = atomic_load_explicit(&filt[filt_of(a)], memory_order_relaxed);
	     c < UINT8_MAX && !atomic_compare_exchange_weak_explicit(
				      &filt[filt_of(a)], &c, (uint8_t)(c + 1u),
				      memory_order_relaxed, memory_order_relaxed);)
		;
	return true;
}

/*
 * A tombstone that an empty slot follows ends no probe that could find a key
 * past it: it becomes empty, and so do the tombstones just before it, so that
 * misses stay short. (An insert racing into the slot after it, found empty
 * here, could be cut off from its home: that key's free would go unreported,
 * a sampled block counted in use. Both are rare events, sampled ones.) Each
 * slot is loaded before its compare-and-swap, which is tried on tombstones
 * only: the slot before a removed key usually holds a key or nothing, and a
 * failed compare-and-swap costs a locked instruction all the same.
 */
static void tab_trim(const struct htab *t, uint32_t i)
{
	while (atomic_load_explicit(&t->e[(i + 1) & t->mask].key, memory_order_relaxed) == 0) {
		uintptr_t x = TOMB;

		if (atomic_load_explicit(&t->e[i].key, memory_order_relaxed) != TOMB ||
		    !atomic_compare_exchange_strong_explicit(&t->e[i].key, &x, 0, memory_order_relaxed,
							     memory_order_relaxed))
			return;
		i = (i - 1) & t->mask;
	}
}

/*
 * Return: whether @a was in @t (now removed), its weight in @ret_w. A key that
 * an empty slot follows is emptied at once rather than made a tombstone that
 * tab_trim() would empty next (the same race as there): one compare-and-swap
 * for the common removal, not two, and the tombstones before it trimmed.
 */
static inline bool htab_remove(const struct htab *t, uintptr_t a, uint64_t *ret_w)
{
	uint32_t h = tab_home(t, a);

	for (uint32_t i = 0; i < t->probe; i++) {
		uint32_t k = (h + i) & t->mask;
		uintptr_t v = atomic_load_explicit(&t->e[k].key, memory_order_relaxed);

		if (v == a) {
			bool last = atomic_load_explicit(&t->e[(k + 1) & t->mask].key,
							 memory_order_relaxed) == 0;

			*ret_w = atomic_load_explicit(&t->e[k].w, memory_order_relaxed);
			if (!atomic_compare_exchange_strong_explicit(&t->e[k].key, &v,
								     last ? 0 : TOMB,
								     memory_order_relaxed,
								     memory_order_relaxed))
				return false;
			if (last)
				tab_trim(t, (k - 1) & t->mask);
			return true;
		}
		if (v == 0)
			return false;
	}
	return false;
}

/* Return: whether @a was there (and is now removed). */
static inline bool tab_remove(uintptr_t a)
{
	uint64_t w = 0;

	if (!atomic_load_explicit(&filt[filt_of(a)], memory_order_relaxed))
		return false;
	if (!htab_remove(&near_tab, a, &w)) {
		if (!atomic_load_explicit(&far_keys, memory_order_relaxed) ||
		    !htab_remove(&far_tab, a, &w))
			return false;
		atomic_fetch_sub_explicit(&far_keys, 1, memory_order_relaxed);
	}
	atomic_fetch_sub_explicit(&est[est_stripe()].live, (int64_t)w, memory_order_relaxed);
	if (atomic_load_explicit(&filt[filt_of(a)], memory_order_relaxed) < UINT8_MAX)
		atomic_fetch_sub_explicit(&filt[filt_of(a)], 1, memory_order_relaxed);
	return true;
}

/* ---- sampling ---------------------------------------------------------------------- */

/* An exponential count of mean heap_rate bytes (xorshift64*, inverse CDF). */
static uint64_t draw(uint64_t rate)
{
	double u;

	tls_rng ^= tls_rng >> 12;
	tls_rng ^= tls_rng << 25;
	tls_rng ^= tls_rng >> 27;
	/* 53 random bits, never 0: the log stays finite (u is normal). */
	u = ((double)((tls_rng * 0x2545f4914f6cdd1dull) >> 11) + 0.5) * 0x1p-53;
	return (uint64_t)(-evr_log_pos(u) * (double)rate) + 1;
}

static void emit_free(uintptr_t a)
{
	uint64_t w = a;

	if (tls_busy)
		return;
	tls_busy = 1;
	if (evr_event_enabled(&free_ev))
		(void)evr_event_write(&free_ev, &w, sizeof(w));
	tls_busy = 0;
}

static void repatch(void);

/*
 * The mapping of a sampled anonymous mmap() that munmap() has not removed yet,
 * or one piece of it after a munmap() of a part: @key is the address the
 * mapping's Mmap event carries (its start when it was made), which the Munmap
 * events of all its pieces name. 0: a free entry.
 */
struct map_ent {
	uintptr_t key, lo, hi;
};

/* Entries in use in maps (the munmap() hook looks at the table only when not 0),
 * and the highest index used + 1, which bounds its scans. */
static _Atomic uint32_t nmaps;
static uint32_t maps_top;
static struct map_ent *maps;	/* MAP_SLOTS, in the mapping of the tables */
/* Taken by the sampled mmap() path and by munmap() while a sampled mapping is
 * alive, for a scan of maps_top entries; a thread holding it has tls_busy set,
 * so a signal handler that interrupts it passes by (it never spins on itself). */
static atomic_flag maps_lock = ATOMIC_FLAG_INIT;
/* Held by a sampled path while it calls dl_iterate_phdr(), which holds the loader's
 * lock: fork() waits for it, or the child would inherit that lock held by a thread it
 * does not have, and its first dl_iterate_phdr() (libevring's fork handler's restore
 * of the slots) would wait for ever. */
static atomic_flag dl_busy = ATOMIC_FLAG_INIT;

static void maps_acquire(void)
{
	while (atomic_flag_test_and_set_explicit(&maps_lock, memory_order_acquire))
		sched_yield();
}

static void maps_release(void)
{
	atomic_flag_clear_explicit(&maps_lock, memory_order_release);
}

/* Context: maps_lock held. Return: whether there was room. */
static bool maps_add(uintptr_t key, uintptr_t lo, uintptr_t hi)
{
	for (uint32_t i = 0; i < MAP_SLOTS; i++) {
		if (maps[i].key)
			continue;
		maps[i] = (struct map_ent){ key, lo, hi };
		if (i >= maps_top)
			maps_top = i + 1;
		atomic_fetch_add_explicit(&nmaps, 1, memory_order_relaxed);
		return true;
	}
	return false;
}

static void emit_unmap(uintptr_t key, uint64_t bytes)
{
	uint64_t rec[2] = { key, bytes };

	if (evr_event_enabled(&munmap_ev))
		(void)evr_event_write(&munmap_ev, rec, sizeof(rec));
}

static inline uintptr_t page_end(uintptr_t a, size_t len)
{
	uintptr_t b = a + ((len + 4095u) & ~(size_t)4095u);

	return b < a ? UINTPTR_MAX : b;
}

/*
 * [@a, @b) is no longer mapped (munmap(), a MAP_FIXED mmap() over it, the old
 * place of an mremap()): each sampled mapping it overlaps gets a Munmap event
 * with the bytes it loses, and keeps the pieces left on either side (a hole in
 * the middle splits it in two entries of the same key). A piece the table has
 * no room for is reported unmapped too: the estimate then misses it, rather
 * than keeping it forever.
 * Context: maps_lock held, tls_busy set.
 */
static void unmap_locked(uintptr_t a, uintptr_t b)
{
	for (uint32_t i = 0, top = maps_top; i < top; i++) {
		struct map_ent e = maps[i];

		if (!e.key || e.hi <= a || e.lo >= b)
			continue;
		if (e.lo < a && b < e.hi) {
			maps[i].hi = a;
			if (!maps_add(e.key, b, e.hi)) {
				emit_unmap(e.key, e.hi - a);
				continue;
			}
			emit_unmap(e.key, b - a);
		} else if (e.lo < a) {
			maps[i].hi = a;
			emit_unmap(e.key, e.hi - a);
		} else if (b < e.hi) {
			maps[i].lo = b;
			emit_unmap(e.key, b - e.lo);
		} else {
			maps[i].key = 0;
			atomic_fetch_sub_explicit(&nmaps, 1, memory_order_relaxed);
			emit_unmap(e.key, e.hi - e.lo);
		}
	}
}

/* [@a, @a + @len) is being unmapped: unmap_locked() under the lock. */
static __attribute__((noinline)) void note_unmap(uintptr_t a, size_t len)
{
	if (tls_busy || !len)
		return;
	tls_busy = 1;
	maps_acquire();
	unmap_locked(a, page_end(a, len));
	maps_release();
	tls_busy = 0;
}

/*
 * The fast path of every allocating hook: whether this thread's next mark falls
 * within the next @n bytes. When not, which is nearly always: a TLS load, a
 * subtract and a store, no lock, no atomic, no frame. A count of 0 (a thread's
 * first allocation) always takes the sampled path, which draws one.
 */
static inline bool marked(size_t n)
{
	bool under;

	/* One read-modify-write of the count: a wrap below zero (the borrow) is the mark.
	 * On x86-64 a `sub` to memory and a branch on its carry, where the compiler's
	 * __builtin_sub_overflow() made a load, a `sub` and a store (callgrind: one
	 * instruction of each malloc()). */
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
	__asm__("subq %2, %0" : "+m"(tls_left), "=@ccc"(under) : "er"((uint64_t)n));
#else
	uint64_t l;

	under = __builtin_sub_overflow(tls_left, (uint64_t)n, &l);
	tls_left = l;
#endif
	return EVR_UNLIKELY(under);
}

/*
 * The mark of this thread fell within an allocation of @n bytes at @p (NULL:
 * failed) of kind @mmap: draw the next count, and sample the block unless this
 * is the thread's first count for the current rate (then the mark was drawn
 * now, and the block sampled only if it lies within the block).
 */
static __attribute__((noinline)) void sample_alloc(void *p, size_t n, bool mmap)
{
	uint64_t rate = atomic_load_explicit(&heap_rate, memory_order_relaxed);
	uint32_t gen = atomic_load_explicit(&heap_gen, memory_order_relaxed);
	uint64_t rec[4], w;

	if (tls_busy) {
		/* The count wrapped: a new one (log() does not allocate), the mark is lost. */
		tls_left = draw(rate);
		return;
	}
	tls_busy = 1;
	if (EVR_UNLIKELY(tls_gen != gen)) {
		uint64_t d;

		if (!tls_rng)
			tls_rng = (__rdtsc() ^ ((uint64_t)evr_thread_id() << 32)) | 1u;
		tls_gen = gen;
		d = draw(rate);
		if (n < d) {
			tls_left = d - n;
			goto out;
		}
	}
	tls_left = draw(rate);
	if (!p || !atomic_load_explicit(&heap_on, memory_order_relaxed))
		goto out;
	/* New modules: looked for every 8th sample of a thread (the loader's lock, twice),
	 * under dl_busy (heap_fork_prepare()); skipped while another thread looks. */
	if (EVR_UNLIKELY(!(tls_samples++ & 7u)) &&
	    !atomic_flag_test_and_set_explicit(&dl_busy, memory_order_acquire)) {
		if (evr_heap_got_modules_changed())
			repatch();
		atomic_flag_clear_explicit(&dl_busy, memory_order_release);
	}
	if (!evr_event_enabled(mmap ? &mmap_ev : &alloc_ev))
		goto out;
	rec[0] = (uintptr_t)p;
	rec[1] = n;
	rec[2] = rate;
	rec[3] = 0;
	if (mmap) {
		maps_acquire();
		if (!maps_add((uintptr_t)p, (uintptr_t)p, (uintptr_t)p + n))
			rec[3] = HEAP_F_UNTRACKED;
		maps_release();
		(void)evr_event_write(&mmap_ev, rec, sizeof(rec));
		goto out;
	}
	/* What it stands for (consumers compute the same from the event). */
	w = (uint64_t)((double)n / -evr_expm1_neg(-(double)(n ? n : 1) / (double)rate));
	atomic_fetch_add_explicit(&est[est_stripe()].allocated, w, memory_order_relaxed);
	/* Either order works: no other thread can free the block before we return it. */
	if (!tab_insert((uintptr_t)p, w))
		rec[3] = HEAP_F_UNTRACKED;
	(void)evr_event_write(&alloc_ev, rec, sizeof(rec));
out:
	tls_busy = 0;
}

/*
 * Whether @p may be a sampled block: one load from the table of counts by page
 * (a block nobody sampled is told apart there, never by a miss into tab). NULL
 * may say yes: free_sampled() checks.
 */
static inline bool maybe_sampled(const void *p)
{
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
	/* A compare of the byte to 0 in memory (a relaxed load: one byte is read whole),
	 * where the compiler's atomic load made a load and a test. */
	bool nz;

	__asm__("cmpb $0, %1" : "=@ccnz"(nz) : "m"(*(const uint8_t *)&filt[filt_of((uintptr_t)p)]));
	return nz;
#else
	return atomic_load_explicit(&filt[filt_of((uintptr_t)p)], memory_order_relaxed) != 0;
#endif
}

/* A block about to be freed that may be sampled: its Free goes out before the real
 * free(), so the address cannot be handed out again and sampled before it. */
static __attribute__((noinline)) void note_free(void *p)
{
	if (p && tab_remove((uintptr_t)p))
		emit_free((uintptr_t)p);
}

/* ---- the hooks --------------------------------------------------------------------- */

/*
 * Each hook decides before the call whether it samples, so that the common
 * case is a tail call to the real function: no frame of its own, and the
 * allocator returns straight to the program. The sampled paths are out of line
 * (noinline): their frame lies on the program's, so the stack of the event
 * starts at the caller of malloc() (stack.c drops libevring's frames).
 */
static __attribute__((noinline)) void *malloc_sampled(size_t n)
{
	void *p = real_malloc(n);

	sample_alloc(p, n, false);
	return p;
}

static void *hook_malloc(size_t n)
{
	if (EVR_LIKELY(!marked(n)))
		return real_malloc(n);
	return malloc_sampled(n);
}

static __attribute__((noinline)) void *calloc_sampled(size_t m, size_t n)
{
	void *p = real_calloc(m, n);

	sample_alloc(p, m * n, false);
	return p;
}

static void *hook_calloc(size_t m, size_t n)
{
	size_t t;

	if (__builtin_mul_overflow(m, n, &t) || EVR_LIKELY(!marked(t)))
		return real_calloc(m, n);
	return calloc_sampled(m, n);
}

/* The old block's free comes before the call, for the reason note_free() gives;
 * a realloc() that fails leaves it allocated but no longer counted. */
static __attribute__((noinline)) void *realloc_sampled(void *p, size_t n)
{
	void *q = real_realloc(p, n);

	sample_alloc(q, n, false);
	return q;
}

/* The old block's free comes before the call, for the reason note_free() gives;
 * a realloc() that fails leaves it allocated but no longer counted. */
static void *hook_realloc(void *p, size_t n)
{
	if (EVR_UNLIKELY(maybe_sampled(p)))
		note_free(p);
	if (!n || EVR_LIKELY(!marked(n)))
		return real_realloc(p, n);
	return realloc_sampled(p, n);
}

static void *hook_reallocarray(void *p, size_t m, size_t n)
{
	size_t t;

	if (__builtin_mul_overflow(m, n, &t))
		return real_reallocarray(p, m, n);
	if (maybe_sampled(p))
		note_free(p);
	if (EVR_LIKELY(!marked(t)))
		return real_reallocarray(p, m, n);
	/* realloc() makes the same block of the same size. */
	return realloc_sampled(p, t);
}

static __attribute__((noinline)) void free_sampled(void *p)
{
	note_free(p);
	real_free(p);
}

static void hook_free(void *p)
{
	if (EVR_UNLIKELY(maybe_sampled(p)))
		free_sampled(p);
	else
		real_free(p);
}

static __attribute__((noinline)) void *aligned_sampled(size_t a, size_t n, bool mem)
{
	void *p = mem ? real_memalign(a, n) : real_aligned_alloc(a, n);

	sample_alloc(p, n, false);
	return p;
}

static void *hook_aligned_alloc(size_t a, size_t n)
{
	if (EVR_LIKELY(!marked(n)))
		return real_aligned_alloc(a, n);
	return aligned_sampled(a, n, false);
}

static void *hook_memalign(size_t a, size_t n)
{
	if (EVR_LIKELY(!marked(n)))
		return real_memalign(a, n);
	return aligned_sampled(a, n, true);
}

static __attribute__((noinline)) int posix_memalign_sampled(void **ret, size_t a, size_t n)
{
	int err = real_posix_memalign(ret, a, n);

	sample_alloc(err ? NULL : *ret, n, false);
	return err;
}

static int hook_posix_memalign(void **ret, size_t a, size_t n)
{
	if (EVR_LIKELY(!marked(n)))
		return real_posix_memalign(ret, a, n);
	return posix_memalign_sampled(ret, a, n);
}

static __attribute__((noinline)) void *valloc_sampled(size_t n)
{
	void *p = real_valloc(n);

	sample_alloc(p, n, false);
	return p;
}

static void *hook_valloc(size_t n)
{
	if (EVR_LIKELY(!marked(n)))
		return real_valloc(n);
	return valloc_sampled(n);
}

/*
 * Anonymous mappings, a kind of their own (Mmap and Munmap events), sampled by
 * the same count of bytes (page-rounded, as they are mapped). A MAP_FIXED
 * mmap() replaces what was mapped there: an unmap of that range first.
 */
static __attribute__((noinline)) void *mmap_sampled(void *a, size_t len, int prot, int flags,
						    int fd, off_t off, bool mark)
{
	size_t pl = (len + 4095u) & ~(size_t)4095u;
	void *p;

	if (flags & MAP_FIXED)
		note_unmap((uintptr_t)a, len);
	p = real_mmap(a, len, prot, flags, fd, off);
	if (!mark && (flags & MAP_ANONYMOUS) && len)
		mark = marked(pl);
	if (mark)
		sample_alloc(p == MAP_FAILED ? NULL : p, pl, true);
	return p;
}

static void *hook_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
	if (EVR_UNLIKELY(flags & MAP_FIXED) && atomic_load_explicit(&nmaps, memory_order_relaxed))
		return mmap_sampled(a, len, prot, flags, fd, off, false);
	if (!(flags & MAP_ANONYMOUS) || !len || EVR_LIKELY(!marked((len + 4095u) & ~(size_t)4095u)))
		return real_mmap(a, len, prot, flags, fd, off);
	return mmap_sampled(a, len, prot, flags, fd, off, true);
}

static int hook_munmap(void *a, size_t len)
{
	if (EVR_UNLIKELY(atomic_load_explicit(&nmaps, memory_order_relaxed)))
		note_unmap((uintptr_t)a, len);
	return real_munmap(a, len);
}

/*
 * mremap() is followed as realloc() is: the old range's sampled mappings get
 * their Munmap (when the call succeeds: a failed one leaves them mapped), so do
 * those a MREMAP_FIXED destination replaced, and
 * the new mapping is an allocation of its size, sampled by the count like any
 * anonymous mmap(). The table's lock is held across the call while a sampled
 * mapping is alive, so that another thread that maps the range this one frees
 * (and samples it) writes its Mmap after our Munmap, never before.
 */
static __attribute__((noinline)) void *mremap_sampled(void *a, size_t olen, size_t nlen,
						      int flags, void *na, bool mark)
{
	bool held = false;
	void *p;

	if (!tls_busy && atomic_load_explicit(&nmaps, memory_order_relaxed)) {
		tls_busy = 1;
		maps_acquire();
		held = true;
	}
	p = real_mremap(a, olen, nlen, flags, na);
	if (held) {
		if (p != MAP_FAILED) {
			unmap_locked((uintptr_t)a, page_end((uintptr_t)a, olen));
			/* A fixed destination replaced what was mapped there. */
			if (flags & MREMAP_FIXED)
				unmap_locked((uintptr_t)p, page_end((uintptr_t)p, nlen));
		}
		maps_release();
		tls_busy = 0;
	}
	if (mark)
		sample_alloc(p == MAP_FAILED ? NULL : p, (nlen + 4095u) & ~(size_t)4095u, true);
	return p;
}

static void *hook_mremap(void *a, size_t olen, size_t nlen, int flags, ...)
{
	void *na = NULL;
	bool mark;

	/* The new address is read only when the flags say it is there, as the kernel does. */
	if (flags & MREMAP_FIXED) {
		va_list ap;

		va_start(ap, flags);
		na = va_arg(ap, void *);
		va_end(ap);
	}
	mark = nlen && marked((nlen + 4095u) & ~(size_t)4095u);
	if (EVR_LIKELY(!mark) && !atomic_load_explicit(&nmaps, memory_order_relaxed))
		return real_mremap(a, olen, nlen, flags, na);
	return mremap_sampled(a, olen, nlen, flags, na, mark);
}

static const struct evr_heap_sym heap_syms[] = {
	{ "malloc", (uintptr_t)hook_malloc },
	{ "calloc", (uintptr_t)hook_calloc },
	{ "realloc", (uintptr_t)hook_realloc },
	{ "free", (uintptr_t)hook_free },
	{ "aligned_alloc", (uintptr_t)hook_aligned_alloc },
	{ "posix_memalign", (uintptr_t)hook_posix_memalign },
	{ "memalign", (uintptr_t)hook_memalign },
	{ "valloc", (uintptr_t)hook_valloc },
	{ "reallocarray", (uintptr_t)hook_reallocarray },
	{ "mmap", (uintptr_t)hook_mmap },
	{ "mmap64", (uintptr_t)hook_mmap },
	{ "munmap", (uintptr_t)hook_munmap },
	{ "mremap", (uintptr_t)hook_mremap },
};
#define NSYMS ((uint32_t)(sizeof(heap_syms) / sizeof(heap_syms[0])))

static __attribute__((noinline, cold)) void repatch(void)
{
	(void)evr_heap_got_patch(heap_syms, NSYMS, false);
}

/* ---- the provider ------------------------------------------------------------------ */

static uint64_t rate_arg(const struct evr_provider_spec *args)
{
	const char *v = args ? evr_provider_spec_arg(args, "rate") : NULL;
	char *end;
	unsigned long long r;

	if (!v)
		return EVR_HEAP_DEFAULT_RATE;
	errno = 0;
	r = strtoull(v, &end, 10);
	if (errno || end == v || *end || *v == '-' || r == 0 || r > (1ull << 40))
		return EVR_HEAP_DEFAULT_RATE;
	return r;
}

/* Context: registry lock (the provider's enable callback). */
static void heap_enable(struct evr_provider *p, bool enabled, uint8_t level, uint64_t keywords,
			const struct evr_provider_spec *args, void *ctx)
{
	(void)p, (void)level, (void)keywords, (void)ctx;
	if (!enabled) {
		atomic_store_explicit(&heap_on, false, memory_order_relaxed);
		(void)evr_heap_got_restore();
		return;
	}
	if (!far_tab.e) {
		size_t nb = NEAR_SIZE * sizeof(struct tab_ent), tb = TAB_SIZE * sizeof(struct tab_ent);
		char *m = mmap(NULL, nb + tb + MAP_SLOTS * sizeof(*maps), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (m == MAP_FAILED)
			return;
		/*
		 * The near table's pages and filt's are faulted in here, not by the
		 * first samples (a fault costs more than a sample's path). No hook
		 * looks into m yet; filt's counts may be in use by hooks of an
		 * earlier session's samples, so they are touched by adding 0. The
		 * far table is touched only as it fills.
		 */
		memset(m, 0, nb);
		for (uint32_t i = 0; i < FILT_SIZE; i += 4096u / sizeof(filt[0]))
			atomic_fetch_add_explicit(&filt[i], 0, memory_order_relaxed);
		/* Never unmapped: hooks may look into it at any time after. */
		maps = (struct map_ent *)(m + nb + tb);
		near_tab.e = (struct tab_ent *)m;
		far_tab.e = (struct tab_ent *)(m + nb);
	}
	/*
	 * libevring's own references are bound to the program's allocator (its
	 * GOT is never patched), whichever module defines it. Resolved here, not
	 * with dlsym(), which would take the loader's lock under the registry
	 * lock, the reverse of a constructor registering a provider.
	 */
	real_malloc = malloc;
	real_calloc = calloc;
	real_realloc = realloc;
	real_free = free;
	real_aligned_alloc = aligned_alloc;
	real_posix_memalign = posix_memalign;
	real_memalign = memalign;
	real_valloc = valloc;
	real_reallocarray = reallocarray;
	real_mmap = mmap;
	real_munmap = munmap;
	real_mremap = mremap;
	if (atomic_load_explicit(&heap_rate, memory_order_relaxed) != rate_arg(args)) {
		atomic_store_explicit(&heap_rate, rate_arg(args), memory_order_relaxed);
		atomic_fetch_add_explicit(&heap_gen, 1, memory_order_relaxed);
	}
	atomic_store_explicit(&heap_on, true, memory_order_relaxed);
	/* Release: a thread that jumps to a hook through a slot sees the pointers above. */
	atomic_thread_fence(memory_order_release);
	(void)evr_heap_got_patch(heap_syms, NSYMS, true);
}

static struct evr_provider heap_prov = {
	.name = "Heap", .events = heap_events, .callback = heap_enable,
};

void evr_heap_estimates(double *ret_live, double *ret_allocated)
{
	int64_t l = 0;
	uint64_t a = 0;

	for (uint32_t i = 0; i < EST_STRIPES; i++) {
		l += atomic_load_explicit(&est[i].live, memory_order_relaxed);
		a += atomic_load_explicit(&est[i].allocated, memory_order_relaxed);
	}
	*ret_live = l > 0 ? (double)l : 0;
	*ret_allocated = (double)a;
}

bool evr_heap_provider_by_name_only(const struct evr_provider *p)
{
	return p == &heap_prov;
}

/* ---- fork -------------------------------------------------------------------------- */

/* Whether this thread took maps_lock in heap_fork_prepare(). */
static TLS uint8_t tls_fork_held;

/*
 * The table of mappings is under a spin lock that another thread may hold at
 * the moment of fork(): the child would inherit it held by a thread it does
 * not have, and its first munmap() under a later Heap session would spin for
 * ever. So fork() waits for it. Not when this thread is itself in the sampled
 * path (a signal handler that interrupted it calls fork()): it may hold the
 * lock, and releases it in both processes when the handler returns.
 */
static void heap_fork_prepare(void)
{
	if (tls_busy)
		return;
	maps_acquire();
	/* And no sampled path inside dl_iterate_phdr() (dl_busy): the loader's lock free. */
	while (atomic_flag_test_and_set_explicit(&dl_busy, memory_order_acquire))
		sched_yield();
	tls_fork_held = 1;
}

static void heap_fork_parent(void)
{
	if (tls_fork_held) {
		tls_fork_held = 0;
		atomic_flag_clear_explicit(&dl_busy, memory_order_release);
		maps_release();
	}
}

/*
 * The child has no session (the registry's handler switches the provider off,
 * which puts the slots back), and none of the parent's samples: the blocks and
 * mappings they name are the parent's to report. Its tables start empty, so
 * that a session the child starts later neither reports frees of blocks it
 * never sampled nor counts them in its estimates. A thread that was inside a
 * table at the fork is not in the child; a key it left half-written goes too.
 */
static void heap_fork_child(void)
{
	if (!tls_fork_held)
		return;	/* this thread holds the tables (see heap_fork_prepare()): left as they are */
	if (far_tab.e) {
		memset(near_tab.e, 0, NEAR_SIZE * sizeof(struct tab_ent));
		/* Zero pages again, not faulted in by a memset() of 4 MiB. */
		if (atomic_load_explicit(&far_keys, memory_order_relaxed))
			(void)madvise(far_tab.e, TAB_SIZE * sizeof(struct tab_ent), MADV_DONTNEED);
		memset(maps, 0, MAP_SLOTS * sizeof(*maps));
	}
	atomic_store_explicit(&far_keys, 0, memory_order_relaxed);
	atomic_store_explicit(&nmaps, 0, memory_order_relaxed);
	maps_top = 0;
	/* Only the counts that are not 0: a page of them that is all zeros stays shared.
	 * Not looked at before a session enabled Heap (no tables' mapping yet): all are 0,
	 * and reading 1 MiB of untouched pages would fault each one in. Eight at a time
	 * (the child has one thread). */
	for (uint32_t i = 0; far_tab.e && i < FILT_SIZE; i += 8u) {
		uint64_t v;

		memcpy(&v, (const char *)filt + i, sizeof(v));
		for (uint32_t j = 0; v && j < 8u; j++)
			if (atomic_load_explicit(&filt[i + j], memory_order_relaxed))
				atomic_store_explicit(&filt[i + j], 0, memory_order_relaxed);
	}
	for (uint32_t i = 0; i < EST_STRIPES; i++) {
		atomic_store_explicit(&est[i].live, 0, memory_order_relaxed);
		atomic_store_explicit(&est[i].allocated, 0, memory_order_relaxed);
	}
	tls_fork_held = 0;
	atomic_flag_clear_explicit(&dl_busy, memory_order_release);
	maps_release();
}

void evr_heap_atfork_register(void)
{
	(void)pthread_atfork(heap_fork_prepare, heap_fork_parent, heap_fork_child);
}

void evr_heap_provider_register(void)
{
	(void)evr_provider_register(&heap_prov);
}
