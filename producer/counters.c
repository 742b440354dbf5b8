// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Counters: per-session sampling, creation, and the built-in "Process" provider.
 * Recording is in counters-record.c.
 *
 * Recording keeps, per thread, the values of the current epoch; the counters
 * thread ends an epoch at every tick of any session (and when a session
 * starts) and folds it into cumulative totals per counter (count, sum, sum of
 * squares, histogram buckets), and the epoch's min and max into the running
 * extremes of every session sampling (smin/smax, one pair per session slot).
 * Every record is in exactly one epoch, whole, so the totals are exact and an
 * interval's count, mean, stddev, min and max describe the same values.
 *
 * Sessions. Each session with counters (at most 64) has a timerfd of its own
 * interval on the counters thread. At each tick the thread ends the epoch, then
 * takes the difference between the totals and THAT session's previous snapshot
 * and reports and resets that session's extremes, so sessions with different
 * intervals never disturb each other.
 *
 * The samples are written into one session only: inside an RCU read-side
 * section, if the table still holds that session and the Counter event's mask
 * has its bit (the event is described in its metadata area).
 *
 * Locking: counters_lock guards the counter list, the session entries, the
 * totals and the snapshots. Lock order: agent lock, counters lock, registry
 * lock (counter creation defines events under it). Poll callbacks run with it
 * held.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>

#include <urcu-bp.h>

#include <evring/counters.h>
#include "counters-internal.h"
#include "counters-record-internal.h"
#include "fmath-internal.h"
#include "producer-internal.h"
#include "write-internal.h"

#define HIST_EXP_MIN EVR_HIST_EXP_MIN
#define HIST_BUCKETS EVR_HIST_BUCKETS

enum { EV_MEAN, EV_RATE, EV_GAUGE, EV_HIST, EV_NR };

/* A provider's built-in Counter* events. Lives as long as the library. */
struct prov_ctr {
	struct prov_ctr *next;
	struct evr_provider *p;
	struct evr_provider_priv *priv; /* p->priv when defined: tells a re-registration */
	struct evr_event *ev[EV_NR];
};

/* One session's previous snapshot of one counter. */
struct snap {
	uint64_t count;
	double sum, sumsq;
	double last; /* POLL_RATE: previous sample */
	bool primed;
	uint64_t *buckets; /* HISTOGRAM: HIST_BUCKETS */
};

struct evr_counter {
	struct evr_ctr_rec r; /* first: evr_counter_record() casts (counters-record.c) */
	struct prov_ctr *pc;
	char *name, *display, *unit;
	evr_counter_poll_fn *poll;
	void *poll_ctx;
	struct snap snap[EVR_MAX_SESSIONS];
};
_Static_assert(offsetof(struct evr_counter, r) == 0, "the recording side comes first");

static inline struct evr_counter *ctr_of(struct evr_ctr_rec *r)
{
	return (struct evr_counter *)(void *)r;
}

struct sess_ent {
	struct evr_session *s; /* NULL: slot not sampled */
	uint32_t interval_ms;
	int tfd;
	uint64_t last_ns;
};

/* Taken by the destructor at every exit, traced or not: EVR_LOAD_DATA. */
EVR_LOAD_DATA static pthread_mutex_t counters_lock = PTHREAD_MUTEX_INITIALIZER;
static struct evr_ctr_rec *counters; /* linked by r.next */
static struct prov_ctr *prov_ctrs;
static struct sess_ent sess[EVR_MAX_SESSIONS];
static int epfd = -1, stopfd = -1;
static pthread_t thread;
/* Read by the destructor at every exit: EVR_LOAD_DATA, beside counters_lock. */
EVR_LOAD_DATA static bool running;
EVR_LOAD_DATA static pid_t thread_pid;

