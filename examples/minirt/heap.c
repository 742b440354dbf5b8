// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * minirt heap: regions, allocation contexts, the LOH, mutator threads and
 * stop-the-world suspension, the write barrier.
 *
 * Allocation. Each mutator bump-allocates small objects in its own allocation
 * context, an 8 KiB chunk of a gen0 region handed out under heap.lock (the
 * only lock on the allocation path, taken once per chunk). When the chunks
 * handed out since the last collection reach the gen0 budget, the thread that
 * needs the next one triggers a collection. Objects of 85000 bytes or more go
 * to the LOH, one malloc() each, never moved, collected with gen2.
 *
 * Suspension, as in .NET: a mutator is in cooperative mode while it touches
 * the heap and in preemptive mode while it waits (for work, a monitor, the
 * JIT). A collector sets suspend_requested and waits until no thread is in
 * cooperative mode; mutators poll rt_suspend_pending at their GC points and
 * park. Every transition is made under suspend_lock, which is what orders each
 * mutator's heap accesses before the collector's and the collector's before
 * the mutator's next ones.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "heap-internal.h"

struct rt_heap rt_heap;
_Atomic bool rt_suspend_pending;

const char *const rt_type_names[RT_T_COUNT] = {
	[RT_T_STRING] = "System.String",
	[RT_T_BYTES] = "System.Byte[]",
	[RT_T_OBJECT_ARRAY] = "System.Object[]",
	[RT_T_REQUEST] = "MiniRT.Web.HttpRequest",
	[RT_T_NODE] = "System.Collections.Generic.LinkedListNode`1[System.Object]",
	[RT_T_DICTIONARY_ENTRY] = "System.Collections.Generic.Dictionary`2+Entry[System.String,System.Object]",
	[RT_T_CACHE_ENTRY] = "MiniRT.Caching.CacheEntry",
	[RT_T_ORDER] = "MiniRT.Data.Order",
	[RT_T_CUSTOMER] = "MiniRT.Data.Customer",
	[RT_T_EXCEPTION] = "System.Exception",
	[RT_T_TASK] = "System.Threading.Tasks.Task",
};

_Noreturn void rt_oom(const char *what)
{
	/* A runtime that cannot grow its heap fails fast, as .NET does. */
	fprintf(stderr, "minirt: out of memory allocating %s\n", what);
	abort();
}

int rt_heap_init(const struct rt_heap_config *cfg)
{
	struct rt_heap *h = &rt_heap;

	memset(h, 0, sizeof(*h));
	h->cfg = *cfg;
	h->gen2_budget = cfg->gen2_min_budget;
	pthread_mutex_init(&h->suspend_lock, NULL);
	pthread_cond_init(&h->resume_cond, NULL);
	pthread_cond_init(&h->suspended_cond, NULL);
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->rs_lock, NULL);
	h->caprs = 1024;
	h->rs = malloc(h->caprs * sizeof(*h->rs));
	h->capgray = 4096;
	h->gray = malloc(h->capgray * sizeof(*h->gray));
	if (!h->rs || !h->gray) {
		free(h->rs);
		free(h->gray);
		return -ENOMEM;
	}
	return 0;
}

static void free_region_list(struct rt_region *r)
{
	while (r) {
		struct rt_region *next = r->next;

		free(r);
		r = next;
	}
}

void rt_heap_fini(void)
{
	struct rt_heap *h = &rt_heap;

	for (int g = 0; g < 3; g++)
		free_region_list(h->gen[g].regions);
	free_region_list(h->free_regions);
	while (h->loh) {
		struct rt_large *next = h->loh->next;

		free(h->loh);
		h->loh = next;
	}
	free(h->rs);
	free(h->gray);
	pthread_mutex_destroy(&h->rs_lock);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->suspended_cond);
	pthread_cond_destroy(&h->resume_cond);
	pthread_mutex_destroy(&h->suspend_lock);
}

struct rt_region *rt_region_get_locked(uint32_t gen)
{
	struct rt_heap *h = &rt_heap;
	struct rt_region *r = h->free_regions;

