// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Integration tests of what a consumer can make the agent and the producer
 * spend (issue 14): connections that never say Hello, and session memory.
 * Real producer processes, real sockets; every wait is for the thing itself,
 * bounded by generous timeouts that only turn a hang into a failure.
 *
 * Usage: evr-agent-limits TEST PRODUCER
 * Exit: 0 pass, 1 fail, 77 skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* Read @fd to its end (the agent closes it), at most 60 s; the bytes into @buf. */
static size_t read_to_close(int fd, uint8_t *buf, size_t cap)
{
	double deadline = now_ms() + 60000;
	size_t got = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r = poll(&p, 1, 1000);

		CHECK(r >= 0 || errno == EINTR, "poll");
		if (r <= 0) {
			CHECK(now_ms() < deadline, "the agent did not close an idle connection in 60 s");
			continue;
		}
		n = read(fd, buf + got, cap - got);
		if (n <= 0)
			return got;	/* EOF, or ECONNRESET after its words */
		got += (size_t)n;
		CHECK(got < cap, "an idle connection got %zu bytes", got);
	}
}

/*
 * 300 connections that never say Hello (more than the 256 consumers a process
 * serves) must not lock a real consumer out; the agent closes every one of
 * them, saying why, and its fds come back.
 */
static int test_idle(void)
{
	enum { N = 300 };
	static int fds[N];
	uint32_t timed_out = 0, evicted = 0;
	int fds0, maps0, fds1, maps1;
	struct evr_session_info *si;
	struct evr_client *c;
	struct prod p;
	char err[256];
	uint32_t ns;

	prod_spawn(&p);
	resources(p.pid, &fds0, &maps0);
	for (int i = 0; i < N; i++)
		fds[i] = raw_connect(p.pid);
	/* Served at once, and a session works. */
	CHECK(evr_client_connect(p.pid, "after-idle", &c, err, sizeof(err)) == 0,
	      "a consumer after %d idle connections: %s", N, err);
	{
		struct evr_attach_opts o = { .providers = "AgentTest", .ring_size = 64 << 10 };
		struct got g;

		CHECK(evr_client_start(c, &o, err, sizeof(err)) == 0, "start: %s", err);
		prod_cmd(&p, "emit 100");
		prod_expect(&p, "emitted 100");
		got_init(&g, 100);
		read_until(c, &g, 100);
		CHECK(g.seq_events == 100, "%" PRIu64 " events", g.seq_events);
		free(g.seen);
	}
	/* Each idle one is closed: the oldest to make room, the rest when their time is up. */
	for (int i = 0; i < N; i++) {
		uint8_t buf[1024];
		size_t got = read_to_close(fds[i], buf, sizeof(buf));

		CHECK(got > 6 && buf[4] == (15 << 3 | 2), "idle connection %d: no Error before the "
		      "close (%zu bytes)", i, got);
		if (memmem(buf, got, "no Hello within", 15))
			timed_out++;
		else if (memmem(buf, got, "waiting to say Hello", 20))
			evicted++;
		else
			CHECK(0, "idle connection %d: %.*s", i, (int)(got - 6), (const char *)buf + 6);
		close(fds[i]);
	}
	printf("%d idle connections: %u closed to make room, %u after the Hello timeout\n", N,
	       evicted, timed_out);
	CHECK(evicted > 0 && timed_out > 0, "evicted %u, timed out %u", evicted, timed_out);
	/* The consumer that said Hello is still served, and only its fds remain. */
	CHECK(evr_client_list_sessions(c, &si, &ns, err, sizeof(err)) == 0 && ns == 1, "%s", err);
	evr_session_info_free(si, ns);
	resources(p.pid, &fds1, &maps1);
	CHECK(fds1 == fds0 + 3, "producer fds: %d before, %d with one consumer and its session",
	      fds0, fds1);
	evr_client_free(c);
	prod_end(&p);
	return 0;
}

