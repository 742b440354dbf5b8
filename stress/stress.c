// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring-stress: many producer processes, many consumer processes and sessions
 * on each, churn, a paused consumer, and exact accounting of every event.
 *
 *   evring-stress --producers P --threads T --sessions S --seconds N [--seed X] [--json]
 *
 * The run, in phases (each wait bounded, each failure a violation naming its
 * cause):
 *  1. P producers start (this binary re-executed as "--child producer"); each
 *     creates T threads that wait for "go", and says "ready". The orchestrator
 *     connects a monitor client to each and takes its baseline: sessions (0),
 *     open fds and RSS.
 *  2. S "stable" consumers per producer attach by PID and start their sessions
 *     (filters, ring sizes, discard and overwrite mixed); ListSessions must then
 *     show exactly S.
 *  3. "go": N seconds of emission. Churn consumers come and go at random, some
 *     SIGKILLed mid-stream. One stable consumer is SIGSTOPped from 10% to 90% of
 *     the run; the producers' emission rates in and out of that window are
 *     printed.
 *  4. "halt": producers stop and report their exact per-(thread, kind) counts.
 *     Stable consumers are then told to stop their sessions and drain them.
 *  5. Every session must be released: ListSessions reaches 0 and each
 *     producer's fd count is exactly its baseline, its RSS within
 *     STRESS_RSS_SLACK of it.
 * Then conservation is checked (see stress-summary.c) and a summary printed.
 * Exit status: 0 clean, 1 violations, 2 bad options or set-up failure.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <evring/consumer.h>

#include "stress-orch.h"

#ifndef EVR_VERSION
#define EVR_VERSION "unknown"
#endif

#define SEC UINT64_C(1000000000)
/* Generous bounds: the machine may be a loaded 2-core VM running sanitizers. */
#define STARTUP_TIMEOUT		(60 * SEC)
#define HALT_TIMEOUT		(60 * SEC)
#define DRAIN_TIMEOUT		(120 * SEC)
#define RELEASE_TIMEOUT		(20 * SEC)

static const uint64_t stable_ring_sizes[] = { 64u << 10, 256u << 10, 1u << 20, 128u << 10 };

static void usage(FILE *f)
{
	fputs("Usage: evring-stress --producers P --threads T --sessions S --seconds N\n"
	      "                     [--churn C] [--seed X] [--json]\n"
	      "  --producers P  producer processes (1-32)\n"
	      "  --threads T    emitting threads per producer (1-64)\n"
	      "  --sessions S   stable sessions per producer (1-48)\n"
	      "  --seconds N    emission time (1-86400; also 5m, 00:01:00)\n"
	      "  --churn C      churn consumers alive per producer at most (0-12, default 3)\n"
	      "  --seed X       random seed (default: from the clock; printed)\n"
	      "  --json         print the summary as one JSON object\n"
	      "  --version      the version of evring\n"
	      "Exit status: 0 no violation, 1 violations, 2 bad options or set-up failure.\n"
	      "See docs/stress.md.\n",
	      f);
}

static int parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *ret)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
		fprintf(stderr, "evring-stress: %s: \"%s\" is not a number from %u to %u\n", opt, s,
			min, max);
		return -EINVAL;
	}
	*ret = (uint32_t)v;
	return 0;
}

enum { OPT_SEED = 256, OPT_JSON, OPT_FAULT, OPT_CHURN };

/* The whole-number options; the required ones are named by "missing" in this order. */
static const struct u32_opt {
	int val;			/* from getopt_long() */
	const char *name;
	uint32_t min, max;
	size_t off;			/* in struct stress_opts */
	bool required;
} u32_opts[] = {
#define U32_FIELD(f) offsetof(struct stress_opts, f)
	{ 'p', "--producers", 1, STRESS_MAX_PRODUCERS, U32_FIELD(producers), true },
	{ 't', "--threads", 1, STRESS_MAX_THREADS, U32_FIELD(threads), true },
	{ 's', "--sessions", 1, STRESS_MAX_SESSIONS, U32_FIELD(sessions), true },
	{ 'n', "--seconds", 1, 86400, U32_FIELD(seconds), true },
	{ OPT_CHURN, "--churn", 0, STRESS_MAX_CHURN, U32_FIELD(churn), false },
#undef U32_FIELD
};

