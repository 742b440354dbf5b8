// SPDX-License-Identifier: LGPL-2.1-or-later
/* A library heap-dlopen loads after the session started (tests/heap/dlopen.sh). */
#include <stdlib.h>

/* &malloc as this library's GOT holds it now. */
__attribute__((noinline)) void *lib_got_malloc(void)
{
	void *(*volatile f)(size_t) = malloc;

	return (void *)f;
}

/* Keeps @mib MiB in 1 KiB blocks. */
__attribute__((noinline)) void **lib_keep(size_t mib)
{
	size_t n = mib * 1024u;
	void **v = malloc(n * sizeof(*v));

	for (size_t i = 0; v && i < n; i++)
		v[i] = malloc(1024);
	return v;
}
