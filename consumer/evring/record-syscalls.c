// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record --syscalls: the summary line. The tracer is consumer/symbols/
 * syscalls.c, run by the recorder's side band; docs/syscalls.md.
 */
#include <inttypes.h>
#include <stdio.h>

#include <evring/symbols.h>
#include <evring/syscalls.h>

#include "record.h"

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