/* Connect and start a session of @ring_size per ring (0: the default). */
static int try_start(pid_t pid, uint64_t ring_size, struct evr_client **ret, char *err,
		     size_t errlen)
{
	struct evr_attach_opts o = { .providers = "AgentTest", .ring_size = ring_size };
	struct evr_client *c;
	int r;

	r = evr_client_connect(pid, "limits-test", &c, err, errlen);
	CHECK(r == 0, "connect: %s", err);
	r = evr_client_start(c, &o, err, errlen);
	if (r < 0) {
		evr_client_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

static void prod_limits(struct prod *p, const char *cmd, uint64_t *ret_session, uint64_t *ret_total)
{
	unsigned long long a, b;
	char line[128];

	prod_cmd(p, "%s", cmd);
	prod_line(p, line, sizeof(line));
	CHECK(sscanf(line, "limits %llu %llu", &a, &b) == 2, "producer said '%s'", line);
	*ret_session = a;
	*ret_total = b;
}

/* The producer's RssShmem, in bytes. */
static uint64_t rss_shmem(pid_t pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	CHECK(f, "%s", path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssShmem: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/*
 * The memory a consumer can make the producer commit (issue 14, defect 2): the
 * defaults follow RAM, the environment and the API set limits, a session over
 * one is refused naming it, a default session shrinks to fit, the size granted
 * is reported, and freed sessions give their memory back.
 */
static int test_memory(void)
{
	const uint64_t MiB = 1 << 20, min_ring = 64 << 10;
	uint64_t session, total, ram = 0, want, ring, per;
	struct evr_client *c[8] = { 0 }, *extra;
	struct evr_session_info *si;
	char err[512], want_msg[128], line[256];
	uint32_t nr, ns, k;
	struct prod p;
	FILE *f;
	int r;

	/* The defaults: a sixteenth of RAM, between 64 MiB and 1 GiB; half of it per session. */
	prod_spawn(&p);
	prod_limits(&p, "limits", &session, &total);
	f = fopen("/proc/meminfo", "re");
	CHECK(f, "/proc/meminfo");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			ram = (uint64_t)kb * 1024;
	}
	fclose(f);
	want = ram / 16 < 64 * MiB ? 64 * MiB : ram / 16 > 1024 * MiB ? 1024 * MiB : ram / 16;
	CHECK(total == want && session == total / 2, "default limits %" PRIu64 " / %" PRIu64
	      " with %" PRIu64 " bytes of RAM", session, total, ram);
	printf("default limits: %" PRIu64 " MiB per session, %" PRIu64 " MiB in all (RAM %"
	       PRIu64 " MiB)\n", session / MiB, total / MiB, ram / MiB);
	/* A buffer beyond what a ring can hold is refused by the limit, not clamped. */
	r = try_start(p.pid, 8ull << 30, &extra, err, sizeof(err));
	CHECK(r == -EFBIG && strstr(err, "rings of 8 GiB) is over process"), "8 GiB rings: %d %s",
	      r, err);
	printf("%s\n", err);
	prod_end(&p);

	/* The environment sets them. */
	prod_spawn_env(&p, "EVR_MEMORY_MAX_SESSION=3M", "EVR_MEMORY_MAX_TOTAL=5M", NULL, NULL);
	prod_line(&p, line, sizeof(line));
	prod_limits(&p, "limits", &session, &total);
	CHECK(session == 3 * MiB && total == 5 * MiB, "from the environment: %" PRIu64 " %" PRIu64,
	      session, total);
	prod_end(&p);

	/* The program sets them (here small enough for any number of CPUs). */
	prod_spawn(&p);
	CHECK(evr_client_connect(p.pid, "probe", &extra, err, sizeof(err)) == 0, "%s", err);
	nr = evr_client_process(extra)->nr_cpus;
	evr_client_free(extra);
	session = (uint64_t)nr * 256 * 1024;
	total = 5 * session / 2;
	snprintf(line, sizeof(line), "limits %" PRIu64 " %" PRIu64, session, total);
	prod_limits(&p, line, &per, &want);
	CHECK(per == session && want == total, "set %" PRIu64 " %" PRIu64, per, want);

	/* A session that names no size gets the largest ring up to 32 MiB that fits
	 * under the session limit and half the total: 256 KiB here. */
	for (ring = 32 * MiB; ring > min_ring && (nr * ring > session || 2 * nr * ring > total);
	     ring /= 2)
		;
	CHECK(try_start(p.pid, 0, &c[0], err, sizeof(err)) == 0, "default session: %s", err);
	CHECK(evr_client_shm(c[0])->ring_size == ring, "granted %" PRIu64 " per ring, expected %"
	      PRIu64, evr_client_shm(c[0])->ring_size, ring);
	CHECK(evr_client_list_sessions(c[0], &si, &ns, err, sizeof(err)) == 0 && ns == 1, "%s", err);
	CHECK(si[0].ring_size == ring && si[0].shm_size == evr_client_shm(c[0])->total_size,
	      "ListSessions: ring %" PRIu64 ", %" PRIu64 " in all", si[0].ring_size,
	      si[0].shm_size);
	evr_session_info_free(si, ns);
	/* Its rings are backed by the agent, a slice at a time, while it keeps answering. */
	for (int tries = 0; rss_shmem(p.pid) < (uint64_t)nr * ring; tries++) {
		CHECK(evr_client_list_sessions(c[0], &si, &ns, err, sizeof(err)) == 0, "%s", err);
		evr_session_info_free(si, ns);
		CHECK(tries < 100000, "the rings were never backed: RssShmem %" PRIu64,
		      rss_shmem(p.pid));
	}

	/* One session over the per-session limit: refused, naming the limit and the remedy. */
	r = try_start(p.pid, 2 * ring, &extra, err, sizeof(err));
	snprintf(want_msg, sizeof(want_msg), "is over process %d's limit of ", (int)p.pid);
	CHECK(r == -EFBIG && strstr(err, want_msg) && strstr(err, " per session; ask for less") &&
	      strstr(err, "EVR_MEMORY_MAX_SESSION=SIZE") &&
	      strstr(err, "evr_session_limits_set()"), "over the session limit: %d %s", r, err);
	printf("%s\n", err);

	/* Sessions until the total is reached: the next one is refused, naming the total. */
	k = 1;
	while ((k + 1) * session <= total) {
		CHECK(try_start(p.pid, ring, &c[k], err, sizeof(err)) == 0, "session %u: %s", k, err);
		k++;
	}
	r = try_start(p.pid, ring, &extra, err, sizeof(err));
	CHECK(r == -ENOSPC && strstr(err, "for all sessions") &&
	      strstr(err, "EVR_MEMORY_MAX_TOTAL=SIZE"), "over the total: %d %s", r, err);
	printf("%s\n", err);
	/* A session that ends gives its memory back (once the agent has seen it end). */
	evr_client_free(c[k - 1]);
	c[k - 1] = NULL;
	for (int tries = 0;; tries++) {
		r = try_start(p.pid, ring, &extra, err, sizeof(err));
		if (r == 0)
			break;
		CHECK(r == -ENOSPC && tries < 10000, "after a session ended: %d %s", r, err);
	}
	evr_client_free(extra);
	for (uint32_t i = 0; i < k; i++)
		evr_client_free(c[i]);
	prod_end(&p);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} tests[] = {
		{ "idle", test_idle },
		{ "memory", test_memory },
	};

	if (argc != 3) {
		fprintf(stderr, "usage: %s TEST PRODUCER\n", argv[0]);
		return 2;
	}
	producer_path = argv[2];
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (strcmp(argv[1], tests[i].name) == 0)
			return tests[i].fn();
	}
	fprintf(stderr, "unknown test %s\n", argv[1]);
	return 2;
}
