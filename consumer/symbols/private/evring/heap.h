/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Heap profiles from the built-in Heap provider's events (docs/memory.md): the
 * decoding of its Alloc and Free events, the unbiasing of a sample, and the
 * blocks still alive, matched by address.
 */
#ifndef EVR_HEAP_H
#define EVR_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <evring/schema.h>

enum evr_heap_kind { EVR_HEAP_NONE = 0, EVR_HEAP_ALLOC = 1, EVR_HEAP_FREE = 2 };

#define EVR_HEAP_F_UNTRACKED 1u	/* the producer could not follow its free */
#define EVR_HEAP_F_MMAP 2u	/* an anonymous mapping (Mmap, Munmap), not a heap block */

struct evr_heap_rec {
	uint64_t address;	/* the block's; a mapping's + 1 (a key apart from blocks') */
	uint64_t size;		/* ALLOC: the block's; FREE: the bytes unmapped (0: all) */
	uint64_t rate;		/* ALLOC only */
	uint64_t flags;		/* EVR_HEAP_F_* (FREE: only MMAP) */
	double objects, bytes;	/* ALLOC only: what the sample stands for (unbiased) */
};

/**
 * evr_heap_decode() - whether @v is an event of the Heap provider, and what.
 * Return: EVR_HEAP_ALLOC or EVR_HEAP_FREE with @ret filled, or EVR_HEAP_NONE.
 */
enum evr_heap_kind evr_heap_decode(const struct evr_event_view *v, struct evr_heap_rec *ret);

/*
 * The blocks alive: sampled blocks by address, each with a caller's value
 * (a sample index, say) and what it stands for. Free with evr_heap_live_free().
 */
struct evr_heap_live;

struct evr_heap_block {
	uint64_t address;
	uint64_t size;
	uint64_t ts_ns;		/* when it was allocated */
	double objects, bytes;
	uint64_t cookie;	/* the caller's */
};

int evr_heap_live_new(struct evr_heap_live **ret);
void evr_heap_live_free(struct evr_heap_live *l);
/* Add @b (a block at an address already there replaces it). Return: 0, -ENOMEM. */
int evr_heap_live_put(struct evr_heap_live *l, const struct evr_heap_block *b);
/* Remove the block at @address into @ret. Return: true if there was one. */
bool evr_heap_live_take(struct evr_heap_live *l, uint64_t address, struct evr_heap_block *ret);
/**
 * evr_heap_live_release() - a FREE @h: the block at its address loses @h->size
 * bytes (a munmap() of part of a sampled mapping), or goes (0, or all of them).
 * A part leaves the block with its size and its estimated bytes cut in
 * proportion and the same objects; @ret gets the share that went (objects only
 * when the block went), with the block's cookie and times.
 * Return: true if there was a block at that address.
 */
bool evr_heap_live_release(struct evr_heap_live *l, const struct evr_heap_rec *h,
			   struct evr_heap_block *ret);
/* The blocks alive, in no order: calls @fn for each. */
void evr_heap_live_each(const struct evr_heap_live *l,
			void (*fn)(const struct evr_heap_block *b, void *ctx), void *ctx);

#endif /* EVR_HEAP_H */
