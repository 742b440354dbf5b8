// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The counter hub: one counters-only session on every process the monitor may
 * attach to, kept alive between requests, so that /metrics, the counters JSON
 * and the counters page answer from memory (a scrape costs no attach) and
 * the pages can plot history.
 *
 * A view of the watch (consumer/watch/): it finds the processes (inotify on the
 * runtime directory, and a scan once a second), attaches on short-lived
 * threads and keeps each counter's latest sample and a ring of the last
 * opts.history values. The hub adds what the routes show: the process's
 * command line and version, the sums Prometheus needs (totals since attached)
 * and each counter's metric family.
 *
 * Locking: the hub thread drives the watch (scans, reads every session a few
 * times per counter interval) holding h->lock, and the watch's hooks below run
 * in those calls; everything in struct evr_mon_hub below `lock`, the watch and
 * its processes included, is protected by it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "monitor.h"

#define SCAN_MS 1000			/* look for new processes at least once a second */
#define FORGET_MS 30000			/* forget an exited process after 30 s */
#define RETRY_MS 5000			/* attach again to a failed one after 5 s */
#define RING_SIZE (64u * 1024u)		/* counters only: a few KiB per interval */
#define LIST_WAIT_MS 1500		/* a listing: new processes' first attach */

int evr_mon_counter_spec(struct evr_client *c, char **ret, char *err, size_t errlen)
{
	return evr_watch_counter_spec(c, ret, err, errlen);
}

struct evr_mon_counter *evr_mon_proc_counter(struct evr_mon_proc *p, const char *provider,
					     const char *name)
{
	for (uint32_t i = 0; i < p->nctr; i++)
		if (!strcmp(p->ctr[i].name, name) && !strcmp(p->ctr[i].provider, provider))
			return &p->ctr[i];
	return NULL;
}

/* ---- the watch's hooks (the hub thread, h->lock held) -------------------------------- */

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

