// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The heap provider switched on and off ROUNDS times by in-process sessions
 * while THREADS threads allocate and free at full speed through every hooked
 * function (tests/heap.cmake: heap_toggle). Each block is filled with a pattern
 * of its own and checked before it is freed, blocks cross threads, and glibc
 * checks every free: a block freed by the wrong allocator, or freed twice,
 * aborts. At the end the GOT holds libc's malloc again. A session of "*" never
 * puts the hooks in (Heap is enabled by name only). Every 50th round forks
 * while the hooks are in: the child has no session, so its slots are put back
 * (by libevring's fork handler) and its allocations are its own. liburcu-bp's
 * slots are never patched: it maps a thread's reader area at the thread's first
 * read-side lock, under its registry mutex, and a sampled mapping there would
 * register the thread again, under the same mutex.
 */
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <evring/evring.h>

#include "heap-test.h"

#define THREADS 4
#define SLOTS 512

static atomic_bool stop;
static _Atomic(uint8_t *) shared[64];
static atomic_ulong ops;

static uint8_t *fill(uint8_t *p, size_t n, uint8_t tag)
{
	if (!p)
		abort();
	memset(p, tag, n);
	p[0] = tag;
	return p;
}

static void check(const uint8_t *p, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (p[i] != p[0]) {
			fprintf(stderr, "block %p damaged at %zu\n", (const void *)p, i);
			abort();
		}
}

struct blk {
	uint8_t *p;
	size_t n;
};

static void *worker(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	struct blk b[SLOTS] = { 0 };

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint32_t i, k;
		size_t n;
		uint8_t tag;
		void *q = NULL;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		i = (uint32_t)(x % SLOTS);
		k = (uint32_t)(x >> 32) % 10;
		n = 16 + (size_t)((x >> 20) % 4081);
		tag = (uint8_t)(x >> 8) | 1u;
		if (b[i].p) {
			check(b[i].p, b[i].n);
			if (k == 0) {
				/* Grow or shrink in place or not: realloc keeps the contents. */
				uint8_t *r = realloc(b[i].p, n);

				if (!r)
					abort();
				check(r, b[i].n < n ? b[i].n : n);
				b[i].p = fill(r, n, tag);
				b[i].n = n;
				continue;
			}
			if (k == 1) {
				/* Hand it to another thread, which frees it. */
				uint8_t *old = atomic_exchange(&shared[x % 64], b[i].p);

				b[i].p = NULL;
				if (old)
					free(old);
				continue;
			}
			free(b[i].p);
			b[i].p = NULL;
			continue;
		}
		switch (k) {
		case 0: b[i].p = calloc(1, n); break;
		case 1: b[i].p = aligned_alloc(64, (n + 63) & ~(size_t)63); break;
		case 2: if (posix_memalign(&q, 32, n)) abort(); b[i].p = q; break;
		case 3: b[i].p = memalign(128, n); break;
		case 4: b[i].p = reallocarray(NULL, n, 1); break;
		case 5: b[i].p = valloc(n); break;
		default: b[i].p = malloc(n); break;
		}
		b[i].n = n;
		fill(b[i].p, n, tag);
		atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed);
	}
	for (int i = 0; i < SLOTS; i++)
		free(b[i].p);
	return NULL;
}

/* Whether liburcu-bp's slots hold the hooks (this executable's slots, patched, say
 * what they are: a check that finds nothing there would prove nothing). */
static bool urcu_hooked(void)
{
	void *(*volatile m)(void *, size_t, int, int, int, off_t) = mmap;
	void *(*volatile a)(size_t) = malloc;
	void *urcu = dlsym(RTLD_DEFAULT, "urcu_bp_register_thread");
	int n_mmap, n_malloc;

	if (!urcu || (void *)m == dlsym(RTLD_DEFAULT, "mmap") ||
	    heap_test_module_words((void *)urcu_hooked, (void *)m) < 1 ||
	    heap_test_module_words((void *)urcu_hooked, (void *)a) < 1) {
		fprintf(stderr, "liburcu-bp %p, or this program's mmap/malloc slots not hooked\n", urcu);
		exit(1);
	}
	n_mmap = heap_test_module_words(urcu, (void *)m);
	n_malloc = heap_test_module_words(urcu, (void *)a);
	if (n_mmap < 0) {
		fprintf(stderr, "no module holds urcu_bp_register_thread\n");
		exit(1);
	}
	return n_mmap || n_malloc;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	pthread_t t[THREADS];
	char err[256];
	unsigned long last = 0;

	heap_test_skip_sanitizer();
	{
		struct evr_session_opts o = { .providers = "*", .ring_size = 64 * 1024 };
		struct evr_session *s;

		if (evr_session_start(&o, &s, err, sizeof(err)) < 0) {
			fprintf(stderr, "session '*': %s\n", err);
			return 1;
		}
		if (heap_test_hooked()) {
			fprintf(stderr, "a session of '*' put the heap hooks in\n");
			return 1;
		}
		evr_session_stop(s);
		evr_session_free(s);
	}
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(i + 1)))
			return 1;
	for (int r = 0; r < rounds; r++) {
		struct evr_session_opts o = {
			/* A small rate: the sampled path and the free matching run often. */
			.providers = r % 2 ? "Heap:0x0:0:stacks=1;rate=4096" : "Heap:0x0:0:rate=65536",
			.ring_size = 64 * 1024,
		};
		struct evr_session *s;
		int ret = evr_session_start(&o, &s, err, sizeof(err));

		if (ret < 0) {
			fprintf(stderr, "session %d: %s\n", r, err);
			return 1;
		}
		if (!heap_test_hooked()) {
			fprintf(stderr, "round %d: the session is on and malloc is not hooked\n", r);
			return 1;
		}
		if (r < 2 && urcu_hooked()) {
			fprintf(stderr, "round %d: liburcu-bp calls the heap hooks\n", r);
			return 1;
		}
		if (r % 50 == 25) {
			pid_t c = fork();
			int st = 0;

			if (c == 0) {
				/* No session here: the slots were put back at the fork. */
				for (int i = 0; i < 100000; i++)
					free(fill(malloc(16 + (size_t)i % 4000), 16 + (size_t)i % 4000,
						  (uint8_t)i | 1u));
				_exit(heap_test_hooked() ? 3 : 0);
			}
			if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "round %d: the forked child failed (%d)\n", r, st);
				return 1;
			}
		}
		/* Let the workers through the hooks before switching them off. */
		while (atomic_load(&ops) < last + 200)
			sched_yield();
		last = atomic_load(&ops);
		evr_session_stop(s);
		evr_session_free(s);
		if (heap_test_hooked()) {
			fprintf(stderr, "round %d: the session is off and malloc is still hooked\n", r);
			return 1;
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 64; i++)
		free(shared[i]);
	printf("%d rounds, %lu allocations\n", rounds, (unsigned long)atomic_load(&ops));
	return 0;
}