#define NU32_OPTS (sizeof(u32_opts) / sizeof(u32_opts[0]))

/* Parse @c's value if it is a whole-number option. Return: 1 it was, 0 not, -EINVAL. */
static int parse_u32_opt(int c, const char *s, struct stress_opts *o, unsigned *have)
{
	for (size_t i = 0; i < NU32_OPTS; i++) {
		const struct u32_opt *u = &u32_opts[i];

		if (u->val != c)
			continue;
		if (c == 'n' && s[strspn(s, "0123456789")]) {
			/* --seconds also takes what every evring tool takes: 5m, 00:01:00. */
			uint64_t ns;

			if (evr_duration_parse(s, &ns) < 0 || ns % 1000000000ull ||
			    ns < (uint64_t)u->min * 1000000000ull ||
			    ns > (uint64_t)u->max * 1000000000ull) {
				fprintf(stderr, "evring-stress: %s: \"%s\" is not a whole number of "
					"seconds from %u to %u (e.g. 60, 5m, 00:01:00)\n", u->name, s,
					u->min, u->max);
				return -EINVAL;
			}
			o->seconds = (uint32_t)(ns / 1000000000ull);
		} else if (parse_u32(u->name, s, u->min, u->max,
				     (uint32_t *)((char *)o + u->off))) {
			return -EINVAL;
		}
		*have |= 1u << i;
		return 1;
	}
	return 0;
}

