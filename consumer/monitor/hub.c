// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The counter hub: one counters-only session on every process the monitor may
 * attach to, kept alive between requests, so that /metrics, the counters JSON
 * and the counters page answer from memory (a scrape costs no attach) and
 * the pages can plot history.
 *
 * The hub thread scans the runtime directory once a second, attaches to new
 * processes on short-lived threads (a stopped process must not stall the
 * others: connect and start wait up to the consumer library's timeouts), and
 * reads every session a few times per counter interval. Each counter keeps its
 * latest sample, the sums Prometheus needs (totals since attached) and a ring
 * of the last opts.history values.
 *
 * Locking: everything in struct evr_mon_hub below `lock` is protected by it.
 * An attach thread owns its struct evr_mon_attach until it sets done (release),
 * which the hub thread reads (acquire) before taking the result; the job has
 * two references, so a hub that stops does not wait for a stuck attach.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "monitor.h"

#define SCAN_NS 1000000000ull		/* look for new processes once a second */
#define FORGET_NS 30000000000ull	/* forget an exited process after 30 s */
#define RETRY_NS 5000000000ull		/* attach again to a failed one after 5 s */
#define RING_SIZE (64u * 1024u)		/* counters only: a few KiB per interval */
#define LIST_WAIT_MS 1500		/* a listing: new processes' first attach */
#define POLL_BUDGET 20000		/* records per session per round */

struct evr_mon_attach {
	pid_t pid;
	uint32_t interval_ms;
	/* Written by the attach thread before the release store of done. */
	int ret;
	struct evr_client *client;
	char err[256];
	atomic_bool done;
	atomic_int refs;
};

int evr_mon_counter_spec(struct evr_client *c, char **ret, char *err, size_t errlen)
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

		if (strncmp(ev->name, "Counter", 7) != 0)
			continue;
		/* Each provider once: earlier ones are in the spec already. */
		for (uint32_t j = 0; j < i && !seen; j++) {
			const struct evr_schema_event *e = evr_schema_set_at(set, j);

			seen = !strncmp(e->name, "Counter", 7) && !strcmp(e->provider, ev->provider);
		}
		/* Keywords 0, level LogAlways: the counter events only. */
		if (!seen)
			r = evr_strbuf_printf(&sb, "%s%s:0x0:0", sb.len ? "," : "", ev->provider);
	}
	/* Every process has the built-in Process provider; never an empty spec. */
	if (r == 0 && !sb.len)
		r = evr_strbuf_printf(&sb, "Process:0x0:0");
	if (r < 0) {
		free(sb.buf);
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	*ret = sb.buf;
out:
	evr_schema_set_free(set);
	return r;
}

/* ---- attaching ------------------------------------------------------------------ */

static void job_put(struct evr_mon_attach *j)
{
	/* Pairs with the other party's fetch_sub: the last one sees every write
	 * the other made to the job before letting go. */
	if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) != 1)
		return;
	evr_client_free(j->client);
	free(j);
}

static void *job_run(void *arg)
{
	struct evr_mon_attach *j = arg;
	struct evr_attach_opts ao = {
		.ring_size = RING_SIZE,
		.mode = EVR_MODE_DISCARD,
		.counter_interval_ms = j->interval_ms,
	};
	char *spec = NULL;
	int r;

	r = evr_client_connect(j->pid, EVR_MON_NAME, &j->client, j->err, sizeof(j->err));
	if (r == 0)
		r = evr_mon_counter_spec(j->client, &spec, j->err, sizeof(j->err));
	if (r == 0) {
		ao.providers = spec;
		r = evr_client_start(j->client, &ao, j->err, sizeof(j->err));
	}
	free(spec);
	j->ret = r;
	/* Pairs with the acquire load of done in take_job(). */
	atomic_store_explicit(&j->done, true, memory_order_release);
	job_put(j);
	return NULL;
}

static int start_job(struct evr_mon_hub *h, struct evr_mon_proc *p)
{
	struct evr_mon_attach *j = calloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (!j)
		return -ENOMEM;
	j->pid = p->pid;
	j->interval_ms = h->o->counter_interval_ms;
	atomic_init(&j->refs, 2);
	atomic_init(&j->done, false);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	r = pthread_create(&t, &attr, job_run, j);
	pthread_attr_destroy(&attr);
	if (r) {
		free(j);
		return -r;
	}
	p->job = j;
	return 0;
}

static void set_failed(struct evr_mon_proc *p, int err, const char *msg)
{
	p->state = EVR_MON_FAILED;
	p->errnum = -err;
	p->gone_at_ns = evr_mon_now_ns();
	snprintf(p->err, sizeof(p->err), "%s", msg && *msg ? msg : strerror(-err));
}

