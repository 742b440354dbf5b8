/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * minirt heap internals, shared by heap.c (allocation, threads, suspension)
 * and gc.c (collection, verification).
 *
 * Locks, in the order they may nest:
 *   suspend_lock  the thread list, ncoop, suspend_requested
 *   heap.lock     regions, generation sizes and budgets, the LOH list
 *   rs_lock       the remembered set and RT_OBJ_REMEMBERED
 * No thread waits for a collection while holding heap.lock or rs_lock, and no
 * thread allocates while holding either, so a collector never waits on them.
 * The collector itself runs with every other mutator in preemptive mode or
 * parked: their last heap accesses happen before it through suspend_lock.
 */
#ifndef MINIRT_HEAP_INTERNAL_H
#define MINIRT_HEAP_INTERNAL_H

#include "runtime.h"

/* Regions are aligned to their size, so an object's region is a mask away. */
#define RT_REGION_SIZE (256u * 1024u)
#define RT_CHUNK_SIZE (8u * 1024u)	/* allocation context quantum */
#define RT_LOH_THRESHOLD 85000u		/* bytes, as .NET's */
#define RT_ALLOC_TICK 100000u		/* GCAllocationTick every ~100 KB per thread */
#define RT_FREE_REGIONS_KEPT 64u
#define RT_REGION_FREE 0xffu		/* gen of a region in the free pool */

struct rt_region {
	struct rt_region *next;
	uint8_t gen;
	bool condemned;			/* from-space of the collection in progress */
	uint8_t *top;			/* first free byte */
	uint8_t *end;
	_Alignas(16) uint8_t data[];
};

static inline struct rt_region *rt_region_of(const struct rt_obj *o)
{
	return (struct rt_region *)((uintptr_t)o & ~(uintptr_t)(RT_REGION_SIZE - 1));
}

/* A large object: the list link lives before the object header. */
struct rt_large {
	struct rt_large *next;
	uint64_t pad;			/* keeps the object 16-byte aligned */
	struct rt_obj obj;
};

struct rt_gen {
	struct rt_region *regions;	/* all regions of this generation */
	struct rt_region *alloc;	/* the one being filled */
	uint64_t size;			/* bytes handed out (gen0) or used by objects */
};

struct rt_heap {
	pthread_mutex_t suspend_lock;
	pthread_cond_t resume_cond;	/* mutators wait here for the GC to end */
	pthread_cond_t suspended_cond;	/* the collector waits here for ncoop == 0 */
	struct rt_thread *threads;
	uint32_t nthreads;
	uint32_t ncoop;			/* attached threads in cooperative mode */
	bool suspend_requested;

	pthread_mutex_t lock;
	struct rt_gen gen[3];
	struct rt_large *loh;
	uint64_t loh_size;
	uint64_t loh_since_gen2;	/* LOH bytes allocated since the last gen2 GC */
	uint64_t gen2_budget;
	struct rt_region *free_regions;
	uint32_t nfree_regions;
	struct rt_heap_config cfg;
	_Atomic uint32_t gc_count;	/* collections so far; written by the collector */

	pthread_mutex_t rs_lock;
	struct rt_obj **rs;		/* remembered set: older objects with younger refs */
	size_t nrs, caprs;

	struct rt_obj *statics[RT_STATIC_COUNT];

	struct rt_obj **gray;		/* collector work stack */
	size_t ngray, capgray;
};

extern struct rt_heap rt_heap;

/* The generation an object counts as for the barrier: the LOH is with gen2. */
static inline uint32_t rt_obj_gen(const struct rt_obj *o)
{
	return o->gen == RT_GEN_LOH ? 2u : o->gen;
}

static inline uint32_t rt_align8(uint64_t n)
{
	return (uint32_t)((n + 7u) & ~7ull);
}

/*
 * Append @o to the growable array *@v of *@n entries, doubling its capacity
 * *@cap when full. Ends the process when out of memory (@what names the array).
 */
void rt_objs_push(struct rt_obj ***v, size_t *n, size_t *cap, struct rt_obj *o,
		  const char *what);

/* Get an empty region for @gen. Ends the process when out of memory. */
struct rt_region *rt_region_get_locked(uint32_t gen);
/* Give @r back to the free pool (or to the system). */
void rt_region_put_locked(struct rt_region *r);

/* Add @o to the remembered set. Context: rs_lock held. */
void rt_remember_locked(struct rt_obj *o);

/*
 * Run one collection of generation @gen (or higher, if budgets say so).
 * Context: the caller has suspended every other mutator; heap.lock not held.
 */
void rt_gc_run_suspended(uint32_t gen, uint32_t reason);

#endif /* MINIRT_HEAP_INTERNAL_H */
