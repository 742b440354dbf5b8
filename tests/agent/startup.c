// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a never-traced instrumented program pays at start-up (pay for play): its
 * main fires one event, which no session enables, and returns.
 *
 *   evr-startup          just that (what scripts/startup-cost times, against
 *                        evr-startup-plain, the same program without libevring)
 *   evr-startup-check    (EVR_STARTUP_CHECK) then waits until the agent thread sleeps in epoll_wait
 *                        (its start-up done), and checks that libevring started
 *                        exactly one thread (the agent), with no CPU affinity,
 *                        that nothing set any thread's affinity, that every
 *                        thread left may run on every CPU the process may, and
 *                        that libevring needs no library but libc, the loader and
 *                        liburcu-bp (each one more is loaded at every start).
 *                        Exit 0 pass, 1 fail.
 *
 * The threads the library creates are counted by interposing pthread_create()
 * (the executable's definition comes first in the lookup of libevring.so's
 * reference) and the affinity calls: a thread that ran and ended before we look
 * is counted all the same, as the cross-CPU TSC check's pinned pair was when the
 * agent ran it at load. Only in evr-startup-check: the interposer's dlsym() and
 * the pages it touches are no cost of libevring's, and evr-startup is what
 * scripts/startup-cost times.
 */
#include <stdio.h>
#include <stdlib.h>

#ifdef EVR_STARTUP_PLAIN

int main(void)
{
	/* What the instrumented main does, less the event. */
	volatile int fired = 1;

	return fired - 1;
}

#else

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <evring/evring.h>

#define STARTUP_EVENTS(EVENT) EVENT(startup_hello, "Hello", 1, EVR_LEVEL_INFO, 0x1, (u32, n))

EVR_PROVIDER_DECLARE(startup, STARTUP_EVENTS)
EVR_PROVIDER_DEFINE(startup, "Startup", STARTUP_EVENTS)

#ifdef EVR_STARTUP_CHECK

static unsigned int created, created_pinned, affinity_calls;

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* @s allows every CPU the process may run on. A superset passes: an attribute that
 * sets no affinity reads back as every CPU (pthread_attr_getaffinity_np()), as the
 * agent's does (it sets its signal mask in the attribute). */
static int all_cpus(const cpu_set_t *s)
{
	cpu_set_t mine;

	/* The process's own mask (the main thread's, which nothing here changes). */
	if (sched_getaffinity(getpid(), sizeof(mine), &mine) < 0)
		return 1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &mine) && !CPU_ISSET(cpu, s))
			return 0;
	return 1;
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static create_fn real;
	cpu_set_t set;

	if (!real)
		real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	if (!real)
		return EAGAIN;
	__atomic_add_fetch(&created, 1, __ATOMIC_RELAXED);
	if (attr && pthread_attr_getaffinity_np(attr, sizeof(set), &set) == 0 && !all_cpus(&set))
		__atomic_add_fetch(&created_pinned, 1, __ATOMIC_RELAXED);
	return real(t, attr, fn, arg);
}

typedef int (*setaff_fn)(pthread_t, size_t, const cpu_set_t *);
typedef int (*schedaff_fn)(pid_t, size_t, const cpu_set_t *);

int pthread_setaffinity_np(pthread_t t, size_t size, const cpu_set_t *set)
{
	setaff_fn real = (setaff_fn)dlsym(RTLD_NEXT, "pthread_setaffinity_np");

	__atomic_add_fetch(&affinity_calls, 1, __ATOMIC_RELAXED);
	return real ? real(t, size, set) : EINVAL;
}

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	schedaff_fn real = (schedaff_fn)dlsym(RTLD_NEXT, "sched_setaffinity");

	__atomic_add_fetch(&affinity_calls, 1, __ATOMIC_RELAXED);
	if (!real) {
		errno = EINVAL;
		return -1;
	}
	return real(pid, size, set);
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Field 39 of /proc/self/task/TID/stat: the CPU the task last ran on. */
static int last_cpu(const char *tid)
{
	char path[300], buf[1024], *p;
	int field = 2, cpu = -1;

	snprintf(path, sizeof(path), "/proc/self/task/%s/stat", tid);
	if (read_line(path, buf, sizeof(buf)) < 0 || !(p = strrchr(buf, ')')))
		return -1;
	for (p++; *p && field < 39; p++)
		if (*p == ' ')
			field++;
	if (field == 39)
		cpu = atoi(p);
	return cpu;
}

/* The agent thread sleeps in epoll_wait (x86-64: epoll_wait 232, epoll_pwait 281,
 * epoll_pwait2 441): what it does at start-up is done. */