/* The middle of bucket @i: within EVR_HISTOGRAM_REL_ERROR of its values. */
static double hist_value(uint32_t i)
{
	uint32_t k;
	double lo;

	if (i == 0)
		return 0;
	k = i - 1;
	lo = (1.0 + (double)(k % EVR_HISTOGRAM_SUB_BUCKETS) / EVR_HISTOGRAM_SUB_BUCKETS) *
	     evr_pow2i((int)(k / EVR_HISTOGRAM_SUB_BUCKETS) + HIST_EXP_MIN - 1);
	return lo *
	       (1.0 + 0.5 / (EVR_HISTOGRAM_SUB_BUCKETS + (double)(k % EVR_HISTOGRAM_SUB_BUCKETS)));
}

/* ---- snapshots ----------------------------------------------------------------------- */

/*
 * Baseline of @c for the session in @slot: the totals as of the last epoch
 * ended. Context: counters lock.
 */
static void baseline_locked(struct evr_counter *c, uint32_t slot)
{
	struct snap *sn = &c->snap[slot];

	sn->count = c->r.count;
	sn->sum = c->r.sum;
	sn->sumsq = c->r.sumsq;
	c->r.smin[slot] = INFINITY;
	c->r.smax[slot] = -INFINITY;
	sn->primed = false;
	if (c->poll && c->r.kind == EVR_COUNTER_POLL_RATE) {
		sn->last = c->poll(c->poll_ctx);
		sn->primed = true;
	}
	if (sn->buckets)
		memcpy(sn->buckets, c->r.buckets, sizeof(*sn->buckets) * HIST_BUCKETS);
}

/* ---- writing one sample into one session ----------------------------------------------- */

struct pk {
	uint8_t buf[3 * 260 + 64];	/* room for the padding to 8 bytes too */
	uint32_t len;
};

static void pk_str(struct pk *k, const char *s)
{
	uint32_t n = (uint32_t)strnlen(s, 255);

	memcpy(k->buf + k->len, &n, 4);
	memcpy(k->buf + k->len + 4, s, n);
	k->len += 4 + n;
}

static void pk_raw(struct pk *k, const void *v, uint32_t n)
{
	memcpy(k->buf + k->len, v, n);
	k->len += n;
}

static void pk_f64(struct pk *k, double v)
{
	pk_raw(k, &v, 8);
}

static void pk_head(struct pk *k, const struct evr_counter *c, uint32_t interval_ms)
{
	k->len = 0;
	pk_str(k, c->name);
	pk_str(k, c->display);
	pk_str(k, c->unit);
	pk_raw(k, &interval_ms, 4);
}

static void write_one(struct evr_session *s, uint32_t slot, const struct evr_event *ev,
		      struct pk *k)
{
	struct evr_session_table *t;

	/* The write path copies whole words: zero the padding after the payload. */
	evr_rseq_pad_zero(k->buf, k->len);

	urcu_bp_read_lock();
	t = evr_session_table_get_rcu();
	if (t->slot[slot] == s &&
	    (atomic_load_explicit(&ev->mask, memory_order_relaxed) & (1ull << slot))) {
		struct evr_rseq_rec rec;
		uint32_t cpu = UINT32_MAX;

		evr_rseq_rec_init(&rec, ev->rid, evr_clock_now(), evr_thread_id(), k->buf, k->len);
		evr_session_write_rec_rcu(s, evr_rseq_area(), &rec, &cpu);
	}
	urcu_bp_read_unlock();
}

/* ceil() of @x >= 0 below 2^64, in integers: clang calls libm's ceil() where the
 * target lacks SSE4.1's roundsd, and libm is not loaded with libevring (the
 * CMakeLists.txt beside this file). */
static uint64_t ceil_u64(double x)
{
	uint64_t r = (uint64_t)x;

	return (double)r < x ? r + 1 : r;
}

static double percentile(const uint64_t *d, uint64_t n, double q)
{
	uint64_t rank = ceil_u64(q * (double)n), acc = 0;

	if (rank == 0)
		rank = 1;
	for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
		acc += d[i];
		if (acc >= rank)
			return hist_value(i);
	}
	return 0;
}

/*
 * One tick of the session in @slot for counter @c, after the epoch ended: the
 * difference between the totals and the session's previous snapshot.
 * Context: counters lock.
 */
