// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The numbers of `evring report`, from one pass over a trace. Memory depends on
 * the number of event types, threads, rings and counters, never on the number
 * of events: rates over time are kept in at most EVR_RPT_BUCKETS buckets whose
 * width doubles (neighbours merged) when the trace outgrows them, and counter
 * series keep at most EVR_RPT_POINTS points, thinned evenly the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/abi.h>

#include "export-internal.h"

#define FIRST_BUCKET_NS 1000000u	/* 1 ms: widened as the trace goes on */

void evr_rpt_fini(struct evr_rpt *m)
{
	for (uint32_t i = 0; i < m->nproviders; i++) {
		free(m->providers[i].name);
		free(m->providers[i].buckets);
	}
	free(m->providers);
	for (uint32_t i = 0; i < m->nevents; i++)
		free(m->events_v[i]);
	free(m->events_v);
	for (uint32_t i = 0; i < m->nthreads; i++)
		free(m->threads_v[i]);
	free(m->threads_v);
	for (uint32_t i = 0; i < m->ncounters; i++) {
		struct evr_rpt_counter *c = &m->counters[i];

		free(c->provider);
		free(c->name);
		free(c->display);
		free(c->unit);
		free(c->points);
	}
	free(m->counters);
	free(m->ring_lost);
	free(m->ring_events);
	evr_rpt_map_fini(&m->by_rid);
	evr_rpt_map_fini(&m->by_tid);
	memset(m, 0, sizeof(*m));
}

uint64_t evr_rpt_span(const struct evr_rpt *m)
{
	return m->last_ts > m->first_ts ? m->last_ts - m->first_ts : 1;
}

/* Grow a pointer array by one. */
static int append_ptr(void ***v, uint32_t *n, void *p)
{
	void **nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	nv[(*n)++] = p;
	*v = nv;
	return 0;
}

