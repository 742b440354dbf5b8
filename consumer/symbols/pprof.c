// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * pprof's profile format (`evring convert --format pprof`): a gzip-compressed
 * protobuf message (proto/pprof.proto), read by `go tool pprof`, pprof's own
 * binary and the services built on it.
 *
 * Unlike the other exports (profile.c), which aggregate symbolized names, this
 * one keeps addresses: a Location per distinct address, in the Mapping of the
 * module that holds it (path, range, file offset, build ID: the trace's module
 * map), with one Line naming its Function when the symbolizer knew it (and one
 * before it for each function inlined there, innermost first). pprof
 * then shows functions, and still has what it needs to symbolize the rest
 * itself (`pprof -symbolize=local` with PPROF_BINARY_PATH pointing at
 * unstripped files). JIT frames resolved by a perf map have no mapping.
 *
 * A Location's address is the one looked up: a return address minus one (the
 * call instruction), as pprof's own profiles hold them, and frame 0 of a CPU
 * sample as is. Samples are aggregated per thread and stack: values are
 * [samples, CPU nanoseconds] (the periods) for CPU samples, [events] for event
 * stacks; labels "thread" (its name) and "tid" let `-tagfocus` and `-tags` keep
 * threads apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <evring/framing.h>
#include <evring/pprof.pb-c.h>
#include <evring/trace.h>

#include <evring/heap.h>

#include "symbols-internal.h"

/* ---- a map from byte strings to indexes ----------------------------------------- */

struct kv {
	uint8_t *key;			/* owned; NULL: empty slot */
	uint32_t len;
	uint32_t val;
	uint64_t hash;
};

struct kmap {
	struct kv *v;
	size_t cap, n;
};

static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void kmap_fini(struct kmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->v[i].key);
	free(m->v);
}

/*
 * The value of @key, or, when absent, @val stored for it. Return: 1 found
 * (*ret = its value), 0 added (*ret = @val), -ENOMEM.
 */
static int kmap_get_or_add(struct kmap *m, const void *key, uint32_t len, uint32_t val,
			   uint32_t *ret)
{
	uint64_t h = hash_bytes(key, len);
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		struct kv *v = calloc(cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < m->cap; k++) {
			if (!m->v[k].key)
				continue;
			for (i = m->v[k].hash & (cap - 1); v[i].key; i = (i + 1) & (cap - 1))
				;
			v[i] = m->v[k];
		}
		free(m->v);
		m->v = v;
		m->cap = cap;
	}
	for (i = h & (m->cap - 1); m->v[i].key; i = (i + 1) & (m->cap - 1)) {
		if (m->v[i].hash == h && m->v[i].len == len && !memcmp(m->v[i].key, key, len)) {
			*ret = m->v[i].val;
			return 1;
		}
	}
	m->v[i].key = malloc(len ? len : 1);
	if (!m->v[i].key)
		return -ENOMEM;
	memcpy(m->v[i].key, key, len);
	m->v[i] = (struct kv){ m->v[i].key, len, val, h };
	m->n++;
	*ret = val;
	return 0;
}

/* ---- the profile being built ------------------------------------------------------ */

struct pp_sample {
	uint64_t *locs;			/* location ids, innermost first */
	uint32_t nlocs;
	uint32_t tid;
	int64_t value[4];
	bool heap;			/* a heap site (pprof-heap.c), not a stack's count */
	bool mmap;			/* heap: of anonymous mappings (label kind=mmap) */
	double hv[4];			/* heap: alloc objects, space, in-use objects, space */
};

struct pp {
	struct evr_symbolizer *sym;
	const struct evr_modmap *mods;	/* the symbolizer's, or NULL */
	struct evr_trace_reader *r;
	const struct evr_samples *ss;
	bool cpu;

	struct kmap strmap;
	char **strs;
	uint32_t nstrs, capstrs;

