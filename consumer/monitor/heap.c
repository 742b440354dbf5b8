// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * GET /processes/{pid}/heap?duration=T&rate=R&stacks=N&max_size=S: a heap
 * profile of a running process, as `evring record -p PID --heap=R --duration T`
 * then `evring convert --format pprof` make it (docs/memory.md): the trace
 * route (trace.c) with the Heap provider alone, answered as pprof (gzip'd
 * protobuf; `go tool pprof -sample_index=inuse_space -top`). One operation
 * while it records and converts, bounded by --max-duration and
 * --max-trace-size like every trace; the hooks go out of the process when the
 * session ends (the duration, or the client leaving).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "http.h"
#include "monitor.h"
#include "trace-internal.h"

#define RATE_DEFAULT (512u * 1024u)
#define RATE_MAX (1ull << 30)

const char *const evr_mon_heap_params[] = { "duration", "rate", "stacks", "max_size", NULL };

enum MHD_Result evr_mon_route_heap(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	/* 30 s as the trace route; a sample's stack 64 frames deep as record --heap. */
	struct evr_mon_tparams p = { .duration_ns = 30000000000ull, .stack_depth = 64,
				     .format = EVR_MON_FMT_PPROF };
	uint64_t rate = RATE_DEFAULT;
	const char *v;
	char providers[96], err[512];

	/* duration, stacks and max_size mean what they mean for a trace, same limits. */
	for (const char *const *k = evr_mon_heap_params; *k; k++)
		if (strcmp(*k, "rate") && (v = evr_mon_query(q, *k)) &&
		    evr_mon_tparams_set(&p, *k, v, err, sizeof(err)) < 0)
			return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "%s", err);
	v = evr_mon_query(q, "rate");
	if (v && (evr_mon_parse_size(v, &rate) < 0 || !rate || rate > RATE_MAX))
		return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "rate: bytes between "
					    "samples, from 1 to 1G (512K, 64K, 1M)");
	/* As record --heap asks for it: the provider by name (a "*" never enables it). */
	snprintf(providers, sizeof(providers), "Heap:0x0:0:stacks=1;rate=%" PRIu64, rate);
	p.providers = providers;
	return evr_mon_trace_answer(q, pid, &p);
}
