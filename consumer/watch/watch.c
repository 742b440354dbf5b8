// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The watch (include/evring/watch.h): processes found, attached on threads,
 * their counter sessions read into per-process tables.
 *
 * Protocol of an attach job (struct evr_watch_job):
 *   - the owner's thread creates it with two references and starts the thread;
 *     the thread writes ret, client, err, note and name, then stores done
 *     (release) and drops its reference;
 *   - evr_watch_poll() loads done (acquire: the thread's writes are visible),
 *     moves the result into the process and drops the owner's reference;
 *   - a process forgotten (or a watch freed) while its attach runs drops the
 *     owner's reference only: the thread frees the job, and the client nobody
 *     took, when it finishes. Whoever drops the last reference frees it.
 * Everything else here runs on the owner's thread (see the header).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <evring/sandbox.h>
#include <evring/watch.h>

#include "watch-internal.h"

/* Records read from one session per poll: bounds the time a flood can take
 * from the owner; the rest is read at the next poll. */
#define POLL_BUDGET 20000

struct evr_watch_job {
	pid_t pid;
	const char *client_name;
	struct evr_broker *broker;	/* borrowed: the owner's, or NULL */
	uint32_t interval_ms;
	uint64_t ring_size;
	int (*spec)(const void *arg, struct evr_client *c, char **ret, char *note, size_t notelen,
		    char *err, size_t errlen);
	const void *spec_arg;		/* borrowed */
	bool connect_only;
	int (*start)(const void *arg, struct evr_client *c, char *err, size_t errlen);
	/* Written by the attach thread before the release store of done. */
	int ret;
	struct evr_client *client;	/* also on failure, once connected: its info */
	char err[512];
	char note[2048];
	atomic_bool done;
	atomic_int refs;
};

const char *evr_watch_state_name(enum evr_watch_state s)
{
	switch (s) {
	case EVR_WATCH_ATTACHING: return "attaching";
	case EVR_WATCH_LIVE: return "live";
	case EVR_WATCH_EXITED: return "exited";
	case EVR_WATCH_FAILED: return "failed";
	}
	return "?";
}

void evr_watch_short_name(const struct evr_process_info *pi, char *buf, size_t len)
{
	const char *s = pi->argc && pi->argv[0] && *pi->argv[0] ? pi->argv[0] : pi->exe;
	const char *slash;

	if (!s || !*s)
		s = "?";
	slash = strrchr(s, '/');
	if (slash && slash[1])
		s = slash + 1;
	snprintf(buf, len, "%s", s);
}

const char *evr_watch_found_name(enum evr_watch_found f)
{
	switch (f) {
	case EVR_WATCH_FOUND_START: return "the first listing";
	case EVR_WATCH_FOUND_RESCAN: return "a rescan";
	case EVR_WATCH_FOUND_NOTIFY: return "its socket appearing (inotify)";
	case EVR_WATCH_FOUND_CHECK: return "the /proc check";
	case EVR_WATCH_FOUND_ADDED: return "its pid";
	}
	return "?";
}

/* ---- attaching ------------------------------------------------------------------ */

static void job_put(struct evr_watch_job *j)
{
	/* Pairs with the other party's fetch_sub: the last one sees every write
	 * the other made to the job before letting go. */
	if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) != 1)
		return;
	evr_client_free(j->client);
	free(j);
}

/* Connect (through the broker, unless NULL) and start a counters-only session. */
static void job_attach(struct evr_watch_job *j)
{
	struct evr_attach_opts ao = {
		.ring_size = j->ring_size,
		.mode = EVR_MODE_DISCARD,
		.counter_interval_ms = j->interval_ms,
	};
	char *spec = NULL;
	int r;

	r = j->broker ? evr_broker_attach(j->broker, j->pid, j->client_name, &j->client, j->err,
					  sizeof(j->err))
		      : evr_client_connect(j->pid, j->client_name, &j->client, j->err,
					   sizeof(j->err));
	if (r == 0 && j->connect_only) {
		if (j->start)
			r = j->start(j->spec_arg, j->client, j->err, sizeof(j->err));
		if (r == -ENOMEM && !j->err[0])
			snprintf(j->err, sizeof(j->err), "out of memory");
		j->ret = r;
		return;
	}
	if (r == 0)
		r = j->spec ? j->spec(j->spec_arg, j->client, &spec, j->note, sizeof(j->note), j->err,
				      sizeof(j->err))
			    : evr_watch_counter_spec(j->client, &spec, j->err, sizeof(j->err));
	if (r == 0) {
		ao.providers = spec;
		r = evr_client_start(j->client, &ao, j->err, sizeof(j->err));
	}
	if (r == -ENOMEM && !j->err[0])
		snprintf(j->err, sizeof(j->err), "out of memory");
	free(spec);
	j->ret = r;
}

