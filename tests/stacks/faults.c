// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A thread that makes a known number of page faults and context switches, for
 * `record --perf-counters` (tests/stacks/perf_counters.sh): it touches PAGES
 * fresh pages of an anonymous mapping (no huge pages: one fault each), then
 * passes a byte back and forth with the main thread ROUNDS times over pipes,
 * both on one CPU, so that it blocks (a context switch) at least ROUNDS times;
 * then it reads what the kernel counted for it (getrusage(RUSAGE_THREAD)), as
 * the last thing it does, and the main thread prints it after the join:
 * "thread TID faults F switches S". (Printing from the thread itself after
 * reading would add its own blocks to what perf counts: a write to a file or a
 * pipe took 13-41 context switches on one guest.) It links libevring so that `evring record
 * -- stacks-faults` can launch it, and fires Faults/Done at the end.
 * Usage: stacks-faults [PAGES [ROUNDS]]   (default 4000 1000)
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <evring/evring.h>

#define FT_EVENTS(EVENT) EVENT(ft_done, "Done", 1, EVR_LEVEL_INFO, 0x1, (u64, pages))

EVR_PROVIDER_DECLARE(ft, FT_EVENTS)
EVR_PROVIDER_DEFINE(ft, "Faults", FT_EVENTS)

static int to_b[2], to_a[2];
static unsigned long pages = 4000, rounds = 1000;
static struct rusage b_usage;
static pid_t b_tid;

static void *thread_b(void *arg)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *m;
	char c;

	(void)arg;
	m = mmap(NULL, pages * (size_t)page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || madvise((void *)m, pages * (size_t)page, MADV_NOHUGEPAGE) < 0)
		exit(1);
	for (unsigned long i = 0; i < pages; i++)
		m[i * (size_t)page] = 1;
	for (unsigned long i = 0; i < rounds; i++)
		if (read(to_b[0], &c, 1) != 1 || write(to_a[1], &c, 1) != 1)
			exit(1);
	b_tid = gettid();
	getrusage(RUSAGE_THREAD, &b_usage);
	return NULL;
}

int main(int argc, char **argv)
{
	cpu_set_t one;
	pthread_t b;
	char c = 'x';
	int cpu;

	if (argc > 1)
		pages = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		rounds = strtoul(argv[2], NULL, 10);
	/* Both threads on one CPU: each round makes the other one wait. */
	cpu = sched_getcpu();
	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0 || pipe(to_b) < 0 || pipe(to_a) < 0 ||
	    pthread_create(&b, NULL, thread_b, NULL) != 0) {
		perror("stacks-faults");
		return 1;
	}
	for (unsigned long i = 0; i < rounds; i++)
		if (write(to_b[1], &c, 1) != 1 || read(to_a[0], &c, 1) != 1)
			return 1;
	pthread_join(b, NULL);
	printf("thread %d faults %ld switches %ld\n", (int)b_tid,
	       b_usage.ru_minflt + b_usage.ru_majflt, b_usage.ru_nvcsw + b_usage.ru_nivcsw);
	fflush(stdout);
	ft_done(pages);
	return 0;
}
