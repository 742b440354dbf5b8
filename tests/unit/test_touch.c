// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The agent writes each ring's pages a window ahead of the ring's head on its first
 * lap (producer/memory.c, evr_memory_touch_turn()), through the public API only.
 *
 * What it writes is seen with mincore(): the test punches the rings' pages out of
 * the session's memfd (the session backed them when it started), so that a page is
 * in memory again only once someone wrote it; the writer here is the test's own
 * thread, which is not writing while the test looks. So: the pages of the window
 * after the head come back, written by the agent, and none past the window nor of a
 * ring no writer reached. Once every ring's first lap is written the agent sleeps
 * with no timeout (its epoll_wait()'s timeout, read in /proc/self/task/TID/syscall),
 * and writes nothing more: a page ahead of the head on the second lap stays out.
 * And sessions freed while the agent writes their pages: ASan (the agent would write
 * into unmapped memory: SIGSEGV) and TSan builds run it too.
 *
 * Waits have a deadline (60 s) for a failure only, never a time that passes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <evring/abi.h>
#include <evring/evring.h>

#include "evr-unit.h"

#define PAGE 4096u
/* EVR_TOUCH_WINDOW of producer/memory.c: the bytes written ahead of a head. */
#define WINDOW (128u << 10)
#define RING (1u << 20)
/* EVR_USDT_POLL_MS of producer/usdt-internal.h: the agent's own poll in USDT builds. */
#define USDT_POLL_MS 200
#define DEADLINE_NS (60ull * 1000000000ull)

#define TOUCH_EVENTS(EVENT) EVENT(tt_ev, "Ev", 1, EVR_LEVEL_INFO, 0x1, (u64, seq), (bytes, pad))

EVR_PROVIDER_DECLARE(tt, TOUCH_EVENTS)
EVR_PROVIDER_DEFINE(tt, "TouchTest", TOUCH_EVENTS)

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A short pause between two looks at something another thread does. */
static void pause_a_little(void)
{
	struct timespec t = { 0, 200000 };

	nanosleep(&t, NULL);
}

static void agent_or_skip(void)
{
	char why[512];

	if (evr_agent_status(why, sizeof(why)) < 0)
		EVR_SKIP("no agent: %s", why);
}

/* The agent thread's id (its name is "evring-agent"), or 0. */
static pid_t agent_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;

	if (!d)
		return 0;
	while (!tid && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f) && !strcmp(comm, "evring-agent\n"))
			tid = (pid_t)atoi(e->d_name);
		if (f)
			fclose(f);
	}
	closedir(d);
	return tid;
}

/*
 * The agent's epoll_wait() timeout in ms if it is blocked in one now (-1: none),
 * else INT64_MIN (running, or in another system call).
 */
static int64_t agent_wait_timeout(pid_t tid)
{
	char path[128], buf[512];
	unsigned long long a[6];
	long nr;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return INT64_MIN;
	n = fgets(buf, sizeof(buf), f) ? sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx", &nr,
						&a[0], &a[1], &a[2], &a[3], &a[4], &a[5]) : 0;
	fclose(f);
	if (n < 5)
		return INT64_MIN;
#ifdef SYS_epoll_wait
	if (nr == SYS_epoll_wait)
		return (int64_t)(int)a[3];
#endif
	if (nr == SYS_epoll_pwait)
		return (int64_t)(int)a[3];
	return INT64_MIN;
}

/*
 * Wait until the agent sleeps with nothing of ours to do: blocked with no timeout, or
 * with only its USDT poll's. While a ring is in its first lap it looks every 2 to
 * 128 ms.
 */
static void wait_agent_asleep(pid_t tid)
{
	uint64_t end = mono_ns() + DEADLINE_NS;
	int64_t t = INT64_MIN;

	while (mono_ns() < end) {
		t = agent_wait_timeout(tid);
		if (t == -1 || t == USDT_POLL_MS)
			return;
		pause_a_little();
	}
	fail_msg("the agent still wakes up (last epoll_wait timeout %lld ms)", (long long)t);
}

/* Bit 0 of each byte of @vec: page i of [@p, @p + @len) in memory. */
static void resident(const uint8_t *p, size_t len, unsigned char *vec)
{
	assert_int_equal(mincore((void *)(uintptr_t)p, len, vec), 0);
}

static bool page_in(const uint8_t *p)
{
	unsigned char v;

	resident(p, PAGE, &v);
	return v & 1;
}

