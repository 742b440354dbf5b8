// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The Heap provider's events, for the profiles and the report: decoding, the
 * unbiasing of a sample and the blocks alive (<evring/heap.h>).
 *
 * Unbiasing (shared/research/memory.md §1.2, Go's scaleHeapSample): a block of
 * S bytes is sampled with probability 1 - exp(-S/RATE), so each sample stands
 * for 1 / (1 - exp(-S/RATE)) blocks and S times as many bytes. Summed per site,
 * this is unbiased; its relative error is about 1/sqrt(samples).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <evring/abi.h>
#include <evring/heap.h>

static uint64_t field_u(const struct evr_schema_event *ev, const struct evr_field_value *vals,
			const char *name)
{
	for (uint32_t i = 0; i < ev->nfields; i++)
		if (!strcmp(ev->fields[i].name, name))
			return vals[i].u;
	return 0;
}

enum evr_heap_kind evr_heap_decode(const struct evr_event_view *v, struct evr_heap_rec *ret)
{
	const struct evr_schema_event *ev = v->schema;
	struct evr_field_value vals[8];
	bool alloc, mmap;

	if (v->type != EVR_REC_EVENT || !ev || !ev->provider || strcmp(ev->provider, "Heap"))
		return EVR_HEAP_NONE;
	mmap = !strcmp(ev->name, "Mmap") || !strcmp(ev->name, "Munmap");
	alloc = !strcmp(ev->name, "Alloc") || !strcmp(ev->name, "Mmap");
	if ((!alloc && !mmap && strcmp(ev->name, "Free")) || ev->nfields > 8 ||
	    evr_decode_fields(ev, v->payload, v->len, vals) < 0)
		return EVR_HEAP_NONE;
	memset(ret, 0, sizeof(*ret));
	ret->address = field_u(ev, vals, "address");
	/* Munmap's bytes; Free has none (all). */
	ret->size = field_u(ev, vals, "size");
	ret->flags = mmap ? EVR_HEAP_F_MMAP : 0;
	/* Apart from a heap block at the same address (an allocator's first block in
	 * its own mapping): a mapping's key is odd, as no block's address is. */
	if (mmap)
		ret->address |= 1u;
	if (!alloc)
		return EVR_HEAP_FREE;
	ret->rate = field_u(ev, vals, "rate");
	ret->flags |= field_u(ev, vals, "flags") & EVR_HEAP_F_UNTRACKED;
	if (ret->rate > 1) {
		/* A zero-byte block is sampled as one byte would be (it costs a chunk). */
		double s = ret->size ? (double)ret->size : 1.0;
		double scale = 1.0 / -expm1(-s / (double)ret->rate);

		ret->objects = scale;
		ret->bytes = (double)ret->size * scale;
	} else {
		ret->objects = 1;
		ret->bytes = (double)ret->size;
	}
	return EVR_HEAP_ALLOC;
}

/* ---- blocks alive: open addressing, linear probing, backward-shift deletion ---------- */

struct evr_heap_live {
	struct evr_heap_block *v;	/* address 0: empty */
	size_t n, cap;
};

static size_t home(const struct evr_heap_live *l, uint64_t a)
{
	return (size_t)(((a >> 4) * 0x9e3779b97f4a7c15ull) >> 20) & (l->cap - 1);
}

int evr_heap_live_new(struct evr_heap_live **ret)
{
	struct evr_heap_live *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->cap = 1024;
	l->v = calloc(l->cap, sizeof(*l->v));
	if (!l->v) {
		free(l);
		return -ENOMEM;
	}
	*ret = l;
	return 0;
}

void evr_heap_live_free(struct evr_heap_live *l)
{
	if (!l)
		return;
	free(l->v);
	free(l);
}

static void put_nogrow(struct evr_heap_live *l, const struct evr_heap_block *b)
{
	size_t i = home(l, b->address);

	while (l->v[i].address && l->v[i].address != b->address)
		i = (i + 1) & (l->cap - 1);
	if (!l->v[i].address)
		l->n++;
	l->v[i] = *b;
}

int evr_heap_live_put(struct evr_heap_live *l, const struct evr_heap_block *b)
{
	if (!b->address)
		return 0;
	if ((l->n + 1) * 2 > l->cap) {
		struct evr_heap_live nl = { calloc(l->cap * 2, sizeof(*l->v)), 0, l->cap * 2 };

		if (!nl.v)
			return -ENOMEM;
		for (size_t i = 0; i < l->cap; i++)
			if (l->v[i].address)
				put_nogrow(&nl, &l->v[i]);
		free(l->v);
		*l = nl;
	}
	put_nogrow(l, b);
	return 0;
}

bool evr_heap_live_take(struct evr_heap_live *l, uint64_t address, struct evr_heap_block *ret)
{
	size_t i = home(l, address), j;

	if (!address)
		return false;
	while (l->v[i].address != address) {
		if (!l->v[i].address)
			return false;
		i = (i + 1) & (l->cap - 1);
	}
	*ret = l->v[i];
	/* Shift back the entries whose probe ran through the hole. */
	for (j = (i + 1) & (l->cap - 1); l->v[j].address; j = (j + 1) & (l->cap - 1)) {
		size_t h = home(l, l->v[j].address);

		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			l->v[i] = l->v[j];
			i = j;
		}
	}
	l->v[i].address = 0;
	l->n--;
	return true;
}

bool evr_heap_live_release(struct evr_heap_live *l, const struct evr_heap_rec *h,
			   struct evr_heap_block *ret)
{
	struct evr_heap_block rest;
	double left;

	if (!evr_heap_live_take(l, h->address, ret))
		return false;
	if (!h->size || h->size >= ret->size)
		return true;
	/* A part: the block stays (it was there: putting it back needs no room). */
	rest = *ret;
	rest.size = ret->size - h->size;
	left = (double)rest.size / (double)ret->size;
	rest.bytes = ret->bytes * left;
	ret->bytes -= rest.bytes;
	ret->objects = 0;
	(void)evr_heap_live_put(l, &rest);
	return true;
}

void evr_heap_live_each(const struct evr_heap_live *l,
			void (*fn)(const struct evr_heap_block *b, void *ctx), void *ctx)
{
	for (size_t i = 0; i < l->cap; i++)
		if (l->v[i].address)
			fn(&l->v[i], ctx);
}
