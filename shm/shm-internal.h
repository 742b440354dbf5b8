/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private to the shm part: the geometry of a session mapping as this process
 * created or validated it (shm.c). The header itself lives in shared memory,
 * where the other side may rewrite it at any time: a broken or hostile
 * consumer in a producer's memory, a hostile producer in a consumer's. So every
 * size and offset that bounds a memory access is taken from this private copy,
 * never from the header after the mapping was made.
 */
#ifndef EVR_SHM_INTERNAL_H
#define EVR_SHM_INTERNAL_H

#include <evring/abi.h>
#include <evring/shm.h>

/*
 * A zero-initialized variable that libevring writes or reads at load, in every
 * program nobody traces: in .data, not .bss, so that it shares the page that the
 * dynamic loader has already touched (.data's last page, where it clears the
 * start of .bss) instead of costing a page fault of its own, where .bss's large
 * arrays (the heap provider's tables, in producer/) put it pages away (docs/protocol.md, "What
 * a program pays at start-up").
 */
#define EVR_LOAD_DATA __attribute__((section(".data.evr_load")))

/* evr_shm_geometry_of(): <evring/shm.h> (the recorder registers the mapping by its size). */

/* Ring @i's control block and data in mapping @h, by the trusted geometry @geo. */
static inline struct evr_ring_ctl *evr_shm_geo_ctl(const struct evr_shm_hdr *h,
						   const struct evr_shm_hdr *geo, uint32_t i)
{
	return (struct evr_ring_ctl *)((uintptr_t)h + geo->ring_ctl_off +
				       (uint64_t)i * EVR_RING_CTL_SIZE);
}

static inline uint8_t *evr_shm_geo_data(const struct evr_shm_hdr *h, const struct evr_shm_hdr *geo,
					uint32_t i)
{
	return (uint8_t *)((uintptr_t)h + geo->ring_data_off + (uint64_t)i * geo->ring_size);
}

#endif /* EVR_SHM_INTERNAL_H */