/* Take every ring's pages out of the session's memfd; skip where it cannot be done. */
static void punch_rings(struct evr_session *s)
{
	const struct evr_shm_hdr *h = evr_session_shm(s);
	unsigned char *vec;
	size_t pages = (size_t)h->nr_rings * (h->ring_size / PAGE);

	if (fallocate(evr_session_memfd(s), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)h->ring_data_off, (off_t)(h->nr_rings * h->ring_size)) < 0) {
		int err = errno;

		evr_session_free(s);
		EVR_SKIP("cannot punch the session's memfd: %s", strerror(err));
	}
	vec = malloc(pages);
	assert_non_null(vec);
	resident(evr_shm_ring_data(h, 0), pages * PAGE, vec);
	for (size_t i = 0; i < pages; i++)
		assert_int_equal(vec[i] & 1, 0);
	free(vec);
}

static uint64_t ring_head(const struct evr_shm_hdr *h, uint32_t r)
{
	return __atomic_load_n(&evr_shm_ring_ctl(h, r)->head, __ATOMIC_ACQUIRE);
}

static uint8_t pad[900];

/* Write events from this thread until ring @r's head is at least @until. */
static void write_until(const struct evr_shm_hdr *h, uint32_t r, uint64_t until)
{
	static uint64_t seq;

	while (ring_head(h, r) < until)
		assert_int_equal(tt_ev(seq++, pad, sizeof(pad)), 0);
}

static int pin_here(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	assert_true(cpu >= 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
	return cpu;
}

static struct evr_session *start(uint64_t ring_size)
{
	struct evr_session_opts o = { .providers = "TouchTest", .ring_size = ring_size,
				      .packet_size = 16384, .mode = EVR_MODE_OVERWRITE };
	struct evr_session *s = NULL;
	char err[256] = "";

	if (evr_session_start(&o, &s, err, sizeof(err)) < 0)
		fail_msg("evr_session_start: %s", err);
	return s;
}

/* The online CPUs, as the library reads them; false where unknown. */
static bool online_cpus(cpu_set_t *set)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	char buf[1024];
	const char *p = buf;
	bool ok;

	CPU_ZERO(set);
	ok = f && fgets(buf, sizeof(buf), f);
	if (f)
		fclose(f);
	while (ok && *p >= '0' && *p <= '9') {
		char *end;
		unsigned long lo = strtoul(p, &end, 10), hi = lo;

		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		for (unsigned long c = lo; c <= hi && c < CPU_SETSIZE; c++)
			CPU_SET(c, set);
		p = *end == ',' ? end + 1 : end;
	}
	return ok;
}

struct filler {
	const struct evr_shm_hdr *h;
	int cpu;
};