	if (r) {
		h->free_regions = r->next;
		h->nfree_regions--;
	} else {
		r = aligned_alloc(RT_REGION_SIZE, RT_REGION_SIZE);
		if (!r)
			rt_oom("a heap region");
	}
	r->next = NULL;
	r->gen = (uint8_t)gen;
	r->condemned = false;
	r->top = r->data;
	r->end = (uint8_t *)r + RT_REGION_SIZE;
	return r;
}

void rt_region_put_locked(struct rt_region *r)
{
	struct rt_heap *h = &rt_heap;

	r->gen = RT_REGION_FREE;
	if (h->nfree_regions >= RT_FREE_REGIONS_KEPT) {
		free(r);
		return;
	}
	r->next = h->free_regions;
	h->free_regions = r;
	h->nfree_regions++;
}

static void update_heap_size_locked(void)
{
	struct rt_heap *h = &rt_heap;

	atomic_store_explicit(&minirt_stats.heap_size,
			      h->gen[0].size + h->gen[1].size + h->gen[2].size + h->loh_size,
			      memory_order_relaxed);
}

/* ---- threads and suspension ---------------------------------------------------- */

struct rt_thread *rt_thread_attach(void)
{
	struct rt_heap *h = &rt_heap;
	struct rt_thread *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tid = rt_gettid();
	t->rng = (t->tid * 0x9e3779b97f4a7c15ull) ^ rt_now_ns();
	if (!t->rng)
		t->rng = 1;
	pthread_mutex_lock(&h->suspend_lock);
	/* The collector walks the thread list without the lock. */
	while (h->suspend_requested)
		pthread_cond_wait(&h->resume_cond, &h->suspend_lock);
	t->next = h->threads;
	if (h->threads)
		h->threads->prev = t;
	h->threads = t;
	h->nthreads++;
	pthread_mutex_unlock(&h->suspend_lock);
	return t;
}

void rt_thread_detach(struct rt_thread *t)
{
	struct rt_heap *h = &rt_heap;

	if (t->coop || t->nroots)
		__builtin_trap();	/* a minirt bug: detaching with live roots */
	rt_stat_add(&minirt_stats.bytes_allocated, t->alloc_unflushed);
	pthread_mutex_lock(&h->suspend_lock);
	while (h->suspend_requested)
		pthread_cond_wait(&h->resume_cond, &h->suspend_lock);
	if (t->prev)
		t->prev->next = t->next;
	else
		h->threads = t->next;
	if (t->next)
		t->next->prev = t->prev;
	h->nthreads--;
	pthread_mutex_unlock(&h->suspend_lock);
	free(t);
}

/* Leave cooperative mode until the collection in progress ends. */
static void park_locked(void)
{
	struct rt_heap *h = &rt_heap;

	h->ncoop--;
	if (h->ncoop == 0)
		pthread_cond_signal(&h->suspended_cond);
	while (h->suspend_requested)
		pthread_cond_wait(&h->resume_cond, &h->suspend_lock);
	h->ncoop++;
}

void rt_coop_enter(struct rt_thread *t)
{
	struct rt_heap *h = &rt_heap;

	pthread_mutex_lock(&h->suspend_lock);
	while (h->suspend_requested)
		pthread_cond_wait(&h->resume_cond, &h->suspend_lock);
	h->ncoop++;
	t->coop = true;
	pthread_mutex_unlock(&h->suspend_lock);
}

void rt_coop_leave(struct rt_thread *t)
{
	struct rt_heap *h = &rt_heap;

	pthread_mutex_lock(&h->suspend_lock);
	t->coop = false;
	h->ncoop--;
	if (h->suspend_requested && h->ncoop == 0)
		pthread_cond_signal(&h->suspended_cond);
	pthread_mutex_unlock(&h->suspend_lock);
}

void rt_safepoint_slow(struct rt_thread *t)
{
	struct rt_heap *h = &rt_heap;

	pthread_mutex_lock(&h->suspend_lock);
	if (h->suspend_requested)
		park_locked();
	pthread_mutex_unlock(&h->suspend_lock);
}

/*
 * Suspend every other mutator and collect, unless a collection ran since the
 * caller saw gc_count == @observed (then the caller just retries its
 * allocation) or another thread is collecting (then the caller parks).
 */