static void *job_run(void *arg)
{
	struct evr_watch_job *j = arg;

	job_attach(j);
	/* Pairs with the acquire load of done in take_job(). */
	atomic_store_explicit(&j->done, true, memory_order_release);
	job_put(j);
	return NULL;
}

static struct evr_watch_job *job_new(const struct evr_watch *w, pid_t pid, int refs)
{
	struct evr_watch_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->pid = pid;
	j->client_name = w->o.client_name;
	j->broker = w->o.broker;
	j->interval_ms = w->o.interval_ms;
	j->ring_size = w->o.ring_size;
	j->spec = w->o.ops->spec;
	j->spec_arg = w->o.spec_arg;
	j->connect_only = w->o.connect_only;
	j->start = w->o.ops->start;
	atomic_init(&j->refs, refs);
	atomic_init(&j->done, false);
	return j;
}

static void change(struct evr_watch *w, struct evr_watch_proc *p, enum evr_watch_state to,
		   const struct evr_process_info *info, const char *note)
{
	struct evr_watch_change ch = { .from = p->state, .to = to, .info = info,
				       .note = note ? note : "" };

	p->state = to;
	if (to == EVR_WATCH_EXITED || to == EVR_WATCH_FAILED)
		p->gone_at_ns = evr_mono_ns();
	if (w->o.ops->changed)
		w->o.ops->changed(w, p, &ch);
}

static void set_failed(struct evr_watch *w, struct evr_watch_proc *p, int err, const char *msg,
		       const struct evr_process_info *info)
{
	p->errnum = -err;
	snprintf(p->err, sizeof(p->err), "%s", msg && *msg ? msg : strerror(-err));
	change(w, p, EVR_WATCH_FAILED, info, NULL);
}

