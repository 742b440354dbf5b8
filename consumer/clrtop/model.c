// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * clrtop's model: attach to processes, read their counter samples, keep the
 * latest two values of every counter, and record every sample when asked.
 *
 * Attaching on a thread: the overview must stay responsive while a process
 * answers slowly (connect and start wait up to the consumer library's
 * timeouts), so each attach runs on a detached thread with a struct evr_top_job
 * shared with the main thread. The job has two references, the thread's and
 * the main thread's; whoever drops the last one frees it (and a client nobody
 * took), so quitting never waits for a stuck process.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"

#define EVR_TOP_CLIENT_NAME "clrtop"
/* Records read from one session per poll: bounds the time a flood can take
 * from the screen; the rest is read at the next poll. */
#define EVR_TOP_POLL_BUDGET 20000

struct evr_top_job {
	pid_t pid;
	struct evr_broker *broker;	/* borrowed; the model's, or NULL */
	uint32_t interval_ms;
	uint64_t ring_size;
	char *spec;			/* provider list; NULL: the process's counter providers */
	const struct evr_top_filter *filter;	/* the model's, read-only */
	char warn[2048];
	/* Written by the thread before the release store of done. */
	int ret;
	struct evr_client *client;
	char err[256];
	char name[64];
	atomic_bool done;
	atomic_int refs;
};

uint64_t evr_top_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *evr_top_proc_state_name(enum evr_top_proc_state s)
{
	switch (s) {
	case EVR_TOP_PROC_ATTACHING: return "attaching";
	case EVR_TOP_PROC_LIVE: return "live";
	case EVR_TOP_PROC_EXITED: return "exited";
	case EVR_TOP_PROC_FAILED: return "failed";
	}
	return "?";
}

static void copy_name(char *dst, size_t len, const struct evr_process_info *pi)
{
	const char *s = pi->argc && pi->argv[0] && *pi->argv[0] ? pi->argv[0] : pi->exe;
	const char *slash;

	if (!s || !*s)
		s = "?";
	slash = strrchr(s, '/');
	if (slash && slash[1])
		s = slash + 1;
	snprintf(dst, len, "%s", s);
}

/*
 * The providers of @c's process that have Counter* events, from its ListEvents,
 * joined by ", " into @ret (malloc'ed, "" when none).
 */
static int counter_providers(struct evr_client *c, char **ret, char *err, size_t errlen)
{
	struct evr_schema_set *set = NULL;
	struct evr_strbuf sb = { 0 };
	uint32_t cnt;
	int r;

	r = evr_schema_set_new(&set);
	if (r < 0)
		return r;
	r = evr_client_list_events(c, set, err, errlen);
	if (r < 0)
		goto out;
	cnt = evr_schema_set_count(set);
	for (uint32_t i = 0; i < cnt && r == 0; i++) {
		const struct evr_schema_event *ev = evr_schema_set_at(set, i);
		bool seen = false;

		if (strncmp(ev->name, "Counter", 7))
			continue;
		for (uint32_t j = 0; j < i && !seen; j++) {
			const struct evr_schema_event *e2 = evr_schema_set_at(set, j);

			seen = !strncmp(e2->name, "Counter", 7) && !strcmp(e2->provider, ev->provider);
		}
		if (!seen)
			r = evr_strbuf_printf(&sb, "%s%s", sb.len ? ", " : "", ev->provider);
	}
	if (r == 0 && !sb.buf)
		r = evr_strbuf_append(&sb, "", 0);
	if (r == 0) {
		*ret = sb.buf;
		sb.buf = NULL;
	}
out:
	free(sb.buf);
	evr_schema_set_free(set);
	return r;
}

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

	for (const char *p = have; *p && n < 64;) {
		const char *end = strstr(p, ", ");
		size_t k = end ? (size_t)(end - p) : strlen(p);
		char *name = strndup(p, k);

		if (!name)
			goto nomem;
		names[n++] = name;
		p += k + (end ? 2 : 0);
	}
	char *spec = n ? evr_top_provider_spec(names, n) : evr_top_provider_spec(fallback, 2);

	for (uint32_t i = 0; i < n; i++)
		free((char *)names[i]);
	return spec;
nomem:
	for (uint32_t i = 0; i < n; i++)
		free((char *)names[i]);
	return NULL;
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