static void sample_locked(struct evr_counter *c, struct sess_ent *e, uint32_t slot, double secs)
{
	struct evr_ctr_rec *r = &c->r;
	struct snap *sn = &c->snap[slot];
	struct pk k;
	uint64_t dn;

	if (!(atomic_load_explicit(&r->ev->mask, memory_order_relaxed) & (1ull << slot)))
		return;
	pk_head(&k, c, e->interval_ms);
	switch (r->kind) {
	case EVR_COUNTER_MEAN: {
		double mn = r->smin[slot], mx = r->smax[slot], mean = 0, sd = 0;

		r->smin[slot] = INFINITY;
		r->smax[slot] = -INFINITY;
		dn = r->count - sn->count;
		if (dn) {
			mean = (r->sum - sn->sum) / (double)dn;
			sd = (r->sumsq - sn->sumsq) / (double)dn - mean * mean;
			sd = sd > 0 ? sqrt(sd) : 0;
		}
		if (!dn || mn > mx)
			mn = mx = 0;
		sn->count = r->count;
		sn->sum = r->sum;
		sn->sumsq = r->sumsq;
		pk_raw(&k, &dn, 8);
		pk_f64(&k, mean);
		pk_f64(&k, mn);
		pk_f64(&k, mx);
		pk_f64(&k, sd);
		break;
	}
	case EVR_COUNTER_INCREMENT:
		pk_f64(&k, r->sum - sn->sum);
		pk_f64(&k, secs > 0 ? (r->sum - sn->sum) / secs : 0);
		sn->sum = r->sum;
		break;
	case EVR_COUNTER_GAUGE:
		pk_f64(&k, c->poll(c->poll_ctx));
		break;
	case EVR_COUNTER_POLL_RATE: {
		double v = c->poll(c->poll_ctx), inc = sn->primed ? v - sn->last : 0;

		sn->last = v;
		sn->primed = true;
		pk_f64(&k, inc);
		pk_f64(&k, secs > 0 ? inc / secs : 0);
		break;
	}
	case EVR_COUNTER_HISTOGRAM: {
		uint64_t d[HIST_BUCKETS];

		for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
			d[i] = r->buckets[i] - sn->buckets[i];
			sn->buckets[i] = r->buckets[i];
		}
		/* Same epochs as the buckets: the count is their sum. */
		dn = r->count - sn->count;
		pk_raw(&k, &dn, 8);
		pk_f64(&k, r->sum - sn->sum);
		sn->count = r->count;
		sn->sum = r->sum;
		pk_f64(&k, dn ? percentile(d, dn, 0.50) : 0);
		pk_f64(&k, dn ? percentile(d, dn, 0.90) : 0);
		pk_f64(&k, dn ? percentile(d, dn, 0.99) : 0);
		break;
	}
	}
	write_one(e->s, slot, r->ev, &k);
}

/* The session in @slot is due: its samples. Context: counters lock, epoch just ended. */
static void tick_locked(uint32_t slot)
{
	struct sess_ent *e = &sess[slot];
	uint64_t exp, now;
	double secs;

	if (!e->s || read(e->tfd, &exp, sizeof(exp)) != (ssize_t)sizeof(exp))
		return;
	now = evr_clock_gettime_ns(CLOCK_MONOTONIC);
	secs = (double)(now - e->last_ns) / 1e9;
	e->last_ns = now;
	for (struct evr_ctr_rec *r = counters; r; r = r->next)
		sample_locked(ctr_of(r), e, slot, secs);
}

static void *counters_main(void *arg)
{
	struct epoll_event evs[16];

	(void)arg;
	for (;;) {
		int n = epoll_wait(epfd, evs, 16, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (int i = 0; i < n; i++)
			if (evs[i].data.u64 == UINT64_MAX)
				return NULL;
		/* One epoch ends for all the sessions due together. */
		pthread_mutex_lock(&counters_lock);
		evr_ctr_advance_locked(counters,
				       atomic_load_explicit(&evr_ctr_sampled, memory_order_relaxed));
		for (int i = 0; i < n; i++)
			tick_locked((uint32_t)evs[i].data.u64);
		pthread_mutex_unlock(&counters_lock);
	}
	return NULL;
}

/* Context: counters lock. */
static int thread_start_locked(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
	sigset_t all, old;
	int err;

	if (running)
		return 0;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (epfd < 0 || stopfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, stopfd, &ev) < 0) {
		err = -errno;
		goto err;
	}
	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&thread, NULL, counters_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		goto err;
	(void)pthread_setname_np(thread, "evring-counters");
	evr_ctr_sampler_start();
	running = true;
	thread_pid = getpid();
	return 0;
err:
	if (epfd >= 0)
		close(epfd);
	if (stopfd >= 0)
		close(stopfd);
	epfd = stopfd = -1;
	return err;
}

