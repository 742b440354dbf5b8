// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * clrtop's model: a view of the watch (consumer/watch/), which attaches to the
 * processes (on threads of its own: the overview must stay responsive while a
 * process answers slowly) and keeps their counter tables. clrtop adds what its
 * screen and batch mode show: the --counters filter and its warnings, the
 * sampling intervals (ticks) that tell new values from stale ones, the value
 * before the latest, and the recording of every sample (-o).
 *
 * Threading: only the main thread touches the model and calls into the watch;
 * the hooks below run in those calls, except clrtop_spec(), which runs on an
 * attach thread and reads only the filter (read-only, the program's lifetime).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"

#define EVR_TOP_CLIENT_NAME "clrtop"

/* Is @name one of the ", "-separated names of @list? */
static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		const char *end = strstr(p, ", ");
		size_t k = end ? (size_t)(end - p) : strlen(p);

		if (k == n && !memcmp(p, name, n))
			return true;
		p += k + (end ? 2 : 0);
	}
	return false;
}

/* The session spec of the providers with counters: Process and System.Runtime
 * when the process has none (yet). */
static char *default_spec(const char *have)
{
	static const char *const fallback[] = { "Process", "System.Runtime" };
	const char *names[64];
	uint32_t n = 0;
	char *spec = NULL;

	for (const char *p = have; *p && n < 64;) {
		const char *end = strstr(p, ", ");
		size_t k = end ? (size_t)(end - p) : strlen(p);
		char *name = strndup(p, k);

		if (!name)
			goto out;
		names[n++] = name;
		p += k + (end ? 2 : 0);
	}
	spec = n ? evr_top_provider_spec(names, n) : evr_top_provider_spec(fallback, 2);
out:
	for (uint32_t i = 0; i < n; i++)
		free((char *)names[i]);
	return spec;
}

/*
 * --counters names a provider the process has no counters of: say so, and
 * which providers have counters (it records nothing of that provider otherwise,
 * without a word).
 */
static void check_providers(const struct evr_top_filter *f, const char *have, char *warn,
			    size_t warnlen)
{
	size_t used = strlen(warn);

	for (uint32_t i = 0; f && i < f->n; i++) {
		int k;

		if (in_list(have, f->v[i].name))
			continue;
		k = snprintf(warn + used, warnlen - used, "%s--counters: the process has no "
			     "counters of provider %s (yet; %s%s)", used ? "; " : "", f->v[i].name,
			     *have ? "its counters are in: " : "it has no counters at all",
			     have);
		if (k < 0 || (size_t)k >= warnlen - used)
			return;
		used += (size_t)k;
	}
}

static char *filter_spec(const struct evr_top_filter *f)
{
	const char **names;
	char *s;

	if (!f || !f->n)
		return NULL;
	names = calloc(f->n, sizeof(*names));
	if (!names)
		return NULL;
	for (uint32_t i = 0; i < f->n; i++)
		names[i] = f->v[i].name;
	s = evr_top_provider_spec(names, f->n);
	free(names);
	return s;
}

static void record(struct evr_top_model *m, const struct evr_top_proc *p, const struct evr_counter_sample *s)
{
	struct evr_strbuf sb = { 0 };
	int r;

	if (!m->o.export || m->export_err)
		return;
	r = evr_top_sample_line(&sb, m->o.export_fmt, s->ts_ns + (uint64_t)m->realtime_offset_ns,
			   p->pid, s);
	if (r == 0 && fwrite(sb.buf, 1, sb.len, m->o.export) != sb.len)
		r = -errno ?: -EIO;
	free(sb.buf);
	if (r < 0)
		m->export_err = r;
}

/* Remember counter @s->name of @s->provider, once. */
static void seen_add(struct evr_top_proc *p, const struct evr_counter_sample *s)
{
	size_t pl = strlen(s->provider), need = pl + 1 + s->name_len + 1;

	for (size_t off = 0; off < p->seen_len;) {
		const char *prov = p->seen + off, *name = prov + strlen(prov) + 1;
		size_t nl = strlen(name);

		if (!strcmp(prov, s->provider) && nl == s->name_len && !memcmp(name, s->name, nl))
			return;
		off += strlen(prov) + 1 + nl + 1;
	}
	if (p->seen_len + need > p->seen_cap) {
		size_t cap = (p->seen_cap ? p->seen_cap * 2 : 1024) + need;
		char *n = realloc(p->seen, cap);

		if (!n)
			return;
		p->seen = n;
		p->seen_cap = cap;
	}
	memcpy(p->seen + p->seen_len, s->provider, pl + 1);
	memcpy(p->seen + p->seen_len + pl + 1, s->name, s->name_len);
	p->seen[p->seen_len + need - 1] = '\0';
	p->seen_len += need;
}

