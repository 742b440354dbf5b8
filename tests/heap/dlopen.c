// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * heap-dlopen LIB: once the heap hooks are in (-- PROGRAM), loads LIB, which
 * was not loaded when they were put in, allocates in this program until LIB's
 * GOT is patched too (the next sampled allocation notices the new module), then
 * has LIB keep 20 MiB in 1 KiB blocks (lib_keep in the profile).
 */
#include <string.h>

#include "heap-test.h"

static void *volatile sink;

int main(int argc, char **argv)
{
	void *(*got)(void);
	void **(*keep)(size_t);
	void *lib;

	heap_test_skip_sanitizer();
	if (argc < 2)
		return 2;
	heap_test_wait_hooked(true);
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	got = (void *(*)(void))dlsym(lib, "lib_got_malloc");
	keep = (void **(*)(size_t))dlsym(lib, "lib_keep");
	if (!got || !keep)
		return 1;
	/* Bounded: without the rescan, lib_keep is left out and the test says so. */
	for (long i = 0; i < (1l << 20) && got() == dlsym(RTLD_DEFAULT, "malloc"); i++) {
		sink = malloc(4096);
		free(sink);
	}
	sink = keep(20);
	/* Where lib_keep is: the trace's module map, read when the recording started, does
	 * not have LIB (docs/memory.md), so the test finds its site by address. */
	printf("done %p\n", (void *)keep);
	return 0;
}
