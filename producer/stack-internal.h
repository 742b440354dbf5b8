/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-event stack capture (stack.c), for sessions that ask for stacks. */
#ifndef EVR_STACK_INTERNAL_H
#define EVR_STACK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

/* evr_stack_capture(): more frames than were asked for. */
#define EVR_STACK_CAPTURE_TRUNCATED (1u << 31)

/* Default frames per event when a session asks for stacks without a depth. */
#define EVR_STACK_DEFAULT_DEPTH 64u

/* Find libevring's code and the main thread, once, from the library constructor. */
__attribute__((visibility("hidden"))) void evr_stack_init(void);

/* fork(): the forking thread, before (in the parent) and after (in the child). */
__attribute__((visibility("hidden"))) void evr_stack_atfork_prepare(void);
__attribute__((visibility("hidden"))) void evr_stack_atfork_child(void);

/**
 * evr_stack_capture() - the calling thread's return addresses, innermost
 * first, starting with the return into the code that called libevring.
 * @fp: the frame to start at: that of the write path's out-of-line function
 *	(__builtin_frame_address(0) there), on the frame of the public write
 *	function's caller or of a public write function that keeps a frame.
 * @ips: room for @max addresses.
 * Return: the number stored, or'ed with EVR_STACK_CAPTURE_TRUNCATED when the
 * walk stopped at @max with more frames above.
 * Context: any thread, signal handlers included: plain loads inside the
 * thread's stack, no system call, no allocation.
 */
__attribute__((visibility("hidden"))) uint32_t evr_stack_capture(uintptr_t fp, uint64_t *ips,
								  uint32_t max);

#endif /* EVR_STACK_INTERNAL_H */