void evr_counters_lock(void)
{
	pthread_mutex_lock(&counters_lock);
}

void evr_counters_unlock(void)
{
	pthread_mutex_unlock(&counters_lock);
}

int evr_counters_session_begin_locked(struct evr_session *s, uint32_t interval_ms)
{
	struct itimerspec its = {0};
	struct epoll_event ev = {.events = EPOLLIN};
	uint32_t slot = s->slot;
	int tfd, err;

	if (!interval_ms)
		return 0;
	err = thread_start_locked();
	if (err < 0)
		return err;
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (tfd < 0)
		return -errno;
	its.it_interval.tv_sec = interval_ms / 1000;
	its.it_interval.tv_nsec = (long)(interval_ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	ev.data.u64 = slot;
	if (timerfd_settime(tfd, 0, &its, NULL) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev) < 0) {
		err = -errno;
		close(tfd);
		return err;
	}
	/*
	 * End the epoch: the baselines hold every value recorded before. @s is
	 * not published yet, so no provider has its bit: a value recorded for it
	 * comes after these baselines, in the session's first interval. (Taken
	 * after publishing, as they once were, the baselines swallowed what was
	 * recorded as soon as the mask appeared: an enable callback's values, or
	 * a program's that waited for the session.)
	 */
	evr_ctr_advance_locked(counters,
			       atomic_load_explicit(&evr_ctr_sampled, memory_order_relaxed));
	for (struct evr_ctr_rec *r = counters; r; r = r->next)
		baseline_locked(ctr_of(r), slot);
	sess[slot] = (struct sess_ent){
		.s = s, .interval_ms = interval_ms, .tfd = tfd, .last_ns = evr_clock_gettime_ns(CLOCK_MONOTONIC)};
	/* Release: pairs with the acquire in ctr_on() (counters-record.c):
	 * recorders see how evr_ctr_sampler_start() set up the epochs. Set before
	 * the session's mask bits (published next, under the registry lock held
	 * now): ctr_on() counts values for it from the time a provider shows it. */
	atomic_fetch_or_explicit(&evr_ctr_sampled, 1ull << slot, memory_order_release);
	return 0;
}

void evr_counters_session_end(struct evr_session *s)
{
	struct sess_ent *e;

	pthread_mutex_lock(&counters_lock);
	e = &sess[s->slot];
	if (e->s == s) {
		atomic_fetch_and_explicit(&evr_ctr_sampled, ~(1ull << s->slot),
					  memory_order_relaxed);
		(void)epoll_ctl(epfd, EPOLL_CTL_DEL, e->tfd, NULL);
		close(e->tfd);
		*e = (struct sess_ent){.tfd = -1};
	}
	pthread_mutex_unlock(&counters_lock);
}

/* ---- creation ------------------------------------------------------------------------- */

#define F(n, t)                 \
	{                       \
		n, EVR_TYPE_##t \
	}
static const struct evr_field_desc f_mean[] = {
	F("name", STR),	       F("display_name", STR), F("unit", STR),
	F("interval_ms", U32), F("count", U64),	       F("mean", F64),
	F("min", F64),	       F("max", F64),	       F("stddev", F64),
};
static const struct evr_field_desc f_rate[] = {
	F("name", STR),	       F("display_name", STR), F("unit", STR),
	F("interval_ms", U32), F("increment", F64),    F("rate_per_s", F64),
};
static const struct evr_field_desc f_gauge[] = {
	F("name", STR),	       F("display_name", STR), F("unit", STR),
	F("interval_ms", U32), F("value", F64),
};
static const struct evr_field_desc f_hist[] = {
	F("name", STR),	       F("display_name", STR), F("unit", STR),
	F("interval_ms", U32), F("count", U64),	       F("sum", F64),
	F("p50", F64),	       F("p90", F64),	       F("p99", F64),
};
#undef F

