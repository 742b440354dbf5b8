/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring report's heap section (record --heap, docs/memory.md): the top
 * allocation sites (estimated bytes and blocks allocated, and in use at the
 * end) and the leak candidates (sampled blocks alive at the end, by site, with
 * their ages), in the text tables and in --json.
 */
#ifndef EVR_REPORT_HEAP_H
#define EVR_REPORT_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <evring/schema.h>
#include <evring/symbols.h>
#include <evring/trace.h>

struct evr_report_heap_site {
	char *name;			/* the function that called the allocator */
	double alloc_bytes, alloc_objects, inuse_bytes, inuse_objects;
	uint64_t samples, live;		/* sampled allocations; of them alive at the end */
	uint64_t oldest_ns, newest_ns;	/* allocation times of those alive */
	bool mmap;			/* of anonymous mappings (Mmap), not heap blocks */
};

struct evr_report_heap {
	uint64_t allocs, frees;		/* Alloc events; Free events of a sampled block */
	uint64_t rate;			/* of the last Alloc */
	uint64_t end_ns;		/* the trace's last event: ages are to it */
	double alloc_bytes, inuse_bytes;
	/* Anonymous mappings: Mmap events, Munmap events of a sampled one, estimates. */
	uint64_t mmaps, munmaps;
	double mmap_bytes, mmap_inuse_bytes;
	struct evr_report_heap_site *sites;
	size_t nsites;
};

/*
 * The heap section from trace @r2 (a reader of its own, read to the end here),
 * symbolized by @sym (may be NULL). No Heap events: an empty section.
 * Return: 0, -ENOMEM, or the reader's error.
 */
int evr_report_heap_build(struct evr_trace_reader *r2, struct evr_symbolizer *sym,
			  struct evr_report_heap *ret);
void evr_report_heap_fini(struct evr_report_heap *h);

/* The text section (nothing without Heap events): @top sites (0: all). */
void evr_report_heap_print(FILE *f, const struct evr_report_heap *h, unsigned top);

/* Add "heap" to the JSON object @sb holds (ending in "}\n"). Return: 0, -ENOMEM, -EINVAL. */
int evr_report_heap_json(struct evr_strbuf *sb, const struct evr_report_heap *h, unsigned top);

#endif /* EVR_REPORT_HEAP_H */
