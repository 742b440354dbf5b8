// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring report's heap section (report-heap.h). A site is the function that
 * called the allocator (an Alloc event's first frame), as `go tool pprof -top`
 * names the flat entries of a heap profile; the estimates are those of the
 * pprof file (<evring/heap.h>), so the two agree.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <evring/heap.h>

#include "cli.h"
#include "report-heap.h"

struct pc_site {
	uint64_t pc;			/* 0: empty */
	size_t site;
};

struct build {
	struct evr_report_heap *h;
	struct evr_symbolizer *sym;
	struct pc_site *pcs;		/* open addressing, a power of two */
	size_t npcs, cappcs, capsites;
	struct evr_heap_live *live;
};

static int site_named(struct build *b, const char *name, bool mmap, size_t *ret)
{
	struct evr_report_heap *h = b->h;

	for (size_t i = 0; i < h->nsites; i++)
		if (h->sites[i].mmap == mmap && !strcmp(h->sites[i].name, name)) {
			*ret = i;
			return 0;
		}
	if (h->nsites == b->capsites) {
		size_t cap = b->capsites ? 2 * b->capsites : 64;
		struct evr_report_heap_site *v = realloc(h->sites, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->sites = v;
		b->capsites = cap;
	}
	memset(&h->sites[h->nsites], 0, sizeof(h->sites[0]));
	h->sites[h->nsites].name = strdup(name);
	h->sites[h->nsites].mmap = mmap;
	if (!h->sites[h->nsites].name)
		return -ENOMEM;
	*ret = h->nsites++;
	return 0;
}

/* The site of a first frame @pc (0: no stack), looked up once per address and
 * kind (a mapping's with the top bit flipped: no return address has it set). */
static int site_of(struct build *b, uint64_t pc0, bool mmap, size_t *ret)
{
	struct evr_sym s = { 0 };
	uint64_t pc = pc0 ^ (mmap ? 1ull << 63 : 0);
	char buf[256];
	size_t i;
	int err;

	if ((b->npcs + 1) * 2 > b->cappcs) {
		size_t cap = b->cappcs ? 2 * b->cappcs : 256;
		struct pc_site *v = calloc(cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < b->cappcs; k++) {
			if (!b->pcs[k].pc)
				continue;
			for (i = (b->pcs[k].pc * 0x9e3779b97f4a7c15ull >> 32) & (cap - 1); v[i].pc;
			     i = (i + 1) & (cap - 1))
				;
			v[i] = b->pcs[k];
		}
		free(b->pcs);
		b->pcs = v;
		b->cappcs = cap;
	}
	for (i = (pc * 0x9e3779b97f4a7c15ull >> 32) & (b->cappcs - 1); b->pcs[i].pc;
	     i = (i + 1) & (b->cappcs - 1))
		if (b->pcs[i].pc == pc) {
			*ret = b->pcs[i].site;
			return 0;
		}
	if (!pc0)
		snprintf(buf, sizeof(buf), "(no stack)");
	else if (b->sym && evr_symbolizer_lookup(b->sym, pc0, true, &s) == 1)
		snprintf(buf, sizeof(buf), "%s%s%s%s", s.func, s.module ? " (" : "",
			 s.module ? s.module : "", s.module ? ")" : "");
	else if (s.module)
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, s.module, s.module_offset);
	else
		snprintf(buf, sizeof(buf), "0x%" PRIx64, pc0);
	if ((err = site_named(b, buf, mmap, ret)) < 0)
		return err;
	if (pc0) {
		b->pcs[i] = (struct pc_site){ pc, *ret };
		b->npcs++;
	}
	return 0;
}

static void leak_cb(const struct evr_heap_block *blk, void *ctx)
{
	struct evr_report_heap_site *s = &((struct evr_report_heap *)ctx)->sites[blk->cookie];

	s->live++;
	if (!s->oldest_ns || blk->ts_ns < s->oldest_ns)
		s->oldest_ns = blk->ts_ns;
	if (blk->ts_ns > s->newest_ns)
		s->newest_ns = blk->ts_ns;
}

static int by_alloc(const void *a, const void *b)
{
	const struct evr_report_heap_site *x = a, *y = b;

	return x->alloc_bytes < y->alloc_bytes ? 1 : x->alloc_bytes > y->alloc_bytes ? -1 : 0;
}

int evr_report_heap_build(struct evr_trace_reader *r2, struct evr_symbolizer *sym,
			  struct evr_report_heap *ret)
{
	struct build b = { .h = ret, .sym = sym };
	struct evr_event_view v;
	struct evr_heap_rec rec;
	struct evr_heap_block blk;
	int err, n;

	memset(ret, 0, sizeof(*ret));
	if ((err = evr_heap_live_new(&b.live)) < 0)
		return err;
	while ((n = evr_trace_reader_next(r2, &v)) == 1) {
		enum evr_heap_kind k = evr_heap_decode(&v, &rec);
		struct evr_report_heap_site *s;
		size_t site;
		bool mmap;

		if (v.ts_ns > ret->end_ns)
			ret->end_ns = v.ts_ns;
		if (!k)
			continue;
		mmap = rec.flags & EVR_HEAP_F_MMAP;
		/* A Free or Munmap (of all or part), or an address given out again whose
		 * Free the trace lacks. */
		if (k == EVR_HEAP_FREE ? evr_heap_live_release(b.live, &rec, &blk) :
					 evr_heap_live_take(b.live, rec.address, &blk)) {
			s = &ret->sites[blk.cookie];
			s->inuse_bytes -= blk.bytes;
			s->inuse_objects -= blk.objects;
			if (mmap) {
				ret->mmap_inuse_bytes -= blk.bytes;
				ret->munmaps += k == EVR_HEAP_FREE;
			} else {
				ret->inuse_bytes -= blk.bytes;
				ret->frees += k == EVR_HEAP_FREE;
			}
		}
		if (k == EVR_HEAP_FREE)
			continue;
		err = site_of(&b, v.nframes ? ((const uint64_t *)v.frames)[0] : 0, mmap, &site);
		if (err < 0)
			goto out;
		s = &ret->sites[site];
		ret->rate = rec.rate;
		s->samples++;
		s->alloc_bytes += rec.bytes;
		s->alloc_objects += rec.objects;
		if (mmap) {
			ret->mmaps++;
			ret->mmap_bytes += rec.bytes;
		} else {
			ret->allocs++;
			ret->alloc_bytes += rec.bytes;
		}
		if (rec.flags & EVR_HEAP_F_UNTRACKED)
			continue;
		s->inuse_bytes += rec.bytes;
		s->inuse_objects += rec.objects;
		if (mmap)
			ret->mmap_inuse_bytes += rec.bytes;
		else
			ret->inuse_bytes += rec.bytes;
		blk = (struct evr_heap_block){ .address = rec.address, .size = rec.size,
					       .ts_ns = v.ts_ns, .objects = rec.objects,
					       .bytes = rec.bytes, .cookie = site };
		if ((err = evr_heap_live_put(b.live, &blk)) < 0)
			goto out;
	}
	err = n < 0 ? n : 0;
	evr_heap_live_each(b.live, leak_cb, ret);
	/* qsort() with no sites would be given NULL: undefined, and UBSan says so. */
	if (ret->nsites > 1)
		qsort(ret->sites, ret->nsites, sizeof(*ret->sites), by_alloc);
out:
	free(b.pcs);
	evr_heap_live_free(b.live);
	return err;
}

void evr_report_heap_fini(struct evr_report_heap *h)
{
	for (size_t i = 0; i < h->nsites; i++)
		free(h->sites[i].name);
	free(h->sites);
	memset(h, 0, sizeof(*h));
}

static uint64_t pos(double v)
{
	return v > 0 ? (uint64_t)(v + 0.5) : 0;
}

static const char *fmt_age(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 10000000000ull)
		snprintf(buf, len, "%.0f s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	else
		snprintf(buf, len, "%.0f us", (double)ns / 1e3);
	return buf;
}

/* The sites of one kind, in @h's order, up to @top (0: all). */
static size_t kind_sites(const struct evr_report_heap *h, bool mmap)
{
	size_t n = 0;

	for (size_t i = 0; i < h->nsites; i++)
		n += h->sites[i].mmap == mmap;
	return n;
}

static void print_sites(FILE *f, const struct evr_report_heap *h, unsigned top, bool mmap)
{
	size_t all = kind_sites(h, mmap), n = top && top < all ? top : all;
	char b1[32], b2[32];

	fprintf(f, "\n%s (%zu of %zu, by bytes %s; estimates, each within about "
		"1/sqrt(samples))\n  %12s %10s %12s %10s  %s\n",
		mmap ? "Anonymous mmap sites" : "Heap allocation sites", n, all,
		mmap ? "mapped" : "allocated", mmap ? "MAPPED" : "ALLOCATED",
		mmap ? "MAPPINGS" : "BLOCKS", "IN USE", mmap ? "MAPPINGS" : "BLOCKS", "SITE");
	for (size_t i = 0, k = 0; i < h->nsites && k < n; i++) {
		const struct evr_report_heap_site *s = &h->sites[i];

		if (s->mmap != mmap)
			continue;
		k++;
		fprintf(f, "  %12s %10" PRIu64 " %12s %10" PRIu64 "  %s\n",
			evr_fmt_bytes(pos(s->alloc_bytes), b1, sizeof(b1)), pos(s->alloc_objects),
			evr_fmt_bytes(pos(s->inuse_bytes), b2, sizeof(b2)), pos(s->inuse_objects),
			s->name);
	}
}

void evr_report_heap_print(FILE *f, const struct evr_report_heap *h, unsigned top)
{
	size_t leaks = 0;
	char b1[32], b2[32], b3[32];

	if (h->mmaps) {
		fprintf(f, "\nAnonymous mmap: %" PRIu64 " sampled mappings, %" PRIu64 " munmaps of "
			"them (whole or part); estimated %s mapped, %s still mapped at the end\n",
			h->mmaps, h->munmaps, evr_fmt_bytes(pos(h->mmap_bytes), b1, sizeof(b1)),
			evr_fmt_bytes(pos(h->mmap_inuse_bytes), b2, sizeof(b2)));
		print_sites(f, h, top, true);
	}
	if (!h->allocs)
		return;
	fprintf(f, "\nHeap: %" PRIu64 " sampled allocations (one every %s on average), %" PRIu64
		" of their frees; estimated %s allocated, %s in use at the end\n", h->allocs,
		evr_fmt_bytes(h->rate, b1, sizeof(b1)), h->frees,
		evr_fmt_bytes(pos(h->alloc_bytes), b2, sizeof(b2)),
		evr_fmt_bytes(pos(h->inuse_bytes), b3, sizeof(b3)));
	print_sites(f, h, top, false);
	for (size_t i = 0; i < h->nsites; i++)
		leaks += h->sites[i].live > 0 && !h->sites[i].mmap;
	fprintf(f, "\nLeak candidates (sampled blocks alive at the end, by site; ages at the "
		"trace's end)\n  %12s %10s %8s %10s %10s  %s\n", "IN USE", "BLOCKS", "SAMPLES",
		"OLDEST", "NEWEST", "SITE");
	if (!leaks)
		fprintf(f, "  (none)\n");
	for (size_t i = 0, k = 0; i < h->nsites && (!top || k < top); i++) {
		const struct evr_report_heap_site *s = &h->sites[i];

		if (!s->live || s->mmap)
			continue;
		k++;
		fprintf(f, "  %12s %10" PRIu64 " %8" PRIu64 " %10s %10s  %s\n",
			evr_fmt_bytes(pos(s->inuse_bytes), b1, sizeof(b1)), pos(s->inuse_objects),
			s->live, fmt_age(h->end_ns - s->oldest_ns, b2, sizeof(b2)),
			fmt_age(h->end_ns - s->newest_ns, b3, sizeof(b3)), s->name);
	}
}

static int json_sites(struct evr_strbuf *sb, const struct evr_report_heap *h, unsigned top,
		      bool mmap)
{
	size_t all = kind_sites(h, mmap), n = top && top < all ? top : all;
	int err = 0;

	for (size_t i = 0, k = 0; i < h->nsites && k < n && !err; i++) {
		const struct evr_report_heap_site *s = &h->sites[i];

		if (s->mmap != mmap)
			continue;
		err = evr_strbuf_printf(sb, "%s{\"site\":", k++ ? "," : "");
		if (!err)
			err = evr_strbuf_json_string(sb, s->name, strlen(s->name));
		if (!err)
			err = evr_strbuf_printf(sb, ",\"alloc_bytes\":%" PRIu64 ",\"alloc_objects\":%"
						PRIu64 ",\"inuse_bytes\":%" PRIu64 ",\"inuse_objects\":%"
						PRIu64 ",\"samples\":%" PRIu64 ",\"live_samples\":%"
						PRIu64 ",\"oldest_age_ns\":%" PRIu64 "}",
						pos(s->alloc_bytes), pos(s->alloc_objects),
						pos(s->inuse_bytes), pos(s->inuse_objects), s->samples,
						s->live, s->live ? h->end_ns - s->oldest_ns : 0);
	}
	return err;
}

int evr_report_heap_json(struct evr_strbuf *sb, const struct evr_report_heap *h, unsigned top)
{
	int err;

	if (!h->allocs && !h->mmaps)
		return 0;
	if (sb->len < 2 || memcmp(sb->buf + sb->len - 2, "}\n", 2))
		return -EINVAL;
	sb->len -= 2;
	err = evr_strbuf_printf(sb, ",\"heap\":{\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64
				",\"rate\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64 ",\"inuse_bytes\":%"
				PRIu64 ",\"sites_total\":%zu,\"sites\":[", h->allocs, h->frees,
				h->rate, pos(h->alloc_bytes), pos(h->inuse_bytes),
				kind_sites(h, false));
	if (!err)
		err = json_sites(sb, h, top, false);
	/* Anonymous mappings, the same way: "mmap":{"mmaps","munmaps",...,"sites":[...]}. */
	if (!err)
		err = evr_strbuf_printf(sb, "],\"mmap\":{\"mmaps\":%" PRIu64 ",\"munmaps\":%" PRIu64
					",\"mapped_bytes\":%" PRIu64 ",\"inuse_bytes\":%" PRIu64
					",\"sites_total\":%zu,\"sites\":[", h->mmaps, h->munmaps,
					pos(h->mmap_bytes), pos(h->mmap_inuse_bytes),
					kind_sites(h, true));
	if (!err)
		err = json_sites(sb, h, top, true);
	if (!err)
		err = evr_strbuf_append(sb, "]}}}\n", 5);
	return err;
}