static void gc_trigger(struct rt_thread *t, uint32_t observed, uint32_t gen, uint32_t reason)
{
	struct rt_heap *h = &rt_heap;
	uint64_t t0, pause;

	pthread_mutex_lock(&h->suspend_lock);
	if (h->suspend_requested) {
		park_locked();
		pthread_mutex_unlock(&h->suspend_lock);
		return;
	}
	if (atomic_load_explicit(&h->gc_count, memory_order_relaxed) != observed) {
		pthread_mutex_unlock(&h->suspend_lock);
		return;
	}
	t0 = rt_now_ns();
	h->suspend_requested = true;
	atomic_store_explicit(&rt_suspend_pending, true, memory_order_relaxed);
	ev_gc_suspend_ee_begin(reason, observed + 1);
	h->ncoop--;
	while (h->ncoop > 0)
		pthread_cond_wait(&h->suspended_cond, &h->suspend_lock);
	pthread_mutex_unlock(&h->suspend_lock);
	ev_gc_suspend_ee_end();

	rt_gc_run_suspended(gen, reason);

	ev_gc_restart_ee_begin();
	pthread_mutex_lock(&h->suspend_lock);
	h->suspend_requested = false;
	atomic_store_explicit(&rt_suspend_pending, false, memory_order_relaxed);
	h->ncoop++;
	pthread_cond_broadcast(&h->resume_cond);
	pthread_mutex_unlock(&h->suspend_lock);
	ev_gc_restart_ee_end();
	pause = rt_now_ns() - t0;
	rt_stat_add(&minirt_stats.gc_time_ns, pause);
	atomic_store_explicit(&minirt_stats.gc_last_pause_ns, pause, memory_order_relaxed);
}

void rt_gc_collect(struct rt_thread *t, uint32_t gen)
{
	uint32_t observed = atomic_load_explicit(&rt_heap.gc_count, memory_order_relaxed);

	gc_trigger(t, observed, gen > 2 ? 2 : gen, RT_GC_REASON_INDUCED);
}

/* ---- allocation --------------------------------------------------------------------- */

static void account(struct rt_thread *t, enum rt_type_id type, uint32_t size, uint32_t kind)
{
	t->alloc_unflushed += size;
	t->tick_bytes += size;
	if (t->tick_bytes < RT_ALLOC_TICK)
		return;
	if (ev_gc_allocation_tick_enabled())
		ev_gc_allocation_tick(t->tick_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)t->tick_bytes,
				      kind, t->tick_bytes, &rt_type_names[type], rt_type_names[type]);
	t->tick_bytes = 0;
}

static void flush_allocated(struct rt_thread *t)
{
	rt_stat_add(&minirt_stats.bytes_allocated, t->alloc_unflushed);
	t->alloc_unflushed = 0;
}

static void init_obj(struct rt_obj *o, uint32_t size, enum rt_type_id type, uint8_t gen,
		     uint32_t nrefs, uint64_t *rng)
{
	memset(o, 0, size);
	o->size = size;
	o->type = (uint16_t)type;
	o->gen = gen;
	o->nrefs = nrefs;
	o->hash = (uint32_t)rt_rand(rng);
}

/* Give @t a new allocation context that fits @size, or collect gen0. */
static void alloc_refill(struct rt_thread *t, uint32_t size)
{
	struct rt_heap *h = &rt_heap;
	uint32_t chunk = size > RT_CHUNK_SIZE ? size : RT_CHUNK_SIZE;
	struct rt_region *r;

	flush_allocated(t);
	pthread_mutex_lock(&h->lock);
	if (h->gen[0].size > 0 && h->gen[0].size + chunk > h->cfg.gen0_budget) {
		uint32_t observed = atomic_load_explicit(&h->gc_count, memory_order_relaxed);

		pthread_mutex_unlock(&h->lock);
		gc_trigger(t, observed, 0, RT_GC_REASON_ALLOC_SMALL);
		return;
	}
	r = h->gen[0].alloc;
	if (!r || (size_t)(r->end - r->top) < size) {
		r = rt_region_get_locked(0);
		r->next = h->gen[0].regions;
		h->gen[0].regions = r;
		h->gen[0].alloc = r;
	}
	if ((size_t)(r->end - r->top) < chunk)
		chunk = (uint32_t)(r->end - r->top);
	t->alloc_ptr = r->top;
	r->top += chunk;
	t->alloc_end = r->top;
	h->gen[0].size += chunk;
	update_heap_size_locked();
	pthread_mutex_unlock(&h->lock);
}

