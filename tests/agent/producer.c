// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A producer for the agent integration tests, controlled line by line: it
 * prints "ready PID" once main() runs, then answers each command on stdin with
 * one line on stdout, so the driver always waits for the thing itself.
 *
 *   emit N     N "Seq" events, seq = 0..N-1            -> "emitted N"
 *   typed      one "Ints" and one "Mixed" event, values fixed below -> "typed"
 *   define     define the run-time event "Late"       -> "defined RID"
 *   late N     N "Late" events, a = 0..N-1, s = "late" -> "late N"
 *   enabled    is "Seq" enabled in some session?       -> "enabled 0|1"
 *   local      start an in-process session on AgentTest -> "local started"
 *   unlocal    stop and free it                        -> "local stopped"
 *   getenv V   the environment variable V               -> "env V=VALUE" or "env V unset"
 *   fork       fork; the child prints "child PID enabled=0|1", waits until a
 *              session enables the provider, emits 100 "Seq" events, prints
 *              "child emitted 100" and exits; the parent prints "forked"
 *   limits     evr_session_limits_get()              -> "limits SESSION TOTAL"
 *   limits S T evr_session_limits_set(S, T) (bytes; 0: default), then the same
 *   exit       exit(0)
 *
 * Usage: evr-agent-producer [--emit-at-start N]
 *   emits N "Seq" events before printing "ready" (the reverse-connection test).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <evring/evring.h>

#include "agent-test.h"

EVR_PROVIDER_DEFINE(at, "AgentTest", AGENT_TEST_EVENTS)

static struct evr_event *late_ev;
static struct evr_session *local;
static int enable_pipe[2] = { -1, -1 };

/* Called under the registry lock when the provider's enablement changes. */
static void on_enable(struct evr_provider *p, bool enabled, uint8_t level, uint64_t keywords,
		      const struct evr_provider_spec *args, void *ctx)
{
	char one = 1;
	ssize_t n;

	(void)p, (void)level, (void)keywords, (void)args, (void)ctx;
	if (enabled && enable_pipe[1] >= 0)
		n = write(enable_pipe[1], &one, 1);
	(void)n;
}

/*
 * Before the provider registers (default-priority constructor): the callback
 * and its pipe are then never written while the agent thread may read them.
 * The pipe is inherited by fork children, which wait on it.
 */
__attribute__((constructor(101))) static void setup_callback(void)
{
	if (pipe2(enable_pipe, O_CLOEXEC | O_NONBLOCK) == 0)
		at.callback = on_enable;
}

static void emit(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		at_seq(i);
}

static void typed(void)
{
	static const uint8_t blob[] = { 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01 };

	at_ints(AT_U8, AT_U16, AT_U32, AT_U64, AT_I8, AT_I16, AT_I32, AT_I64);
	at_mixed(AT_F32, AT_F64, true, (const void *)(uintptr_t)AT_PTR, AT_STR, blob, sizeof(blob),
		 AT_JSON);
}

static int define_late(void)
{
	static const struct evr_field_desc fields[] = { { "a", EVR_TYPE_U32 },
							{ "s", EVR_TYPE_STR } };
	const struct evr_event_desc d = {
		.name = "Late", .id = 100, .level = EVR_LEVEL_INFO, .keywords = 0x1,
		.nfields = 2, .fields = fields,
	};

	return evr_event_define(&at, &d, &late_ev);
}

/* In the fork child: wait for a session of our own, then emit and leave. */
static void child_main(void)
{
	char c;

	/* Bytes the parent's sessions left in the pipe only cause another check. */
	(void)fcntl(enable_pipe[0], F_SETFL, 0);
	while (!at_seq_enabled()) {
		if (read(enable_pipe[0], &c, 1) <= 0 && errno != EINTR)
			_exit(3);
	}
	emit(100);
	printf("child emitted 100\n");
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv)
{
	char line[256];

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Wait for the agent's clock choice, which it makes as it starts (it opens
	 * files in /sys meanwhile): the tests count this process's fds from
	 * "ready" on, and a file still open then would be counted as ours. */
	{
		struct evr_clock_info ci;

		(void)evr_clock_get_info(&ci);
	}
	if (argc == 3 && strcmp(argv[1], "--emit-at-start") == 0)
		emit(strtoull(argv[2], NULL, 10));
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long n = 0;

		if (sscanf(line, "emit %llu", &n) == 1) {
			emit(n);
			printf("emitted %llu\n", n);
		} else if (strcmp(line, "typed\n") == 0) {
			typed();
			printf("typed\n");
		} else if (strcmp(line, "define\n") == 0) {
			int err = define_late();

			printf("defined %d\n", err < 0 ? err : (int)late_ev->rid);
		} else if (sscanf(line, "late %llu", &n) == 1) {
			for (unsigned long long i = 0; i < n; i++) {
				union evr_value v[2] = { { .u = i }, { .s = "late" } };

				evr_event_writev(late_ev, v, 2);
			}
			printf("late %llu\n", n);
		} else if (strcmp(line, "local\n") == 0) {
			struct evr_session_opts o = { .providers = "AgentTest", .ring_size = 1 << 16 };
			char err[256];

			if (evr_session_start(&o, &local, err, sizeof(err)) < 0)
				printf("local failed: %s\n", err);
			else
				printf("local started\n");
		} else if (strcmp(line, "unlocal\n") == 0) {
			evr_session_free(local);
			local = NULL;
			printf("local stopped\n");
		} else if (strncmp(line, "getenv ", 7) == 0) {
			const char *v;

			line[strcspn(line, "\n")] = '\0';
			v = getenv(line + 7);
			if (v)
				printf("env %s=%s\n", line + 7, v);
			else
				printf("env %s unset\n", line + 7);
		} else if (strcmp(line, "enabled\n") == 0) {
			printf("enabled %d\n", at_seq_enabled());
		} else if (strcmp(line, "fork\n") == 0) {
			pid_t pid;

			if (enable_pipe[0] < 0)
				return 2;
			pid = fork();
			if (pid < 0)
				return 2;
			if (pid == 0) {
				printf("child %d enabled=%d\n", (int)getpid(), at_seq_enabled());
				child_main();
			}
			printf("forked\n");
		} else if (strncmp(line, "limits", 6) == 0) {
			unsigned long long a, b;
			struct evr_session_limits l;

			if (sscanf(line, "limits %llu %llu", &a, &b) == 2) {
				l = (struct evr_session_limits){ .session_max = a, .total_max = b };
				if (evr_session_limits_set(&l) < 0)
					return 2;
			}
			evr_session_limits_get(&l);
			printf("limits %llu %llu\n", (unsigned long long)l.session_max,
			       (unsigned long long)l.total_max);
		} else if (strcmp(line, "exit\n") == 0) {
			return 0;
		} else {
			printf("unknown command\n");
		}
	}
	return 0;
}