static int parse_argv(int argc, char **argv, struct stress_opts *o)
{
	static const struct option longopts[] = {
		{ "producers", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "sessions", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 'n' },
		{ "churn", required_argument, NULL, OPT_CHURN },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "inject-fault", required_argument, NULL, OPT_FAULT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	unsigned have = 0;
	int c, r;

	o->churn = 3;
	o->seed = stress_mix64((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32)) >> 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		char *end;
		r = parse_u32_opt(c, optarg, o, &have);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_SEED:
			errno = 0;
			o->seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || optarg[0] == '-') {
				fprintf(stderr, "evring-stress: --seed: \"%s\" is not a number\n",
					optarg);
				return -EINVAL;
			}
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_FAULT:
			if (strcmp(optarg, "dup") && strcmp(optarg, "corrupt") &&
			    strcmp(optarg, "drop")) {
				fprintf(stderr,
					"evring-stress: --inject-fault: \"%s\" is not dup, corrupt or drop\n",
					optarg);
				return -EINVAL;
			}
			o->fault = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("evring-stress %s\n", EVR_VERSION);
			exit(0);
		case ':':
			fprintf(stderr, "evring-stress: %s needs a value\n", argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "evring-stress: unknown option %s (see --help)\n",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "evring-stress: unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	for (size_t i = 0; i < NU32_OPTS; i++) {
		if (u32_opts[i].required && !(have & (1u << i))) {
			fprintf(stderr, "evring-stress: missing %s (see --help)\n", u32_opts[i].name);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- phase predicates ---- */

static bool producers_ready(struct stress_orch *o)
{
	for (uint32_t p = 0; p < o->o.producers; p++)
		if (!o->prod[p].ready)
			return false;
	return true;
}

static bool stable_started(struct stress_orch *o)
{
	for (uint32_t i = 0; i < o->o.producers * o->o.sessions; i++)
		if (!o->stable[i]->started)
			return false;
	return true;
}

static bool producers_halted(struct stress_orch *o)
{
	for (uint32_t p = 0; p < o->o.producers; p++)
		if (!o->prod[p].halted)
			return false;
	return true;
}

static bool role_exited(struct stress_orch *o, bool producers)
{
	for (size_t i = 0; i < o->nkids; i++)
		if ((o->kids[i]->role == ROLE_PRODUCER) == producers && !o->kids[i]->exited)
			return false;
	return true;
}

static bool consumers_exited(struct stress_orch *o)
{
	return role_exited(o, false);
}

static bool producers_exited(struct stress_orch *o)
{
	return role_exited(o, true);
}

/* A wait that did not finish: say who we were waiting for. */
static void timed_out(struct stress_orch *o, int r, const char *what, uint64_t limit)
{
	if (r != -ETIMEDOUT)
		return;
	stress_violation(o, "timed out after %" PRIu64 " s waiting for %s", limit / SEC, what);
	for (size_t i = 0; i < o->nkids; i++) {
		struct stress_child *c = o->kids[i];
		bool pending;

		if (c->exited)
			continue;
		if (!strcmp(what, "producers to be ready"))
			pending = c->role == ROLE_PRODUCER && !o->prod[c->producer].ready;
		else if (!strcmp(what, "stable sessions to start"))
			pending = c->role == ROLE_STABLE && !c->started;
		else if (!strcmp(what, "producers to halt"))
			pending = c->role == ROLE_PRODUCER && !o->prod[c->producer].halted;
		else if (!strcmp(what, "consumers to drain and exit"))
			pending = c->role != ROLE_PRODUCER;
		else
			pending = c->role == ROLE_PRODUCER;
		if (pending)
			stress_violation(o, "  still waiting for %s (pid %d)%s", c->name, (int)c->pid,
					 c == o->paused ? ", the paused consumer" : "");
	}
	o->abort = true;
}

/* ---- phases ---- */

static int start_producers(struct stress_orch *o)
{
	char a_idx[16], a_thr[16], a_seed[32], name[32];
	char *argv[] = { "--index", a_idx, "--threads", a_thr, "--seed", a_seed, NULL };
	int r;

	for (uint32_t p = 0; p < o->o.producers; p++) {
		snprintf(a_idx, sizeof(a_idx), "%u", p);
		snprintf(a_thr, sizeof(a_thr), "%u", o->o.threads);
		snprintf(a_seed, sizeof(a_seed), "%" PRIu64, o->o.seed);
		snprintf(name, sizeof(name), "producer %u", p);
		o->prod[p].emitted = calloc((size_t)o->o.threads * STRESS_NKINDS, sizeof(uint64_t));
		if (!o->prod[p].emitted)
			return -ENOMEM;
		o->prod[p].child = stress_spawn(o, ROLE_PRODUCER, p, name, argv);
		if (!o->prod[p].child) {
			fprintf(stderr, "evring-stress: cannot start %s: %s\n", name, strerror(errno));
			return -errno;
		}
	}
	r = stress_pump(o, stress_now_ns() + STARTUP_TIMEOUT, producers_ready);
	timed_out(o, r, "producers to be ready", STARTUP_TIMEOUT);
	return r;
}

static int list_sessions(struct stress_orch *o, uint32_t p, uint32_t *ret_n)
{
	struct evr_session_info *v;
	char err[512];
	uint32_t n;
	int r;

	r = evr_client_list_sessions(o->prod[p].monitor, &v, &n, err, sizeof(err));
	if (r < 0) {
		stress_violation(o, "producer %u: ListSessions failed: %s", p, err);
		return r;
	}
	evr_session_info_free(v, n);
	*ret_n = n;
	return 0;
}

static int baseline(struct stress_orch *o)
{
	for (uint32_t p = 0; p < o->o.producers; p++) {
		struct stress_producer *pr = &o->prod[p];
		char err[512];
		uint32_t n;
		int r;

		r = evr_client_connect(pr->child->pid, "evring-stress monitor", &pr->monitor, err,
				       sizeof(err));
		if (r < 0) {
			stress_violation(o, "producer %u: cannot attach: %s", p, err);
			return r;
		}
		r = list_sessions(o, p, &n);
		if (r < 0)
			return r;
		if (n)
			stress_violation(o, "producer %u: %u sessions before any consumer attached",
					 p, n);
		pr->fds_base = stress_count_fds(pr->child->pid);
		r = stress_rss(pr->child->pid, &pr->rss_base);
		if (pr->fds_base < 0 || r < 0) {
			stress_violation(o, "producer %u: cannot read /proc/%d: %s", p,
					 (int)pr->child->pid,
					 strerror(pr->fds_base < 0 ? (int)-pr->fds_base : -r));
			return -EIO;
		}
	}
	return 0;
}

static int start_stable(struct stress_orch *o)
{
	uint32_t S = o->o.sessions;
	int r;

	for (uint32_t p = 0; p < o->o.producers; p++) {
		for (uint32_t j = 0; j < S; j++) {
			struct stress_consumer_spec spec = {
				.filter = (p + j) % STRESS_NFILTERS,
				/* The paused consumer (p0 s0) uses discard: it must lose events. */
				.mode = j % 2 ? EVR_MODE_OVERWRITE : EVR_MODE_DISCARD,
				.ring_size = stable_ring_sizes[j % 4],
			};
			char name[32];
			struct stress_child *c;
			bool faulty = o->o.fault && p == 0 && j == (S > 1 ? 1u : 0u);

			spec.packet_size =
				spec.ring_size >= (128u << 10) && j % 3 == 2 ? 32u << 10 : 0;
			spec.fault = faulty ? o->o.fault : NULL;
			snprintf(name, sizeof(name), "p%u.s%u", p, j);
			c = stress_spawn_consumer(o, ROLE_STABLE, p, name, &spec);
			if (!c) {
				fprintf(stderr, "evring-stress: cannot start %s: %s\n", name,
					strerror(errno));
				return -errno;
			}
			if (!c->rep.count || !c->rep.max)
				return -ENOMEM;
			if (faulty)
				o->faulty = c;
			o->stable[p * S + j] = c;
		}
	}
	o->paused = o->stable[0];
	o->paused->paused = true;
	r = stress_pump(o, stress_now_ns() + STARTUP_TIMEOUT, stable_started);
	timed_out(o, r, "stable sessions to start", STARTUP_TIMEOUT);
	if (r < 0)
		return r;
	for (uint32_t p = 0; p < o->o.producers; p++) {
		uint32_t n;

		r = list_sessions(o, p, &n);
		if (r < 0)
			return r;
		if (n != S)
			stress_violation(o, "producer %u: ListSessions shows %u sessions, %u attached",
					 p, n, S);
	}
	return 0;
}

static void sample(struct stress_orch *o, unsigned idx)
{
	char line[32];

	snprintf(line, sizeof(line), "progress %u", idx);
	for (uint32_t p = 0; p < o->o.producers; p++)
		stress_send(o, o->prod[p].child, line);
}

static int emit_phase(struct stress_orch *o)
{
	uint64_t N = (uint64_t)o->o.seconds * SEC;
	int r;

	for (uint32_t p = 0; p < o->o.producers; p++) {
		stress_send(o, o->prod[p].child, "go");
		o->prod[p].next_churn = stress_now_ns() + stress_rand(&o->rng) % (100 * 1000000u);
	}
	o->t_go = stress_now_ns();
	sample(o, 0);
	o->churn_on = o->o.churn > 0;
	r = stress_pump(o, o->t_go + N / 10, NULL);
	if (r < 0)
		return r;
	if (!o->paused->exited)
		kill(o->paused->pid, SIGSTOP);
	sample(o, 1);
	r = stress_pump(o, o->t_go + N - N / 10, NULL);
	if (r < 0)
		return r;
	sample(o, 2);
	if (!o->paused->exited)
		kill(o->paused->pid, SIGCONT);
	r = stress_pump(o, o->t_go + N, NULL);
	if (r < 0)
		return r;
	o->churn_on = false;
	for (uint32_t p = 0; p < o->o.producers; p++)
		stress_send(o, o->prod[p].child, "halt");
	o->t_halt = stress_now_ns();
	r = stress_pump(o, o->t_halt + HALT_TIMEOUT, producers_halted);
	timed_out(o, r, "producers to halt", HALT_TIMEOUT);
	return r;
}

static int finish_consumers(struct stress_orch *o)
{
	int r;

	for (size_t i = 0; i < o->nkids; i++) {
		struct stress_child *c = o->kids[i];

		if (c->role == ROLE_PRODUCER || c->exited)
			continue;
		c->told = true;
		stress_send(o, c, "stop");
	}
	r = stress_pump(o, stress_now_ns() + DRAIN_TIMEOUT, consumers_exited);
	timed_out(o, r, "consumers to drain and exit", DRAIN_TIMEOUT);
	return r;
}

/*
 * Every consumer has exited, so the kernel has closed its connection; the agent
 * must now end those sessions and close their fds. Each ListSessions is a round
 * trip through the agent's event loop, which handles the pending hang-ups in
 * order: ask until it reports none and the fd count is back, a bounded time.
 */
static void check_release(struct stress_orch *o)
{
	for (uint32_t p = 0; p < o->o.producers; p++) {
		struct stress_producer *pr = &o->prod[p];
		uint64_t deadline = stress_now_ns() + RELEASE_TIMEOUT;
		uint32_t n = UINT32_MAX, tries = 0;

		for (;;) {
			tries++;
			if (list_sessions(o, p, &n) < 0)
				break;
			pr->fds_after = stress_count_fds(pr->child->pid);
			if (n == 0 && pr->fds_after == pr->fds_base) {
				pr->released = true;
				break;
			}
			if (stress_now_ns() >= deadline)
				break;
		}
		if (stress_rss(pr->child->pid, &pr->rss_after) < 0)
			pr->rss_after = 0;
		if (pr->released)
			continue;
		if (n)
			stress_violation(o, "producer %u: %u sessions still listed after every "
					 "consumer exited (%u ListSessions round trips)", p, n, tries);
		else
			stress_violation(o, "producer %u: %ld fds open after the run, %ld at start-up "
					 "(%u ListSessions round trips)", p, pr->fds_after,
					 pr->fds_base, tries);
	}
}

static int quit_producers(struct stress_orch *o)
{
	int r;

	for (uint32_t p = 0; p < o->o.producers; p++) {
		o->prod[p].child->told = true;
		stress_send(o, o->prod[p].child, "quit");
	}
	r = stress_pump(o, stress_now_ns() + STARTUP_TIMEOUT, producers_exited);
	timed_out(o, r, "producers to exit", STARTUP_TIMEOUT);
	return r;
}

static int run(struct stress_orch *o)
{
	int r;

	r = stress_orch_init(o);
	if (r < 0) {
		fprintf(stderr, "evring-stress: set-up failed: %s\n", strerror(-r));
		return 2;
	}
	o->rng = o->o.seed;
	o->prod = calloc(o->o.producers, sizeof(*o->prod));
	o->stable = calloc((size_t)o->o.producers * o->o.sessions, sizeof(*o->stable));
	if (!o->prod || !o->stable) {
		fprintf(stderr, "evring-stress: out of memory\n");
		return 2;
	}
	fprintf(stderr, "evring-stress: %u producers x %u threads, %u stable sessions each, "
		"%u s, churn %u, seed %" PRIu64 "%s%s\n", o->o.producers, o->o.threads,
		o->o.sessions, o->o.seconds, o->o.churn, o->o.seed,
		o->o.fault ? ", injected fault: " : "", o->o.fault ? o->o.fault : "");
	if (start_producers(o) < 0 || baseline(o) < 0 || start_stable(o) < 0 ||
	    emit_phase(o) < 0 || finish_consumers(o) < 0)
		goto out;
	check_release(o);
	quit_producers(o);
out:
	stress_kill_all(o);
	if (o->interrupted)
		fprintf(stderr, "evring-stress: interrupted by %s\n", strsignal(o->interrupted));
	stress_check(o);
	stress_summary(o);
	if (o->interrupted)
		return 2;
	return o->nviol ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct stress_orch o = { .sigfd = -1, .anchor_fd = -1 };
	const char *agent = getenv("EVR_AGENT");
	int r;

	if (argc > 2 && !strcmp(argv[1], "--child")) {
		if (!strcmp(argv[2], "producer"))
			return stress_producer_main(argc - 2, argv + 2);
		if (!strcmp(argv[2], "consumer"))
			return stress_consumer_main(argc - 2, argv + 2);
		return 2;
	}
	/*
	 * This binary defines the Stress provider, so libevring would start its
	 * agent here too. The orchestrator and the consumers are no producers:
	 * run them without it (re-executing once), and give producers the agent
	 * back in their environment.
	 */
	if (!agent || strcmp(agent, "0")) {
		setenv("EVR_AGENT", "0", 1);
		setenv("EVR_STRESS_REEXEC", "1", 1);
		execv("/proc/self/exe", argv);
		/* Could not re-execute: go on with an idle agent in this process. */
		unsetenv("EVR_STRESS_REEXEC");
	}
	if (getenv("EVR_STRESS_REEXEC")) {
		/* exec ran no destructor: remove the socket the first image's agent made. */
		unsetenv("EVR_STRESS_REEXEC");
		stress_unlink_socket(getpid());
	}
	if (parse_argv(argc, argv, &o.o) < 0)
		return 2;
	r = run(&o);
	stress_orch_fini(&o);
	return r;
}