static struct rt_obj *alloc_large(struct rt_thread *t, enum rt_type_id type, uint32_t size)
{
	struct rt_heap *h = &rt_heap;
	struct rt_large *l;

	rt_safepoint(t);
	pthread_mutex_lock(&h->lock);
	while (h->loh_since_gen2 > 0 && h->loh_since_gen2 + size > h->cfg.loh_budget) {
		uint32_t observed = atomic_load_explicit(&h->gc_count, memory_order_relaxed);

		pthread_mutex_unlock(&h->lock);
		gc_trigger(t, observed, 2, RT_GC_REASON_ALLOC_LARGE);
		pthread_mutex_lock(&h->lock);
	}
	l = malloc(offsetof(struct rt_large, obj) + size);
	if (!l)
		rt_oom("a large object");
	l->next = h->loh;
	h->loh = l;
	h->loh_size += size;
	h->loh_since_gen2 += size;
	update_heap_size_locked();
	pthread_mutex_unlock(&h->lock);
	/* No GC point since the unlock: the collector cannot see it half-built. */
	init_obj(&l->obj, size, type, RT_GEN_LOH, 0, &t->rng);
	account(t, type, size, 1);
	flush_allocated(t);
	return &l->obj;
}

struct rt_obj *rt_alloc(struct rt_thread *t, enum rt_type_id type, uint32_t nrefs,
			uint32_t payload)
{
	uint64_t want = sizeof(struct rt_obj) + (uint64_t)nrefs * sizeof(struct rt_obj *) + payload;
	uint32_t size;
	struct rt_obj *o;

	if (want >= RT_LOH_THRESHOLD) {
		if (nrefs || want > UINT32_MAX / 2)
			__builtin_trap();	/* minirt's large objects are buffers */
		return alloc_large(t, type, rt_align8(want));
	}
	size = rt_align8(want);
	rt_safepoint(t);
	/* Integers: the context is NULL..NULL after a collection. */
	while ((uintptr_t)t->alloc_end - (uintptr_t)t->alloc_ptr < size)
		alloc_refill(t, size);
	o = (struct rt_obj *)t->alloc_ptr;
	t->alloc_ptr += size;
	init_obj(o, size, type, 0, nrefs, &t->rng);
	account(t, type, size, 0);
	return o;
}

struct rt_obj *rt_alloc_string(struct rt_thread *t, const char *s)
{
	size_t n = strlen(s) + 1;
	struct rt_obj *o = rt_alloc(t, RT_T_STRING, 0, (uint32_t)n);

	memcpy(rt_payload(o), s, n);
	return o;
}

/* ---- barrier and statics ------------------------------------------------------------- */

void rt_objs_push(struct rt_obj ***v, size_t *n, size_t *cap, struct rt_obj *o,
		  const char *what)
{
	if (*n == *cap) {
		struct rt_obj **grown = realloc(*v, *cap * 2 * sizeof(*grown));

		if (!grown)
			rt_oom(what);
		*v = grown;
		*cap *= 2;
	}
	(*v)[(*n)++] = o;
}

void rt_remember_locked(struct rt_obj *o)
{
	struct rt_heap *h = &rt_heap;

	rt_objs_push(&h->rs, &h->nrs, &h->caprs, o, "the remembered set");
	o->flags |= RT_OBJ_REMEMBERED;
}

void rt_store(struct rt_obj *o, uint32_t i, struct rt_obj *v)
{
	struct rt_heap *h = &rt_heap;

	if (i >= o->nrefs)
		__builtin_trap();
	o->refs[i] = v;
	/* Generations change only while the world is stopped: these reads are stable. */
	if (v && rt_obj_gen(v) < rt_obj_gen(o)) {
		pthread_mutex_lock(&h->rs_lock);
		if (!(o->flags & RT_OBJ_REMEMBERED))
			rt_remember_locked(o);
		pthread_mutex_unlock(&h->rs_lock);
	}
}

struct rt_obj *rt_static_get(uint32_t i)
{
	return rt_heap.statics[i];
}

void rt_static_set(uint32_t i, struct rt_obj *o)
{
	rt_heap.statics[i] = o;
}