/* Connect to @pid (through @broker, unless NULL) and start a counters-only session. */
static int attach(struct evr_broker *broker, pid_t pid, const char *spec,
		  const struct evr_top_filter *filter, uint32_t interval_ms, uint64_t ring_size,
		  struct evr_client **ret, char *name, size_t namelen, char *warn, size_t warnlen,
		  char *err, size_t errlen)
{
	struct evr_attach_opts ao = {
		.ring_size = ring_size,
		.mode = EVR_MODE_DISCARD,
		.counter_interval_ms = interval_ms,
	};
	struct evr_client *c = NULL;
	char *own = NULL, *have = NULL;
	int r;

	r = broker ? evr_broker_attach(broker, pid, EVR_TOP_CLIENT_NAME, &c, err, errlen)
		   : evr_client_connect(pid, EVR_TOP_CLIENT_NAME, &c, err, errlen);
	if (r < 0)
		return r;
	copy_name(name, namelen, evr_client_process(c));
	r = counter_providers(c, &have, err, errlen);
	if (r < 0)
		goto fail;
	warn[0] = '\0';
	if (!spec) {
		own = default_spec(have);
		if (!own) {
			r = -ENOMEM;
			goto fail;
		}
		spec = own;
	} else {
		check_providers(filter, have, warn, warnlen);
	}
	ao.providers = spec;
	r = evr_client_start(c, &ao, err, errlen);
	if (r < 0)
		goto fail;
	free(own);
	free(have);
	*ret = c;
	return 0;
fail:
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(own);
	free(have);
	evr_client_free(c);
	return r;
}

static void job_put(struct evr_top_job *j)
{
	/* Pairs with the other party's fetch_sub: the last one sees every write
	 * the other made to the job before letting go. */
	if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) != 1)
		return;
	evr_client_free(j->client);
	free(j->spec);
	free(j);
}

static void *job_run(void *arg)
{
	struct evr_top_job *j = arg;

	j->ret = attach(j->broker, j->pid, j->spec, j->filter, j->interval_ms, j->ring_size,
			&j->client, j->name, sizeof(j->name), j->warn, sizeof(j->warn), j->err,
			sizeof(j->err));
	/* Pairs with the acquire load of done in take_job(). */
	atomic_store_explicit(&j->done, true, memory_order_release);
	job_put(j);
	return NULL;
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

static int start_job(struct evr_top_model *m, struct evr_top_proc *p)
{
	struct evr_top_job *j = calloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (!j)
		return -ENOMEM;
	j->pid = p->pid;
	j->broker = m->o.broker;
	j->interval_ms = m->o.interval_ms;
	j->ring_size = m->o.ring_size;
	j->filter = m->o.filter;
	if (m->o.filter && m->o.filter->n && !(j->spec = filter_spec(m->o.filter))) {
		free(j);
		return -ENOMEM;
	}
	atomic_init(&j->refs, 2);
	atomic_init(&j->done, false);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Small stacks: the attach needs little, and ten processes make ten threads. */
	pthread_attr_setstacksize(&attr, 256 * 1024);
	r = pthread_create(&t, &attr, job_run, j);
	pthread_attr_destroy(&attr);
	if (r) {
		free(j->spec);
		free(j);
		return -r;
	}
	p->job = j;
	return 0;
}

/* A finished attach: move its result into @p. Return: true when it finished. */
static bool take_job(struct evr_top_proc *p)
{
	struct evr_top_job *j = p->job;

	/* Pairs with the release store of done in job_run(). */
	if (!j || !atomic_load_explicit(&j->done, memory_order_acquire))
		return false;
	if (j->ret == 0) {
		p->client = j->client;
		j->client = NULL;
		p->state = EVR_TOP_PROC_LIVE;
		snprintf(p->warn, sizeof(p->warn), "%s", j->warn);
		p->warn_pending = p->warn[0] != '\0';
	} else {
		p->state = EVR_TOP_PROC_FAILED;
		p->gone_at_ns = evr_top_now_ns();
		snprintf(p->err, sizeof(p->err), "%s", j->err[0] ? j->err : strerror(-j->ret));
	}
	snprintf(p->name, sizeof(p->name), "%s", j->name);
	p->job = NULL;
	job_put(j);
	return true;
}

static void proc_free(struct evr_top_proc *p)
{
	if (!p)
		return;
	if (p->job)
		job_put(p->job);
	evr_client_free(p->client);
	free(p->ctr);
	free(p->seen);
	free(p);
}

int evr_top_model_init(struct evr_top_model *m, const struct evr_top_model_opts *o)
{
	struct timespec rt, mono;

	memset(m, 0, sizeof(*m));
	m->o = *o;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	m->realtime_offset_ns = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000 +
				(rt.tv_nsec - mono.tv_nsec);
	return 0;
}

void evr_top_model_fini(struct evr_top_model *m)
{
	for (uint32_t i = 0; i < m->n; i++)
		proc_free(m->procs[i]);
	free(m->procs);
	m->procs = NULL;
	m->n = m->cap = 0;
}

static struct evr_top_proc *find_proc(struct evr_top_model *m, pid_t pid)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (m->procs[i]->pid == pid)
			return m->procs[i];
	return NULL;
}

