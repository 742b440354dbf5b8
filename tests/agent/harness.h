/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent integration tests' harness: a producer process (evr-agent-producer)
 * driven line by line over its stdin/stdout, attaching and reading with the
 * client API, counting what arrived, and the producer's resources. Shared by
 * driver.c and limits.c. Every wait is for the thing itself.
 */
#ifndef EVR_AGENT_HARNESS_H
#define EVR_AGENT_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <evring/consumer.h>

/* The producer binary (argv[2] of the drivers). */
extern const char *producer_path;

#define CHECK(cond, ...)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
				#cond);                                                   \
			fprintf(stderr, __VA_ARGS__);                                     \
			fputc('\n', stderr);                                              \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

double now_ms(void);

struct prod {
	pid_t pid;
	FILE *in, *out;
};

/* When set, called in the producer's process (its pid) just before the exec. */
extern void (*prod_before_exec)(void);
/* Start the producer with up to two "NAME=VALUE" and two arguments (NULL: none). */
void prod_spawn_env(struct prod *p, const char *env1, const char *env2, const char *arg1,
		    const char *arg2);
/* Start the producer and wait for its "ready PID". */
void prod_spawn(struct prod *p);
/* One line from the producer, without the newline. */
void prod_line(struct prod *p, char *buf, size_t len);
/* The next line must be @want. */
void prod_expect(struct prod *p, const char *want);
__attribute__((format(printf, 2, 3))) void prod_cmd(struct prod *p, const char *fmt, ...);
/* "exit", and check it exited with status 0. */
void prod_end(struct prod *p);

struct got {
	uint64_t seq_events;
	uint64_t other_events;
	uint64_t lost;
	uint8_t *seen;			/* Seq values seen, up to seen_max */
	uint64_t seen_max;
	uint64_t dup;
	double first_ms;		/* when the first event came */
};

void got_init(struct got *g, uint64_t max);
void got_event(struct got *g, const struct evr_event_view *v);
/* Read until @want Seq events arrived (or the session is drained). */
void read_until(struct evr_client *c, struct got *g, uint64_t want);
/* Read everything until the session is drained (after ENDED or GONE). */
void read_all(struct evr_client *c, struct got *g);
/* Connect and start a session on @providers with @ring_size, or fail the test. */
struct evr_client *attach(pid_t pid, const char *providers, uint64_t ring_size);

/* The producer's open fds and its session memfd mappings. */
void resources(pid_t pid, int *ret_fds, int *ret_maps);
/* Ask the agent (a reply is the synchronization) until @want sessions remain. */
void wait_sessions(struct evr_client *checker, uint32_t want);
/* A raw, blocking socket connected to the agent of @pid. */
int raw_connect(pid_t pid);

#endif /* EVR_AGENT_HARNESS_H */
