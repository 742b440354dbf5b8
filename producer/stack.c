// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-event stack capture: a bounded frame-pointer walk of the writing thread,
 * for sessions that ask for stacks (shared/research/stacks.md §1: 1.2-1.5 ns per
 * frame, where a DWARF unwinder costs 8-10 ns per frame warm and milliseconds
 * on a thread's first use, and glibc's backtrace() 120-210 ns per frame).
 *
 * Safety: every load is inside the thread's own stack, between the walker's
 * own frame and the top of the stack, so a frame pointer that is not one
 * (code built without frame pointers keeps data in rbp) stops the walk
 * instead of faulting. The top is known without a system call or an
 * allocation, so the walk is async-signal-safe even on a thread's first event:
 * glibc puts a thread's descriptor (pthread_self()) at the top of the stack
 * block it runs on, above every frame; the main thread's frames lie below
 * __libc_stack_end, the stack pointer at process entry. A frame must be
 * 8-byte aligned, lie strictly above the previous one, and hold a nonzero
 * return address.
 *
 * The walk starts in libevring; the leading frames whose return address is
 * in libevring's own code are dropped, so the first frame kept is the return
 * address into the function that wrote the event. That needs libevring's
 * write path to keep frame pointers (producer/CMakeLists.txt), or the frame
 * of the public write function would be missing from the chain.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "producer-internal.h"
#include "stack-internal.h"

/* glibc (ld.so): the stack pointer at the process's entry. */
extern void *__libc_stack_end;

static uintptr_t lib_text_lo, lib_text_hi;
/* The thread whose stack is the process's initial one; 0: none (a child forked
 * by another thread runs on that thread's stack). */
static uint32_t main_tid;
static bool forking_on_main;
/* The top of this thread's stack, found once per thread (0: not yet). */
static __thread uintptr_t tls_stack_top __attribute__((tls_model("initial-exec")));


static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t self = (uintptr_t)arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && self >= lo &&
		    self < lo + ph->p_memsz) {
			lib_text_lo = lo;
			lib_text_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

void evr_stack_init(void)
{
	main_tid = (uint32_t)getpid();
	dl_iterate_phdr(find_text, (void *)(uintptr_t)evr_stack_capture);
}

void evr_stack_atfork_prepare(void)
{
	forking_on_main = main_tid && evr_thread_id() == main_tid;
}

void evr_stack_atfork_child(void)
{
	main_tid = forking_on_main ? (uint32_t)getpid() : 0;
	tls_stack_top = 0;
}

static inline uintptr_t stack_top(void)
{
	if (EVR_UNLIKELY(!tls_stack_top))
		tls_stack_top = evr_thread_id() == main_tid ? (uintptr_t)__libc_stack_end
							    : (uintptr_t)pthread_self();
	return tls_stack_top;
}

/* Not instrumented by ASan: it reads saved registers of other frames on purpose. */
__attribute__((noinline, no_sanitize_address)) uint32_t
evr_stack_capture(uint64_t *ips, uint32_t max, bool *ret_truncated)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t top = stack_top();
	bool skipping = true;
	uint32_t n = 0;

	*ret_truncated = false;
	while (!(fp & 7u) && fp < top && top - fp >= 16) {
		const uintptr_t *f = (const uintptr_t *)fp;
		uintptr_t next = f[0], ret = f[1];

		if (!ret)
			break;
		if (skipping && ret >= lib_text_lo && ret < lib_text_hi) {
			/* still inside libevring */
		} else {
			skipping = false;
			if (n == max) {
				*ret_truncated = true;
				break;
			}
			ips[n++] = ret;
		}
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}