/* An attach finished: keep what the process said of itself, count the outcome. */
static void hub_changed(struct evr_watch *w, struct evr_watch_proc *wp,
			const struct evr_watch_change *ch)
{
	struct evr_mon_hub *h = w->o.user;
	struct evr_mon_proc *p = (struct evr_mon_proc *)wp;
	const struct evr_process_info *pi = ch->info;

	if (ch->from != EVR_WATCH_ATTACHING || ch->to == EVR_WATCH_ATTACHING)
		return;
	if (pi) {
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
	if (ch->to == EVR_WATCH_LIVE)
		h->attaches++;
	else
		h->attach_failures++;
}

/* A sample for @c: its Prometheus family at the first (the counter is new), then the sums. */
static void hub_counter_sample(struct evr_watch *w, struct evr_watch_proc *p,
			       struct evr_watch_counter *c, const struct evr_counter_sample *s,
			       uint64_t now_ns)
{
	(void)w;
	(void)p;
	(void)now_ns;
	if (!c->nsamples)
		evr_mon_metric_init((struct evr_mon_counter *)c);
	evr_mon_counter_fold((struct evr_mon_counter *)c, s);
}

static void hub_proc_free(struct evr_watch *w, struct evr_watch_proc *wp)
{
	struct evr_mon_proc *p = (struct evr_mon_proc *)wp;

	(void)w;
	free(p->command);
	free(p->exe);
}

static const struct evr_watch_ops hub_ops = {
	EVR_WATCH_OPS_SIZES(struct evr_mon_proc, struct evr_mon_counter),
	.changed = hub_changed,
	.counter_sample = hub_counter_sample,
	.proc_free = hub_proc_free,
};

/* The watch's process list, as the hub's (what the routes walk). */
static void rebuild(struct evr_mon_hub *h)
{
	if (h->w.n > h->cap) {
		struct evr_mon_proc **np = realloc(h->procs, h->w.cap * sizeof(*np));

		if (!np)
			return;		/* the old list stays: the next scan tries again */
		h->procs = np;
		h->cap = h->w.cap;
	}
	for (uint32_t i = 0; i < h->w.n; i++)
		h->procs[i] = (struct evr_mon_proc *)h->w.procs[i];
	h->n = h->w.n;
}

static struct evr_mon_proc *find_proc(struct evr_mon_hub *h, pid_t pid)
{
	return (struct evr_mon_proc *)evr_watch_find(&h->w, pid);
}

/* List the attachable processes, attach to new ones, forget long-gone ones. */
static void rescan(struct evr_mon_hub *h)
{
	(void)evr_watch_scan(&h->w);
	rebuild(h);
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
		uint64_t now = evr_mono_ns(), sleep_ns;
		bool changed = false;
		struct timespec until;

		if (evr_watch_scan_due(&h->w, now) || h->rescan_now) {
			h->rescan_now = false;
			rescan(h);
			changed = true;
		}
		changed |= evr_watch_poll(&h->w);
		if (changed)
			pthread_cond_broadcast(&h->changed);
		/* An attach in progress is looked at again soon; else a normal round. */
		sleep_ns = round_ns(h);
		for (uint32_t i = 0; i < h->n; i++)
			if (h->procs[i]->state == EVR_MON_ATTACHING)
				sleep_ns = 10000000u;
		/* The /proc check's turn (a container's new process) comes no later. */
		if (sleep_ns > (uint64_t)h->w.o.check_ms * 1000000u && h->w.o.check_ms)
			sleep_ns = (uint64_t)h->w.o.check_ms * 1000000u;
		/* New processes are noticed at the next round (inotify) or scan. */
		now = evr_mono_ns() + sleep_ns;
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
	struct evr_watch_opts wo = {
		.client_name = EVR_MON_NAME,
		.interval_ms = o->counter_interval_ms,
		.ring_size = RING_SIZE,
		.history = o->history,
		.notify = true,
		.rescan_ms = SCAN_MS,
		.check_ms = EVR_WATCH_CHECK_MS,
		.retry_ms = RETRY_MS,
		.forget_ms = FORGET_MS,
		.ops = &hub_ops,
		.user = h,
	};
	pthread_condattr_t ca;
	int r;

	memset(h, 0, sizeof(*h));
	h->o = o;
	pthread_mutex_init(&h->lock, NULL);
	/* Deadlines on CLOCK_MONOTONIC: a clock change must not stall the hub. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->wake, &ca);
	pthread_cond_init(&h->changed, &ca);
	pthread_condattr_destroy(&ca);
	/* Before the sandbox: the inotify descriptor is made here. */
	r = evr_watch_init(&h->w, &wo);
	return r;
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
	evr_watch_fini(&h->w);
	free(h->procs);
	pthread_cond_destroy(&h->wake);
	pthread_cond_destroy(&h->changed);
	pthread_mutex_destroy(&h->lock);
}

/* Wait on h->changed until @deadline (CLOCK_MONOTONIC ns). Return: false when it passed. */
static bool wait_changed(struct evr_mon_hub *h, uint64_t deadline)
{
	uint64_t now = evr_mono_ns();
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
	uint64_t deadline = evr_mono_ns() + (uint64_t)timeout_ms * 1000000u;
	uint64_t scans = h->w.scans;
	struct evr_mon_proc *p;

	for (;;) {
		p = find_proc(h, pid);
		if (!p) {
			/* Not seen yet: one scan after we asked is enough to know (scans
			 * run under the lock, so the next one starts after this). */
			if (h->w.scans > scans)
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
	uint64_t deadline = evr_mono_ns() + (uint64_t)LIST_WAIT_MS * 1000000u;
	uint64_t scans = h->w.scans;
	struct timespec until = { .tv_sec = (time_t)(deadline / 1000000000u),
				  .tv_nsec = (long)(deadline % 1000000000u) };

	h->rescan_now = true;
	pthread_cond_signal(&h->wake);
	while (!h->stop && evr_mono_ns() < deadline) {
		bool attaching = false;

		for (uint32_t i = 0; i < h->n; i++)
			attaching |= h->procs[i]->state == EVR_MON_ATTACHING &&
				     !h->procs[i]->retrying;
		if (h->w.scans > scans && !attaching)
			break;
		pthread_cond_timedwait(&h->changed, &h->lock, &until);
	}
}