#define D(nm, id_, f)                                                \
	{                                                            \
		.name = nm, .id = id_, .level = EVR_LEVEL_LOGALWAYS, \
		.nfields = sizeof(f) / sizeof(f[0]), .fields = f     \
	}
static const struct evr_event_desc counter_descs[EV_NR] = {
	D("CounterMean", 0xffffffe0u, f_mean),
	D("CounterRate", 0xffffffe1u, f_rate),
	D("CounterGauge", 0xffffffe2u, f_gauge),
	D("CounterHistogram", 0xffffffe3u, f_hist),
};
#undef D

/* Context: counters lock. */
static int prov_ctr_get_locked(struct evr_provider *p, struct prov_ctr **ret)
{
	struct prov_ctr *pc, **pp;
	int err;

	for (pp = &prov_ctrs; (pc = *pp); pp = &pc->next) {
		if (pc->p != p)
			continue;
		if (pc->priv == p->priv)
			goto found;
		/* Unregistered and registered again: its events went with it. */
		*pp = pc->next;
		free(pc);
		break;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->p = p;
	pc->priv = p->priv;
	for (int i = 0; i < EV_NR; i++) {
		/* Defined once per provider; owned by it. A failure part-way leaves
		 * the first events defined, and a retry would find them taken. */
		err = evr_event_define(p, &counter_descs[i], &pc->ev[i]);
		if (err < 0) {
			free(pc);
			return err;
		}
	}
	pc->next = prov_ctrs;
	prov_ctrs = pc;
found:
	*ret = pc;
	return 0;
}

static void counter_free_mem(struct evr_counter *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < EVR_MAX_SESSIONS; i++)
		free(c->snap[i].buckets);
	free(c->name);
	free(c->display);
	free(c->unit);
	free(c);
}

int evr_counters_foreach(int (*visit)(void *ctx, const struct evr_counter_view *v), void *ctx)
{
	struct evr_ctr_rec *v[256], **all = v;
	size_t n = 0, cap = sizeof(v) / sizeof(v[0]);
	int ret = 0;

	pthread_mutex_lock(&counters_lock);
	/* The list is newest first: collect, then visit oldest first. */
	for (struct evr_ctr_rec *r = counters; r && ret == 0; r = r->next) {
		if (n == cap) {
			struct evr_ctr_rec **nv = malloc(2 * cap * sizeof(*nv));

			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			memcpy(nv, all, n * sizeof(*nv));
			if (all != v)
				free(all);
			all = nv;
			cap *= 2;
		}
		all[n++] = r;
	}
	while (ret == 0 && n--) {
		const struct evr_counter *c = ctr_of(all[n]);
		const struct evr_counter_view cv = {
			.provider = c->pc->p->name, .name = c->name,
			.display = c->display ? c->display : c->name, .unit = c->unit ? c->unit : "",
			.kind = c->r.kind,
		};

		ret = visit(ctx, &cv);
	}
	pthread_mutex_unlock(&counters_lock);
	if (all != v)
		free(all);
	return ret;
}

int evr_counter_create(struct evr_provider *p, const struct evr_counter_desc *d,
		       struct evr_counter **ret)
{
	static const int ev_of[EVR_COUNTER_KIND_MAX_] = {
		[EVR_COUNTER_MEAN] = EV_MEAN,	   [EVR_COUNTER_INCREMENT] = EV_RATE,
		[EVR_COUNTER_GAUGE] = EV_GAUGE,	   [EVR_COUNTER_POLL_RATE] = EV_RATE,
		[EVR_COUNTER_HISTOGRAM] = EV_HIST,
	};
	struct evr_counter *c;
	int err = -ENOMEM;

