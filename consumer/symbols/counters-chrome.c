// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-thread counters (record --perf-counters: COUNTER records of SAMPLES
 * chunks) in Chrome trace-event JSON, through evr_chrome_stacks.write_events:
 * a counter event ("ph":"C") per record with the thread's running total, named
 * "COUNTER tid TID" since Chrome draws one track per process and name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <evring/symbols.h>

struct total {
	uint32_t pid, tid;
	uint16_t counter;
	uint64_t sum;
};

long evr_counters_chrome_write(const struct evr_samples *ss, FILE *out, bool first)
{
	struct total *t = NULL;
	size_t nt = 0, cap = 0;
	long bytes = 0;

	for (size_t i = 0; ss && i < ss->n; i++) {
		const struct evr_sample_rec *r = &ss->v[i];
		const char *name = evr_perf_counter_name((uint16_t)r->cpu);
		size_t k;
		int n;

		if (r->type != EVR_SAMPLE_COUNTER || !name)
			continue;
		for (k = 0; k < nt && (t[k].tid != r->tid || t[k].pid != r->pid ||
				       t[k].counter != r->cpu); k++)
			;
		if (k == nt) {
			if (nt == cap) {
				size_t c = cap ? cap * 2 : 32;
				struct total *v = realloc(t, c * sizeof(*v));

				if (!v) {
					free(t);
					return -ENOMEM;
				}
				t = v;
				cap = c;
			}
			t[nt++] = (struct total){ .pid = r->pid, .tid = r->tid,
						  .counter = (uint16_t)r->cpu };
		}
		t[k].sum += r->value;
		n = fprintf(out, "%s{\"ph\":\"C\",\"cat\":\"perf_counter\",\"name\":\"%s tid %" PRIu32
			    "\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":%" PRIu64 ".%03u,"
			    "\"args\":{\"%s\":%" PRIu64 "}}", first && !bytes ? "" : ",\n", name,
			    r->tid, r->pid, r->tid, r->time_ns / 1000, (unsigned)(r->time_ns % 1000),
			    name, t[k].sum);
		if (n < 0) {
			free(t);
			return -EIO;
		}
		bytes += n;
	}
	free(t);
	return bytes;
}
