/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the heap test programs share: whether the Heap provider's hooks are in. */
#ifndef EVR_HEAP_TEST_H
#define EVR_HEAP_TEST_H

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
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

/* The words of one module's writable segments (its GOT among them) equal to @value:
 * the module is the one whose code holds @code. */
struct heap_test_words {
	uintptr_t code, value;
	int modules, found;
};

static int heap_test_words_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct heap_test_words *w = arg;
	bool holds = false;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && w->code >= lo && w->code - lo < ph->p_memsz)
			holds = true;
	}
	if (!holds)
		return 0;
	w->modules++;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uintptr_t *p, *end;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		p = (const uintptr_t *)((info->dlpi_addr + ph->p_vaddr + 7) & ~(uintptr_t)7);
		end = (const uintptr_t *)(info->dlpi_addr + ph->p_vaddr + ph->p_filesz);
		for (; p < end; p++)
			w->found += *p == w->value;
	}
	return 0;
}

/* How many words of the module holding @code hold @value; -1 when no module holds it. */
static inline int heap_test_module_words(const void *code, const void *value)
{
	struct heap_test_words w = { (uintptr_t)code, (uintptr_t)value, 0, 0 };

	dl_iterate_phdr(heap_test_words_cb, &w);
	return w.modules ? w.found : -1;
}

#endif /* EVR_HEAP_TEST_H */
