// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Profiles: stacks aggregated into a tree of symbolized frames, for the formats
 * users' profilers read and for the flame graphs evring draws itself.
 *
 * - Folded stacks (Brendan Gregg's FlameGraph, inferno, speedscope): one line
 *   per distinct stack, "root;...;leaf COUNT".
 * - speedscope JSON (https://www.speedscope.app/file-format-schema.json): one
 *   "sampled" profile per thread, samples in time order with their weights,
 *   frames shared.
 * - An SVG flame graph: rectangles as wide as their share, the root at the
 *   bottom, a <title> per rectangle for the full name and figures; no script.
 *
 * Frames are names (function, or module+offset when the function is unknown);
 * the root of each stack is its thread's name, so that threads stay apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/trace.h>

#include <evring/heap.h>

#include "symbols-internal.h"

struct pnode {
	uint32_t name;			/* index into names */
	uint32_t parent;		/* node index; 0 for children of the root */
	uint32_t first_child, next;	/* 0: none (node 0 is the root) */
	uint64_t self, total;
};

struct psample {
	uint32_t thread;		/* index into threads */
	uint32_t node;			/* leaf */
	uint64_t time_ns, weight;
};

struct evr_profile {
	char **names;
	uint32_t nnames, capnames;
	uint32_t *name_hash;		/* open addressing: name index + 1; 0 empty */
	uint32_t name_hash_cap;
	struct pnode *nodes;
	uint32_t nnodes, capnodes;
	struct psample *samples;
	size_t nsamples, capsamples;
	char *unit;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

int evr_profile_new(const char *unit, struct evr_profile **ret)
{
	struct evr_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->capnodes = 256;
	p->nodes = calloc(p->capnodes, sizeof(*p->nodes));
	p->name_hash_cap = 1024;
	p->name_hash = calloc(p->name_hash_cap, sizeof(*p->name_hash));
	p->unit = strdup(unit ? unit : "samples");
	if (!p->nodes || !p->name_hash || !p->unit) {
		evr_profile_free(p);
		return -ENOMEM;
	}
	p->nnodes = 1;		/* the root */
	*ret = p;
	return 0;
}

void evr_profile_free(struct evr_profile *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	free(p->name_hash);
	free(p->nodes);
	free(p->samples);
	free(p->unit);
	free(p);
}

static int intern(struct evr_profile *p, const char *s, uint32_t *ret)
{
	uint32_t mask, i;

	if (p->nnames * 2 >= p->name_hash_cap) {
		uint32_t cap = p->name_hash_cap * 2;
		uint32_t *h = calloc(cap, sizeof(*h));

		if (!h)
			return -ENOMEM;
		for (uint32_t k = 0; k < p->nnames; k++) {
			uint32_t j = (uint32_t)hash_str(p->names[k]) & (cap - 1);

			while (h[j])
				j = (j + 1) & (cap - 1);
			h[j] = k + 1;
		}
		free(p->name_hash);
		p->name_hash = h;
		p->name_hash_cap = cap;
	}
	mask = p->name_hash_cap - 1;
	for (i = (uint32_t)hash_str(s) & mask; p->name_hash[i]; i = (i + 1) & mask) {
		if (strcmp(p->names[p->name_hash[i] - 1], s) == 0) {
			*ret = p->name_hash[i] - 1;
			return 0;
		}
	}
	if (p->nnames == p->capnames) {
		uint32_t cap = p->capnames ? p->capnames * 2 : 256;
		char **v = realloc(p->names, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->names = v;
		p->capnames = cap;
	}
	p->names[p->nnames] = strdup(s);
	if (!p->names[p->nnames])
		return -ENOMEM;
	p->name_hash[i] = ++p->nnames;
	*ret = p->nnames - 1;
	return 0;
}

/* The child of @parent named @name, created if needed. */
static int child(struct evr_profile *p, uint32_t parent, uint32_t name, uint32_t *ret)
{
	uint32_t c;

	for (c = p->nodes[parent].first_child; c; c = p->nodes[c].next) {
		if (p->nodes[c].name == name) {
			*ret = c;
			return 0;
		}
	}
	if (p->nnodes == p->capnodes) {
		uint32_t cap = p->capnodes * 2;
		struct pnode *v = realloc(p->nodes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->nodes = v;
		p->capnodes = cap;
	}
	c = p->nnodes++;
	memset(&p->nodes[c], 0, sizeof(p->nodes[c]));
	p->nodes[c].name = name;
	p->nodes[c].parent = parent;
	p->nodes[c].next = p->nodes[parent].first_child;
	p->nodes[parent].first_child = c;
	*ret = c;
	return 0;
}

int evr_profile_add(struct evr_profile *p, const char *thread, const char *const *frames,
		    uint32_t n, uint64_t time_ns, uint64_t weight)
{
	uint32_t node = 0, name, tname;
	int err;

	err = intern(p, thread, &tname);
	if (err)
		return err;
	err = child(p, 0, tname, &node);
	/* Root first: frames[] is innermost first. */
	for (uint32_t i = n; !err && i-- > 0;) {
		err = intern(p, frames[i], &name);
		if (!err)
			err = child(p, node, name, &node);
	}
	if (err)
		return err;
	p->nodes[node].self += weight;
	for (uint32_t k = node;; k = p->nodes[k].parent) {
		p->nodes[k].total += weight;
		if (!k)
			break;
	}
	if (p->nsamples == p->capsamples) {
		size_t cap = p->capsamples ? p->capsamples * 2 : 1024;
		struct psample *v = realloc(p->samples, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->samples = v;
		p->capsamples = cap;
	}
	p->samples[p->nsamples++] = (struct psample){ tname, node, time_ns, weight };
	return 0;
}

uint64_t evr_profile_total(const struct evr_profile *p)
{
	return p->nodes[0].total;
}

size_t evr_profile_count(const struct evr_profile *p, size_t *ret_stacks)
{
	if (ret_stacks) {
		size_t k = 0;

		for (uint32_t i = 1; i < p->nnodes; i++)
			k += p->nodes[i].self != 0;
		*ret_stacks = k;
	}
	return p->nsamples;
}

static int func_cmp(const void *a, const void *b)
{
	const struct evr_profile_func *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

int evr_profile_functions(const struct evr_profile *p, struct evr_profile_func **ret,
			  size_t *ret_n)
{
	struct evr_profile_func *v = calloc(p->nnames ? p->nnames : 1, sizeof(*v));
	uint32_t *seen = calloc(p->nnames ? p->nnames : 1, sizeof(*seen));
	bool *is_thread = calloc(p->nnames ? p->nnames : 1, sizeof(*is_thread));
	size_t n = 0;

	if (!v || !seen || !is_thread) {
		free(v);
		free(seen);
		free(is_thread);
		return -ENOMEM;
	}
	for (uint32_t t = p->nodes[0].first_child; t; t = p->nodes[t].next)
		is_thread[p->nodes[t].name] = true;
	/*
	 * Each stack's weight (a node's self) counts once as self for its leaf and
	 * once as total for every distinct function on its path, as pprof's cum: a
	 * recursive function is not counted twice. seen[] holds the stamp (node
	 * index) of the path that last counted a name.
	 */
	for (uint32_t i = 1; i < p->nnodes; i++) {
		uint64_t w = p->nodes[i].self;

		if (!w || !p->nodes[i].parent)
			continue;	/* nothing ends here, or a thread with no frames */
		v[p->nodes[i].name].self += w;
		for (uint32_t k = i; k && p->nodes[k].parent; k = p->nodes[k].parent) {
			uint32_t nm = p->nodes[k].name;

			if (seen[nm] == i)
				continue;
			seen[nm] = i;
			v[nm].total += w;
		}
	}
	for (uint32_t i = 0; i < p->nnames; i++) {
		if (!v[i].total || is_thread[i])
			continue;
		v[n].name = p->names[i];
		v[n].self = v[i].self;
		v[n].total = v[i].total;
		n++;
	}
	free(seen);
	free(is_thread);
	qsort(v, n, sizeof(*v), func_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* ---- folded stacks ----------------------------------------------------------- */

/* Names may not hold ';' (the separator) or end a line: replaced. */
static void put_folded_name(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
}

static void put_path(FILE *f, const struct evr_profile *p, uint32_t node)
{
	if (p->nodes[node].parent) {
		put_path(f, p, p->nodes[node].parent);
		fputc(';', f);
	}
	put_folded_name(f, p->names[p->nodes[node].name]);
}

int evr_profile_write_folded(const struct evr_profile *p, FILE *f)
{
	for (uint32_t i = 1; i < p->nnodes; i++) {
		if (!p->nodes[i].self)
			continue;
		put_path(f, p, i);
		fprintf(f, " %" PRIu64 "\n", p->nodes[i].self);
	}
	return ferror(f) ? -EIO : 0;
}

/* ---- speedscope ----------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void put_sample_frames(FILE *f, const struct evr_profile *p, uint32_t node, bool *first)
{
	/* Root first, without the thread (a profile per thread). */
	if (p->nodes[node].parent) {
		put_sample_frames(f, p, p->nodes[node].parent, first);
		fprintf(f, "%s%u", *first ? "" : ",", p->nodes[node].name);
		*first = false;
	}
}

int evr_profile_write_speedscope(const struct evr_profile *p, const char *name, FILE *f)
{
	fprintf(f, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		   "\"exporter\":\"evring\",\"name\":");
	json_str(f, name);
	fprintf(f, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
	for (uint32_t i = 0; i < p->nnames; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		json_str(f, p->names[i]);
		fputc('}', f);
	}
	fprintf(f, "]},\"profiles\":[");
	/*
	 * One profile per thread (the root's children), samples in the order added;
	 * the busiest thread first, as activeProfileIndex 0 is the one speedscope
	 * opens on.
	 */
	uint32_t nthreads = 0, *threads;
	uint64_t *count;	/* samples per thread, by the thread's name index */
	bool firstp = true;

	for (uint32_t t = p->nodes[0].first_child; t; t = p->nodes[t].next)
		nthreads++;
	threads = malloc((nthreads ? nthreads : 1) * sizeof(*threads));
	count = calloc(p->nnames ? p->nnames : 1, sizeof(*count));
	if (!threads || !count) {
		free(threads);
		free(count);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		count[p->samples[i].thread]++;
	nthreads = 0;
	for (uint32_t t = p->nodes[0].first_child; t; t = p->nodes[t].next) {
		uint32_t k = nthreads++;

		/* Insertion by samples, most first (then by weight); a tie keeps the order met. */
		for (; k > 0; k--) {
			const struct pnode *a = &p->nodes[threads[k - 1]], *b = &p->nodes[t];

			if (count[a->name] > count[b->name] ||
			    (count[a->name] == count[b->name] && a->total >= b->total))
				break;
			threads[k] = threads[k - 1];
		}
		threads[k] = t;
	}
	free(count);
	for (uint32_t ti = 0; ti < nthreads; ti++) {
		uint32_t tname = p->nodes[threads[ti]].name;
		uint64_t sum = 0, n = 0;
		bool first = true;

		/*
		 * speedscope lays a sampled profile's samples end to end, each as wide
		 * as its weight, over startValue..endValue: the range is the sum of
		 * the weights. The samples' wall-clock span (seconds of a thread that
		 * ran for milliseconds) left the Time Order view a blank line.
		 */
		for (size_t i = 0; i < p->nsamples; i++) {
			if (p->samples[i].thread != tname)
				continue;
			sum += p->samples[i].weight;
			n++;
		}
		if (!n)
			continue;
		fprintf(f, "%s{\"type\":\"sampled\",\"name\":", firstp ? "" : ",");
		firstp = false;
		json_str(f, p->names[tname]);
		fprintf(f, ",\"unit\":");
		json_str(f, p->unit);
		fprintf(f, ",\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":[", sum);
		for (size_t i = 0; i < p->nsamples; i++) {
			bool ff = true;

			if (p->samples[i].thread != tname)
				continue;
			fprintf(f, "%s[", first ? "" : ",");
			put_sample_frames(f, p, p->samples[i].node, &ff);
			fputc(']', f);
			first = false;
		}
		fprintf(f, "],\"weights\":[");
		first = true;
		for (size_t i = 0; i < p->nsamples; i++) {
			if (p->samples[i].thread != tname)
				continue;
			fprintf(f, "%s%" PRIu64, first ? "" : ",", p->samples[i].weight);
			first = false;
		}
		fprintf(f, "]}");
	}
	free(threads);
	fprintf(f, "]}\n");
	return ferror(f) ? -EIO : 0;
}

/* ---- flame graph (SVG) ------------------------------------------------------------ */

#define FG_ROW 17
#define FG_FONT 11

static void xml_text(FILE *f, const char *s, size_t max)
{
	for (size_t i = 0; s[i] && i < max; i++) {
		switch (s[i]) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(s[i], f);
		}
	}
}

static uint32_t depth_of(const struct evr_profile *p, uint32_t node, uint32_t d)
{
	uint32_t best = d;

	for (uint32_t c = p->nodes[node].first_child; c; c = p->nodes[c].next) {
		uint32_t k = depth_of(p, c, d + 1);

		if (k > best)
			best = k;
	}
	return best;
}

/* Warm colors, stable per name: the same function has the same color everywhere. */
static void color(const char *name, char *buf, size_t len)
{
	uint64_t h = hash_str(name);

	snprintf(buf, len, "rgb(%u,%u,%u)", 205 + (unsigned)(h % 50), 80 + (unsigned)((h >> 8) % 130),
		 (unsigned)((h >> 16) % 60));
}

/*
 * @v of @unit as a person reads it: nanoseconds as "79.1 ms", bytes as "3.2 MiB",
 * anything else as "1234 samples". A title is read, not parsed (the JSON and
 * pprof outputs keep the exact figures).
 */
static void amount(uint64_t v, const char *unit, char *buf, size_t len)
{
	static const char *const ns_units[] = { "ns", "\xc2\xb5s", "ms", "s" };
	static const char *const b_units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double x = (double)v;
	unsigned i = 0;

	if (!strcmp(unit, "nanoseconds")) {
		for (; x >= 1000 && i < 3; i++)
			x /= 1000;
		snprintf(buf, len, i && x < 99.95 ? "%.3g %s" : "%.0f %s", x, ns_units[i]);
	} else if (!strcmp(unit, "bytes")) {
		for (; x >= 1024 && i < 4; i++)
			x /= 1024;
		snprintf(buf, len, i && x < 99.95 ? "%.3g %s" : "%.0f %s", x, b_units[i]);
	} else {
		snprintf(buf, len, "%" PRIu64 " %s", v, unit);
	}
}

static void draw(FILE *f, const struct evr_profile *p, uint32_t node, double x, uint32_t d,
		 uint32_t maxd, double width, double scale)
{
	double w = (double)p->nodes[node].total * scale;
	double cx = x;
	char fill[32], amt[48];

	if (w < 0.3)
		return;
	if (node) {
		const char *name = p->names[p->nodes[node].name];
		double y = (double)(maxd - d) * FG_ROW + 30;

		color(name, fill, sizeof(fill));
		fprintf(f, "<g><title>");
		xml_text(f, name, 4096);
		amount(p->nodes[node].total, p->unit, amt, sizeof(amt));
		fprintf(f, " (%s, %.2f%%)</title>", amt,
			100.0 * (double)p->nodes[node].total / (double)p->nodes[0].total);
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>",
			x, y, w, FG_ROW - 1, fill);
		if (w > 3 * FG_FONT) {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + FG_ROW - 5);
			xml_text(f, name, (size_t)((w - 6) / (FG_FONT * 0.6)));
			fprintf(f, "</text>");
		}
		fprintf(f, "</g>\n");
	}
	for (uint32_t c = p->nodes[node].first_child; c; c = p->nodes[c].next) {
		draw(f, p, c, cx, d + 1, maxd, width, scale);
		cx += (double)p->nodes[c].total * scale;
	}
}

int evr_profile_write_svg(const struct evr_profile *p, const char *title, uint32_t width,
			  FILE *f)
{
	uint32_t maxd = depth_of(p, 0, 0);
	double scale = p->nodes[0].total ? (double)(width - 20) / (double)p->nodes[0].total : 0;
	uint32_t height = (maxd + 1) * FG_ROW + 40;
	char amt[48];

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"flamegraph\" width=\"%u\" "
		   "height=\"%u\" viewBox=\"0 0 %u %u\" style=\"max-width:100%%;height:auto\" "
		   "font-family=\"monospace\" font-size=\"%d\">\n",
		width, height, width, height, FG_FONT);
	fprintf(f, "<text x=\"%u\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">", width / 2);
	xml_text(f, title, 200);
	amount(p->nodes[0].total, p->unit, amt, sizeof(amt));
	fprintf(f, " (%s)</text>\n", amt);
	draw(f, p, 0, 10, 0, maxd, width, scale);
	fprintf(f, "</svg>\n");
	return ferror(f) ? -EIO : 0;
}

/* ---- from a trace -------------------------------------------------------------------- */

/*
 * A frame's names for aggregation, innermost first, at most @room (>= 1): the
 * functions debug info says are inlined at @pc, then the function that holds
 * it, else module+offset, else the address (written in @buf). Returns how many.
 */
static uint32_t frame_names(struct evr_symbolizer *sym, uint64_t pc, bool is_return,
			    const char **names, uint32_t room, char *buf, size_t len)
{
	struct evr_sym s = { 0 };
	uint32_t k = 0;

	if (sym)
		evr_symbolizer_lookup(sym, pc, is_return, &s);
	for (; k < s.ninlined && k + 1 < room; k++)
		names[k] = s.inlined[k].func;
	if (s.func) {
		names[k] = s.func;
	} else {
		if (s.module)
			snprintf(buf, len, "%s+0x%" PRIx64, s.module, s.module_offset);
		else
			snprintf(buf, len, "0x%" PRIx64, pc);
		names[k] = buf;
	}
	return k + 1;
}

static const char *thread_label(struct evr_trace_reader *r, uint32_t tid, char *buf, size_t len)
{
	const char *n = r ? evr_trace_reader_thread_name(r, tid) : NULL;

	snprintf(buf, len, "%s (%u)", n ? n : "thread", tid);
	return buf;
}

int evr_profile_add_samples(struct evr_profile *p, const struct evr_samples *ss,
			    struct evr_symbolizer *sym, struct evr_trace_reader *r)
{
	char bufs[128][96];
	const char *names[128];
	char tl[64];
	int err = 0;
	/*
	 * A system-wide recording (record --system) holds every process's samples;
	 * only the recorded process's binaries are known, and its threads' names:
	 * its profile is its own (report shows every process's share).
	 */
	bool system = ss->has_sampler && (ss->sampler.event & EVR_SAMPLER_SYSTEM);
	const struct evr_process_info *own = system && r ? evr_trace_reader_process(r) : NULL;

	for (size_t i = 0; i < ss->n && !err; i++) {
		const struct evr_sample_rec *s = &ss->v[i];
		const uint64_t *fr = ss->frames + ss->frame_off[i];
		uint32_t n = 0;

		if (s->type != EVR_SAMPLE_CPU || !s->nframes)
			continue;
		if (system && (!own || s->pid != own->pid))
			continue;
		/* A frame's last name only may use its buffer: bufs[n] before the call. */
		for (uint32_t k = 0; k < s->nframes && n < 128; k++)
			n += frame_names(sym, fr[k], k > 0, names + n, 128 - n, bufs[n],
					 sizeof(bufs[n]));
		err = evr_profile_add(p, thread_label(r, s->tid, tl, sizeof(tl)), names, n,
				      s->time_ns, s->value ? s->value : 1);
	}
	return err;
}

int evr_profile_add_event_stack(struct evr_profile *p, struct evr_symbolizer *sym,
				struct evr_trace_reader *r, uint32_t tid, const void *frames,
				uint32_t nframes, uint64_t time_ns)
{
	char bufs[128][96];
	const char *names[128];
	char tl[64];
	uint32_t n = 0;

	for (uint32_t k = 0; k < nframes && n < 128; k++) {
		uint64_t pc;

		memcpy(&pc, (const uint8_t *)frames + 8u * k, 8);
		n += frame_names(sym, pc, true, names + n, 128 - n, bufs[n], sizeof(bufs[n]));
	}
	return evr_profile_add(p, thread_label(r, tid, tl, sizeof(tl)), names, n, time_ns, 1);
}

/* A sampled block alive, for the in-use profile: its thread, kind and stack (malloc'ed). */
struct heap_stack {
	uint32_t tid, n;
	bool mmap;		/* an anonymous mapping, not a heap block */
	uint64_t frames[];
};

/*
 * The in-use profile's frame between the thread and the stack: which kind of
 * memory the bytes below it are, so that folded and speedscope profiles keep
 * heap blocks and anonymous mappings apart (both kinds are bytes in use, of
 * different allocators; pprof labels them kind=heap / kind=mmap).
 */
#define HEAP_KIND_HEAP "[heap]"
#define HEAP_KIND_MMAP "[anonymous mmap]"

struct heap_ctx {
	struct evr_profile *p;
	struct evr_symbolizer *sym;
	struct evr_trace_reader *r;
	struct evr_heap_live *live;
	uint64_t allocs;
	int err;
};

static void heap_add_live(const struct evr_heap_block *b, void *arg)
{
	struct heap_ctx *c = arg;
	const struct heap_stack *hs = (const struct heap_stack *)(uintptr_t)b->cookie;
	char bufs[128][96];
	const char *names[128];
	char tl[64];
	uint32_t n = 0;

	/* One name kept for the kind, the root-most. */
	for (uint32_t k = 0; k < hs->n && n < 127; k++)
		n += frame_names(c->sym, hs->frames[k], true, names + n, 127 - n, bufs[n],
				 sizeof(bufs[n]));
	names[n++] = hs->mmap ? HEAP_KIND_MMAP : HEAP_KIND_HEAP;
	if (!c->err && b->bytes >= 0.5)
		c->err = evr_profile_add(c->p, thread_label(c->r, hs->tid, tl, sizeof(tl)), names, n,
					 b->ts_ns, (uint64_t)(b->bytes + 0.5));
}

static void heap_free_stack(const struct evr_heap_block *b, void *arg)
{
	(void)arg;
	free((void *)(uintptr_t)b->cookie);
}

/* One event of the Heap provider: the blocks alive and their stacks. */
static int heap_event(struct heap_ctx *c, const struct evr_event_view *v, enum evr_heap_kind k,
		      const struct evr_heap_rec *h)
{
	struct evr_heap_block b;
	struct heap_stack *hs;
	uint32_t n = v->nframes < 128 ? v->nframes : 128;
	int err;

	if (!c->live && (err = evr_heap_live_new(&c->live)) < 0)
		return err;
	if (k == EVR_HEAP_FREE) {
		/* A part of a mapping unmapped leaves the block (and its stack) there. */
		if (evr_heap_live_release(c->live, h, &b) && b.objects != 0)
			free((void *)(uintptr_t)b.cookie);
		return 0;
	}
	if (evr_heap_live_take(c->live, h->address, &b))
		free((void *)(uintptr_t)b.cookie);
	c->allocs++;
	if (h->flags & EVR_HEAP_F_UNTRACKED)
		return 0;
	hs = malloc(sizeof(*hs) + 8u * n);
	if (!hs)
		return -ENOMEM;
	hs->tid = v->tid;
	hs->n = n;
	hs->mmap = h->flags & EVR_HEAP_F_MMAP;
	if (n)
		memcpy(hs->frames, v->frames, 8u * n);
	b = (struct evr_heap_block){ .address = h->address, .size = h->size, .ts_ns = v->ts_ns,
				     .objects = h->objects, .bytes = h->bytes,
				     .cookie = (uintptr_t)hs };
	if ((err = evr_heap_live_put(c->live, &b)) < 0)
		free(hs);
	return err;
}

/*
 * The CPU samples (unless @event_stacks); else, from the events, a trace with
 * the Heap provider's samples makes a profile of the heap in use at the end, in
 * bytes (each sampled block alive as many bytes as it stands for, at its
 * allocation's stack); else the events' stacks.
 */
int evr_profile_from_trace(struct evr_trace_reader *r, struct evr_symbolizer *sym,
			   const struct evr_samples *ss, bool event_stacks,
			   struct evr_profile **ret)
{
	bool cpu = !event_stacks && ss && ss->n;
	struct heap_ctx hc = { .sym = sym, .r = r };
	struct evr_profile *p;
	struct evr_event_view v;
	struct evr_heap_rec h;
	int err, n = 0;

	err = evr_profile_new(cpu ? "nanoseconds" : "events", &p);
	if (err)
		return err;
	/* CPU samples are read from @ss alone: @r stays unread (report --html reads it next). */
	while (!cpu && (n = evr_trace_reader_next(r, &v)) == 1 && !err) {
		enum evr_heap_kind k = event_stacks ? EVR_HEAP_NONE : evr_heap_decode(&v, &h);

		if (k)
			err = heap_event(&hc, &v, k, &h);
		else if (v.type == EVR_REC_EVENT && v.nframes)
			err = evr_profile_add_event_stack(p, sym, r, v.tid, v.frames, v.nframes,
							  v.ts_ns);
	}
	if (!err && n < 0)
		err = n;
	if (!err && hc.allocs) {
		evr_profile_free(p);
		p = NULL;
		err = evr_profile_new("bytes", &p);
		hc.p = p;
		if (!err)
			evr_heap_live_each(hc.live, heap_add_live, &hc);
		err = err ? err : hc.err;
	} else if (!err && cpu) {
		err = evr_profile_add_samples(p, ss, sym, r);
	}
	if (hc.live) {
		evr_heap_live_each(hc.live, heap_free_stack, NULL);
		evr_heap_live_free(hc.live);
	}
	if (err) {
		evr_profile_free(p);
		return err;
	}
	*ret = p;
	return 0;
}

/* ---- Chrome JSON stack frames ------------------------------------------------------ */

struct evr_chrome_frames {
	struct evr_profile *p;		/* the frames tree; no thread level */
	struct evr_symbolizer *sym;
	const struct evr_samples *ss;
};

int evr_chrome_frames_new(struct evr_symbolizer *sym, const struct evr_samples *ss,
			  struct evr_chrome_frames **ret)
{
	struct evr_chrome_frames *cf = calloc(1, sizeof(*cf));
	int err;

	if (!cf)
		return -ENOMEM;
	err = evr_profile_new("events", &cf->p);
	if (err) {
		free(cf);
		return err;
	}
	cf->sym = sym;
	cf->ss = ss;
	*ret = cf;
	return 0;
}

void evr_chrome_frames_free(struct evr_chrome_frames *cf)
{
	if (!cf)
		return;
	evr_profile_free(cf->p);
	free(cf);
}

/* The tree node of a stack (innermost first), as an id >= 1. */
static int frames_node(struct evr_chrome_frames *cf, const uint64_t *pcs, uint32_t n,
		       bool first_is_pc, uint64_t *ret)
{
	const char *names[16];
	char buf[96];
	uint32_t node = 0, name;
	int err = 0;

	for (uint32_t i = n; !err && i-- > 0;) {
		uint32_t k = frame_names(cf->sym, pcs[i], i > 0 || !first_is_pc, names, 16, buf,
					 sizeof(buf));

		/* Outermost first: the function that holds the pc, then what it inlined. */
		while (!err && k-- > 0) {
			err = intern(cf->p, names[k], &name);
			if (!err)
				err = child(cf->p, node, name, &node);
		}
	}
	*ret = node;
	return err;
}

int evr_chrome_frames_stack_id(void *ctx, const struct evr_event_view *v, uint64_t *ret)
{
	uint64_t pcs[128];
	uint32_t n = v->nframes < 128 ? v->nframes : 128;

	memcpy(pcs, v->frames, 8u * n);
	return frames_node(ctx, pcs, n, false, ret);
}

long evr_chrome_frames_write(void *ctx, FILE *out)
{
	struct evr_chrome_frames *cf = ctx;
	const struct evr_samples *ss = cf->ss;
	uint64_t *ids = NULL;
	long start = ftell(out);
	size_t ncpu = 0;
	int err = 0;

	/* The samples' stacks join the tree before it is written. */
	if (ss && ss->n) {
		ids = calloc(ss->n, sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		for (size_t i = 0; i < ss->n && !err; i++)
			if (ss->v[i].type == EVR_SAMPLE_CPU && ss->v[i].nframes) {
				err = frames_node(cf, ss->frames + ss->frame_off[i], ss->v[i].nframes,
						  true, &ids[i]);
				ncpu++;
			}
		if (err) {
			free(ids);
			return err;
		}
	}
	fputs(",\n\"stackFrames\":{", out);
	for (uint32_t i = 1; i < cf->p->nnodes; i++) {
		fprintf(out, "%s\"%u\":{\"name\":", i > 1 ? "," : "", i);
		json_str(out, cf->p->names[cf->p->nodes[i].name]);
		fputs(",\"category\":\"evring\"", out);
		if (cf->p->nodes[i].parent)
			fprintf(out, ",\"parent\":\"%u\"", cf->p->nodes[i].parent);
		fputc('}', out);
	}
	fputc('}', out);
	if (ncpu) {
		bool first = true;

		/* Chrome's sampling profile: the CPU samples, on the events' timeline (us). */
		fputs(",\n\"samples\":[", out);
		for (size_t i = 0; i < ss->n; i++) {
			const struct evr_sample_rec *s = &ss->v[i];

			if (!ids[i])
				continue;
			fprintf(out,
				"%s{\"cpu\":%u,\"pid\":%u,\"tid\":%u,\"ts\":%" PRIu64 ".%03" PRIu64
				",\"name\":\"cpu-clock\",\"sf\":%" PRIu64 ",\"weight\":%" PRIu64 "}",
				first ? "" : ",", s->cpu, s->pid, s->tid, s->time_ns / 1000,
				s->time_ns % 1000,
				ids[i], s->value ? s->value : 1);
			first = false;
		}
		fputc(']', out);
	}
	free(ids);
	if (ferror(out))
		return -EIO;
	return start >= 0 ? ftell(out) - start : 0;
}