static int agent_idle(const char *tid)
{
	char path[300], buf[256];
	long nr;

	snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", tid);
	if (read_line(path, buf, sizeof(buf)) < 0)
		return 0;
	nr = strtol(buf, NULL, 10);
	return nr == 232 || nr == 281 || nr == 441;
}

/* A DT_NEEDED entry libevring may have: each other library is loaded at every start. */
static int needed_ok(const char *name)
{
	static const char *const ok[] = { "libc.so.", "ld-linux", "liburcu-bp.so.",
					  /* the runtimes of a sanitizer build */
					  "libasan.so.", "libubsan.so.", "libtsan.so." };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strncmp(name, ok[i], strlen(ok[i])) == 0)
			return 1;
	return 0;
}

/* dl_iterate_phdr() callback: check libevring's DT_NEEDED list; *@data counts the
 * libevrings seen and the libraries it should not need. */
static int needed_check(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned int *found = data;
	const ElfW(Dyn) *dyn = NULL;
	const char *strtab = NULL;

	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libevring.so"))
		return 0;
	found[0]++;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 0;
	/* The loader has relocated d_ptr to an address. */
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_STRTAB)
			strtab = (const char *)d->d_un.d_ptr;
	for (const ElfW(Dyn) *d = dyn; strtab && d->d_tag != DT_NULL; d++) {
		if (d->d_tag != DT_NEEDED)
			continue;
		printf("libevring needs %s\n", strtab + d->d_un.d_val);
		if (!needed_ok(strtab + d->d_un.d_val)) {
			fprintf(stderr, "FAIL: libevring needs %s, loaded at every start\n",
				strtab + d->d_un.d_val);
			found[1]++;
		}
	}
	return 0;
}

static int check(void)
{
	unsigned int needed[2] = { 0, 0 };
	char agent[300] = "", path[300], comm[64];
	unsigned int tasks = 0, pinned = 0;
	struct dirent *d;
	DIR *dir;
	int fail = 0;

	/* Wait for the agent to reach its loop (bounded: a hang is a failure). */
	for (int i = 0; i < 60000; i++) {
		dir = opendir("/proc/self/task");
		if (!dir)
			break;
		while ((d = readdir(dir))) {
			if (d->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
			if (read_line(path, comm, sizeof(comm)) == 0 && strcmp(comm, "evring-agent") == 0)
				snprintf(agent, sizeof(agent), "%s", d->d_name);
		}
		closedir(dir);
		if (agent[0] && agent_idle(agent))
			break;
		agent[0] = '\0';
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	if (!agent[0]) {
		fprintf(stderr, "FAIL: no evring-agent thread waiting in epoll_wait\n");
		return 1;
	}
	dir = opendir("/proc/self/task");
	if (!dir) {
		perror("FAIL: /proc/self/task");
		return 1;
	}
	while ((d = readdir(dir))) {
		cpu_set_t set;
		pid_t tid;

		if (d->d_name[0] == '.')
			continue;
		tid = (pid_t)atoi(d->d_name);
		tasks++;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
		if (read_line(path, comm, sizeof(comm)) < 0)
			snprintf(comm, sizeof(comm), "?");
		if (sched_getaffinity(tid, sizeof(set), &set) == 0 && !all_cpus(&set)) {
			pinned++;
			fprintf(stderr, "FAIL: thread %d (%s) may run on %d CPUs only\n", (int)tid,
				comm, CPU_COUNT(&set));
		}
		printf("thread %d (%s): last ran on CPU %d\n", (int)tid, comm,
		       last_cpu(d->d_name));
	}
	closedir(dir);
	printf("%u threads; libevring created %u (%u with an affinity); %u affinity calls\n",
	       tasks, created, created_pinned, affinity_calls);
	if (created != 1) {
		fprintf(stderr, "FAIL: libevring created %u threads at start-up, not one (its "
			"agent)\n", created);
		fail = 1;
	}
	if (created_pinned || affinity_calls || pinned) {
		fprintf(stderr, "FAIL: a thread was pinned at start-up (%u created pinned, %u "
			"affinity calls)\n", created_pinned, affinity_calls);
		fail = 1;
	}
	if (tasks != 2) {
		fprintf(stderr, "FAIL: %u threads, not 2 (main and the agent)\n", tasks);
		fail = 1;
	}
	dl_iterate_phdr(needed_check, needed);
	if (needed[0] != 1 || needed[1]) {
		if (needed[0] != 1)
			fprintf(stderr, "FAIL: %u libevring.so loaded, not 1\n", needed[0]);
		fail = 1;
	}
	if (!fail)
		printf("PASS\n");
	return fail;
}

#endif /* EVR_STARTUP_CHECK */

int main(void)
{
	startup_hello(1);
#ifdef EVR_STARTUP_CHECK
	return check();
#else
	return 0;
#endif
}

#endif