/*
 * --counters names counters a provider did not send in a whole interval: say so,
 * with the ones it has and, if another provider has that name, which one.
 */
static void check_counters(const struct evr_top_filter *f, struct evr_top_proc *p)
{
	size_t used;

	if (!p->warn_pending)
		p->warn[0] = '\0';	/* what was there was said already */
	used = strlen(p->warn);

	for (uint32_t i = 0; f && i < f->n; i++) {
		const struct evr_top_filter_provider *fp = &f->v[i];

		for (uint32_t j = 0; j < fp->ncounters; j++) {
			char have[1024] = "", other[128] = "";
			bool found = false;
			size_t hl = 0;
			int k;

			for (size_t off = 0; off < p->seen_len;) {
				const char *prov = p->seen + off, *name = prov + strlen(prov) + 1;

				off += strlen(prov) + 1 + strlen(name) + 1;
				if (strcmp(prov, fp->name)) {
					if (!strcmp(name, fp->counters[j]) && !other[0])
						snprintf(other, sizeof(other), "; %s has one", prov);
					continue;
				}
				if (!strcmp(name, fp->counters[j]))
					found = true;
				k = snprintf(have + hl, sizeof(have) - hl, "%s%s", hl ? ", " : "", name);
				if (k > 0 && (size_t)k < sizeof(have) - hl)
					hl += (size_t)k;
			}
			if (found || !hl)
				continue;	/* no sample of the provider at all: said at attach */
			k = snprintf(p->warn + used, sizeof(p->warn) - used, "%s--counters: %s has no "
				     "counter %s (it has: %s%s)", used ? "; " : "", fp->name,
				     fp->counters[j], have, other);
			if (k < 0 || (size_t)k >= sizeof(p->warn) - used)
				break;
			used += (size_t)k;
			p->warn_pending = true;
		}
	}
}

/*
 * The watch's spec hook: the --counters providers (saying in @note which of
 * them the process has no counters of), or every provider with counters.
 * Context: an attach thread; @arg is the model's filter, read-only.
 */
static int clrtop_spec(const void *arg, struct evr_client *c, char **ret, char *note,
		       size_t notelen, char *err, size_t errlen)
{
	const struct evr_top_filter *f = arg;
	char *have = NULL;
	int r;

	r = evr_watch_counter_providers(c, &have, err, errlen);
	if (r < 0)
		return r;
	note[0] = '\0';
	if (f && f->n) {
		*ret = filter_spec(f);
		check_providers(f, have, note, notelen);
	} else {
		*ret = default_spec(have);
	}
	free(have);
	return *ret ? 0 : -ENOMEM;
}

/* An attach finished: keep the warning the spec hook noted. */
static void clrtop_changed(struct evr_watch *w, struct evr_watch_proc *wp,
			   const struct evr_watch_change *ch)
{
	struct evr_top_proc *p = (struct evr_top_proc *)wp;

	(void)w;
	if (ch->from != EVR_WATCH_ATTACHING)
		return;
	if (ch->to == EVR_WATCH_LIVE) {
		snprintf(p->warn, sizeof(p->warn), "%s", ch->note);
		p->warn_pending = p->warn[0] != '\0';
	} else if (ch->to == EVR_WATCH_FAILED && !ch->info) {
		p->name[0] = '\0';	/* never reached: no name to show */
	}
}

/*
 * A sample of @p: remember its name (for the warnings), count intervals, record
 * it (-o). Return: whether --counters shows it (the watch then tables it).
 */