	if (!p || !p->priv || !d || !ret || !d->name || !*d->name || d->kind < EVR_COUNTER_MEAN ||
	    d->kind >= EVR_COUNTER_KIND_MAX_)
		return -EINVAL;
	if ((d->kind == EVR_COUNTER_GAUGE || d->kind == EVR_COUNTER_POLL_RATE) != !!d->poll)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->poll = d->poll;
	c->poll_ctx = d->poll_ctx;
	c->name = strndup(d->name, 255);
	c->display = strndup(d->display_name ? d->display_name : d->name, 255);
	c->unit = strndup(d->unit ? d->unit : "", 255);
	if (!c->name || !c->display || !c->unit)
		goto err;
	if (d->kind == EVR_COUNTER_HISTOGRAM) {
		for (uint32_t i = 0; i < EVR_MAX_SESSIONS; i++) {
			c->snap[i].buckets = calloc(HIST_BUCKETS, sizeof(uint64_t));
			if (!c->snap[i].buckets)
				goto err;
		}
	}
	pthread_mutex_lock(&counters_lock);
	for (struct evr_ctr_rec *o = counters; o; o = o->next) {
		if (ctr_of(o)->pc->p == p && strcmp(ctr_of(o)->name, c->name) == 0) {
			err = -EEXIST;
			goto err_unlock;
		}
	}
	err = prov_ctr_get_locked(p, &c->pc);
	if (err < 0)
		goto err_unlock;
	err = evr_ctr_rec_init_locked(&c->r, d->kind);
	if (err < 0)
		goto err_unlock;
	c->r.ev = c->pc->ev[ev_of[d->kind]];
	/* Sessions already sampling start from zero (calloc'ed snapshots), except
	 * for polled rates, which need a first sample. */
	for (uint32_t i = 0; i < EVR_MAX_SESSIONS; i++)
		if (sess[i].s)
			baseline_locked(c, i);
	c->r.next = counters;
	counters = &c->r;
	pthread_mutex_unlock(&counters_lock);
	*ret = c;
	return 0;

err_unlock:
	evr_ctr_rec_fini_locked(&c->r);
	pthread_mutex_unlock(&counters_lock);
err:
	counter_free_mem(c);
	return err;
}

void evr_counter_free(struct evr_counter *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&counters_lock);
	for (struct evr_ctr_rec **pp = &counters; *pp; pp = &(*pp)->next) {
		if (*pp == &c->r) {
			*pp = c->r.next;
			break;
		}
	}
	evr_ctr_rec_fini_locked(&c->r);
	pthread_mutex_unlock(&counters_lock);
	counter_free_mem(c);
}

/* ---- fork ------------------------------------------------------------------------------ */

void evr_counters_fork_prepare(void)
{
	pthread_mutex_lock(&counters_lock);
}

void evr_counters_fork_parent(void)
{
	pthread_mutex_unlock(&counters_lock);
}

void evr_counters_fork_child(void)
{
	/* The thread does not exist here and the parent's sessions are gone. */
	for (uint32_t i = 0; i < EVR_MAX_SESSIONS; i++) {
		if (sess[i].s)
			close(sess[i].tfd);
		sess[i] = (struct sess_ent){.tfd = -1};
	}
	atomic_store_explicit(&evr_ctr_sampled, 0, memory_order_relaxed);
	evr_ctr_fork_child_locked(counters);
	if (running) {
		close(epfd);
		close(stopfd);
		epfd = stopfd = -1;
		running = false;
	}
	pthread_mutex_unlock(&counters_lock);
}

