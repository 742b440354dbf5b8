// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr-bench-noise: what a machine-wide recording takes from the processes it
 * watches, measured from their side (scripts/bench-machine --only sampling,
 * docs/system.md "Cost").
 *
 *   evr-bench-noise gaps CPU SECONDS FILE
 *	Spin on CPU (pinned) reading CLOCK_MONOTONIC in a tight loop; every
 *	gap between two reads of at least 1 µs is time the loop did not run (an
 *	interrupt, or another task). Prints "tid TID" at once, then at the end a
 *	summary line, and writes the gaps to FILE as text lines "START_NS END_NS"
 *	(CLOCK_MONOTONIC, the clock of the recorder's samples), so that each CPU
 *	sample of this thread can be matched with the gap it fell in: the
 *	sample's own cost as the interrupted program sees it.
 *
 *   evr-bench-noise pingpong CPU ROUNDS
 *	Two processes on CPU pass a byte back and forth through two pipes, ROUNDS
 *	times: each round is two context switches. Prints the CPU time (user+sys
 *	of both) per context switch in ns: what recording every switch adds to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <evring/mono-time.h>

#define GAP_MIN_NS 1000u		/* shorter: the loop's own jitter */
#define GAPS_MAX (1u << 22)

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "evr-bench-noise: cannot run on CPU %d: %s\n", cpu,
			strerror(errno));
		return -1;
	}
	return 0;
}

static double rusage_s(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
	       (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
}

static int gaps(double secs, const char *path)
{
	uint64_t *v = malloc(2 * sizeof(*v) * GAPS_MAX);
	uint64_t t0, prev, end, loops = 0;
	size_t n = 0;
	FILE *f;

	if (!v)
		return 1;
	printf("tid %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	t0 = prev = evr_mono_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	for (;;) {
		uint64_t t = evr_mono_ns();

		loops++;
		if (t - prev >= GAP_MIN_NS && n < GAPS_MAX) {
			v[2 * n] = prev;
			v[2 * n + 1] = t;
			n++;
		}
		prev = t;
		if (t >= end)
			break;
	}
	f = fopen(path, "we");
	if (!f) {
		fprintf(stderr, "evr-bench-noise: %s: %s\n", path, strerror(errno));
		free(v);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%" PRIu64 " %" PRIu64 "\n", v[2 * i], v[2 * i + 1]);
	fclose(f);
	printf("gaps %zu loops %" PRIu64 " from %" PRIu64 " to %" PRIu64 "\n", n, loops, t0, prev);
	free(v);
	return 0;
}

static int pingpong(long rounds)
{
	int a[2], b[2], status;
	struct rusage child, self;
	char c = 0;
	pid_t pid;

	if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0)
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		for (long i = 0; i < rounds; i++)
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	for (long i = 0; i < rounds; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			return 1;
	if (wait4(pid, &status, 0, &child) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	getrusage(RUSAGE_SELF, &self);
	printf("ns_per_switch %.1f\n", (rusage_s(&child) + rusage_s(&self)) * 1e9 /
				       (2.0 * (double)rounds));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "gaps") && argc == 5) {
		if (pin(atoi(argv[2])) < 0)
			return 1;
		return gaps(atof(argv[3]), argv[4]);
	}
	if (argc == 4 && !strcmp(argv[1], "pingpong")) {
		if (pin(atoi(argv[2])) < 0)
			return 1;
		return pingpong(atol(argv[3]));
	}
	fprintf(stderr, "usage: evr-bench-noise gaps CPU SECONDS FILE | pingpong CPU ROUNDS\n");
	return 2;
}