static char *join_argv(const struct evr_process_info *pi)
{
	struct evr_strbuf sb = { 0 };

	for (uint32_t i = 0; i < pi->argc; i++)
		if (evr_strbuf_printf(&sb, "%s%s", i ? " " : "", pi->argv[i] ? pi->argv[i] : "") < 0)
			break;
	if (!sb.buf)
		return strdup("");
	return sb.buf;
}

/* A finished attach: move its result into @p. Return: true when it finished. */
static bool take_job(struct evr_mon_hub *h, struct evr_mon_proc *p)
{
	struct evr_mon_attach *j = p->job;
	const struct evr_process_info *pi;

	/* Pairs with the release store of done in job_run(). */
	if (!j || !atomic_load_explicit(&j->done, memory_order_acquire))
		return false;
	if (j->client) {
		pi = evr_client_process(j->client);
		evr_mon_proc_short_name(pi, p->name, sizeof(p->name));
		free(p->command);
		free(p->exe);
		p->command = join_argv(pi);
		p->exe = strdup(pi->exe ? pi->exe : "");
		snprintf(p->version, sizeof(p->version), "%s",
			 pi->evring_version ? pi->evring_version : "");
		p->uid = pi->uid;
		p->nr_cpus = pi->nr_cpus;
		p->start_realtime_ns = pi->start_realtime_ns;
	}
	if (j->ret == 0) {
		p->client = j->client;
		j->client = NULL;
		p->state = EVR_MON_LIVE;
		h->attaches++;
	} else {
		set_failed(p, j->ret, j->err);
		h->attach_failures++;
	}
	p->job = NULL;
	p->retrying = false;
	job_put(j);
	return true;
}

static void proc_free(struct evr_mon_proc *p)
{
	if (!p)
		return;
	if (p->job)
		job_put(p->job);
	evr_client_free(p->client);
	for (uint32_t i = 0; i < p->nctr; i++)
		free(p->ctr[i].hist);
	free(p->ctr);
	free(p->command);
	free(p->exe);
	free(p);
}

static struct evr_mon_proc *find_proc(struct evr_mon_hub *h, pid_t pid)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->procs[i]->pid == pid)
			return h->procs[i];
	return NULL;
}