static int provider_index(struct evr_rpt *m, const char *name, uint32_t *ret)
{
	struct evr_rpt_provider *v;

	for (uint32_t i = 0; i < m->nproviders; i++)
		if (!strcmp(m->providers[i].name, name)) {
			*ret = i;
			return 0;
		}
	v = realloc(m->providers, (m->nproviders + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->providers = v;
	v += m->nproviders;
	memset(v, 0, sizeof(*v));
	v->name = strdup(name);
	v->buckets = calloc(EVR_RPT_BUCKETS, sizeof(*v->buckets));
	if (!v->name || !v->buckets) {
		free(v->name);
		free(v->buckets);
		return -ENOMEM;
	}
	*ret = m->nproviders++;
	return 0;
}

/* The event type of @v, created at first sight. */
static int event_type(struct evr_rpt *m, const struct evr_event_view *v, struct evr_rpt_event **ret)
{
	struct evr_rpt_event *e = evr_rpt_map_get(&m->by_rid, v->rid);
	int err;

	/* A rid described again (a later METADATA entry) counts as the new type. */
	if (e && e->schema == v->schema) {
		*ret = e;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->schema = v->schema;
	e->rid = v->rid;
	if ((err = provider_index(m, v->schema ? v->schema->provider : "?", &e->provider)) < 0 ||
	    (err = append_ptr((void ***)&m->events_v, &m->nevents, e)) < 0) {
		free(e);
		return err;
	}
	/* The map points at the latest type of the rid; older ones stay in events_v. */
	if ((err = evr_rpt_map_put(&m->by_rid, v->rid, e)) < 0)
		return err;
	*ret = e;
	return 0;
}

static int thread_count(struct evr_rpt *m, uint32_t tid)
{
	struct evr_rpt_thread *t = evr_rpt_map_get(&m->by_tid, tid);
	int err;

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		t->tid = tid;
		if ((err = append_ptr((void ***)&m->threads_v, &m->nthreads, t)) < 0) {
			free(t);
			return err;
		}
		if ((err = evr_rpt_map_put(&m->by_tid, tid, t)) < 0)
			return err;
	}
	t->count++;
	return 0;
}

/* Halve the time resolution: bucket i takes 2i and 2i+1. */
static void widen(struct evr_rpt *m)
{
	for (uint32_t p = 0; p <= m->nproviders; p++) {
		uint64_t *b = p < m->nproviders ? m->providers[p].buckets : m->lost_buckets;

		for (uint32_t i = 0; i < EVR_RPT_BUCKETS / 2; i++)
			b[i] = b[2 * i] + b[2 * i + 1];
		memset(b + EVR_RPT_BUCKETS / 2, 0, EVR_RPT_BUCKETS / 2 * sizeof(*b));
	}
	m->bucket_ns *= 2;
}

static uint32_t bucket_of(struct evr_rpt *m, uint64_t ts)
{
	uint64_t d = ts - m->first_ts;

	while (d / m->bucket_ns >= EVR_RPT_BUCKETS)
		widen(m);
	return (uint32_t)(d / m->bucket_ns);
}

static char *dup_n(const char *s, uint32_t n)
{
	return strndup(s ? s : "", s ? n : 0);
}

static int counter_sample(struct evr_rpt *m, const struct evr_counter_sample *s)
{
	struct evr_rpt_counter *c = NULL;

	for (uint32_t i = 0; i < m->ncounters; i++) {
		struct evr_rpt_counter *k = &m->counters[i];

		if (strlen(k->name) == s->name_len && !memcmp(k->name, s->name, s->name_len) &&
		    !strcmp(k->provider, s->provider)) {
			c = k;
			break;
		}
	}
	if (!c) {
		c = realloc(m->counters, (m->ncounters + 1) * sizeof(*c));
		if (!c)
			return -ENOMEM;
		m->counters = c;
		c += m->ncounters;
		memset(c, 0, sizeof(*c));
		c->provider = strdup(s->provider);
		c->name = dup_n(s->name, s->name_len);
		c->display = dup_n(s->display_name, s->display_name_len);
		c->unit = dup_n(s->unit, s->unit_len);
		c->points = malloc(EVR_RPT_POINTS * sizeof(*c->points));
		if (!c->provider || !c->name || !c->display || !c->unit || !c->points) {
			free(c->provider);
			free(c->name);
			free(c->display);
			free(c->unit);
			free(c->points);
			return -ENOMEM;
		}
		c->kind = s->kind;
		c->interval_ms = s->interval_ms;
		c->stride = 1;
		c->min = c->max = s->value;
		m->ncounters++;
	}
	if (s->value < c->min)
		c->min = s->value;
	if (s->value > c->max)
		c->max = s->value;
	c->sum += s->value;
	c->last = s->value;
	if (c->samples % c->stride == 0) {
		if (c->npoints == EVR_RPT_POINTS) {
			/* Keep every other point, and from now on every other sample. */
			for (uint32_t i = 0; i < EVR_RPT_POINTS / 2; i++)
				c->points[i] = c->points[2 * i];
			c->npoints = EVR_RPT_POINTS / 2;
			c->stride *= 2;
		}
		if (c->samples % c->stride == 0) {
			c->points[c->npoints].ts_ns = s->ts_ns;
			c->points[c->npoints].value = s->value;
			c->npoints++;
		}
	}
	c->samples++;
	return 0;
}

static int view(struct evr_rpt *m, const struct evr_event_view *v)
{
	struct evr_counter_sample s;
	struct evr_rpt_event *e;
	uint32_t b;
	int err;

	if (!m->bucket_ns) {
		/* The first view: the reader returns them in time order. */
		m->first_ts = v->ts_ns;
		m->bucket_ns = FIRST_BUCKET_NS;
	}
	if (v->ts_ns > m->last_ts)
		m->last_ts = v->ts_ns;
	b = bucket_of(m, v->ts_ns < m->first_ts ? m->first_ts : v->ts_ns);
	if (v->type == EVR_REC_LOST) {
		m->lost = evr_trace_lost_add(m->lost, v->lost);
		if (v->ring < m->nr_rings)
			m->ring_lost[v->ring] = evr_trace_lost_add(m->ring_lost[v->ring], v->lost);
		m->lost_buckets[b] = evr_trace_lost_add(m->lost_buckets[b], v->lost);
		return 0;
	}
	m->events++;
	if (v->ring < m->nr_rings)
		m->ring_events[v->ring]++;
	if ((err = event_type(m, v, &e)) < 0 || (err = thread_count(m, v->tid)) < 0)
		return err;
	e->count++;
	m->providers[e->provider].count++;
	m->providers[e->provider].buckets[b]++;
	if (!v->schema) {
		m->undecodable++;
		return 0;
	}
	err = evr_counter_sample_from_view(v, &s);
	if (err < 0)
		m->bad_samples++;
	else if (err == 1)
		return counter_sample(m, &s);
	return 0;
}

int evr_rpt_build(struct evr_trace_reader *r, struct evr_rpt *m, char *err, size_t errlen)
{
	struct evr_event_view v;
	int ret;

	m->proc = evr_trace_reader_process(r);
	m->sess = evr_trace_reader_session(r);
	m->nr_rings = m->sess ? m->sess->nr_rings : 0;
	m->ring_lost = calloc(m->nr_rings + 1, sizeof(*m->ring_lost));
	m->ring_events = calloc(m->nr_rings + 1, sizeof(*m->ring_events));
	if (!m->ring_lost || !m->ring_events) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	while ((ret = evr_trace_reader_next(r, &v)) == 1) {
		if ((ret = view(m, &v)) < 0) {
			snprintf(err, errlen, "out of memory");
			return ret;
		}
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s", ret == -ENOMEM ? "out of memory"
							  : evr_trace_reader_errmsg(r));
		return ret;
	}
	evr_trace_reader_stats(r, &m->st);
	/*
	 * What the END chunk says the file held and lacks is damage, not loss:
	 * all of it (damaged_events), whether the LOST views counted part of it
	 * (lost_damaged, taken out of the loss) or it was past a ring's last
	 * readable packet (counted nowhere else).
	 */
	m->damaged = m->st.damaged_events;
	m->lost -= m->st.lost_damaged <= m->lost ? m->st.lost_damaged : m->lost;
	return 0;
}

int evr_rpt_command(const struct evr_rpt *m, struct evr_strbuf *sb)
{
	const struct evr_process_info *p = m->proc;
	int err = 0;

	if (p && p->argc) {
		for (uint32_t i = 0; i < p->argc && !err; i++)
			err = evr_strbuf_printf(sb, "%s%s", i ? " " : "", p->argv[i] ? p->argv[i] : "");
		return err;
	}
	return evr_strbuf_printf(sb, "%s", p && p->exe ? p->exe : "?");
}

static int cmp_event(const void *a, const void *b)
{
	const struct evr_rpt_event *x = *(struct evr_rpt_event *const *)a;
	const struct evr_rpt_event *y = *(struct evr_rpt_event *const *)b;

	if (x->provider != y->provider)
		return x->provider < y->provider ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->rid < y->rid ? -1 : x->rid > y->rid;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct evr_rpt_thread *x = *(struct evr_rpt_thread *const *)a;
	const struct evr_rpt_thread *y = *(struct evr_rpt_thread *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_counter(const void *a, const void *b)
{
	const struct evr_rpt_counter *x = a, *y = b;
	int c = strcmp(x->provider, y->provider);

	return c ? c : strcmp(x->name, y->name);
}

void evr_rpt_sort(struct evr_rpt *m)
{
	uint32_t n = m->nproviders ? m->nproviders : 1;
	uint32_t *rank = calloc(n, sizeof(*rank)), *newpos = calloc(n, sizeof(*newpos));
	struct evr_rpt_provider tmp;

	/* Providers by events, descending; event types refer to them by index. */
	if (rank && newpos) {
		for (uint32_t i = 0; i < m->nproviders; i++)
			rank[i] = i;
		/* Few providers: an insertion sort that carries rank[new] = old. */
		for (uint32_t i = 1; i < m->nproviders; i++)
			for (uint32_t j = i; j > 0 && m->providers[j].count > m->providers[j - 1].count;
			     j--) {
				uint32_t t = rank[j];

				tmp = m->providers[j];
				m->providers[j] = m->providers[j - 1];
				m->providers[j - 1] = tmp;
				rank[j] = rank[j - 1];
				rank[j - 1] = t;
			}
		for (uint32_t i = 0; i < m->nproviders; i++)
			newpos[rank[i]] = i;
		for (uint32_t i = 0; i < m->nevents; i++)
			m->events_v[i]->provider = newpos[m->events_v[i]->provider];
	}
	free(rank);
	free(newpos);
	if (m->nevents)
		qsort(m->events_v, m->nevents, sizeof(*m->events_v), cmp_event);
	if (m->nthreads)
		qsort(m->threads_v, m->nthreads, sizeof(*m->threads_v), cmp_thread);
	if (m->ncounters)
		qsort(m->counters, m->ncounters, sizeof(*m->counters), cmp_counter);
}

const char *evr_rpt_event_name(const struct evr_rpt *m, const struct evr_rpt_event *e,
			       char *buf, size_t len)
{
	if (e->schema)
		snprintf(buf, len, "%s/%s", e->schema->provider, e->schema->name);
	else
		snprintf(buf, len, "%s/rid %" PRIu32, m->providers[e->provider].name, e->rid);
	return buf;
}

const char *evr_rpt_thread_name(const struct evr_trace_reader *r, uint32_t tid)
{
	const char *n = evr_trace_reader_thread_name(r, tid);

	return n ? n : tid ? "" : "(unknown thread)";
}