static int start_job(struct evr_watch *w, struct evr_watch_proc *p)
{
	struct evr_watch_job *j = job_new(w, p->pid, 2);
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (!j)
		return -ENOMEM;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Small stacks: the attach needs little, and ten processes make ten threads. */
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

/* Move the result of finished job @j into @p and drop the owner's reference. */
static void take_result(struct evr_watch *w, struct evr_watch_proc *p, struct evr_watch_job *j)
{
	const struct evr_process_info *pi = j->client ? evr_client_process(j->client) : NULL;

	p->job = NULL;
	/* Refused by a socket that just appeared: bound, not listening yet. Still
	 * attaching: the next scan (soon: the socket is pending) tries again. */
	if (j->ret == -ENOENT && evr_watch_notify_fresh(w, p->pid, evr_mono_ns())) {
		p->errnum = ENOENT;
		snprintf(p->err, sizeof(p->err), "%s", j->err);
		job_put(j);
		return;
	}
	if (pi) {
		evr_watch_short_name(pi, p->name, sizeof(p->name));
		p->ns_pid = (pid_t)pi->ns_pid;
	}
	p->retrying = false;
	if (j->ret == 0) {
		p->client = j->client;
		j->client = NULL;
		change(w, p, EVR_WATCH_LIVE, pi, j->note);
	} else {
		set_failed(w, p, j->ret, j->err, pi);
	}
	job_put(j);
}

/* A finished attach: take its result. Return: true when it finished. */
static bool take_job(struct evr_watch *w, struct evr_watch_proc *p)
{
	struct evr_watch_job *j = p->job;

	/* Pairs with the release store of done in job_run(). */
	if (!j || !atomic_load_explicit(&j->done, memory_order_acquire))
		return false;
	take_result(w, p, j);
	return true;
}

/* Attach to @p (state ATTACHING) on a thread; a thread that cannot start fails it. */
static void attach_async(struct evr_watch *w, struct evr_watch_proc *p)
{
	int r = start_job(w, p);

	if (r < 0) {
		char msg[128];

		snprintf(msg, sizeof(msg), "cannot start an attach thread: %s", strerror(-r));
		set_failed(w, p, r, msg, NULL);
	}
}

/* ---- the processes ---------------------------------------------------------------- */

struct evr_watch_counter *evr_watch_counter_at(const struct evr_watch *w,
					       const struct evr_watch_proc *p, uint32_t i)
{
	return (struct evr_watch_counter *)((char *)p->ctr + (size_t)i * w->o.ops->counter_size);
}

/* Empty @p's table (the array stays for the next session). */
static void counters_clear(struct evr_watch *w, struct evr_watch_proc *p)
{
	for (uint32_t i = 0; i < p->nctr; i++)
		free(evr_watch_counter_at(w, p, i)->hist);
	p->nctr = 0;
}

static void proc_free(struct evr_watch *w, struct evr_watch_proc *p)
{
	if (!p)
		return;
	if (w->o.ops->proc_free)
		w->o.ops->proc_free(w, p);
	if (p->job)
		job_put(p->job);
	evr_client_free(p->client);
	counters_clear(w, p);
	free(p->ctr);
	free(p);
}

struct evr_watch_proc *evr_watch_find(struct evr_watch *w, pid_t pid)
{
	for (uint32_t i = 0; i < w->n; i++)
		if (w->procs[i]->pid == pid)
			return w->procs[i];
	return NULL;
}

int evr_watch_add(struct evr_watch *w, pid_t pid, bool sync, char *err, size_t errlen,
		  struct evr_watch_proc **ret)
{
	struct evr_watch_proc *p = evr_watch_find(w, pid);

	if (ret)
		*ret = p;
	if (p)
		return 0;
	if (w->n == w->cap) {
		uint32_t cap = w->cap ? w->cap * 2 : 16;
		struct evr_watch_proc **np = realloc(w->procs, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		w->procs = np;
		w->cap = cap;
	}
	p = calloc(1, w->o.ops->proc_size);
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->found = EVR_WATCH_FOUND_ADDED;
	p->listed = true;
	p->state = EVR_WATCH_ATTACHING;
	snprintf(p->name, sizeof(p->name), "?");
	if (sync) {
		struct evr_watch_job *j = job_new(w, pid, 1);

		if (!j) {
			free(p);
			return -ENOMEM;
		}
		job_attach(j);
		if (j->ret < 0) {
			int r = j->ret;

			snprintf(err, errlen, "%s", j->err[0] ? j->err : strerror(-r));
			job_put(j);
			free(p);
			return r;
		}
		take_result(w, p, j);	/* drops the only reference */
	} else {
		attach_async(w, p);
	}
	w->procs[w->n++] = p;
	if (ret)
		*ret = p;
	return 0;
}

/* Attach anew to a process that failed or ended: forget what it had. */
static void retry(struct evr_watch *w, struct evr_watch_proc *p)
{
	counters_clear(w, p);
	p->lost = 0;
	p->err[0] = '\0';
	p->errnum = 0;
	p->retrying = true;
	change(w, p, EVR_WATCH_ATTACHING, NULL, NULL);
	attach_async(w, p);
}

static bool gone(const struct evr_watch_proc *p)
{
	return p->state == EVR_WATCH_EXITED || p->state == EVR_WATCH_FAILED;
}

int evr_watch_scan(struct evr_watch *w)
{
	uint64_t now = evr_mono_ns();
	uint64_t retry_ns = (uint64_t)w->o.retry_ms * 1000000u;
	uint64_t forget_ns = (uint64_t)w->o.forget_ms * 1000000u;
	pid_t *pids = NULL;
	uint32_t n = 0, k = 0;
	int r;

	w->last_scan_ns = now;
	w->scans++;
	evr_watch_notify_arm(w);
	if (w->o.broker) {
		char err[512];

		r = evr_broker_process_list(w->o.broker, &pids, &n, err, sizeof(err));
	} else {
		r = evr_process_list(&pids, &n);
	}
	if (r < 0)
		return r;
	for (uint32_t i = 0; i < w->n; i++)
		w->procs[i]->listed = false;
	for (uint32_t i = 0; i < n; i++) {
		struct evr_watch_proc *p = evr_watch_find(w, pids[i]);

		if (!p) {
			if (evr_watch_add(w, pids[i], false, NULL, 0, &p) == 0 && p)
				p->found = evr_watch_notify_found(w, pids[i]);
			continue;
		}
		p->listed = true;
		/* Refused while its socket was new (take_result()): try again. */
		if (p->state == EVR_WATCH_ATTACHING && !p->job) {
			attach_async(w, p);
			continue;
		}
		/* Listed again a while after it failed or ended: a new process with
		 * a reused pid, or a refusal that may have gone. Try again. */
		if (retry_ns && gone(p) && now - p->gone_at_ns >= retry_ns)
			retry(w, p);
	}
	free(pids);
	/* Forget processes gone for a while; with forget_listed a pid listed
	 * again is attached anew at the next scan. */
	for (uint32_t i = 0; i < w->n; i++) {
		struct evr_watch_proc *p = w->procs[i];

		/* Refused while new, and no longer listed: that refusal was the last word. */
		if (p->state == EVR_WATCH_ATTACHING && !p->job && !p->listed) {
			char msg[sizeof(p->err)];

			snprintf(msg, sizeof(msg), "%s", p->err);
			set_failed(w, p, -p->errnum, msg, NULL);
		}

		if (!p->pinned && gone(p) && (w->o.forget_listed || !p->listed) &&
		    now - p->gone_at_ns >= forget_ns) {
			proc_free(w, p);
			continue;
		}
		w->procs[k++] = p;
	}
	w->n = k;
	evr_watch_notify_scanned(w, now);
	return 0;
}

/* ---- samples --------------------------------------------------------------------- */

struct evr_watch_counter *evr_watch_counter(const struct evr_watch *w,
					    const struct evr_watch_proc *p, const char *provider,
					    const char *name)
{
	for (uint32_t i = 0; i < p->nctr; i++) {
		struct evr_watch_counter *c = evr_watch_counter_at(w, p, i);

		if (!strcmp(c->name, name) && !strcmp(c->provider, provider))
			return c;
	}
	return NULL;
}

static struct evr_watch_counter *counter_for(struct evr_watch *w, struct evr_watch_proc *p,
					     const struct evr_counter_sample *s, uint32_t *hint)
{
	size_t size = w->o.ops->counter_size;
	struct evr_watch_counter *c;

	/* Samples come in the same order every interval: try the next one first. */
	for (uint32_t k = 0; k < p->nctr; k++) {
		uint32_t i = (*hint + k) % p->nctr;

		c = evr_watch_counter_at(w, p, i);
		if (strlen(c->name) == s->name_len && !memcmp(c->name, s->name, s->name_len) &&
		    !strcmp(c->provider, s->provider)) {
			*hint = i + 1;
			return c;
		}
	}
	if (p->nctr == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 32;
		void *nc = realloc(p->ctr, cap * size);

		if (!nc)
			return NULL;
		p->ctr = nc;
		p->cap = cap;
	}
	c = evr_watch_counter_at(w, p, p->nctr);
	memset(c, 0, size);
	if (w->o.history) {
		c->hist_cap = w->o.history;
		c->hist = calloc(c->hist_cap, sizeof(*c->hist));
		if (!c->hist)
			return NULL;
	}
	snprintf(c->provider, sizeof(c->provider), "%s", s->provider);
	snprintf(c->name, sizeof(c->name), "%.*s", (int)s->name_len, s->name);
	snprintf(c->display, sizeof(c->display), "%.*s", (int)s->display_name_len,
		 s->display_name);
	snprintf(c->unit, sizeof(c->unit), "%.*s", (int)s->unit_len, s->unit);
	c->kind = s->kind;
	if (w->o.ops->counter_new)
		w->o.ops->counter_new(w, p, c);
	p->nctr++;
	*hint = p->nctr;
	return c;
}

void evr_watch_counter_take(struct evr_watch_counter *c, const struct evr_counter_sample *s)
{
	c->kind = s->kind;
	c->last = *s;
	c->last.provider = c->last.name = c->last.display_name = c->last.unit = NULL;
	c->nsamples++;
}

static void add_sample(struct evr_watch *w, struct evr_watch_proc *p, struct evr_watch_counter *c,
		       const struct evr_counter_sample *s, uint64_t now)
{
	if (w->o.ops->counter_sample)
		w->o.ops->counter_sample(w, p, c, s, now);
	else
		evr_watch_counter_take(c, s);
	if (c->hist) {
		c->hist[c->hist_next] = (struct evr_watch_point){ .ts_ns = s->ts_ns,
								  .value = s->value };
		c->hist_next = (c->hist_next + 1) % c->hist_cap;
		if (c->hist_n < c->hist_cap)
			c->hist_n++;
	}
	p->gen = w->gen;
}

/* Read what @p's session has. Return: true when a sample came or the state changed. */
static bool drain(struct evr_watch *w, struct evr_watch_proc *p)
{
	const struct evr_watch_ops *ops = w->o.ops;
	uint64_t now = evr_mono_ns();
	struct evr_counter_sample s;
	struct evr_event_view v;
	uint32_t hint = 0;
	bool changed = false;
	int r = 0;

	for (uint32_t budget = POLL_BUDGET; budget; budget--) {
		struct evr_watch_counter *c;

		r = evr_client_next(p->client, &v);
		if (r <= 0)
			break;
		if (v.type == EVR_REC_LOST) {
			p->lost += v.lost;
			continue;
		}
		if (evr_counter_sample_from_view(&v, &s) != 1)
			continue;	/* another event, or a malformed sample: skipped */
		if (ops->sample && !ops->sample(w, p, &s, now))
			continue;
		c = counter_for(w, p, &s, &hint);
		if (!c)
			continue;
		add_sample(w, p, c, &s, now);
		changed = true;
	}
	evr_client_release(p->client);
	if (ops->drained)
		ops->drained(w, p);
	if (r < 0) {
		snprintf(p->err, sizeof(p->err), "reading the session failed: %s", strerror(-r));
		p->errnum = -r;
		evr_client_free(p->client);
		p->client = NULL;
		change(w, p, EVR_WATCH_FAILED, NULL, NULL);
	} else if (evr_client_drained(p->client)) {
		snprintf(p->err, sizeof(p->err), "the process ended");
		p->errnum = ESRCH;
		evr_client_free(p->client);
		p->client = NULL;
		change(w, p, EVR_WATCH_EXITED, NULL, NULL);
	} else {
		return changed;
	}
	return true;
}

bool evr_watch_poll(struct evr_watch *w)
{
	bool changed = false;

	w->gen++;
	for (uint32_t i = 0; i < w->n; i++) {
		struct evr_watch_proc *p = w->procs[i];

		if (p->state == EVR_WATCH_ATTACHING)
			changed |= take_job(w, p);
		/* connect_only: the owner took the client. */
		if (p->state == EVR_WATCH_LIVE && p->client)
			changed |= drain(w, p);
	}
	return changed;
}

/* ---- the watch ----------------------------------------------------------------------- */

int evr_watch_init(struct evr_watch *w, const struct evr_watch_opts *o)
{
	const char *env;

	memset(w, 0, sizeof(*w));
	w->notify_fd = -1;
	w->loadavg_fd = -1;
	if (!o->ops || o->ops->proc_size < sizeof(struct evr_watch_proc) ||
	    o->ops->counter_size < sizeof(struct evr_watch_counter) || !o->client_name)
		return -EINVAL;
	w->o = *o;
	env = getenv("EVR_WATCH_RESCAN_MS");
	if (env && *env && o->rescan_ms) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(env, &end, 10);
		if (!errno && !*end && v > 0 && v <= UINT32_MAX)
			w->o.rescan_ms = (uint32_t)v;
	}
	if (o->notify && (!o->broker || o->notify_broker))
		evr_watch_notify_open(w);
	evr_watch_check_open(w);
	return 0;
}

void evr_watch_fini(struct evr_watch *w)
{
	for (uint32_t i = 0; i < w->n; i++)
		proc_free(w, w->procs[i]);
	free(w->procs);
	w->procs = NULL;
	w->n = w->cap = 0;
	evr_watch_notify_close(w);
	evr_watch_check_close(w);
}
