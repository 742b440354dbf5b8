// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-event stack capture: a bounded frame-pointer walk of the writing thread,
 * for sessions that ask for stacks (shared/research/stacks.md §1: about a
 * nanosecond per frame, where a DWARF unwinder costs 8-10 ns per frame warm
 * and milliseconds on a thread's first use, and glibc's backtrace() 120-210 ns
 * per frame).
 *
 * Where the walk starts: at a frame the write path hands over, that of its
 * out-of-line function (write.c's write_slow*(), evr__event_write_v_slow()),
 * reached by a tail call from the public write function: that frame lies
 * directly on the frame of the code that wrote the event, so its return
 * address is the first frame kept and its saved frame pointer is the
 * caller's. libevring's write path itself needs no frame pointers, and no
 * frame of libevring is walked, except where the public function could not
 * tail-call (a -O0 build, a payload padded on its stack): such a function has
 * a frame of its own, and leading return addresses into libevring's code are
 * dropped.
 *
 * Safety: every load is inside the thread's own stack, between the starting
 * frame and the top of the stack, so a frame pointer that is not one (code
 * built without frame pointers keeps data in rbp) stops the walk instead of
 * faulting. The top is known without a system call or an allocation, so the
 * walk is async-signal-safe even on a thread's first event: glibc puts a
 * thread's descriptor (pthread_self()) at the top of the stack block it runs
 * on, above every frame; the main thread's frames lie below __libc_stack_end,
 * the stack pointer at process entry. The first frame must be 8-byte aligned;
 * each frame must lie strictly above the previous one, below the top, and
 * hold a nonzero return address.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "producer-internal.h"
#include "stack-internal.h"

/* glibc (ld.so): the stack pointer at the process's entry. */
extern void *__libc_stack_end;

EVR_LOAD_DATA static uintptr_t lib_text_lo, lib_text_hi;
/* The thread whose stack is the process's initial one; 0: none (a child forked
 * by another thread runs on that thread's stack). */
EVR_LOAD_DATA static uint32_t main_tid;
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

/* A thread's first stack: out of line, so that the walk saves no register for it. */
static __attribute__((noinline, cold)) uintptr_t stack_top_find(void)
{
	tls_stack_top = evr_thread_id() == main_tid ? (uintptr_t)__libc_stack_end
						    : (uintptr_t)pthread_self();
	return tls_stack_top;
}

static inline uintptr_t stack_top(void)
{
	uintptr_t top = tls_stack_top;

	return EVR_LIKELY(top) ? top : stack_top_find();
}

/* Not instrumented by ASan: it reads saved registers of other frames on purpose. */
__attribute__((no_sanitize_address)) uint32_t evr_stack_capture(uintptr_t fp, uint64_t *ips,
								 uint32_t max)
{
	uintptr_t top = stack_top();
	/* The highest address a frame (saved frame pointer, return address) may start at. */
	uintptr_t lim = top - 16u;
	uint64_t *p = ips, *end = ips + max;

	/* fp == 0 wraps around and fails too. */
	if (top < 16u || fp - 1u >= lim || (fp & 7u))
		return 0;
	/* The frames of libevring's public functions that could not tail-call. */
	for (;;) {
		const uintptr_t *f = (const uintptr_t *)fp;
		uintptr_t next = f[0];

		if (f[1] < lib_text_lo || f[1] >= lib_text_hi)
			break;
		if (next <= fp || next > lim || (next & 7u))
			return 0;
		fp = next;
	}
	/*
	 * One dependent load per frame: keep the checks beside it few and cheap.
	 * The bounds are what keeps every load inside the stack; a misaligned
	 * frame pointer (data, not a frame) reads inside them too and is left to
	 * end the walk by its return address or the bounds.
	 */
	for (;;) {
		const uintptr_t *f = (const uintptr_t *)fp;
		uintptr_t next = f[0], ret = f[1];

		if (!ret)
			break;
		if (p == end)
			return max | EVR_STACK_CAPTURE_TRUNCATED;
		*p++ = ret;
		if (next <= fp || next > lim)
			break;
		fp = next;
	}
	return (uint32_t)(p - ips);
}
