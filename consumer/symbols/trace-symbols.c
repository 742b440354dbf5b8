// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the stacks library reads back from trace files: the module map and perf
 * maps (for a symbolizer) and the CPU samples, from their chunks (kinds 10-13,
 * docs/trace-format.md). Every length is checked: a malformed chunk is
 * refused, whatever precedes it is kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <evring/trace.h>

#include "symbols-internal.h"

int evr_symbolizer_from_trace(struct evr_trace_reader *r, struct evr_symbolizer **ret)
{
	const struct evr_process_info *pi = evr_trace_reader_process(r);
	struct evr_symbolizer *s = NULL;
	struct evr_modmap *m = NULL;
	struct evr_trace_chunk c;
	uint64_t pos = 0;
	bool have_perf_map = false;
	int err;

	*ret = NULL;
	err = evr_modmap_new(&m);
	if (err < 0)
		return err;
	while ((err = evr_trace_reader_chunk_next_kind(r, &pos, EVR_CHUNK_MODULES, &c)) != 0) {
		if (err == -EBADMSG)
			continue;	/* the reader reports damaged chunks itself */
		if (err < 0)
			goto out;
		(void)evr_modmap_decode(m, c.data, c.len);
	}
	if (!m->n) {
		err = 0;
		goto out;
	}
	err = evr_symbolizer_new_offline(m, &s);
	if (err < 0)
		goto out;
	pos = 0;
	while ((err = evr_trace_reader_chunk_next_kind(r, &pos, EVR_CHUNK_PERF_MAP, &c)) != 0) {
		if (err < 0 && err != -EBADMSG)
			break;
		if (err > 0 && c.len >= 8) {
			evr_symbolizer_add_perf_map(s, (const char *)c.data + 8, c.len - 8);
			have_perf_map = true;
		}
	}
	if (!have_perf_map && pi) {
		char *text;
		ssize_t n = evr_perf_map_read((pid_t)pi->pid, &text);

		if (n > 0) {
			evr_symbolizer_add_perf_map(s, text, (size_t)n);
			free(text);
		}
	}
	evr_symbolizer_preload(s);
	*ret = s;
	s = NULL;
	err = 0;
out:
	evr_symbolizer_free(s);
	evr_modmap_free(m);
	return err;
}

void evr_samples_free(struct evr_samples *s)
{
	if (!s)
		return;
	free(s->v);
	free(s->frame_off);
	free(s->frames);
	free(s->tasks);
	free(s);
}

/* Append the records of one TASKS chunk. Return: 0, -EBADMSG (the rest of it is dropped), -ENOMEM. */
static int add_tasks(struct evr_samples *s, size_t *cap, const uint8_t *p, size_t len)
{
	size_t off = 0;

	while (off + sizeof(struct evr_task_rec) <= len) {
		struct evr_task_rec t;
		struct evr_task *v;
		size_t n;

		memcpy(&t, p + off, sizeof(t));
		off += sizeof(t);
		if (t.name_len > len - off)
			return -EBADMSG;
		if (s->ntasks == *cap) {
			size_t c = *cap ? *cap * 2 : 256;

			v = realloc(s->tasks, c * sizeof(*v));
			if (!v)
				return -ENOMEM;
			s->tasks = v;
			*cap = c;
		}
		v = &s->tasks[s->ntasks++];
		memset(v, 0, sizeof(*v));
		v->time_ns = t.time_ns;
		v->pid = t.pid;
		v->tid = t.tid;
		v->ppid = t.ppid;
		v->what = t.what;
		n = t.name_len < sizeof(v->name) - 1 ? t.name_len : sizeof(v->name) - 1;
		memcpy(v->name, p + off, n);
		/* A name is the kernel's comm: keep it printable whatever the file says. */
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)v->name[i] < 0x20 || v->name[i] == 0x7f)
				v->name[i] = '?';
		off += (t.name_len + 7u) & ~(size_t)7u;
	}
	return off >= len ? 0 : -EBADMSG;
}

const char *evr_samples_task_name(const struct evr_samples *s, uint32_t pid)
{
	/* A child that did not exec has its parent's name: follow FORK records up. */
	for (int depth = 0; depth < 8; depth++) {
		const char *any = NULL, *main = NULL;
		uint32_t parent = 0;

		for (size_t i = 0; i < s->ntasks; i++) {
			const struct evr_task *t = &s->tasks[i];

			if (t->pid != pid)
				continue;
			if (t->what == EVR_TASK_FORK && t->tid == pid)
				parent = t->ppid;
			if (!t->name[0])
				continue;
			if (t->tid == pid)
				main = t->name;
			else
				any = t->name;
		}
		if (main || any)
			return main ? main : any;
		if (!parent || parent == pid)
			return NULL;
		pid = parent;
	}
	return NULL;
}

