// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record --syscalls: the summary line. The tracer is consumer/symbols/
 * syscalls.c, run by the recorder's side band; docs/syscalls.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/symbols.h>
#include <evring/syscalls.h>

#include "cli.h"
#include "record.h"

int evr_record_syscalls_parse(const char *list)
{
	const char *p = list;

	if (!list)
		return 0;
	/* The tracer checks again (evr_syscalls_new()); here, before anything is attached. */
	do {
		size_t len = strcspn(p, ",");
		char name[64];
		char *end;
		long nr;

		if (!len || len >= sizeof(name)) {
			evr_cli_error("record", "--syscalls=%s: expected system call names or numbers "
				      "separated by commas (write,openat,257)", list);
			return -EINVAL;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		nr = strtol(name, &end, 10);
		if ((*end || nr < 0 || nr > 4095) && evr_syscall_number(name) < 0) {
			evr_cli_error("record", "--syscalls: '%s' is no system call known here", name);
			return -EINVAL;
		}
		p += len;
	} while (*p++ == ',');
	return 0;
}

void evr_record_syscalls_summary(const struct evr_sideband *sb)
{
	struct evr_syscall_info_rec t;
	const char *note = NULL;

	if (!sb || !evr_sideband_syscalls(sb, &t, &note))
		return;
	if (note && note[0])
		fprintf(stderr, "evring record: %s\n", note);
	fprintf(stderr, "evring record: %" PRIu64 " system calls (%u threads at the start",
		t.calls, t.threads);
	if (t.nfilter)
		fprintf(stderr, ", %u kinds selected", t.nfilter);
	fprintf(stderr, "), %" PRIu64 " tracepoint records lost", t.lost);
	if (t.unpaired)
		fprintf(stderr, ", %" PRIu64 " without their entry or exit", t.unpaired);
	fputc('\n', stderr);
}
