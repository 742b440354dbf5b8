// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * minirt's collector: generational, stop-the-world, copying.
 *
 * A collection of generation g condemns the regions of generations 0..g and
 * evacuates what is reachable from them into fresh space one generation up
 * (gen2 survivors stay in gen2): a mark phase and a compaction in one pass,
 * Cheney-style, with an explicit gray stack. The roots are every mutator's
 * root slots and exception, the statics, and, when g < 2, the remembered set:
 * the older objects that the write barrier saw storing a reference to a
 * younger one. The remembered set is rebuilt as objects are scanned. Large
 * objects are never moved; a gen2 collection marks them and frees the rest.
 *
 * Generations 1 and 2 are filled only here, contiguously, so their regions can
 * be walked object by object; the verifier (--verify) does, after every
 * collection, and checks headers, sizes, references and barrier invariants.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "heap-internal.h"

struct gc_state {
	uint32_t gen;			/* condemned generation */
	uint64_t promoted[3];		/* bytes that survived, by source generation */
	uint64_t loh_live;
};

static void gray_push(struct rt_obj *o)
{
	struct rt_heap *h = &rt_heap;

	rt_objs_push(&h->gray, &h->ngray, &h->capgray, o, "the collector's mark stack");
}

/* Bump-allocate @size bytes in generation @gen's to-space. */
static struct rt_obj *to_space_alloc(uint32_t gen, uint32_t size)
{
	struct rt_gen *g = &rt_heap.gen[gen];
	struct rt_region *r = g->alloc;
	struct rt_obj *o;

	if (!r || (size_t)(r->end - r->top) < size) {
		r = rt_region_get_locked(gen);
		r->next = g->regions;
		g->regions = r;
		g->alloc = r;
	}
	o = (struct rt_obj *)r->top;
	r->top += size;
	g->size += size;
	return o;
}

/* Make *@slot point to the surviving copy of its object, copying it if needed. */
static void evacuate(struct gc_state *s, struct rt_obj **slot)
{
	struct rt_obj *o = *slot, *n;
	uint32_t from, to;

	if (!o)
		return;
	if (o->gen == RT_GEN_LOH) {
		if (s->gen == 2 && !(o->flags & RT_OBJ_MARKED)) {
			o->flags |= RT_OBJ_MARKED;
			s->loh_live += o->size;
		}
		return;
	}
	if (!rt_region_of(o)->condemned)
		return;
	if (o->flags & RT_OBJ_FORWARDED) {
		*slot = o->fwd;
		return;
	}
	from = o->gen;
	to = from < 2 ? from + 1 : 2;
	n = to_space_alloc(to, o->size);
	memcpy(n, o, o->size);
	n->gen = (uint8_t)to;
	n->flags = 0;
	o->flags |= RT_OBJ_FORWARDED;
	o->fwd = n;
	s->promoted[from] += o->size;
	gray_push(n);
	*slot = n;
}

/* After @o's references are final: remember it if one of them is younger. */
static void check_remember(struct rt_obj *o)
{
	uint32_t gen = rt_obj_gen(o);

	for (uint32_t i = 0; i < o->nrefs; i++) {
		if (o->refs[i] && rt_obj_gen(o->refs[i]) < gen) {
			rt_remember_locked(o);
			return;
		}
	}
}

static void scan(struct gc_state *s, struct rt_obj *o)
{
	for (uint32_t i = 0; i < o->nrefs; i++)
		evacuate(s, &o->refs[i]);
	check_remember(o);
}

static uint32_t condemned_gen(uint32_t requested)
{
	struct rt_heap *h = &rt_heap;
	uint32_t g = requested;

	if (h->gen[1].size > h->cfg.gen1_budget && g < 1)
		g = 1;
	if (h->gen[2].size > h->gen2_budget || h->loh_since_gen2 > h->cfg.loh_budget)
		g = 2;
	return g;
}

static void sweep_loh(void)
{
	struct rt_heap *h = &rt_heap;
	struct rt_large **pp = &h->loh;

	while (*pp) {
		struct rt_large *l = *pp;

		if (l->obj.flags & RT_OBJ_MARKED) {
			l->obj.flags &= (uint8_t)~RT_OBJ_MARKED;
			pp = &l->next;
			continue;
		}
		*pp = l->next;
		h->loh_size -= l->obj.size;
		free(l);
	}
	h->loh_since_gen2 = 0;
}

static void verify_heap(uint32_t count, uint32_t gen);

