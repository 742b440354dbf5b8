/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the heap test programs share: whether the Heap provider's hooks are in. */
#ifndef EVR_HEAP_TEST_H
#define EVR_HEAP_TEST_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_TEST_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HEAP_TEST_SANITIZER 1
#endif
#endif

/* ASan and TSan own malloc (they interpose it in the executable): the heap provider
 * then samples their allocator, which is not what these tests measure. */
static inline void heap_test_skip_sanitizer(void)
{
#ifdef HEAP_TEST_SANITIZER
	printf("skipped: a sanitizer build owns malloc (tests/heap need the real allocator)\n");
	fflush(stdout);
	exit(77);
#endif
}

/* &malloc as this executable's GOT holds it now (a GLOB_DAT slot, patched after the
 * JUMP_SLOT one of its calls). */
static __attribute__((noinline)) void *heap_test_got_malloc(void)
{
	void *(*volatile f)(size_t) = malloc;

	return (void *)f;
}

static inline bool heap_test_hooked(void)
{
	return heap_test_got_malloc() != dlsym(RTLD_DEFAULT, "malloc");
}

/* Until the hooks are in (or out): polls a condition, 1 ms apart. */
static inline void heap_test_wait_hooked(bool want)
{
	struct timespec ms = { 0, 1000000 };

	while (heap_test_hooked() != want)
		nanosleep(&ms, NULL);
}

#endif /* EVR_HEAP_TEST_H */