static bool clrtop_sample(struct evr_watch *w, struct evr_watch_proc *wp,
			  const struct evr_counter_sample *s, uint64_t now)
{
	struct evr_top_model *m = w->o.user;
	struct evr_top_proc *p = (struct evr_top_proc *)wp;

	seen_add(p, s);
	/* A sample more than half an interval after the latest interval's first
	 * one starts the next interval (the producer writes an interval's samples
	 * one after the other, within microseconds unless it is preempted).
	 * Counted from every sample, shown or not: --counters naming only
	 * counters the process lacks still ends intervals, so its warning comes
	 * and batch snapshots are not held back to their deadline. */
	if (s->ts_ns > p->last_tick_ns + (uint64_t)s->interval_ms * 500000u) {
		p->ticks++;
		p->last_tick_ns = s->ts_ns;
		p->batch_arrived_ns = now;
	}
	if (!evr_top_filter_wants(m->o.filter, s->provider, s->name, s->name_len))
		return false;
	record(m, p, s);
	return true;
}

static void clrtop_counter_new(struct evr_watch *w, struct evr_watch_proc *p,
			       struct evr_watch_counter *c)
{
	(void)w;
	((struct evr_top_counter *)c)->order = p->nctr;
}

static void clrtop_counter_sample(struct evr_watch *w, struct evr_watch_proc *wp,
				  struct evr_watch_counter *wc, const struct evr_counter_sample *s,
				  uint64_t now)
{
	struct evr_top_proc *p = (struct evr_top_proc *)wp;
	struct evr_top_counter *c = (struct evr_top_counter *)wc;

	c->tick = p->ticks;
	c->arrived_ns = now;
	c->prev = c->nsamples ? c->value : s->value;
	c->value = s->value;
	if (c->value != c->prev)
		c->changed_at = w->gen;
	evr_watch_counter_take(wc, s);
}

/* One whole interval after the first: the counters --counters names are known. */
static void clrtop_drained(struct evr_watch *w, struct evr_watch_proc *wp)
{
	struct evr_top_model *m = w->o.user;
	struct evr_top_proc *p = (struct evr_top_proc *)wp;

	if (!p->warn_checked && p->ticks >= 2 && evr_top_proc_complete(p)) {
		p->warn_checked = true;
		check_counters(m->o.filter, p);
	}
}

static void clrtop_proc_free(struct evr_watch *w, struct evr_watch_proc *wp)
{
	(void)w;
	free(((struct evr_top_proc *)wp)->seen);
}

static const struct evr_watch_ops clrtop_ops = {
	EVR_WATCH_OPS_SIZES(struct evr_top_proc, struct evr_top_counter),
	.spec = clrtop_spec,
	.changed = clrtop_changed,
	.sample = clrtop_sample,
	.counter_new = clrtop_counter_new,
	.counter_sample = clrtop_counter_sample,
	.drained = clrtop_drained,
	.proc_free = clrtop_proc_free,
};

int evr_top_model_init(struct evr_top_model *m, const struct evr_top_model_opts *o)
{
	struct evr_watch_opts wo = {
		.client_name = EVR_TOP_CLIENT_NAME,
		.interval_ms = o->interval_ms,
		.ring_size = o->ring_size,
		.broker = o->broker,
		/* A process gone for keep_ms is forgotten, listed or not: listed
		 * again, it is attached anew (a new process, or a retry). */
		.forget_listed = true,
		.ops = &clrtop_ops,
		.spec_arg = o->filter,
		.user = m,
	};
	struct timespec rt, mono;

	memset(m, 0, sizeof(*m));
	m->o = *o;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	m->realtime_offset_ns = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000 +
				(rt.tv_nsec - mono.tv_nsec);
	return evr_watch_init(&m->w, &wo);
}

void evr_top_model_fini(struct evr_top_model *m)
{
	evr_watch_fini(&m->w);
}

int evr_top_model_add(struct evr_top_model *m, pid_t pid, bool sync, char *err, size_t errlen)
{
	return evr_watch_add(&m->w, pid, sync, err, errlen, NULL);
}

int evr_top_model_rescan(struct evr_top_model *m, uint32_t keep_ms)
{
	m->w.o.forget_ms = keep_ms;
	return evr_watch_scan(&m->w);
}

bool evr_top_model_poll(struct evr_top_model *m)
{
	return evr_watch_poll(&m->w);
}

bool evr_top_proc_complete(const struct evr_top_proc *p)
{
	for (uint32_t i = 0; i < p->nctr; i++)
		if (p->ctr[i].nsamples && p->ctr[i].tick + 1 == p->ticks)
			return false;
	return true;
}