void rt_gc_run_suspended(uint32_t requested, uint32_t reason)
{
	struct rt_heap *h = &rt_heap;
	struct gc_state s = { 0 };
	struct rt_region *from = NULL;
	struct rt_obj **old_rs;
	size_t old_nrs;
	uint32_t count;

	pthread_mutex_lock(&h->lock);
	pthread_mutex_lock(&h->rs_lock);
	s.gen = condemned_gen(requested);
	count = atomic_load_explicit(&h->gc_count, memory_order_relaxed) + 1;
	atomic_store_explicit(&h->gc_count, count, memory_order_relaxed);
	ev_gc_start(count, s.gen, reason, 0);

	/* Condemn generations 0..gen: their regions become from-space. */
	for (uint32_t g = 0; g <= s.gen; g++) {
		struct rt_region *r = h->gen[g].regions;

		while (r) {
			struct rt_region *next = r->next;

			r->condemned = true;
			r->next = from;
			from = r;
			r = next;
		}
		h->gen[g].regions = NULL;
		h->gen[g].alloc = NULL;
		h->gen[g].size = 0;
	}

	/* The remembered set is rebuilt from scratch as objects are scanned. */
	old_rs = h->rs;
	old_nrs = h->nrs;
	h->rs = malloc(h->caprs * sizeof(*h->rs));
	if (!h->rs)
		rt_oom("the remembered set");
	h->nrs = 0;

	for (struct rt_thread *t = h->threads; t; t = t->next) {
		for (uint32_t i = 0; i < t->nroots; i++)
			evacuate(&s, &t->roots[i]);
		evacuate(&s, &t->exception);
		t->alloc_ptr = NULL;
		t->alloc_end = NULL;
	}
	for (uint32_t i = 0; i < RT_STATIC_COUNT; i++)
		evacuate(&s, &h->statics[i]);
	for (size_t i = 0; i < old_nrs; i++) {
		struct rt_obj *o = old_rs[i];

		/* A condemned one is rescanned if it survives, as its copy. */
		if (rt_region_of(o)->condemned)
			continue;
		o->flags &= (uint8_t)~RT_OBJ_REMEMBERED;
		scan(&s, o);
	}
	free(old_rs);
	while (h->ngray)
		scan(&s, h->gray[--h->ngray]);

	if (s.gen == 2)
		sweep_loh();
	while (from) {
		struct rt_region *next = from->next;

		rt_region_put_locked(from);
		from = next;
	}
	if (s.gen == 2) {
		uint64_t b = 2 * h->gen[2].size;

		h->gen2_budget = b > h->cfg.gen2_min_budget ? b : h->cfg.gen2_min_budget;
	}

	rt_stat_add(&minirt_stats.gen_collections[0], 1);
	if (s.gen >= 1)
		rt_stat_add(&minirt_stats.gen_collections[1], 1);
	if (s.gen == 2)
		rt_stat_add(&minirt_stats.gen_collections[2], 1);
	for (int g = 0; g < 3; g++)
		atomic_store_explicit(&minirt_stats.gen_size[g], h->gen[g].size, memory_order_relaxed);
	atomic_store_explicit(&minirt_stats.loh_size, h->loh_size, memory_order_relaxed);
	atomic_store_explicit(&minirt_stats.heap_size,
			      h->gen[1].size + h->gen[2].size + h->loh_size, memory_order_relaxed);
	ev_gc_heap_stats(h->gen[0].size, s.promoted[0], h->gen[1].size, s.promoted[1],
			 h->gen[2].size, s.promoted[2], h->loh_size, s.loh_live);
	ev_gc_end(count, s.gen);

	if (h->cfg.verify)
		verify_heap(count, s.gen);
	pthread_mutex_unlock(&h->rs_lock);
	pthread_mutex_unlock(&h->lock);
}

/* ---- the verifier ------------------------------------------------------------------- */

_Noreturn static void verify_fail(uint32_t count, const char *what, const void *where)
{
	fprintf(stderr, "minirt: heap verification failed after GC #%u: %s (at %p)\n", count, what,
		where);
	abort();
}

