// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Three allocation sites of known sizes, for the heap profile's accuracy
 * (tests/heap/sites.sh): keep_1k keeps 100 MiB in 1 KiB blocks, churn_64k
 * allocates 50 MiB in 64 KiB blocks and frees each, keep_16 keeps 10 MiB in
 * 16-byte blocks. Then batch_16k allocates 16 MiB in 16 KiB blocks, all alive
 * at once, and frees them: by then the sampled blocks of keep_1k fill the
 * provider's near table, so these go to its far table, and their frees must
 * be matched there (churn_64k's could not tell: it gets the same address back
 * each time, and a new Alloc at an address ends the block that was there).
 *
 * heap-sites wait: prints "ready", waits for the heap hooks (a consumer
 * attached by PID), runs the sites, prints "done", then waits for stdin's end.
 * heap-sites run: waits for the hooks (-- PROGRAM), runs the sites, exits.
 * heap-sites plain: runs the sites at once (under heaptrack, which has its own hooks).
 */
#include <string.h>
#include <unistd.h>

#include "heap-test.h"

#define MIB (1024u * 1024u)

static void *volatile sink;

#define N1K (100u * MIB / 1024u)
#define N16 (10u * MIB / 16u)

static __attribute__((noinline)) void keep_1k(void **v)
{
	for (size_t i = 0; i < N1K; i++)
		v[i] = malloc(1024);
}

static __attribute__((noinline)) void churn_64k(void)
{
	for (size_t i = 0; i < 50u * MIB / 65536u; i++) {
		sink = malloc(65536);
		free(sink);
	}
}

static __attribute__((noinline)) void keep_16(void **v)
{
	for (size_t i = 0; i < N16; i++)
		v[i] = malloc(16);
}

#define NB16K (16u * MIB / 16384u)

static __attribute__((noinline)) void batch_16k(void)
{
	static void *v[NB16K];

	for (size_t i = 0; i < NB16K; i++)
		v[i] = malloc(16384);
	for (size_t i = 0; i < NB16K; i++)
		free(v[i]);
}

int main(int argc, char **argv)
{
	bool attach = argc > 1 && !strcmp(argv[1], "wait");
	void **a, **c;
	char buf[64];

	heap_test_skip_sanitizer();
	if (attach) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
	}
	if (argc < 2 || strcmp(argv[1], "plain"))
		heap_test_wait_hooked(true);
	/* The index arrays are main's own allocations, a site of their own. */
	a = calloc(N1K, sizeof(*a));
	c = calloc(N16, sizeof(*c));
	if (!a || !c)
		return 1;
	keep_1k(a);
	churn_64k();
	keep_16(c);
	batch_16k();
	printf("done %p %p\n", (void *)a, (void *)c);
	fflush(stdout);
	if (attach)
		while (read(0, buf, sizeof(buf)) > 0)
			;
	return 0;
}
