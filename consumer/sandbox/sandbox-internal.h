/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libevring-sandbox: the pieces sandbox.c and broker.c share. */
#ifndef EVR_SANDBOX_INTERNAL_H
#define EVR_SANDBOX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <seccomp.h>

/* Allow the @n calls @nr unconditionally (calls this architecture lacks are skipped). */
int evr_sandbox_allow_calls(scmp_filter_ctx ctx, const int *nr, size_t n);

/* Allow call @nr when argument @arg compares (@op) with @a (and @b for masks). */
int evr_sandbox_allow_if(scmp_filter_ctx ctx, int nr, unsigned int arg, enum scmp_compare op,
			 uint64_t a, uint64_t b);

/* What every confined process may do (<evring/sandbox.h>). Return: 0, -errno. */
int evr_sandbox_base(scmp_filter_ctx ctx);

/*
 * Load and release @ctx, unless @r (the status of building it) is already an
 * error. Return: 0, or -errno with one line in @errbuf.
 */
int evr_sandbox_load(scmp_filter_ctx ctx, int r, char *errbuf, size_t errlen);

#endif /* EVR_SANDBOX_INTERNAL_H */
