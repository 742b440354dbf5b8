// SPDX-License-Identifier: LGPL-2.1-or-later
/* The per-process screen's lines, for the curses view and the batch snapshots. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detail.h"

void evr_top_counter_label(const struct evr_top_counter *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s", c->display[0] ? c->display : c->name);
}

static void clear(char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
}

void evr_top_counter_texts(const struct evr_top_counter *c, char *value, size_t vlen, char *change,
		      size_t clen, char *stats, size_t slen)
{
	const struct evr_counter_sample *s = &c->last;
	char a[32], b[32], d[32];

	if (!c->nsamples) {
		snprintf(value, vlen, "-");
		clear(change, clen);
		clear(stats, slen);
		return;
	}
	evr_top_fmt_value(value, vlen, c->value, c->unit, c->kind, false);
	if (c->stale)
		snprintf(change, clen, "stale");	/* no sample since it was last shown */
	else if (c->nsamples < 2)
		clear(change, clen);
	else
		evr_top_fmt_value(change, clen, c->value - c->prev, c->unit, c->kind, true);
	switch (c->kind) {
	case EVR_SAMPLE_MEAN:
		evr_top_fmt_value(a, sizeof(a), s->min, c->unit, 0, false);
		evr_top_fmt_value(b, sizeof(b), s->max, c->unit, 0, false);
		evr_top_fmt_number(d, sizeof(d), (double)s->count);
		if (s->count)
			snprintf(stats, slen, "min %s  max %s  n %s", a, b, d);
		else
			snprintf(stats, slen, "n 0");
		break;
	case EVR_SAMPLE_HISTOGRAM:
		evr_top_fmt_value(a, sizeof(a), s->p90, c->unit, 0, false);
		evr_top_fmt_value(b, sizeof(b), s->p99, c->unit, 0, false);
		evr_top_fmt_number(d, sizeof(d), (double)s->count);
		if (s->count)
			snprintf(stats, slen, "p90 %s  p99 %s  n %s", a, b, d);
		else
			snprintf(stats, slen, "n 0");
		break;
	case EVR_SAMPLE_RATE:
		/* A rate of percent is a share of time: its increment says nothing more. */
		if (!strcmp(c->unit, "%")) {
			clear(stats, slen);
			break;
		}
		evr_top_fmt_value(a, sizeof(a), s->increment,
			     strcmp(c->unit, "1/s") && strcmp(c->unit, "/s") ? c->unit : "", 0,
			     false);
		snprintf(stats, slen, "%s in %.3gs", a, s->interval_ms / 1000.0);
		break;
	default:
		clear(stats, slen);
		break;
	}
}

void evr_top_proc_header(const struct evr_top_proc *p, char *buf, size_t len)
{
	char lost[48] = "";

	if (p->lost)
		snprintf(lost, sizeof(lost), "  %llu samples lost", (unsigned long long)p->lost);
	char stale[64] = "";

	if (p->stale)
		snprintf(stale, sizeof(stale), "  no new samples for %.1f s", p->stale_ms / 1000.0);
	char ns[32] = "";

	if (p->ns_pid)
		snprintf(ns, sizeof(ns), " (ns %d)", (int)p->ns_pid);
	if (p->state == EVR_WATCH_FAILED)
		snprintf(buf, len, "PID %d%s  %s  failed: %s", (int)p->pid, ns, p->name, p->err);
	else
		snprintf(buf, len, "PID %d%s  %s  %s  %u counters%s%s", (int)p->pid, ns, p->name,
			 evr_watch_state_name(p->state), p->nctr, lost, stale);
}

/* Counters of one provider, by name (@ctx true) or in arrival order. */
static int cmp_ctr(const void *pa, const void *pb, void *ctx)
{
	bool by_name = *(const bool *)ctx;
	const struct evr_top_counter *a = *(const struct evr_top_counter *const *)pa;
	const struct evr_top_counter *b = *(const struct evr_top_counter *const *)pb;

	if (by_name) {
		int r = strcmp(a->display[0] ? a->display : a->name,
			       b->display[0] ? b->display : b->name);
		if (r)
			return r;
	}
	return (a->order > b->order) - (a->order < b->order);
}