/* Fill ring @cpu's first lap from a thread on that CPU. */
static void *fill_lap(void *arg)
{
	struct filler *f = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(f->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		return (void *)1;
	for (uint64_t seq = 0; ring_head(f->h, (uint32_t)f->cpu) < f->h->ring_size; seq++)
		if (tt_ev(seq, pad, sizeof(pad)) < 0)
			return (void *)1;
	return NULL;
}

static void test_touch_ahead_of_the_head_then_stop(void **state)
{
	const struct evr_shm_hdr *h;
	struct evr_session *s;
	unsigned char *vec;
	cpu_set_t online, allowed;
	uint64_t head, end, from, pages;
	uint32_t ring;
	bool all = true;
	pid_t tid;

	(void)state;
	agent_or_skip();
	/* The agent names itself when it first runs. */
	{
		uint64_t deadline = mono_ns() + DEADLINE_NS;

		while (!(tid = agent_tid()) && mono_ns() < deadline)
			pause_a_little();
	}
	assert_true(tid > 0);
	assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	ring = (uint32_t)pin_here();
	s = start(RING);
	h = evr_session_shm(s);
	assert_true(ring < h->nr_rings);
	pages = h->ring_size / PAGE;
	vec = malloc(h->nr_rings * pages);
	assert_non_null(vec);
	/* No writer yet: the agent has nothing to write. */
	punch_rings(s);

	/* Ten pages and a half: the writer's own; the agent's are those after. */
	write_until(h, ring, 10 * PAGE + PAGE / 2);
	head = ring_head(h, ring);
	from = (head + PAGE - 1) / PAGE * PAGE;
	end = from + WINDOW;
	{
		uint64_t deadline = mono_ns() + DEADLINE_NS;

		while (!page_in(evr_shm_ring_data(h, ring) + end - PAGE)) {
			if (mono_ns() > deadline)
				fail_msg("the page at %llu, the window's last after a head at %llu, "
					 "was never written", (unsigned long long)(end - PAGE),
					 (unsigned long long)head);
			pause_a_little();
		}
	}
	/* The agent writes a window in order: every page below its last is in. */
	resident(evr_shm_ring_data(h, 0), h->nr_rings * pages * PAGE, vec);
	for (uint32_t r = 0; r < h->nr_rings; r++) {
		for (uint64_t p = 0; p < pages; p++) {
			bool want = r == ring && p < end / PAGE;

			if ((vec[r * pages + p] & 1) != want)
				fail_msg("ring %u page %llu: %s (head %llu, window to %llu)", r,
					 (unsigned long long)p, want ? "out" : "in",
					 (unsigned long long)head, (unsigned long long)end);
		}
	}

	/*
	 * Every ring's first lap written (those of online CPUs, which the agent looks
	 * after): nothing more for it to do. Where this process may not run on some
	 * online CPU, its ring cannot be filled, and only the session's end can say it.
	 */
	write_until(h, ring, h->ring_size + PAGE);
	if (!online_cpus(&online))
		CPU_ZERO(&online);
	for (int c = 0; c < CPU_SETSIZE && c < (int)h->nr_rings; c++) {
		struct filler f = { .h = h, .cpu = c };
		pthread_t t;
		void *ret;

		if (c == (int)ring || !CPU_ISSET(c, &online))
			continue;
		if (!CPU_ISSET(c, &allowed)) {
			all = false;
			continue;
		}
		assert_int_equal(pthread_create(&t, NULL, fill_lap, &f), 0);
		assert_int_equal(pthread_join(t, &ret), 0);
		assert_null(ret);
	}
	if (all) {
		uint64_t first;

		wait_agent_asleep(tid);
		/* The second lap: written by the writer alone, the agent asleep for good. */
		punch_rings(s);
		first = (ring_head(h, ring) - h->ring_size) / PAGE;
		write_until(h, ring, h->ring_size + 5 * PAGE + PAGE / 2);
		assert_int_equal(agent_wait_timeout(tid) == -1 ||
				 agent_wait_timeout(tid) == USDT_POLL_MS, 1);
		resident(evr_shm_ring_data(h, ring), h->ring_size, vec);
		for (uint64_t p = 0; p < pages; p++) {
			bool want = p >= first && p <= 5;

			if ((vec[p] & 1) != want)
				fail_msg("second lap, page %llu: %s", (unsigned long long)p,
					 want ? "out" : "in");
		}
	} else {
		print_message("some online CPU is not this process's: the end of the "
			      "session alone is checked\n");
	}
	evr_session_free(s);
	wait_agent_asleep(tid);
	free(vec);
}

/*
 * Sessions freed while the agent writes their pages: stopping waits until the agent's
 * turn is over (its RCU read-side section) before the rings are unmapped. The agent
 * has begun the window when the first page after the head is in; it writes 32 pages
 * (~0.4 ms where a first write costs 12 us, as on the guests this was measured on).
 */
static void test_touch_session_freed_while_touched(void **state)
{
	unsigned int mid = 0, rounds = 100;

	(void)state;
	agent_or_skip();
	(void)pin_here();
	for (unsigned int i = 0; i < rounds; i++) {
		uint32_t ring = (uint32_t)sched_getcpu();
		struct evr_session *s = start(RING);
		const struct evr_shm_hdr *h = evr_session_shm(s);
		uint64_t deadline = mono_ns() + DEADLINE_NS, from;

		punch_rings(s);
		write_until(h, ring, PAGE + 8);
		from = (ring_head(h, ring) + PAGE - 1) / PAGE * PAGE;
		while (!page_in(evr_shm_ring_data(h, ring) + from)) {
			if (mono_ns() > deadline)
				fail_msg("round %u: the agent never wrote ahead", i);
			pause_a_little();
		}
		if (!page_in(evr_shm_ring_data(h, ring) + from + WINDOW - PAGE))
			mid++;
		evr_session_free(s);
	}
	print_message("%u of %u sessions freed with the agent's window not yet written\n",
		      mid, rounds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_touch_ahead_of_the_head_then_stop),
		cmocka_unit_test(test_touch_session_freed_while_touched),
	};

	memset(pad, 0x5a, sizeof(pad));
	return evr_unit_run(tests);
}
