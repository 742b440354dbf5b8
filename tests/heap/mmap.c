// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Anonymous mappings of known sizes, for the Heap provider's mmap kind
 * (tests/heap/mmap.sh): map_keep keeps 32 MiB in 1 MiB mappings, map_churn
 * maps 16 MiB in 256 KiB mappings and unmaps each, map_part maps 16 MiB in
 * 2 MiB mappings and unmaps three quarters of each in two calls (a hole in the
 * middle first, which splits it, then the piece below the hole), map_file maps
 * 8 MiB of a file (not anonymous: not counted), map_grow maps 8 MiB in 1 MiB
 * mappings and mremap()s each to 2 MiB (kept: 16 MiB), map_move maps a 3 MiB
 * place and a 1 MiB mapping and moves the mapping there with mremap() grown to
 * 3 MiB (MREMAP_FIXED, which replaces the place), then unmaps it at its new
 * address (nothing left), 8 times, and keep_heap keeps 4 MiB of
 * malloc() in 1 KiB blocks (the other kind). Waits for the hooks first (run
 * under `evring record --heap -- heap-mmap`).
 */
#include <sys/mman.h>
#include <unistd.h>

#include "heap-test.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static void *volatile sink;

static inline __attribute__((always_inline)) void *map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("heap-mmap: mmap");
		exit(1);
	}
	return p;
}

static inline __attribute__((always_inline)) void unmap(void *p, size_t n)
{
	if (munmap(p, n)) {
		perror("heap-mmap: munmap");
		exit(1);
	}
}

static __attribute__((noinline)) void map_keep(void)
{
	for (int i = 0; i < 32; i++)
		sink = map(MIB);
}

static __attribute__((noinline)) void map_churn(void)
{
	for (int i = 0; i < 64; i++)
		unmap(map(256 * KIB), 256 * KIB);
}

static __attribute__((noinline)) void map_part(void)
{
	for (int i = 0; i < 8; i++) {
		char *p = map(2 * MIB);

		unmap(p + 512 * KIB, MIB);	/* [512K, 1.5M): two pieces left */
		unmap(p, 512 * KIB);		/* the lower one: 512 KiB left */
	}
}

static __attribute__((noinline)) void map_file(void)
{
	int fd = memfd_create("heap-mmap", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, 8 * MIB)) {
		perror("heap-mmap: memfd");
		exit(1);
	}
	sink = mmap(NULL, 8 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (sink == MAP_FAILED) {
		perror("heap-mmap: mmap of a file");
		exit(1);
	}
}

static inline __attribute__((always_inline)) void *remap(void *p, size_t o, size_t n, int flags,
							  void *to)
{
	void *q = mremap(p, o, n, flags, to);

	if (q == MAP_FAILED) {
		perror("heap-mmap: mremap");
		exit(1);
	}
	return q;
}

static __attribute__((noinline)) void map_grow(void)
{
	for (int i = 0; i < 8; i++)
		sink = remap(map(MIB), MIB, 2 * MIB, MREMAP_MAYMOVE, NULL);
}

static __attribute__((noinline)) void map_move(void)
{
	for (int i = 0; i < 8; i++) {
		void *to = map(3 * MIB), *p = map(MIB);

		unmap(remap(p, MIB, 3 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, to), 3 * MIB);
	}
}

static __attribute__((noinline)) void keep_heap(void)
{
	for (size_t i = 0; i < 4 * MIB / KIB; i++)
		sink = malloc(KIB);
}

int main(void)
{
	heap_test_skip_sanitizer();
	heap_test_wait_hooked(true);
	map_keep();
	map_churn();
	map_part();
	map_file();
	map_grow();
	map_move();
	keep_heap();
	printf("done\n");
	return 0;
}
