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

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} tests[] = {
		{ "idle", test_idle },
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