int evr_top_model_add(struct evr_top_model *m, pid_t pid, bool sync, char *err, size_t errlen)
{
	struct evr_top_proc *p;
	int r;

	if (find_proc(m, pid))
		return 0;
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : 16;
		struct evr_top_proc **np = realloc(m->procs, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		m->procs = np;
		m->cap = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->listed = true;
	snprintf(p->name, sizeof(p->name), "?");
	if (sync) {
		char *spec = filter_spec(m->o.filter);

		if (m->o.filter && m->o.filter->n && !spec) {
			free(p);
			return -ENOMEM;
		}
		r = attach(m->o.broker, pid, spec, m->o.filter, m->o.interval_ms, m->o.ring_size,
			   &p->client, p->name, sizeof(p->name), p->warn, sizeof(p->warn), err,
			   errlen);
		free(spec);
		if (r < 0) {
			free(p);
			return r;
		}
		p->state = EVR_TOP_PROC_LIVE;
		p->warn_pending = p->warn[0] != '\0';
	} else {
		p->state = EVR_TOP_PROC_ATTACHING;
		r = start_job(m, p);
		if (r < 0) {
			p->state = EVR_TOP_PROC_FAILED;
			p->gone_at_ns = evr_top_now_ns();
			snprintf(p->err, sizeof(p->err), "cannot start an attach thread: %s",
				 strerror(-r));
		}
	}
	m->procs[m->n++] = p;
	return 0;
}

int evr_top_model_rescan(struct evr_top_model *m, uint32_t keep_ms)
{
	uint64_t now = evr_top_now_ns();
	pid_t *pids = NULL;
	uint32_t n = 0, k = 0;
	int r;

	if (m->o.broker) {
		char err[512];

		r = evr_broker_process_list(m->o.broker, &pids, &n, err, sizeof(err));
	} else {
		r = evr_process_list(&pids, &n);
	}
	if (r < 0)
		return r;
	for (uint32_t i = 0; i < m->n; i++)
		m->procs[i]->listed = false;
	for (uint32_t i = 0; i < n; i++) {
		struct evr_top_proc *p = find_proc(m, pids[i]);

		if (p)
			p->listed = true;
		else
			(void)evr_top_model_add(m, pids[i], false, NULL, 0);
	}
	free(pids);
	/* Forget processes gone for a while; a pid listed again is attached anew
	 * at the next scan (a new process, or a retry after a refusal). */
	for (uint32_t i = 0; i < m->n; i++) {
		struct evr_top_proc *p = m->procs[i];

		if (!p->pinned && (p->state == EVR_TOP_PROC_EXITED || p->state == EVR_TOP_PROC_FAILED) &&
		    now - p->gone_at_ns >= (uint64_t)keep_ms * 1000000u) {
			proc_free(p);
			continue;
		}
		m->procs[k++] = p;
	}
	m->n = k;
	return 0;
}

static struct evr_top_counter *counter_for(struct evr_top_proc *p, const struct evr_counter_sample *s,
				      uint32_t *hint)
{
	struct evr_top_counter *c;

	/* Samples arrive in the same order every interval: try the next one first. */
	for (uint32_t k = 0; k < p->nctr; k++) {
		uint32_t i = (*hint + k) % p->nctr;

		c = &p->ctr[i];
		if (strlen(c->name) == s->name_len && !memcmp(c->name, s->name, s->name_len) &&
		    !strcmp(c->provider, s->provider)) {
			*hint = i + 1;
			return c;
		}
	}
	if (p->nctr == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 32;
		struct evr_top_counter *nc = realloc(p->ctr, cap * sizeof(*nc));

		if (!nc)
			return NULL;
		p->ctr = nc;
		p->cap = cap;
	}
	c = &p->ctr[p->nctr];
	memset(c, 0, sizeof(*c));
	snprintf(c->provider, sizeof(c->provider), "%s", s->provider);
	snprintf(c->name, sizeof(c->name), "%.*s", (int)s->name_len, s->name);
	snprintf(c->display, sizeof(c->display), "%.*s", (int)s->display_name_len,
		 s->display_name);
	snprintf(c->unit, sizeof(c->unit), "%.*s", (int)s->unit_len, s->unit);
	c->order = p->nctr++;
	*hint = p->nctr;
	return c;
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

/* Read what @p's session has; Return: true when a sample arrived or the state changed. */
static bool drain(struct evr_top_model *m, struct evr_top_proc *p)
{
	struct evr_event_view v;
	struct evr_counter_sample s;
	uint64_t now = evr_top_now_ns();
	uint32_t hint = 0;
	bool changed = false;
	int r = 0;

	for (uint32_t budget = EVR_TOP_POLL_BUDGET; budget; budget--) {
		struct evr_top_counter *c;

		r = evr_client_next(p->client, &v);
		if (r <= 0)
			break;
		if (v.type == EVR_REC_LOST) {
			p->lost += v.lost;
			continue;
		}
		if (evr_counter_sample_from_view(&v, &s) != 1)
			continue;	/* another event, or a malformed sample: skipped */
		seen_add(p, &s);
		/* A sample more than half an interval after the latest interval's first
		 * one starts the next interval (the producer writes an interval's samples
		 * one after the other, within microseconds unless it is preempted).
		 * Counted from every sample, shown or not: --counters naming only
		 * counters the process lacks still ends intervals, so its warning comes
		 * and batch snapshots are not held back to their deadline. */
		if (s.ts_ns > p->last_tick_ns + (uint64_t)s.interval_ms * 500000u) {
			p->ticks++;
			p->last_tick_ns = s.ts_ns;
			p->batch_arrived_ns = now;
		}
		if (!evr_top_filter_wants(m->o.filter, s.provider, s.name, s.name_len))
			continue;
		record(m, p, &s);
		c = counter_for(p, &s, &hint);
		if (!c)
			continue;
		c->tick = p->ticks;
		c->arrived_ns = now;
		c->kind = s.kind;
		c->prev = c->nsamples ? c->value : s.value;
		c->value = s.value;
		if (c->value != c->prev)
			c->changed_at = m->gen;
		c->last = s;
		c->last.provider = c->last.name = c->last.display_name = c->last.unit = NULL;
		c->nsamples++;
		changed = true;
	}
	evr_client_release(p->client);
	/* One whole interval after the first: the counters --counters names are known. */
	if (!p->warn_checked && p->ticks >= 2 && evr_top_proc_complete(p)) {
		p->warn_checked = true;
		check_counters(m->o.filter, p);
	}
	if (r < 0) {
		snprintf(p->err, sizeof(p->err), "reading the session failed: %s", strerror(-r));
		p->state = EVR_TOP_PROC_FAILED;
	} else if (evr_client_drained(p->client)) {
		p->state = EVR_TOP_PROC_EXITED;
	} else {
		return changed;
	}
	p->gone_at_ns = evr_top_now_ns();
	evr_client_free(p->client);
	p->client = NULL;
	return true;
}

bool evr_top_model_poll(struct evr_top_model *m)
{
	bool changed = false;

	m->gen++;
	for (uint32_t i = 0; i < m->n; i++) {
		struct evr_top_proc *p = m->procs[i];

		if (p->state == EVR_TOP_PROC_ATTACHING)
			changed |= take_job(p);
		if (p->state == EVR_TOP_PROC_LIVE)
			changed |= drain(m, p);
	}
	return changed;
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

	for (uint32_t i = 0; i < m->n; i++) {
		struct evr_top_proc *p = m->procs[i];
		bool live = p->state == EVR_TOP_PROC_LIVE && p->ticks;

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
	for (uint32_t i = 0; i < m->n; i++)
		m->procs[i]->shown_tick = m->procs[i]->ticks;
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