static int push(struct evr_top_line **v, uint32_t *n, uint32_t *cap, struct evr_top_line l)
{
	if (*n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 64;
		struct evr_top_line *nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = l;
	return 0;
}

int evr_top_detail_lines(struct evr_top_proc *const *procs, uint32_t n, bool by_name, struct evr_top_line **ret,
		    uint32_t *ret_n)
{
	struct evr_top_line *v = NULL;
	const struct evr_top_counter **tmp = NULL;
	uint32_t nv = 0, cap = 0;
	int r = 0;

	for (uint32_t i = 0; i < n && r == 0; i++) {
		const struct evr_top_proc *p = procs[i];
		uint32_t k = 0;

		if (i)
			r = push(&v, &nv, &cap, (struct evr_top_line){ .kind = EVR_TOP_LINE_BLANK, .p = p });
		if (r == 0)
			r = push(&v, &nv, &cap, (struct evr_top_line){ .kind = EVR_TOP_LINE_PROC, .p = p });
		free(tmp);
		tmp = calloc(p->nctr ? p->nctr : 1, sizeof(*tmp));
		if (!tmp) {
			r = -ENOMEM;
			break;
		}
		/* Providers in arrival order: a provider starts where its first counter is. */
		for (uint32_t a = 0; a < p->nctr && r == 0; a++) {
			const char *prov = p->ctr[a].provider;
			bool seen = false;

			for (uint32_t b = 0; b < a && !seen; b++)
				seen = !strcmp(p->ctr[b].provider, prov);
			if (seen)
				continue;
			r = push(&v, &nv, &cap,
				 (struct evr_top_line){ .kind = EVR_TOP_LINE_PROVIDER, .p = p, .provider = prov });
			k = 0;
			for (uint32_t b = a; b < p->nctr; b++)
				if (!strcmp(p->ctr[b].provider, prov))
					tmp[k++] = &p->ctr[b];
			qsort_r(tmp, k, sizeof(*tmp), cmp_ctr, &by_name);
			for (uint32_t b = 0; b < k && r == 0; b++)
				r = push(&v, &nv, &cap,
					 (struct evr_top_line){ .kind = EVR_TOP_LINE_COUNTER, .p = p, .c = tmp[b] });
		}
	}
	free(tmp);
	if (r < 0) {
		free(v);
		return r;
	}
	*ret = v;
	*ret_n = nv;
	return 0;
}

const struct evr_top_col_fmt evr_top_overview_cols[EVR_TOP_NCOLS] = {
	{ EVR_TOP_COL_PID, 7, false },     { EVR_TOP_COL_NAME, 16, true },   { EVR_TOP_COL_CPU, 7, false },
	{ EVR_TOP_COL_WS, 11, false },     { EVR_TOP_COL_THREADS, 5, false }, { EVR_TOP_COL_GCHEAP, 11, false },
	{ EVR_TOP_COL_GEN0, 8, false },    { EVR_TOP_COL_TPQUEUE, 9, false }, { EVR_TOP_COL_EXC, 8, false },
};

void evr_top_row_cell(const struct evr_top_row *r, enum evr_top_col col, char *buf, size_t len)
{
	if (col == EVR_TOP_COL_PID) {
		snprintf(buf, len, "%d", (int)r->pid);
		return;
	}
	if (col == EVR_TOP_COL_NAME) {
		/* The PID column keeps ours (what -p takes); a container's own beside the name. */
		if (r->ns_pid)
			snprintf(buf, len, "%s (ns %d)", r->name, (int)r->ns_pid);
		else
			snprintf(buf, len, "%s", r->name);
		return;
	}
	if (!r->has[col]) {
		snprintf(buf, len, "-");
		return;
	}
	switch (col) {
	case EVR_TOP_COL_CPU:
	case EVR_TOP_COL_GEN0:
	case EVR_TOP_COL_EXC:
		snprintf(buf, len, "%.1f", r->val[col]);
		break;
	case EVR_TOP_COL_WS:
	case EVR_TOP_COL_GCHEAP:
		evr_top_fmt_value(buf, len, r->val[col], "B", 0, false);
		break;
	default:
		evr_top_fmt_number(buf, len, r->val[col]);
		break;
	}
}
