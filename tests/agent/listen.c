// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Listen mode (EVR_MONITOR_SOCKET, issue 30), against a real producer:
 *  - with evr_client_dialin_start() on a socket and no usable runtime directory
 *    for the producer, evr_process_list() lists it and two consumers attach at
 *    once through the connections it made (the agent makes the next one when
 *    the first is used), each receiving exactly what was written;
 *  - the consumer goes away and a listener that talks garbage, closes at once,
 *    announces a 4 GiB frame or sends a request before Hello takes its place:
 *    the producer keeps its fds (no leak per attempt), keeps writing, and its
 *    agent still answers;
 *  - the consumer comes back (a monitor restarted): the producer connects
 *    again by itself and is traced again.
 * Usage: evr-agent-listen PRODUCER.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

/* The pool's log lines, through a pipe: the test waits for them. */
static int log_pipe[2];

static void log_line(void *arg, const char *line)
{
	char buf[600];
	int n = snprintf(buf, sizeof(buf), "%s\n", line);
	ssize_t w;

	(void)arg;
	w = write(log_pipe[1], buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	(void)w;
}

/* Wait (60 s at most) for a log line that contains @want. */
static void expect_log(const char *want)
{
	static char acc[8192];
	static size_t len;

	for (;;) {
		struct pollfd pfd = { .fd = log_pipe[0], .events = POLLIN };
		char *nl;
		ssize_t n;

		while ((nl = memchr(acc, '\n', len))) {
			bool hit;

			*nl = '\0';
			hit = strstr(acc, want) != NULL;
			printf("log: %s\n", acc);
			len -= (size_t)(nl + 1 - acc);
			memmove(acc, nl + 1, len);
			if (hit)
				return;
		}
		CHECK(poll(&pfd, 1, 60000) == 1, "no log line with '%s' within 60 s", want);
		n = read(log_pipe[0], acc + len, sizeof(acc) - 1 - len);
		CHECK(n > 0, "log pipe");
		len += (size_t)n;
	}
}

static void emit_and_read(struct prod *p, struct evr_client **cs, unsigned int nc, unsigned int k)
{
	char want[32];

	prod_cmd(p, "emit %u", k);
	snprintf(want, sizeof(want), "emitted %u", k);
	prod_expect(p, want);
	for (unsigned int i = 0; i < nc; i++) {
		struct got g;

		got_init(&g, k);
		read_until(cs[i], &g, k);
		CHECK(g.seq_events == k && g.dup == 0 && g.lost == 0,
		      "consumer %u: %" PRIu64 " events, %" PRIu64 " lost, want %u", i, g.seq_events,
		      g.lost, k);
		free(g.seen);
	}
}

static bool listed(pid_t pid)
{
	pid_t *v;
	uint32_t n;
	bool found = false;

	CHECK(evr_process_list(&v, &n) == 0, "process list");
	for (uint32_t i = 0; i < n; i++)
		found |= v[i] == pid;
	free(v);
	return found;
}

/* Accept one connection of the agent's on @lfd and misbehave as @kind says. */
static void hostile_round(int lfd, int kind)
{
	static const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 1, 2, 3 };
	/* A well-formed StopSession request before any Hello. */
	static const uint8_t no_hello[] = { 2, 0, 0, 0, 0x1a, 0x00 };
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	uint8_t junk[4096];
	int fd;

	CHECK(poll(&pfd, 1, 60000) == 1, "the agent did not connect again (round %d)", kind);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(fd >= 0, "accept: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7919u >> 3);
	switch (kind % 4) {
	case 0:
		(void)!send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
		break;
	case 1:
		break;	/* close at once */
	case 2:
		(void)!send(fd, huge, sizeof(huge), MSG_NOSIGNAL);
		break;
	case 3:
		(void)!send(fd, no_hello, sizeof(no_hello), MSG_NOSIGNAL);
		break;
	}
	close(fd);
}

int main(int argc, char **argv)
{
	char base[] = "/tmp/evr-agent-listen-XXXXXX";
	char rundir[64], sock[sizeof(((struct sockaddr_un *)0)->sun_path)], env_rt[128];
	char env_mon[160], err[512];
	struct evr_client *cs[2], *checker;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fds0, fds, maps, lfd;
	struct prod p;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PRODUCER\n", argv[0]);
		return 2;
	}
	producer_path = argv[1];
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(pipe2(log_pipe, O_CLOEXEC) == 0, "pipe");
	CHECK(mkdtemp(base), "mkdtemp");
	/* The producer's runtime directory is one its agent refuses (mode 0755): no
	 * socket there, so whatever reaches it came through listen mode. */
	snprintf(rundir, sizeof(rundir), "%s/run", base);
	CHECK(mkdir(rundir, 0755) == 0 && chmod(rundir, 0755) == 0, "mkdir %s", rundir);
	snprintf(sock, sizeof(sock), "%s/agents.sock", base);
	snprintf(env_rt, sizeof(env_rt), "EVR_RUNTIME_DIR=%s", rundir);
	snprintf(env_mon, sizeof(env_mon), "EVR_MONITOR_SOCKET=%s", sock);
	CHECK(putenv(env_rt) == 0, "putenv");

	CHECK(evr_client_dialin_start(sock, log_line, NULL, err, sizeof(err)) == 0, "%s", err);
	prod_spawn_env(&p, env_mon, NULL, NULL, NULL);
	{
		char want[64];

		snprintf(want, sizeof(want), "ready %d", (int)p.pid);
		prod_expect(&p, want);
		snprintf(want, sizeof(want), "process %d connected in listen mode", (int)p.pid);
		expect_log(want);
	}
	CHECK(evr_client_dialin_has(p.pid) && listed(p.pid), "process %d not listed", (int)p.pid);

	/* Two consumers at once: the second waits for the agent's next connection. */
	cs[0] = attach(p.pid, "AgentTest", 256 << 10);
	cs[1] = attach(p.pid, "AgentTest", 256 << 10);
	emit_and_read(&p, cs, 2, 1000);
	evr_client_free(cs[1]);
	emit_and_read(&p, cs, 1, 500);
	evr_client_free(cs[0]);
	checker = attach(p.pid, "AgentTest", 64 << 10);
	evr_client_free(checker);

	/* The consumer goes away; a hostile listener takes its socket. */
	evr_client_dialin_stop();
	CHECK(!listed(p.pid), "process %d still listed after evr_client_dialin_stop()", (int)p.pid);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 8) == 0,
	      "hostile listener: %s", strerror(errno));
	hostile_round(lfd, 0);
	resources(p.pid, &fds0, &maps);
	for (int k = 1; k < 6; k++)
		hostile_round(lfd, k);
	resources(p.pid, &fds, &maps);
	/* At most its next connection more than after the first round. */
	CHECK(fds <= fds0 + 1, "the producer's fds grew from %d to %d with 5 hostile rounds",
	      fds0, fds);
	printf("6 hostile listener rounds: producer fds %d -> %d\n", fds0, fds);
	prod_cmd(&p, "emit 10");
	prod_expect(&p, "emitted 10");
	close(lfd);
	unlink(sock);

	/* The monitor restarts: the agent finds it again by itself (within its 5 s wait). */
	CHECK(evr_client_dialin_start(sock, log_line, NULL, err, sizeof(err)) == 0, "%s", err);
	{
		char want[64];

		snprintf(want, sizeof(want), "process %d connected in listen mode", (int)p.pid);
		expect_log(want);
	}
	cs[0] = attach(p.pid, "AgentTest", 256 << 10);
	emit_and_read(&p, cs, 1, 300);
	evr_client_free(cs[0]);
	prod_end(&p);
	evr_client_dialin_stop();
	rmdir(rundir);
	rmdir(base);
	printf("PASS\n");
	return 0;
}
