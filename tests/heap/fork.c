// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fork() while another thread maps and unmaps at full speed under a Heap
 * session that samples every mapping (tests/heap.cmake: heap_fork). The table
 * of sampled mappings is under a spin lock that thread takes for each mmap()
 * and munmap(); a child forked while it held the lock would inherit it held
 * by a thread it does not have. Each of ROUNDS children must: find the hooks
 * out (it has no session), start a Heap session of its own, and map, unmap,
 * allocate and free under it, then exit; one that hangs there is killed by
 * its alarm and the test fails, naming the round. The child also frees the
 * parent's sampled blocks (KEPT of them, alive at the fork) under its session:
 * they are the parent's samples, and the child's session must not report
 * their frees (nor count them: the child's tables start empty).
 *
 * Usage: heap-fork ROUNDS
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <evring/abi.h>
#include <evring/evring.h>
#include <evring/reader.h>

#include "heap-test.h"

#define SPEC "Heap:0x0:0:rate=4096"

#define KEPT 32

static atomic_bool stop;
/* Sampled in the parent (64 KiB at a rate of 4 KiB: all of them), alive at every fork. */
static void *kept[KEPT];
static atomic_ulong maps;

static void *hammer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p == MAP_FAILED)
			abort();
		if (munmap(p, 65536))
			abort();
		atomic_fetch_add(&maps, 1);
	}
	return NULL;
}

static struct evr_session *start(void)
{
	struct evr_session_opts o = { .providers = SPEC };
	struct evr_session *s;
	char err[256];

	if (evr_session_start(&o, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "heap-fork: session: %s\n", err);
		exit(1);
	}
	return s;
}

/* Events of @s whose payload (past a stack block) is the address of one of kept[]. */
static int frees_of_kept(struct evr_session *s)
{
	struct evr_reader *r;
	struct evr_record rec;
	int n = 0;

	if (evr_session_reader_new(s, EVR_READER_GATING, &r) < 0)
		return -1;
	while (evr_reader_next(r, &rec) > 0) {
		const uint8_t *p = rec.payload;
		uint32_t len = rec.len;
		uint64_t a;

		if (rec.type != EVR_REC_EVENT)
			continue;
		if (rec.flags & EVR_REC_F_STACK) {
			struct evr_stack_hdr sh;

			memcpy(&sh, p, sizeof(sh));
			p += sizeof(sh) + 8u * sh.nframes;
			len -= (uint32_t)sizeof(sh) + 8u * sh.nframes;
		}
		if (len != 8)
			continue;
		memcpy(&a, p, 8);
		for (int i = 0; i < KEPT; i++)
			n += a == (uintptr_t)kept[i];
	}
	evr_reader_free(r);
	return n;
}

/* The child: its own session, mappings and blocks under it. Exit status 0: all went. */
static int child(void)
{
	struct evr_session *s;
	int n;

	/* A hang (an inherited lock) ends here, as a signal the parent reports. */
	alarm(30);
	if (heap_test_hooked()) {
		fprintf(stderr, "heap-fork: the child inherited the hooks without a session\n");
		return 3;
	}
	s = start();
	heap_test_wait_hooked(true);
	for (int i = 0; i < 64; i++) {
		void *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		void *q = malloc(4096);

		if (p == MAP_FAILED || !q || munmap(p, 65536))
			return 4;
		memset(q, 1, 4096);
		free(q);
	}
	for (int i = 0; i < KEPT; i++)
		free(kept[i]);
	evr_session_stop(s);
	n = frees_of_kept(s);
	if (n) {
		fprintf(stderr, "heap-fork: the child reported %d frees of the parent's samples\n", n);
		return 6;
	}
	evr_session_free(s);
	return heap_test_hooked() ? 5 : 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	struct evr_session *s;
	pthread_t t;

	heap_test_skip_sanitizer();
	if (rounds < 1) {
		fprintf(stderr, "usage: heap-fork ROUNDS\n");
		return 2;
	}
	s = start();
	heap_test_wait_hooked(true);
	for (int i = 0; i < KEPT; i++)
		memset(kept[i] = malloc(65536), 1, 65536);
	if (pthread_create(&t, NULL, hammer, NULL))
		return 1;
	for (int r = 0; r < rounds; r++) {
		unsigned long m0 = atomic_load(&maps);
		int st;
		pid_t pid;

		/* Between forks, the other thread maps at least once: the lock is busy. */
		while (atomic_load(&maps) == m0)
			sched_yield();
		pid = fork();
		if (pid < 0) {
			perror("heap-fork: fork");
			return 1;
		}
		if (pid == 0)
			_exit(child());
		if (waitpid(pid, &st, 0) != pid) {
			perror("heap-fork: waitpid");
			return 1;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "heap-fork: child of round %d %s %d\n", r,
				WIFSIGNALED(st) ? "killed by signal" : "exited with", WIFSIGNALED(st) ?
				WTERMSIG(st) : WEXITSTATUS(st));
			return 1;
		}
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	for (int i = 0; i < KEPT; i++)
		free(kept[i]);
	evr_session_stop(s);
	evr_session_free(s);
	printf("done: %d forks, %lu mappings\n", rounds, atomic_load(&maps));
	return 0;
}
