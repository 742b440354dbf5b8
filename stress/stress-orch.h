/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The orchestrator of evring-stress: its children, the event loop that reads
 * their reports and notices their deaths, and the summary.
 *
 * Every child runs in one process group (led by an "anchor" child that only
 * waits for the orchestrator to close a pipe) so that the whole group can be
 * killed on exit, and each child also asks for SIGKILL when the orchestrator
 * dies (PR_SET_PDEATHSIG): nothing outlives a run, even a SIGKILLed one.
 */
#ifndef EVR_STRESS_ORCH_H
#define EVR_STRESS_ORCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <evring/consumer.h>

#include "stress.h"

struct stress_opts {
	uint32_t producers;
	uint32_t threads;
	uint32_t sessions;		/* stable sessions per producer */
	uint32_t seconds;
	uint32_t churn;			/* live churn consumers per producer, at most */
	uint64_t seed;
	bool json;
	const char *fault;		/* --inject-fault */
};

enum stress_role { ROLE_PRODUCER, ROLE_STABLE, ROLE_CHURN };

/* What a consumer reported. */
struct stress_creport {
	bool have;			/* "report" seen */
	bool ended;			/* "end" seen: complete */
	uint64_t received, lost;
	bool gapcheck;
	uint64_t missing;		/* interior sequence gaps, summed */
	uint64_t *count, *max;		/* [thread][kind] */
	uint64_t nviol;
};

struct stress_child {
	enum stress_role role;
	char name[32];
	uint32_t producer;		/* the producer's index (its own, for producers) */
	pid_t pid;
	int pidfd, cmd_fd, rep_fd;
	char *buf;			/* partial report line */
	size_t blen;
	bool exited;
	int wstatus;
	bool told;			/* "stop"/"quit" sent: it may exit now */
	bool killed;			/* SIGKILLed on purpose (churn) */
	uint64_t kill_at;		/* churn: when to SIGKILL it, 0 never */
	/* consumers */
	unsigned filter;
	uint32_t mode;
	uint64_t ring_size;
	uint32_t packet_size;
	bool detach_close;
	bool paused;
	bool started;
	uint32_t session_id;
	uint64_t attach_ns;		/* connect + start session */
	bool failed;			/* said "error" */
	uint32_t nbad;			/* violations found in its results */
	struct stress_creport rep;
};

#define STRESS_NSAMPLES 4		/* go, pause, resume, halt */

/*
 * How much a producer's RSS may grow over a run with every session gone: the
 * session rings are unmapped (their memfds are counted exactly, in the fds),
 * but malloc keeps some freed heap and the threads' stacks were touched deeper
 * while emitting. Measured: +0.2-0.3 MiB, the same after 3 s or 20 s and 300
 * churn sessions. Under ASan or TSan the allocator keeps freed memory resident
 * on purpose (quarantine), so the bound is only a sanity check there; leaks are
 * caught by LeakSanitizer when the producer exits (a failed exit is a
 * violation).
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRESS_RSS_SLACK	(64u << 20)
#else
#define STRESS_RSS_SLACK	(1u << 20)
#endif

struct stress_producer {
	struct stress_child *child;
	struct evr_client *monitor;
	bool ready, halted;
	uint64_t *emitted;		/* [thread][kind], after halt */
	uint64_t total, errors;
	bool have[STRESS_NSAMPLES];
	uint64_t count[STRESS_NSAMPLES], ns[STRESS_NSAMPLES];
	long fds_base, fds_after;
	uint64_t rss_base, rss_after;	/* bytes */
	bool released;			/* sessions and fds back to baseline */
	uint64_t next_churn;
	uint32_t live_churn;
	uint32_t churn_seq;
};

struct stress_orch {
	struct stress_opts o;
	char exe[4096];
	char **env_producer;		/* environment without EVR_AGENT */
	int sigfd;
	int interrupted;		/* signal number */
	pid_t anchor;
	int anchor_fd;
	struct stress_child **kids;
	size_t nkids, capkids;
	struct stress_producer *prod;
	struct stress_child **stable;	/* [producer * sessions + j] */
	uint64_t rng;
	bool churn_on;
	bool abort;
	uint64_t t_go, t_halt;
	struct stress_child *paused;
	struct stress_child *faulty;	/* the consumer told to inject a fault */
	uint64_t churn_spawned, churn_killed, churn_finished, churn_closed;
	uint64_t churn_received, churn_lost;
	char **viols;
	size_t nviol, capviol;
};

/* Record a violation (printed at once on stderr). */
__attribute__((format(printf, 2, 3)))
void stress_violation(struct stress_orch *o, const char *fmt, ...);

int stress_orch_init(struct stress_orch *o);
void stress_orch_fini(struct stress_orch *o);

/* Start a child; @extra are its options after the mode word, NULL-terminated. */
struct stress_child *stress_spawn(struct stress_orch *o, enum stress_role role, uint32_t producer,
				  const char *name, char *const extra[]);

/* What a consumer child is told to do: the options stress_spawn_consumer() passes. */
struct stress_consumer_spec {
	unsigned filter;
	uint32_t mode;
	uint64_t ring_size;
	uint32_t packet_size;
	const char *fault;		/* --inject-fault, or NULL */
	bool churn;			/* --churn with max_ms, max_events, detach_close */
	uint64_t max_ms, max_events;
	bool detach_close;
};

/*
 * Start a consumer of producer @producer as told by @spec, record @spec in the
 * child and allocate its report counters (left NULL if out of memory: the
 * caller decides whether that matters). Return: the child, or NULL with errno
 * set when it could not be started.
 */
struct stress_child *stress_spawn_consumer(struct stress_orch *o, enum stress_role role,
					   uint32_t producer, const char *name,
					   const struct stress_consumer_spec *spec);

/* Send one command line to a child (it must still run). */
int stress_send(struct stress_orch *o, struct stress_child *c, const char *line);

typedef bool stress_pred_fn(struct stress_orch *o);

/*
 * Run the event loop (reports, exits, churn) until @pred holds or @deadline
 * (CLOCK_MONOTONIC ns). With @pred NULL, runs until the deadline.
 * Return: 0, -ETIMEDOUT (the predicate did not hold in time), -ECANCELED (the
 * run was aborted: a fatal violation or a signal).
 */
int stress_pump(struct stress_orch *o, uint64_t deadline, stress_pred_fn *pred);

/* Kill every child (the process group) and reap them all. */
void stress_kill_all(struct stress_orch *o);

/* Entries in /proc/PID/fd, or -errno; resident bytes from /proc/PID/statm. */
long stress_count_fds(pid_t pid);
int stress_rss(pid_t pid, uint64_t *ret_bytes);

/*
 * Remove the agent socket of @pid (a process of ours that can no longer do it:
 * SIGKILLed, or replaced by exec), at the documented place
 * $EVR_RUNTIME_DIR/PID.sock, default /tmp/evring-EUID/PID.sock.
 */
void stress_unlink_socket(pid_t pid);

/* The final checks, then the summary on stdout (text or --json). */
void stress_check(struct stress_orch *o);
void stress_summary(struct stress_orch *o);

#endif /* EVR_STRESS_ORCH_H */
