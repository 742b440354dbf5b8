// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Instruction counts of the rseq write path under valgrind (linked into the
 * benchmarks; does nothing unless EVR_VALGRIND_RSEQ=1 and the program runs
 * under valgrind).
 *
 * valgrind does not implement the rseq system call: glibc's registration
 * fails, libevring sees no CPU id and every write takes the RCU path, so
 * `valgrind --tool=callgrind` would count the instructions of a path the
 * write never takes on a real kernel. Counting them is what we want, though:
 * instruction counts, unlike times, do not move with the load of a shared
 * machine. So this file makes the process look registered to libevring, and
 * the real one-section path runs and is counted:
 * - before any library's constructor (a pre-init function of the program),
 *   __rseq_size gets the registered size, so that libevring's constructor
 *   chooses per-CPU rings, and the main thread's area gets a CPU id;
 * - every thread gets a CPU id of its own (thread N: CPU N modulo the
 *   configured CPUs), set at its start by the pthread_create() below; the
 *   creating thread shows glibc a failed registration for the duration of
 *   the real pthread_create(), or glibc would ask the (absent) kernel to
 *   register the new thread and stop the process when that fails.
 * Nothing ever aborts a critical section (no kernel looks at them), which is
 * the path a write takes on a real kernel every time it is not preempted.
 * Threads that share a fake CPU id could interleave in one ring: run one
 * writer per configured CPU at most. Measurements only; never a test.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <unistd.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define EVR_VG_RUNNING() RUNNING_ON_VALGRIND
#else
#define EVR_VG_RUNNING() 0
#endif

static bool active;
static atomic_uint next_cpu;
static unsigned int ncpus = 1;

static struct rseq *area(void)
{
	return (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
}

static void set_cpu(uint32_t cpu)
{
	struct rseq *rs = area();

	rs->cpu_id_start = cpu;
	rs->cpu_id = cpu;
}

/* The environment as the program got it: libc's environ is not set this early. */
static bool env_on(char **envp)
{
	for (; envp && *envp; envp++)
		if (strcmp(*envp, "EVR_VALGRIND_RSEQ=1") == 0)
			return true;
	return false;
}

static void preinit(int argc, char **argv, char **envp)
{
	uintptr_t page = (uintptr_t)&__rseq_size & ~(uintptr_t)(getpagesize() - 1);
	long n = sysconf(_SC_NPROCESSORS_CONF);

	(void)argc;
	(void)argv;
	if (!env_on(envp) || !EVR_VG_RUNNING() || __rseq_size)
		return;
	/* __rseq_size is ld.so's, read-only after relocation: write it once, here. */
	if (mprotect((void *)page, (size_t)getpagesize(), PROT_READ | PROT_WRITE) != 0)
		return;
	*(volatile unsigned int *)(uintptr_t)&__rseq_size = 32;
	mprotect((void *)page, (size_t)getpagesize(), PROT_READ);
	ncpus = n > 0 ? (unsigned int)n : 1;
	active = true;
	set_cpu(atomic_fetch_add(&next_cpu, 1) % ncpus);
}

__attribute__((section(".preinit_array"), used)) static void (*const evr_vg_preinit)(
	int, char **, char **) = preinit;

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_start(void *p)
{
	struct start st = *(struct start *)p;

	free(p);
	set_cpu(atomic_fetch_add(&next_cpu, 1) % ncpus);
	return st.fn(st.arg);
}

/* Interposes libc's for the program and its libraries (the executable comes first). */
int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	struct start *st;
	uint32_t saved;
	int err;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
	if (!active)
		return real(th, attr, fn, arg);
	st = malloc(sizeof(*st));
	if (!st)
		return EAGAIN;
	st->fn = fn;
	st->arg = arg;
	saved = area()->cpu_id;
	area()->cpu_id = (uint32_t)RSEQ_CPU_ID_REGISTRATION_FAILED;
	err = real(th, attr, thread_start, st);
	area()->cpu_id = saved;
	if (err)
		free(st);
	return err;
}