static int add_proc(struct evr_mon_hub *h, pid_t pid)
{
	struct evr_mon_proc *p;
	int r;

	if (h->n == h->cap) {
		uint32_t cap = h->cap ? h->cap * 2 : 16;
		struct evr_mon_proc **np = realloc(h->procs, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		h->procs = np;
		h->cap = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->listed = true;
	snprintf(p->name, sizeof(p->name), "?");
	p->state = EVR_MON_ATTACHING;
	r = start_job(h, p);
	if (r < 0)
		set_failed(p, r, "cannot start an attach thread");
	h->procs[h->n++] = p;
	return 0;
}

/* Attach anew to a process that failed or ended: forget what it had. */
static void retry(struct evr_mon_hub *h, struct evr_mon_proc *p)
{
	int r;

	for (uint32_t i = 0; i < p->nctr; i++)
		free(p->ctr[i].hist);
	p->nctr = 0;
	p->lost = 0;
	p->err[0] = '\0';
	p->errnum = 0;
	p->state = EVR_MON_ATTACHING;
	p->retrying = true;
	r = start_job(h, p);
	if (r < 0)
		set_failed(p, r, "cannot start an attach thread");
}

/* List the attachable processes, attach to new ones, forget long-gone ones. */
static void rescan(struct evr_mon_hub *h)
{
	uint64_t now = evr_mon_now_ns();
	pid_t *pids = NULL;
	uint32_t n = 0, k = 0;

	h->last_scan_ns = now;
	h->scans++;
	if (evr_process_list(&pids, &n) < 0)
		return;
	for (uint32_t i = 0; i < h->n; i++)
		h->procs[i]->listed = false;
	for (uint32_t i = 0; i < n; i++) {
		struct evr_mon_proc *p = find_proc(h, pids[i]);

		if (!p) {
			(void)add_proc(h, pids[i]);
			continue;
		}
		p->listed = true;
		/* Listed again a while after it failed or ended: a new process with
		 * a reused pid, or a refusal that may have gone. Try again. */
		if ((p->state == EVR_MON_EXITED || p->state == EVR_MON_FAILED) &&
		    now - p->gone_at_ns >= RETRY_NS)
			retry(h, p);
	}
	free(pids);
	for (uint32_t i = 0; i < h->n; i++) {
		struct evr_mon_proc *p = h->procs[i];
		bool gone = p->state == EVR_MON_EXITED || p->state == EVR_MON_FAILED;

		if (!p->listed && gone && now - p->gone_at_ns >= FORGET_NS) {
			proc_free(p);
			continue;
		}
		h->procs[k++] = p;
	}
	h->n = k;
}

/* ---- samples --------------------------------------------------------------------- */

struct evr_mon_counter *evr_mon_proc_counter(struct evr_mon_proc *p, const char *provider,
					     const char *name)
{
	for (uint32_t i = 0; i < p->nctr; i++)
		if (!strcmp(p->ctr[i].name, name) && !strcmp(p->ctr[i].provider, provider))
			return &p->ctr[i];
	return NULL;
}

static struct evr_mon_counter *counter_for(struct evr_mon_hub *h, struct evr_mon_proc *p,
					   const struct evr_counter_sample *s, uint32_t *hint)
{
	struct evr_mon_counter *c;

	/* Samples come in the same order every interval: try the next one first. */
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
		struct evr_mon_counter *nc = realloc(p->ctr, cap * sizeof(*nc));

		if (!nc)
			return NULL;
		p->ctr = nc;
		p->cap = cap;
	}
	c = &p->ctr[p->nctr];
	memset(c, 0, sizeof(*c));
	c->hist_cap = h->o->history ? h->o->history : 1;
	c->hist = calloc(c->hist_cap, sizeof(*c->hist));
	if (!c->hist)
		return NULL;
	snprintf(c->provider, sizeof(c->provider), "%s", s->provider);
	snprintf(c->name, sizeof(c->name), "%.*s", (int)s->name_len, s->name);
	snprintf(c->display, sizeof(c->display), "%.*s", (int)s->display_name_len,
		 s->display_name);
	snprintf(c->unit, sizeof(c->unit), "%.*s", (int)s->unit_len, s->unit);
	c->kind = s->kind;
	evr_mon_metric_init(c);
	p->nctr++;
	*hint = p->nctr;
	return c;
}

static void add_sample(struct evr_mon_hub *h, struct evr_mon_counter *c,
		       const struct evr_counter_sample *s)
{
	evr_mon_counter_fold(c, s);
	if (h->o->history) {
		c->hist[c->hist_next] = (struct evr_mon_point){ .ts_ns = s->ts_ns, .value = s->value };
		c->hist_next = (c->hist_next + 1) % c->hist_cap;
		if (c->hist_n < c->hist_cap)
			c->hist_n++;
	}
}

/* Read what @p's session has. Return: true when a sample came or the state changed. */
static bool drain(struct evr_mon_hub *h, struct evr_mon_proc *p)
{
	struct evr_counter_sample s;
	struct evr_event_view v;
	uint32_t hint = 0;
	bool changed = false;
	int r = 0;

	for (uint32_t budget = POLL_BUDGET; budget; budget--) {
		struct evr_mon_counter *c;

		r = evr_client_next(p->client, &v);
		if (r <= 0)
			break;
		if (v.type == EVR_REC_LOST) {
			p->lost += v.lost;
			continue;
		}
		if (evr_counter_sample_from_view(&v, &s) != 1)
			continue;	/* another event, or a malformed sample: skipped */
		c = counter_for(h, p, &s, &hint);
		if (!c)
			continue;
		add_sample(h, c, &s);
		p->gen = h->gen;
		changed = true;
	}
	evr_client_release(p->client);
	if (r < 0) {
		snprintf(p->err, sizeof(p->err), "reading the session failed: %s", strerror(-r));
		p->errnum = -r;
		p->state = EVR_MON_FAILED;
	} else if (evr_client_drained(p->client)) {
		snprintf(p->err, sizeof(p->err), "the process ended");
		p->errnum = ESRCH;
		p->state = EVR_MON_EXITED;
	} else {
		return changed;
	}
	p->gone_at_ns = evr_mon_now_ns();
	evr_client_free(p->client);
	p->client = NULL;
	return true;
}

/* How long the hub sleeps between rounds: a quarter of the interval, 50-250 ms. */
static uint64_t round_ns(const struct evr_mon_hub *h)
{
	uint64_t ns = (uint64_t)h->o->counter_interval_ms * 250000u;

	if (ns < 50000000u)
		ns = 50000000u;
	if (ns > 250000000u)
		ns = 250000000u;
	return ns;
}

static void *hub_run(void *arg)
{
	struct evr_mon_hub *h = arg;

	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		uint64_t now = evr_mon_now_ns(), sleep_ns;
		bool changed = false;
		struct timespec until;

		if (h->rescan_now || now - h->last_scan_ns >= SCAN_NS) {
			h->rescan_now = false;
			rescan(h);
			changed = true;
		}
		h->gen++;
		for (uint32_t i = 0; i < h->n; i++) {
			struct evr_mon_proc *p = h->procs[i];

			if (p->state == EVR_MON_ATTACHING)
				changed |= take_job(h, p);
			if (p->state == EVR_MON_LIVE)
				changed |= drain(h, p);
		}
		if (changed)
			pthread_cond_broadcast(&h->changed);
		/* An attach in progress is looked at again soon; else a normal round. */
		sleep_ns = round_ns(h);
		for (uint32_t i = 0; i < h->n; i++)
			if (h->procs[i]->state == EVR_MON_ATTACHING)
				sleep_ns = 10000000u;
		now = evr_mon_now_ns() + sleep_ns;
		until.tv_sec = (time_t)(now / 1000000000u);
		until.tv_nsec = (long)(now % 1000000000u);
		if (!h->stop && !h->rescan_now)
			pthread_cond_timedwait(&h->wake, &h->lock, &until);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

int evr_mon_hub_init(struct evr_mon_hub *h, const struct evr_mon_opts *o)
{
	pthread_condattr_t ca;

	memset(h, 0, sizeof(*h));
	h->o = o;
	pthread_mutex_init(&h->lock, NULL);
	/* Deadlines on CLOCK_MONOTONIC: a clock change must not stall the hub. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->wake, &ca);
	pthread_cond_init(&h->changed, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

int evr_mon_hub_start(struct evr_mon_hub *h)
{
	int r = pthread_create(&h->thread, NULL, hub_run, h);

	if (r)
		return -r;
	h->started = true;
	return 0;
}

void evr_mon_hub_fini(struct evr_mon_hub *h)
{
	if (h->started) {
		pthread_mutex_lock(&h->lock);
		h->stop = true;
		pthread_cond_broadcast(&h->wake);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->thread, NULL);
	}
	for (uint32_t i = 0; i < h->n; i++)
		proc_free(h->procs[i]);
	free(h->procs);
	pthread_cond_destroy(&h->wake);
	pthread_cond_destroy(&h->changed);
	pthread_mutex_destroy(&h->lock);
}

/* Wait on h->changed until @deadline (CLOCK_MONOTONIC ns). Return: false when it passed. */
static bool wait_changed(struct evr_mon_hub *h, uint64_t deadline)
{
	uint64_t now = evr_mon_now_ns();
	struct timespec until;

	if (now >= deadline || h->stop)
		return false;
	until.tv_sec = (time_t)(deadline / 1000000000u);
	until.tv_nsec = (long)(deadline % 1000000000u);
	pthread_cond_timedwait(&h->changed, &h->lock, &until);
	return true;
}

struct evr_mon_proc *evr_mon_hub_get_locked(struct evr_mon_hub *h, pid_t pid, bool want_samples,
					    int timeout_ms)
{
	uint64_t deadline = evr_mon_now_ns() + (uint64_t)timeout_ms * 1000000u;
	uint64_t scans = h->scans;
	struct evr_mon_proc *p;

	for (;;) {
		p = find_proc(h, pid);
		if (!p) {
			/* Not seen yet: one scan after we asked is enough to know (scans
			 * run under the lock, so the next one starts after this). */
			if (h->scans > scans)
				return NULL;
			if (!h->rescan_now) {
				h->rescan_now = true;
				pthread_cond_signal(&h->wake);
			}
		} else if (p->state == EVR_MON_ATTACHING) {
			/* wait for the attach */
		} else if (p->state != EVR_MON_LIVE || !want_samples || p->nctr) {
			return p;
		}
		if (!wait_changed(h, deadline))
			return p;
	}
}

/*
 * Let the hub see the processes of now: one scan, and the first attaches it
 * started (a healthy process answers in milliseconds). A process that does not
 * answer is waited for once, at most LIST_WAIT_MS, and never again while the
 * hub retries it: one stopped process must not slow every request down.
 */
void evr_mon_hub_refresh_locked(struct evr_mon_hub *h)
{
	uint64_t deadline = evr_mon_now_ns() + (uint64_t)LIST_WAIT_MS * 1000000u;
	uint64_t scans = h->scans;
	struct timespec until = { .tv_sec = (time_t)(deadline / 1000000000u),
				  .tv_nsec = (long)(deadline % 1000000000u) };

	h->rescan_now = true;
	pthread_cond_signal(&h->wake);
	while (!h->stop && evr_mon_now_ns() < deadline) {
		bool attaching = false;

		for (uint32_t i = 0; i < h->n; i++)
			attaching |= h->procs[i]->state == EVR_MON_ATTACHING &&
				     !h->procs[i]->retrying;
		if (h->scans > scans && !attaching)
			break;
		pthread_cond_timedwait(&h->changed, &h->lock, &until);
	}
}