struct order {
	uint64_t time;
	size_t idx;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Append the records of one SAMPLES chunk; -EBADMSG leaves @s as it was. */
static int add_chunk(struct evr_samples *s, size_t *cap, size_t *fcap, const uint8_t *p,
		     size_t len)
{
	size_t o = 0, nrec = 0, nfr = 0;

	while (o < len) {
		struct evr_sample_rec r;

		if (len - o < sizeof(r))
			return -EBADMSG;
		memcpy(&r, p + o, sizeof(r));
		if (r.nframes > 1024 || (len - o - sizeof(r)) / 8 < r.nframes)
			return -EBADMSG;
		o += sizeof(r) + 8u * r.nframes;
		nrec++;
		nfr += r.nframes;
	}
	if (s->n + nrec > *cap) {
		size_t nc = (s->n + nrec) * 2;
		struct evr_sample_rec *v = realloc(s->v, nc * sizeof(*v));
		size_t *fo;

		if (!v)
			return -ENOMEM;
		s->v = v;
		fo = realloc(s->frame_off, nc * sizeof(*fo));
		if (!fo)
			return -ENOMEM;
		s->frame_off = fo;
		*cap = nc;
	}
	size_t used = s->n ? s->frame_off[s->n - 1] + s->v[s->n - 1].nframes : 0;

	if (used + nfr > *fcap) {
		size_t nc = (used + nfr) * 2 + 64;
		uint64_t *f = realloc(s->frames, nc * sizeof(*f));

		if (!f)
			return -ENOMEM;
		s->frames = f;
		*fcap = nc;
	}
	for (o = 0; o < len;) {
		struct evr_sample_rec r;

		memcpy(&r, p + o, sizeof(r));
		s->v[s->n] = r;
		s->frame_off[s->n] = used;
		if (r.nframes)	/* frames is still NULL while every record had none */
			memcpy(s->frames + used, p + o + sizeof(r), 8u * r.nframes);
		used += r.nframes;
		s->n++;
		o += sizeof(r) + 8u * r.nframes;
	}
	return 0;
}

int evr_samples_load(struct evr_trace_reader *r, struct evr_samples **ret)
{
	struct evr_samples *s = calloc(1, sizeof(*s));
	size_t cap = 0, fcap = 0, tcap = 0;
	struct evr_trace_chunk c;
	uint64_t pos = 0;
	int err, bad = 0;

	if (!s)
		return -ENOMEM;
	/* Only these chunks' payloads are read: a trace's EVENTS chunks are skipped. */
	while ((err = evr_trace_reader_chunk_next_kind(r, &pos, EVR_CHUNK_SAMPLES, &c)) != 0) {
		if (err == -EBADMSG)
			continue;
		if (err < 0)
			goto fail;
		err = add_chunk(s, &cap, &fcap, c.data, c.len);
		if (err == -ENOMEM)
			goto fail;
		if (err == -EBADMSG)
			bad = err;
	}
	pos = 0;
	while ((err = evr_trace_reader_chunk_next_kind(r, &pos, EVR_CHUNK_TASKS, &c)) != 0) {
		if (err == -EBADMSG)
			continue;
		if (err < 0)
			goto fail;
		err = add_tasks(s, &tcap, c.data, c.len);
		if (err == -ENOMEM)
			goto fail;
		if (err == -EBADMSG)
			bad = err;
	}
	pos = 0;
	while ((err = evr_trace_reader_chunk_next_kind(r, &pos, EVR_CHUNK_SAMPLER, &c)) != 0) {
		if (err > 0 && c.len >= sizeof(s->sampler)) {
			memcpy(&s->sampler, c.data, sizeof(s->sampler));
			s->has_sampler = true;
		}
		if (err < 0 && err != -EBADMSG)
			goto fail;
	}
	if (s->n > 1) {
		/* Sort by time: the rings of the CPUs were drained one after the other. */
		struct order *ord = malloc(s->n * sizeof(*ord));
		struct evr_sample_rec *v = malloc(s->n * sizeof(*v));
		size_t *fo = malloc(s->n * sizeof(*fo));

		if (!ord || !v || !fo) {
			free(ord);
			free(v);
			free(fo);
			err = -ENOMEM;
			goto fail;
		}
		for (size_t i = 0; i < s->n; i++)
			ord[i] = (struct order){ s->v[i].time_ns, i };
		qsort(ord, s->n, sizeof(*ord), cmp_order);
		for (size_t i = 0; i < s->n; i++) {
			v[i] = s->v[ord[i].idx];
			fo[i] = s->frame_off[ord[i].idx];
		}
		free(ord);
		free(s->v);
		free(s->frame_off);
		s->v = v;
		s->frame_off = fo;
	}
	*ret = s;
	return bad;
fail:
	evr_samples_free(s);
	return err;
}
