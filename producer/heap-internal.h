/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Heap provider's GOT patcher (heap-got.c), used by heap.c. */
#ifndef EVR_HEAP_INTERNAL_H
#define EVR_HEAP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "producer-internal.h"

/* One function routed through libevring: its name in the modules' relocations and the hook. */
struct evr_heap_sym {
	const char *name;
	uintptr_t hook;
};

/**
 * evr_heap_got_patch() - point every GOT slot (R_X86_64_JUMP_SLOT, GLOB_DAT) that
 * names one of @syms, in every loaded module but libevring, libc, ld.so and the
 * vDSO, at its hook, remembering what it held. Slots that already hold their
 * hook are left alone, so a second call patches only what was loaded since.
 * @block: wait for another patcher; false: give up at once (from a hook).
 * Return: slots patched now, or -EBUSY (not blocking and another patcher runs),
 * -ENOSPC (more slots than the table holds: the rest are left alone).
 * Context: any thread but a signal handler; takes the loader's lock
 * (dl_iterate_phdr()), never the registry lock.
 */
EVR_HIDDEN int evr_heap_got_patch(const struct evr_heap_sym *syms, uint32_t n, bool block);

/**
 * evr_heap_got_restore() - put back what each slot patched held, in the modules
 * still loaded (checked under the loader's lock, so a dlclose()d module is
 * never written), where the slot still holds the hook.
 * Return: slots restored.
 */
EVR_HIDDEN int evr_heap_got_restore(void);

/* Whether modules were loaded or unloaded since the last patch or restore: one
 * dl_iterate_phdr() call that stops at the first module. */
EVR_HIDDEN bool evr_heap_got_modules_changed(void);

/* The Heap provider's estimates from its samples: the bytes of the sampled blocks
 * alive and of all sampled blocks, each as many as it stands for (0 until enabled). */
EVR_HIDDEN void evr_heap_estimates(double *ret_live, double *ret_allocated);

/* Whether @p is a provider that a session's "*" does not enable (Heap). */
EVR_HIDDEN bool evr_heap_provider_by_name_only(const struct evr_provider *p);

#endif /* EVR_HEAP_INTERNAL_H */