	struct kmap locmap;		/* lookup address -> location index */
	Evr__Pprof__Location *locs;
	uint32_t *line0;		/* per location: its first entry of lines[] */
	uint32_t nlocs, caplocs;
	/* Each location's lines, in order: the functions inlined there, innermost
	 * first, then the function that holds the address (pprof's convention). */
	Evr__Pprof__Line *lines;
	uint32_t nlines, caplines;

	struct kmap funcmap;		/* (name, file) string indexes -> function index */
	Evr__Pprof__Function *funcs;
	uint32_t nfuncs, capfuncs;

	uint32_t *map_ids;		/* per module map entry: mapping id, 0 unused */
	uint8_t *map_unsym;		/* per entry: 1 a location without function, 2 without line */

	struct kmap samplemap;		/* (tid, location ids) -> sample index */
	struct pp_sample *samples;
	size_t nsamples, capsamples;
	uint64_t stacks;		/* stacks added (before aggregation) */
	uint64_t cpu_ns;		/* their weights */
	uint64_t first_ns, last_ns;
	/* Heap profiles: Alloc events seen, the rate of the last, the blocks alive. */
	uint64_t heap_allocs, heap_rate;
	struct evr_heap_live *live;
};

static int grow(void **v, uint32_t *cap, uint32_t n, size_t size)
{
	void *nv;
	uint32_t nc;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 256;
	nv = realloc(*v, (size_t)nc * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}

/* The string table index of @s. */
static int str_index(struct pp *p, const char *s, int64_t *ret)
{
	uint32_t idx;
	int err;

	err = kmap_get_or_add(&p->strmap, s, (uint32_t)strlen(s), p->nstrs, &idx);
	if (err < 0)
		return err;
	if (err == 0) {
		if (grow((void **)&p->strs, &p->capstrs, p->nstrs, sizeof(*p->strs)) < 0)
			return -ENOMEM;
		p->strs[p->nstrs] = strdup(s);
		if (!p->strs[p->nstrs])
			return -ENOMEM;
		p->nstrs++;
	}
	*ret = idx;
	return 0;
}

static int func_id(struct pp *p, const char *name, const char *file, uint64_t *ret)
{
	int64_t key[2];
	uint32_t idx;
	int err;

	if ((err = str_index(p, name, &key[0])) < 0 || (err = str_index(p, file, &key[1])) < 0)
		return err;
	err = kmap_get_or_add(&p->funcmap, key, sizeof(key), p->nfuncs, &idx);
	if (err < 0)
		return err;
	if (err == 0) {
		Evr__Pprof__Function *f;

		if (grow((void **)&p->funcs, &p->capfuncs, p->nfuncs, sizeof(*p->funcs)) < 0)
			return -ENOMEM;
		f = &p->funcs[p->nfuncs++];
		evr__pprof__function__init(f);
		f->id = idx + 1;
		f->name = key[0];
		f->system_name = key[0];
		f->filename = key[1];
	}
	*ret = idx + 1;
	return 0;
}

/* The mapping id of the module holding @addr (0: none), created when first met. */
static uint32_t mapping_of(struct pp *p, uint64_t addr, size_t *ret_mod)
{
	const struct evr_module *m = p->mods ? evr_modmap_find(p->mods, addr) : NULL;
	size_t i;

	if (!m)
		return 0;
	i = (size_t)(m - p->mods->v);
	*ret_mod = i;
	if (!p->map_ids[i]) {
		uint32_t next = 0;

		for (size_t k = 0; k < p->mods->n; k++)
			if (p->map_ids[k] > next)
				next = p->map_ids[k];
		p->map_ids[i] = next + 1;
	}
	return p->map_ids[i];
}

/* The location id of @pc (@is_return: a return address, looked up at pc - 1). */
static int loc_id(struct pp *p, uint64_t pc, bool is_return, uint64_t *ret)
{
	uint64_t addr = is_return && pc ? pc - 1 : pc;
	Evr__Pprof__Location *l;
	struct evr_sym s = { 0 };
	size_t mod = 0;
	uint32_t idx;
	int err;

	err = kmap_get_or_add(&p->locmap, &addr, sizeof(addr), p->nlocs, &idx);
	if (err < 0)
		return err;
	if (err == 1) {
		*ret = idx + 1;
		return 0;
	}
	if (p->nlocs == p->caplocs) {
		/* line0[] has the capacity of locs[]. */
		uint32_t cap = p->caplocs;
		uint32_t *n0;

		if (grow((void **)&p->locs, &cap, p->nlocs, sizeof(*p->locs)) < 0)
			return -ENOMEM;
		n0 = realloc(p->line0, (size_t)cap * sizeof(*n0));
		if (!n0)
			return -ENOMEM;
		p->line0 = n0;
		p->caplocs = cap;
	}
	l = &p->locs[p->nlocs];
	evr__pprof__location__init(l);
	l->id = idx + 1;
	l->address = addr;
	p->line0[p->nlocs] = p->nlines;
	if (p->sym)
		evr_symbolizer_lookup(p->sym, pc, is_return, &s);
	l->mapping_id = s.jit ? 0 : mapping_of(p, addr, &mod);
	if (s.func) {
		for (uint32_t k = 0; k <= s.ninlined; k++) {
			const char *fn = k < s.ninlined ? s.inlined[k].func : s.func;
			const char *file = k < s.ninlined ? s.inlined[k].file : s.file;
			Evr__Pprof__Line *ln;

			if (p->nlines == p->caplines &&
			    grow((void **)&p->lines, &p->caplines, p->nlines, sizeof(*p->lines)) < 0)
				return -ENOMEM;
			ln = &p->lines[p->nlines];
			evr__pprof__line__init(ln);
			err = func_id(p, fn, file ? file : "", &ln->function_id);
			if (err < 0)
				return err;
			ln->line = k < s.ninlined ? s.inlined[k].line : s.line;
			p->nlines++;
		}
		l->n_line = 1 + s.ninlined;
		if (l->mapping_id && !s.line)
			p->map_unsym[mod] |= 2;
	} else if (l->mapping_id) {
		p->map_unsym[mod] |= 1;
	}
	p->nlocs++;
	*ret = idx + 1;
	return 0;
}

/*
 * The sample of one stack (@pcs innermost first; @first_is_pc: frame 0 is where
 * the thread was) and @key0 (the thread, or HEAP_KEY for a heap site of any
 * thread), made if new, into @ret_idx.
 */
#define HEAP_KEY (1ull << 40)
#define MMAP_KEY (HEAP_KEY | 1u)	/* a site's anonymous mappings: a sample of their own */
static int sample_of(struct pp *p, uint64_t key0, uint32_t tid, const uint64_t *pcs, uint32_t n,
		     bool first_is_pc, uint32_t *ret_idx)
{
	uint64_t *key;
	uint32_t idx;
	int err = 0;

	key = malloc(8u * ((size_t)n + 1));
	if (!key)
		return -ENOMEM;
	key[0] = key0;
	for (uint32_t k = 0; k < n && !err; k++)
		err = loc_id(p, pcs[k], k > 0 || !first_is_pc, &key[k + 1]);
	if (!err)
		err = kmap_get_or_add(&p->samplemap, key, 8u * (n + 1), (uint32_t)p->nsamples, &idx);
	if (err == 0) {
		struct pp_sample *s;

		if (p->nsamples == p->capsamples) {
			size_t cap = p->capsamples ? p->capsamples * 2 : 1024;
			struct pp_sample *v = realloc(p->samples, cap * sizeof(*v));

			if (!v) {
				free(key);
				return -ENOMEM;
			}
			p->samples = v;
			p->capsamples = cap;
		}
		s = &p->samples[p->nsamples++];
		memset(s, 0, sizeof(*s));
		s->locs = key;
		s->nlocs = n;
		s->tid = tid;
		s->heap = key0 == HEAP_KEY || key0 == MMAP_KEY;
		s->mmap = key0 == MMAP_KEY;
		key = NULL;
	} else if (err < 0) {
		free(key);
		return err;
	}
	free(key);
	*ret_idx = idx;
	return 0;
}

/* One stack (sample_of()) of @weight. */
static int add_stack(struct pp *p, uint32_t tid, const uint64_t *pcs, uint32_t n,
		     bool first_is_pc, uint64_t time_ns, int64_t weight)
{
	uint32_t idx;
	int err = sample_of(p, tid, tid, pcs, n, first_is_pc, &idx);

	if (err)
		return err;
	p->samples[idx].value[0] += 1;
	p->samples[idx].value[1] += weight;
	p->cpu_ns += (uint64_t)weight;
	if (!p->stacks++ || time_ns < p->first_ns)
		p->first_ns = time_ns;
	if (time_ns > p->last_ns)
		p->last_ns = time_ns;
	return 0;
}

/*
 * An event of the Heap provider: an Alloc adds what it stands for to its site
 * (its stack, whatever the thread) and becomes a block alive; a Free takes its
 * block's share out of what the site has in use. A Free of a block the trace
 * never saw allocated (before the recording, or not sampled) is no one's.
 */
static int add_heap(struct pp *p, const struct evr_event_view *v, enum evr_heap_kind k,
		    const struct evr_heap_rec *h)
{
	struct evr_heap_block b;
	struct pp_sample *s;
	uint64_t pcs[128];
	uint32_t idx, n = v->nframes < 128 ? v->nframes : 128;
	int err;

	if (!p->live && (err = evr_heap_live_new(&p->live)) < 0)
		return err;
	/* A Free or Munmap (of all or part), or an address given out again whose free
	 * the trace lacks: that block is gone. */
	if (k == EVR_HEAP_FREE ? evr_heap_live_release(p->live, h, &b) :
				 evr_heap_live_take(p->live, h->address, &b)) {
		p->samples[b.cookie].hv[2] -= b.objects;
		p->samples[b.cookie].hv[3] -= b.bytes;
	}
	if (k == EVR_HEAP_FREE)
		return 0;
	if (n)
		memcpy(pcs, v->frames, 8u * n);
	if ((err = sample_of(p, h->flags & EVR_HEAP_F_MMAP ? MMAP_KEY : HEAP_KEY, 0, pcs, n, false,
			     &idx)) < 0)
		return err;
	s = &p->samples[idx];
	s->hv[0] += h->objects;
	s->hv[1] += h->bytes;
	if (!(h->flags & EVR_HEAP_F_UNTRACKED)) {
		b = (struct evr_heap_block){ .address = h->address, .size = h->size,
					     .ts_ns = v->ts_ns, .objects = h->objects,
					     .bytes = h->bytes, .cookie = idx };
		s->hv[2] += h->objects;
		s->hv[3] += h->bytes;
		if ((err = evr_heap_live_put(p->live, &b)) < 0)
			return err;
	}
	if (!p->heap_allocs++ || v->ts_ns < p->first_ns)
		p->first_ns = v->ts_ns;
	if (v->ts_ns > p->last_ns)
		p->last_ns = v->ts_ns;
	p->heap_rate = h->rate;
	return 0;
}

/*
 * The CPU samples; else, from the events, the Heap provider's samples (unless
 * @event_stacks) make a heap profile, and without them the events' stacks
 * make one.
 */
static int add_trace(struct pp *p, const struct evr_samples *ss, bool event_stacks)
{
	struct evr_event_view v;
	struct evr_heap_rec h;
	uint64_t pcs[128];
	int err = 0, n = 0;

	while (!p->cpu && !err && (n = evr_trace_reader_next(p->r, &v)) == 1) {
		uint32_t k = v.nframes < 128 ? v.nframes : 128;
		enum evr_heap_kind hk = event_stacks ? EVR_HEAP_NONE : evr_heap_decode(&v, &h);

		if (hk) {
			err = add_heap(p, &v, hk, &h);
			continue;
		}
		if (v.type != EVR_REC_EVENT || !k)
			continue;
		memcpy(pcs, v.frames, 8u * k);
		err = add_stack(p, v.tid, pcs, k, false, v.ts_ns, 1);
	}
	if (!err && n < 0)
		err = n;
	if (err || p->heap_allocs) {
		p->cpu = false;
		return err;
	}
	for (size_t i = 0; p->cpu && i < ss->n && !err; i++) {
		const struct evr_sample_rec *s = &ss->v[i];

		if (s->type == EVR_SAMPLE_CPU && s->nframes)
			err = add_stack(p, s->tid, ss->frames + ss->frame_off[i], s->nframes, true,
					s->time_ns, (int64_t)(s->value ? s->value : 1));
	}
	return err;
}

/* ---- the message, gzip-compressed ------------------------------------------------- */

struct gz {
	z_stream z;
	FILE *out;
	uint8_t in[1u << 16];
	size_t nin;
	uint8_t outbuf[1u << 16];
};

/* Compress what is buffered; @flush Z_FINISH at the end. */
static int gz_run(struct gz *g, int flush)
{
	int zr;

	g->z.next_in = g->in;
	g->z.avail_in = (uInt)g->nin;
	do {
		g->z.next_out = g->outbuf;
		g->z.avail_out = sizeof(g->outbuf);
		zr = deflate(&g->z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		size_t have = sizeof(g->outbuf) - g->z.avail_out;

		if (have && fwrite(g->outbuf, 1, have, g->out) != have)
			return -EIO;
	} while (g->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
	g->nin = 0;
	return 0;
}

static int gz_sink(void *ctx, const uint8_t *data, size_t len)
{
	struct gz *g = ctx;

	while (len) {
		size_t k = sizeof(g->in) - g->nin;
		int err;

		if (k > len)
			k = len;
		memcpy(g->in + g->nin, data, k);
		g->nin += k;
		data += k;
		len -= k;
		if (g->nin == sizeof(g->in) && (err = gz_run(g, Z_NO_FLUSH)) < 0)
			return err;
	}
	return 0;
}

static int write_message(const Evr__Pprof__Profile *msg, FILE *out)
{
	struct gz *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return -ENOMEM;
	g->out = out;
	/* 15 + 16: a gzip header and trailer around the deflate stream, as pprof reads it. */
	if (deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	err = evr_pb_pack_to(&msg->base, gz_sink, g);
	if (!err)
		err = gz_run(g, Z_FINISH);
	deflateEnd(&g->z);
	free(g);
	if (!err && ferror(out))
		err = -EIO;
	return err;
}

static int value_type(struct pp *p, Evr__Pprof__ValueType *vt, const char *type, const char *unit)
{
	int err;

	evr__pprof__value_type__init(vt);
	if ((err = str_index(p, type, &vt->type)) < 0)
		return err;
	return str_index(p, unit, &vt->unit);
}

static int build_and_write(struct pp *p, const char *name, FILE *out)
{
	Evr__Pprof__Profile msg = EVR__PPROF__PROFILE__INIT;
	Evr__Pprof__ValueType vt[5], *vtp[4];
	Evr__Pprof__Sample *samples = NULL, **samplep = NULL;
	Evr__Pprof__Label *labels = NULL, **labelp = NULL;
	Evr__Pprof__Mapping *maps = NULL, **mapp = NULL;
	Evr__Pprof__Location **locp = NULL;
	Evr__Pprof__Line **linep = NULL;
	Evr__Pprof__Function **funcp = NULL;
	const struct evr_trace_session *ses = p->r ? evr_trace_reader_session(p->r) : NULL;
	const struct evr_process_info *pi = p->r ? evr_trace_reader_process(p->r) : NULL;
	int64_t k_thread, k_tid, k_kind = 0, comments[2];
	char line[512];
	size_t nmaps = 0, nout = 0;
	bool heap = p->heap_allocs > 0;
	uint32_t nvt = heap ? 4 : p->cpu ? 2 : 1;
	int err;

	/* Value types and labels' keys first: their strings join the table. Heap: Go's
	 * names and order, inuse_space last (what pprof shows by default). */
	if (heap) {
		err = value_type(p, &vt[0], "alloc_objects", "count");
		if (!err)
			err = value_type(p, &vt[1], "alloc_space", "bytes");
		if (!err)
			err = value_type(p, &vt[2], "inuse_objects", "count");
		if (!err)
			err = value_type(p, &vt[3], "inuse_space", "bytes");
		if (!err)
			err = value_type(p, &vt[4], "space", "bytes");
	} else {
		err = p->cpu ? value_type(p, &vt[0], "samples", "count") :
			       value_type(p, &vt[0], "events", "count");
	}
	if (!err && p->cpu)
		err = value_type(p, &vt[1], "cpu", "nanoseconds");
	if (!err && p->cpu)
		err = value_type(p, &vt[2], "cpu", "nanoseconds");
	if (!err)
		err = str_index(p, "thread", &k_thread);
	if (!err)
		err = str_index(p, "tid", &k_tid);
	if (!err && heap)
		err = str_index(p, "kind", &k_kind);
	snprintf(line, sizeof(line), "evring trace %s", name);
	if (!err)
		err = str_index(p, line, &comments[0]);
	snprintf(line, sizeof(line), "%s of process %u%s%s",
		 heap ? "heap samples" : p->cpu ? "CPU samples" : "event stacks",
		 pi ? pi->pid : 0, pi && pi->exe ? " " : "", pi && pi->exe ? pi->exe : "");
	if (!err)
		err = str_index(p, line, &comments[1]);
	if (err)
		return err;

	samples = calloc(p->nsamples ? p->nsamples : 1, sizeof(*samples));
	samplep = calloc(p->nsamples ? p->nsamples : 1, sizeof(*samplep));
	labels = calloc(p->nsamples ? 2 * p->nsamples : 1, sizeof(*labels));
	labelp = calloc(p->nsamples ? 2 * p->nsamples : 1, sizeof(*labelp));
	locp = calloc(p->nlocs ? p->nlocs : 1, sizeof(*locp));
	linep = calloc(p->nlines ? p->nlines : 1, sizeof(*linep));
	funcp = calloc(p->nfuncs ? p->nfuncs : 1, sizeof(*funcp));
	if (p->mods && p->mods->n) {
		maps = calloc(p->mods->n, sizeof(*maps));
		mapp = calloc(p->mods->n, sizeof(*mapp));
	}
	err = -ENOMEM;
	if (!samples || !samplep || !labels || !labelp || !locp || !linep || !funcp ||
	    (p->mods && p->mods->n && (!maps || !mapp)))
		goto out;

	for (size_t i = 0; i < p->nsamples; i++) {
		struct pp_sample *s = &p->samples[i];
		Evr__Pprof__Sample *m = &samples[nout];
		Evr__Pprof__Label *l = &labels[2 * nout];
		char tn[64];
		const char *n = evr_trace_reader_thread_name(p->r, s->tid);

		/* A heap profile is of the heap sites only, and they are in no other. */
		if (s->heap != heap)
			continue;
		evr__pprof__sample__init(m);
		m->n_location_id = s->nlocs;
		m->location_id = s->locs + 1;		/* after the tid of the key */
		m->n_value = nvt;
		m->value = s->value;
		if (heap) {
			/* Unbiased estimates, rounded; in use never below zero. */
			for (int k = 0; k < 4; k++)
				s->value[k] = s->hv[k] > 0 ? (int64_t)(s->hv[k] + 0.5) : 0;
			/* kind=malloc or mmap: -tagfocus/-tagignore keep one kind. */
			evr__pprof__label__init(&l[0]);
			l[0].key = k_kind;
			if ((err = str_index(p, s->mmap ? "mmap" : "malloc", &l[0].str)) < 0)
				goto out;
			labelp[2 * nout] = &l[0];
			m->n_label = 1;
			m->label = &labelp[2 * nout];
			samplep[nout++] = m;
			continue;
		}
		snprintf(tn, sizeof(tn), "%s", n ? n : "thread");
		evr__pprof__label__init(&l[0]);
		evr__pprof__label__init(&l[1]);
		l[0].key = k_thread;
		if ((err = str_index(p, tn, &l[0].str)) < 0)
			goto out;
		l[1].key = k_tid;
		l[1].num = s->tid;
		labelp[2 * nout] = &l[0];
		labelp[2 * nout + 1] = &l[1];
		m->n_label = 2;
		m->label = &labelp[2 * nout];
		samplep[nout++] = m;
	}
	for (uint32_t i = 0; i < p->nlines; i++)
		linep[i] = &p->lines[i];
	for (uint32_t i = 0; i < p->nlocs; i++) {
		locp[i] = &p->locs[i];
		if (p->locs[i].n_line)
			p->locs[i].line = &linep[p->line0[i]];
	}
	for (uint32_t i = 0; i < p->nfuncs; i++)
		funcp[i] = &p->funcs[i];
	for (size_t i = 0; p->mods && i < p->mods->n; i++) {
		const struct evr_module *mod = &p->mods->v[i];
		Evr__Pprof__Mapping *m;
		char hex[2 * EVR_BUILD_ID_MAX + 1];

		if (!p->map_ids[i])
			continue;
		m = &maps[nmaps];
		evr__pprof__mapping__init(m);
		m->id = p->map_ids[i];
		m->memory_start = mod->start;
		m->memory_limit = mod->end;
		m->file_offset = mod->pgoff;
		if ((err = str_index(p, mod->path ? mod->path : "", &m->filename)) < 0)
			goto out;
		if (mod->build_id_len &&
		    (err = str_index(p, evr_build_id_hex(mod->build_id, mod->build_id_len, hex,
							 sizeof(hex)), &m->build_id)) < 0)
			goto out;
		/* What pprof need not look up again in the file. */
		m->has_functions = !(p->map_unsym[i] & 1);
		m->has_filenames = m->has_line_numbers = !p->map_unsym[i];
		mapp[nmaps++] = m;
	}
	/* Mappings in id order, which is the order they were first met. */
	for (size_t a = 1; a < nmaps; a++)
		for (size_t b = a; b > 0 && mapp[b - 1]->id > mapp[b]->id; b--) {
			Evr__Pprof__Mapping *t = mapp[b];

			mapp[b] = mapp[b - 1];
			mapp[b - 1] = t;
		}

	for (uint32_t k = 0; k < 4; k++)
		vtp[k] = &vt[k];
	msg.n_sample_type = nvt;
	msg.sample_type = vtp;
	msg.n_sample = nout;
	msg.sample = samplep;
	msg.n_mapping = nmaps;
	msg.mapping = mapp;
	msg.n_location = p->nlocs;
	msg.location = locp;
	msg.n_function = p->nfuncs;
	msg.function = funcp;
	msg.n_string_table = p->nstrs;
	msg.string_table = p->strs;
	msg.n_comment = 2;
	msg.comment = comments;
	if (ses && ses->start_realtime_ns && p->first_ns >= ses->start_mono_ns)
		msg.time_nanos = (int64_t)(ses->start_realtime_ns + (p->first_ns - ses->start_mono_ns));
	msg.duration_nanos = (int64_t)(p->last_ns - p->first_ns);
	if (heap) {
		/* Go's heap profiles: the period is the sampling rate in bytes. */
		msg.period_type = &vt[4];
		msg.period = (int64_t)p->heap_rate;
	} else if (p->cpu) {
		/* The period asked for; a trace without its SAMPLER chunk (cut short): the
		 * mean of the samples' periods. */
		const struct evr_samples *ss = p->ss;

		msg.period_type = &vt[2];
		msg.default_sample_type = vt[1].type;
		/* The timer-tick source's rate is rounded: its samples' periods are exact. */
		if (ss->has_sampler && ss->sampler.freq_hz &&
		    EVR_SAMPLER_EVENT(ss->sampler.event) != EVR_SAMPLER_TIMER_TICK)
			msg.period = 1000000000 / ss->sampler.freq_hz;
		else
			msg.period = (int64_t)(p->cpu_ns / p->stacks);
	}
	err = write_message(&msg, out);
out:
	free(samples);
	free(samplep);
	free(labels);
	free(labelp);
	free(locp);
	free(linep);
	free(funcp);
	free(maps);
	free(mapp);
	return err;
}

/*
 * pprof takes the first Mapping for the main binary ("File: ..." in its reports,
 * what -symbolize looks up first): give mapping id 1 to the traced process's
 * executable before any stack is met, rather than to whatever library held the
 * first sample's pc (libc.so.6, for a program caught sleeping).
 */
static void main_mapping_first(struct pp *p)
{
	const struct evr_process_info *pi = p->r ? evr_trace_reader_process(p->r) : NULL;

	if (!pi || !pi->exe || !*pi->exe)
		return;
	for (size_t i = 0; i < p->mods->n; i++) {
		const struct evr_module *m = &p->mods->v[i];

		if (m->path && !strcmp(m->path, pi->exe) && (!m->pid || m->pid == pi->pid)) {
			p->map_ids[i] = 1;
			return;
		}
	}
}

int evr_pprof_write(struct evr_trace_reader *r, struct evr_symbolizer *sym,
		    const struct evr_samples *ss, bool event_stacks, const char *name, FILE *out,
		    uint64_t *ret_stacks)
{
	struct pp p = { .sym = sym, .r = r, .ss = ss };
	int64_t empty;
	int err;

	*ret_stacks = 0;
	p.cpu = !event_stacks && ss && ss->n;
	p.mods = sym ? evr_symbolizer_modmap(sym) : NULL;
	if (p.mods && p.mods->n) {
		p.map_ids = calloc(p.mods->n, sizeof(*p.map_ids));
		p.map_unsym = calloc(p.mods->n, sizeof(*p.map_unsym));
		if (!p.map_ids || !p.map_unsym) {
			err = -ENOMEM;
			goto out;
		}
		main_mapping_first(&p);
	}
	err = str_index(&p, "", &empty);	/* string 0 is "" */
	if (!err)
		err = add_trace(&p, ss, event_stacks);
	if (!err && p.heap_allocs)
		p.stacks = p.heap_allocs;
	if (!err && !p.stacks)
		err = -ENODATA;
	if (!err)
		err = build_and_write(&p, name, out);
	if (!err)
		*ret_stacks = p.stacks;
out:
	for (size_t i = 0; i < p.nsamples; i++)
		free(p.samples[i].locs);
	free(p.samples);
	for (uint32_t i = 0; i < p.nstrs; i++)
		free(p.strs[i]);
	free(p.strs);
	free(p.locs);
	free(p.line0);
	free(p.lines);
	free(p.funcs);
	free(p.map_ids);
	free(p.map_unsym);
	kmap_fini(&p.strmap);
	kmap_fini(&p.locmap);
	kmap_fini(&p.funcmap);
	kmap_fini(&p.samplemap);
	evr_heap_live_free(p.live);
	return err;
}
