// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The producer child of evring-stress: T threads emitting "Stress" events as
 * fast as they can between "go" and "halt", each counting what it emitted per
 * kind. libevring's agent runs in this process, so consumers attach to it by
 * PID like to any instrumented program.
 *
 * The counters are written by their thread only (relaxed stores) and read by
 * the main thread for progress reports (relaxed loads: an approximate figure is
 * all a rate needs). The exact counts are read after pthread_join(), which
 * orders them.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "stress.h"

struct prod_thread {
	_Alignas(64) _Atomic uint64_t emitted[STRESS_NKINDS];
	uint64_t errors;
	pthread_t tid;
	uint32_t index;
	uint64_t rng;
	struct producer *prod;
};

struct producer {
	uint32_t index;
	uint32_t nthreads;
	uint64_t seed;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool go;			/* under lock */
	_Atomic bool halt;
	struct prod_thread *threads;
};

static void *prod_thread_main(void *arg)
{
	struct prod_thread *th = arg;
	struct producer *p = th->prod;
	uint64_t seq[STRESS_NKINDS] = { 0 };
	uint8_t buf[STRESS_PAYLOAD_MAX];

	pthread_mutex_lock(&p->lock);
	while (!p->go && !atomic_load_explicit(&p->halt, memory_order_relaxed))
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);

	/* Relaxed: halt only has to be seen eventually; the counts are read after join. */
	while (!atomic_load_explicit(&p->halt, memory_order_relaxed)) {
		uint32_t r = (uint32_t)(stress_rand(&th->rng) % 100u);
		unsigned k = 0;
		uint32_t len;
		uint64_t s, sum;

		while (r >= stress_kinds[k].weight) {
			r -= stress_kinds[k].weight;
			k++;
		}
		s = ++seq[k];
		len = stress_payload_len(th->index, k, s);
		stress_payload_fill(buf, len, th->index, k, s);
		sum = stress_checksum(k, th->index, s, buf, len);
		if (stress_emit(k, th->index, s, buf, len, sum) != 0)
			th->errors++;
		atomic_store_explicit(&th->emitted[k], s, memory_order_relaxed);
	}
	return NULL;
}

static uint64_t prod_total(struct producer *p)
{
	uint64_t n = 0;

	for (uint32_t t = 0; t < p->nthreads; t++)
		for (unsigned k = 0; k < STRESS_NKINDS; k++)
			n += atomic_load_explicit(&p->threads[t].emitted[k], memory_order_relaxed);
	return n;
}

/* The typed functions must describe the events stress_kinds[] says they do. */
static int prod_check_kinds(void)
{
	for (unsigned k = 0; k < STRESS_NKINDS; k++) {
		const struct stress_kind *sk = &stress_kinds[k];
		const struct evr_event_desc *d = sk->ev->desc;

		if (strcmp(d->name, sk->name) || d->id != sk->id || d->level != sk->level ||
		    d->keywords != sk->keywords || d->nfields != STRESS_NFIELDS)
			return -EINVAL;
		if (!sk->ev->rid)
			return -ENOENT;
	}
	return 0;
}

static int prod_halt(struct producer *p, bool started)
{
	uint64_t errors = 0;

	pthread_mutex_lock(&p->lock);
	atomic_store_explicit(&p->halt, true, memory_order_relaxed);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (uint32_t t = 0; t < p->nthreads; t++) {
		pthread_join(p->threads[t].tid, NULL);
		errors += p->threads[t].errors;
	}
	if (!started)
		return 0;
	for (uint32_t t = 0; t < p->nthreads; t++)
		for (unsigned k = 0; k < STRESS_NKINDS; k++)
			stress_report(STRESS_REP_FD, "count %u %u %" PRIu64 "\n", t, k,
				      atomic_load_explicit(&p->threads[t].emitted[k],
							   memory_order_relaxed));
	return stress_report(STRESS_REP_FD, "halted %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
			     prod_total(p), stress_now_ns(), errors);
}

static int prod_loop(struct producer *p)
{
	char buf[256];
	size_t len = 0;
	bool halted = false;

	for (;;) {
		char *nl;
		ssize_t n;

		while ((nl = memchr(buf, '\n', len))) {
			unsigned idx;

			*nl = '\0';
			if (!strcmp(buf, "go")) {
				pthread_mutex_lock(&p->lock);
				p->go = true;
				pthread_cond_broadcast(&p->cond);
				pthread_mutex_unlock(&p->lock);
			} else if (sscanf(buf, "progress %u", &idx) == 1) {
				stress_report(STRESS_REP_FD, "progress %u %" PRIu64 " %" PRIu64 "\n",
					      idx, prod_total(p), stress_now_ns());
			} else if (!strcmp(buf, "halt") && !halted) {
				halted = true;
				prod_halt(p, true);
			} else if (!strcmp(buf, "quit")) {
				if (!halted)
					prod_halt(p, false);
				return 0;
			} else {
				stress_report(STRESS_REP_FD, "error unknown command \"%s\"\n", buf);
			}
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len);
		}
		if (len == sizeof(buf))
			len = 0;	/* an over-long line is garbage: drop it */
		n = read(STRESS_CMD_FD, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* The orchestrator is gone: stop quietly. */
			if (!halted)
				prod_halt(p, false);
			return n < 0 ? 1 : 0;
		}
		len += (size_t)n;
	}
}

int stress_producer_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "index", required_argument, NULL, 'i' },
		{ "threads", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "parent", required_argument, NULL, 'P' },
		{ 0 }
	};
	struct producer p = { .nthreads = 1 };
	long parent = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			p.index = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 't':
			p.nthreads = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 's':
			p.seed = strtoull(optarg, NULL, 0);
			break;
		case 'P':
			parent = strtol(optarg, NULL, 10);
			break;
		default:
			return 2;
		}
	}
	/* Die with the orchestrator, even if it is SIGKILLed. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		return 2;
	if (p.nthreads < 1 || p.nthreads > STRESS_MAX_THREADS) {
		stress_report(STRESS_REP_FD, "error bad thread count %u\n", p.nthreads);
		return 2;
	}
	r = prod_check_kinds();
	if (r < 0) {
		stress_report(STRESS_REP_FD, "error %s\n",
			      r == -ENOENT ? "the Stress provider's events are not registered"
					   : "stress_kinds[] does not match STRESS_EVENTS");
		return 2;
	}
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	p.threads = aligned_alloc(64, sizeof(*p.threads) * p.nthreads);
	if (!p.threads) {
		stress_report(STRESS_REP_FD, "error out of memory\n");
		return 2;
	}
	memset(p.threads, 0, sizeof(*p.threads) * p.nthreads);
	for (uint32_t t = 0; t < p.nthreads; t++) {
		struct prod_thread *th = &p.threads[t];

		th->index = t;
		th->prod = &p;
		th->rng = stress_mix64(p.seed ^ ((uint64_t)p.index << 32) ^ t);
		r = pthread_create(&th->tid, NULL, prod_thread_main, th);
		if (r) {
			stress_report(STRESS_REP_FD, "error pthread_create: %s\n", strerror(r));
			p.nthreads = t;
			prod_halt(&p, false);
			return 2;
		}
	}
	stress_report(STRESS_REP_FD, "ready\n");
	r = prod_loop(&p);
	free(p.threads);
	return r;
}
