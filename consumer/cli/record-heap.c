// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record --heap[=RATE]: the built-in Heap provider, by name (a "*" never
 * enables it: it patches the process), with the stacks of its events and the
 * sampling rate as its arguments (docs/memory.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "record.h"

#define CMD "record"

int evr_record_heap_parse(const char *arg, struct record_opts *o)
{
	uint64_t rate = EVR_RECORD_HEAP_DEFAULT_RATE;

	if (arg && evr_parse_size(CMD, "--heap", arg, &rate) < 0)
		return -EINVAL;
	if (rate < 1 || rate > (1ull << 40)) {
		evr_cli_error(CMD, "--heap=%s: the sampling rate must be from 1 byte to 1 TiB", arg);
		return -EINVAL;
	}
	o->heap_rate = rate;
	return 0;
}

int evr_record_heap_apply(struct record_opts *o)
{
	size_t cap = strlen(o->providers) + 96, len;
	const char *p = o->providers;
	char *spec;

	if (!o->heap_rate)
		return 0;
	spec = malloc(cap);
	if (!spec)
		return -ENOMEM;
	snprintf(spec, cap, "Heap:0x0:0:stacks=%u;rate=%llu", o->stack_depth ? o->stack_depth : 1u,
		 (unsigned long long)o->heap_rate);
	/* The other entries (entries are split by ',', their arguments by ';'); one that
	 * names Heap gives way to --heap's, a provider being listed once. */
	len = strlen(spec);
	while (*p) {
		size_t n = strcspn(p, ","), name = strcspn(p, ":,");

		if (n && !(name == 4 && !strncmp(p, "Heap", 4))) {
			spec[len++] = ',';
			memcpy(spec + len, p, n);
			len += n;
		}
		p += n;
		if (*p)
			p++;
	}
	spec[len] = '\0';
	free(o->owned_providers);
	o->owned_providers = spec;
	o->providers = spec;
	return 0;
}