/* Is @o the start of a live object? Gen0 is empty right after a collection. */
static void verify_ref(uint32_t count, const struct rt_obj *o)
{
	const struct rt_region *r;

	if (!o || o->gen == RT_GEN_LOH)
		return;
	r = rt_region_of(o);
	/* A region in the free pool has gen RT_REGION_FREE; one given back to the
	 * system is caught by ASan builds. */
	if (o->gen < 1 || o->gen > 2 || r->gen != o->gen || r->condemned)
		verify_fail(count, "reference to an object outside gen1/gen2", o);
	if ((const uint8_t *)o < r->data || (const uint8_t *)o + o->size > r->top)
		verify_fail(count, "reference outside its region's objects", o);
	if (o->flags & RT_OBJ_FORWARDED)
		verify_fail(count, "reference to a forwarded object", o);
}

static void verify_heap(uint32_t count, uint32_t gen)
{
	struct rt_heap *h = &rt_heap;
	uint64_t live = 0, remembered = 0, loh_live = 0;

	if (h->gen[0].regions || h->gen[0].size)
		verify_fail(count, "gen0 not empty after a collection", h->gen[0].regions);
	/* Walk every object of gen1 and gen2, region by region. */
	for (uint32_t g = 1; g <= 2; g++) {
		uint64_t bytes = 0;

		for (struct rt_region *r = h->gen[g].regions; r; r = r->next) {
			uint8_t *p = r->data;

			if (r->gen != g || r->condemned)
				verify_fail(count, "region in the wrong generation", r);
			while (p < r->top) {
				struct rt_obj *o = (struct rt_obj *)p;

				if (o->size < sizeof(*o) || o->size % 8 || p + o->size > r->top ||
				    o->type >= RT_T_COUNT || o->gen != g ||
				    (o->flags & (RT_OBJ_FORWARDED | RT_OBJ_MARKED)) ||
				    sizeof(*o) + (uint64_t)o->nrefs * sizeof(o->refs[0]) > o->size)
					verify_fail(count, "bad object header", o);
				for (uint32_t i = 0; i < o->nrefs; i++) {
					verify_ref(count, o->refs[i]);
					if (o->refs[i] && rt_obj_gen(o->refs[i]) < g &&
					    !(o->flags & RT_OBJ_REMEMBERED))
						verify_fail(count, "old-to-young reference not remembered", o);
				}
				if (o->flags & RT_OBJ_REMEMBERED)
					remembered++;
				bytes += o->size;
				p += o->size;
			}
		}
		if (bytes != h->gen[g].size)
			verify_fail(count, "generation size differs from its objects", &h->gen[g]);
	}
	if (remembered != h->nrs)
		verify_fail(count, "remembered set differs from the remembered flags", h->rs);

	/* Roots, then (after a full collection) reachability: everything left is live. */
	for (struct rt_thread *t = h->threads; t; t = t->next) {
		for (uint32_t i = 0; i < t->nroots; i++)
			verify_ref(count, t->roots[i]);
		verify_ref(count, t->exception);
	}
	for (uint32_t i = 0; i < RT_STATIC_COUNT; i++)
		verify_ref(count, h->statics[i]);
	if (gen != 2)
		return;

	for (struct rt_thread *t = h->threads; t; t = t->next) {
		for (uint32_t i = 0; i < t->nroots; i++)
			if (t->roots[i])
				gray_push(t->roots[i]);
		if (t->exception)
			gray_push(t->exception);
	}
	for (uint32_t i = 0; i < RT_STATIC_COUNT; i++)
		if (h->statics[i])
			gray_push(h->statics[i]);
	while (h->ngray) {
		struct rt_obj *o = h->gray[--h->ngray];

		if (o->flags & RT_OBJ_MARKED)
			continue;
		o->flags |= RT_OBJ_MARKED;
		if (o->gen == RT_GEN_LOH) {
			loh_live += o->size;
			continue;
		}
		live += o->size;
		for (uint32_t i = 0; i < o->nrefs; i++)
			if (o->refs[i] && !(o->refs[i]->flags & RT_OBJ_MARKED))
				gray_push(o->refs[i]);
	}
	if (live != h->gen[1].size + h->gen[2].size)
		verify_fail(count, "unreachable objects survived a full collection", NULL);
	if (loh_live != h->loh_size)
		verify_fail(count, "unreachable large objects survived a full collection", h->loh);
	for (uint32_t g = 1; g <= 2; g++)
		for (struct rt_region *r = h->gen[g].regions; r; r = r->next)
			for (uint8_t *p = r->data; p < r->top; p += ((struct rt_obj *)p)->size)
				((struct rt_obj *)p)->flags &= (uint8_t)~RT_OBJ_MARKED;
	for (struct rt_large *l = h->loh; l; l = l->next)
		l->obj.flags &= (uint8_t)~RT_OBJ_MARKED;
}