void evr_top_model_mark_stale(struct evr_top_model *m, bool snapshot, uint64_t now_ns)
{
	uint64_t late = 2 * (uint64_t)m->o.interval_ms * 1000000u + 1000000000u;

	for (uint32_t i = 0; i < m->w.n; i++) {
		struct evr_top_proc *p = evr_top_model_proc(m, i);
		bool live = p->state == EVR_WATCH_LIVE && p->ticks;

		p->stale = live && (snapshot ? p->ticks <= p->shown_tick
					     : now_ns - p->batch_arrived_ns > late);
		p->stale_ms = p->stale ? (now_ns - p->batch_arrived_ns) / 1000000u : 0;
		for (uint32_t j = 0; j < p->nctr; j++) {
			struct evr_top_counter *c = &p->ctr[j];

			c->stale = live && c->nsamples &&
				   (snapshot ? c->tick <= p->shown_tick
					     : c->tick < p->ticks || now_ns - c->arrived_ns > late);
		}
	}
}

void evr_top_model_shown(struct evr_top_model *m)
{
	for (uint32_t i = 0; i < m->w.n; i++)
		evr_top_model_proc(m, i)->shown_tick = evr_top_model_proc(m, i)->ticks;
}

const char *evr_top_model_warning(struct evr_top_proc *p)
{
	if (!p->warn_pending)
		return NULL;
	p->warn_pending = false;
	return p->warn;
}

const struct evr_top_counter *evr_top_proc_counter(const struct evr_top_proc *p, const char *provider,
					 const char *name)
{
	for (uint32_t i = 0; i < p->nctr; i++)
		if (!strcmp(p->ctr[i].name, name) && !strcmp(p->ctr[i].provider, provider))
			return &p->ctr[i];
	return NULL;
}

static double unit_bytes(const struct evr_top_counter *c)
{
	if (!strcmp(c->unit, "MB") || !strcmp(c->unit, "MiB"))
		return c->value * 1048576.0;
	if (!strcmp(c->unit, "KB") || !strcmp(c->unit, "KiB"))
		return c->value * 1024.0;
	if (!strcmp(c->unit, "GB") || !strcmp(c->unit, "GiB"))
		return c->value * 1073741824.0;
	return c->value;
}

static const struct {
	enum evr_top_col col;
	const char *prov, *name;
} col_map[] = {
	{ EVR_TOP_COL_CPU, "Process", "cpu-usage" },
	{ EVR_TOP_COL_WS, "Process", "working-set" },
	{ EVR_TOP_COL_THREADS, "Process", "threads" },
	{ EVR_TOP_COL_GCHEAP, "System.Runtime", "gc-heap-size" },
	{ EVR_TOP_COL_GEN0, "System.Runtime", "gen-0-gc-count" },
	{ EVR_TOP_COL_TPQUEUE, "System.Runtime", "threadpool-queue-length" },
	{ EVR_TOP_COL_EXC, "System.Runtime", "exception-count" },
};

const struct evr_top_counter *evr_top_proc_col_counter(const struct evr_top_proc *p, enum evr_top_col col)
{
	for (size_t i = 0; i < sizeof(col_map) / sizeof(col_map[0]); i++)
		if (col_map[i].col == col)
			return evr_top_proc_counter(p, col_map[i].prov, col_map[i].name);
	return NULL;
}

void evr_top_proc_row(const struct evr_top_proc *p, struct evr_top_row *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->pid = p->pid;
	ret->ns_pid = p->ns_pid;
	snprintf(ret->name, sizeof(ret->name), "%s", p->name);
	ret->val[EVR_TOP_COL_PID] = p->pid;
	ret->has[EVR_TOP_COL_PID] = ret->has[EVR_TOP_COL_NAME] = true;
	for (size_t i = 0; i < sizeof(col_map) / sizeof(col_map[0]); i++) {
		const struct evr_top_counter *c = evr_top_proc_counter(p, col_map[i].prov, col_map[i].name);
		enum evr_top_col col = col_map[i].col;

		if (!c || !c->nsamples)
			continue;
		ret->has[col] = true;
		ret->val[col] = (col == EVR_TOP_COL_WS || col == EVR_TOP_COL_GCHEAP) ? unit_bytes(c) : c->value;
	}
	ret->ctx = p;
}