__attribute__((destructor)) static void counters_fini(void)
{
	uint64_t one = 1;
	bool join;

	pthread_mutex_lock(&counters_lock);
	join = running && thread_pid == getpid();
	if (join && write(stopfd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		join = false;
	pthread_mutex_unlock(&counters_lock);
	if (join)
		pthread_join(thread, NULL);
	evr_ctr_fini();
}

/* ---- the Process provider -------------------------------------------------------------- */

/* Read a small /proc/self file into @buf (NUL-terminated); bytes read or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

double evr_proc_stat_field(int idx)
{
	char buf[1024];
	char *p;
	int f = 2;

	if (read_proc("/proc/self/stat", buf, sizeof(buf)) < 0)
		return 0;
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p)
		return 0;
	p++;
	while (*p && f < idx) {
		while (*p == ' ')
			p++;
		f++;
		if (f == idx)
			return strtod(p, NULL);
		while (*p && *p != ' ')
			p++;
	}
	return 0;
}

static double status_field(const char *key)
{
	char buf[4096];
	const char *p;
	size_t kl = strlen(key);

	if (read_proc("/proc/self/status", buf, sizeof(buf)) < 0)
		return 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, kl) == 0 && p[kl] == ':')
			return strtod(p + kl + 1, NULL);
	return 0;
}

static double poll_stat(void *ctx)
{
	int idx = (int)(intptr_t)ctx;
	double v = evr_proc_stat_field(idx);

	return idx == 24 ? v * (double)sysconf(_SC_PAGESIZE) : v;
}

static double poll_status(void *ctx)
{
	return status_field(ctx);
}

/* Percent of one CPU: the rate of CPU time in hundredths of seconds. */
static double poll_cpu(void *ctx)
{
	struct timespec t;

	(void)ctx;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) < 0)
		return 0;
	return ((double)t.tv_sec + (double)t.tv_nsec / 1e9) * 100.0;
}

static double poll_fds(void *ctx)
{
	char buf[4096] __attribute__((aligned(8)));
	int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n, count = 0;

	(void)ctx;
	if (fd < 0)
		return 0;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *de = (struct dirent64 *)(void *)(buf + off);

			if (de->d_name[0] != '.')
				count++;
			off += de->d_reclen;
		}
	}
	close(fd);
	return (double)(count > 0 ? count - 1 : 0); /* not our own fd */
}

static struct evr_event *const process_events[] = {NULL};
static struct evr_provider process_prov = {.name = "Process", .events = process_events};

void evr_builtin_counters_register(struct evr_provider *prov,
				   const struct evr_builtin_counter *defs, size_t n)
{
	struct evr_counter *c;

	if (evr_provider_register(prov) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct evr_counter_desc d = {
			.name = defs[i].name,
			.display_name = defs[i].display,
			.unit = defs[i].unit,
			.kind = defs[i].kind,
			.poll = defs[i].fn,
			.poll_ctx = defs[i].ctx,
		};

		(void)evr_counter_create(prov, &d, &c);
	}
}

struct evr_provider *evr_process_provider(void)
{
	evr_builtin_providers_ensure();
	return &process_prov;
}

void evr_process_provider_register(void)
{
	static const struct evr_builtin_counter defs[] = {
		{"cpu-usage", "CPU usage", "%", EVR_COUNTER_POLL_RATE, poll_cpu, NULL},
		{"working-set", "Working set", "B", EVR_COUNTER_GAUGE, poll_stat, (void *)24},
		{"virtual-memory", "Virtual memory", "B", EVR_COUNTER_GAUGE, poll_stat, (void *)23},
		{"threads", "Threads", "", EVR_COUNTER_GAUGE, poll_stat, (void *)20},
		{"voluntary-ctx-switches", "Voluntary context switches", "1/s",
		 EVR_COUNTER_POLL_RATE, poll_status, (void *)"voluntary_ctxt_switches"},
		{"involuntary-ctx-switches", "Involuntary context switches", "1/s",
		 EVR_COUNTER_POLL_RATE, poll_status, (void *)"nonvoluntary_ctxt_switches"},
		{"minor-faults", "Minor page faults", "1/s", EVR_COUNTER_POLL_RATE, poll_stat,
		 (void *)10},
		{"major-faults", "Major page faults", "1/s", EVR_COUNTER_POLL_RATE, poll_stat,
		 (void *)12},
		{"open-fds", "Open file descriptors", "", EVR_COUNTER_GAUGE, poll_fds, NULL},
	};

	evr_builtin_counters_register(&process_prov, defs, sizeof(defs) / sizeof(defs[0]));
}
