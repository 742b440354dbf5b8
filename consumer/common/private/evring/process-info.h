/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* evr.ProcessInfo to struct evr_process_info, for the client (Hello) and trace files. */
#ifndef EVR_PROCESS_INFO_H
#define EVR_PROCESS_INFO_H

#include <stdio.h>
#include <stdlib.h>

#include <evring/consumer.h>
#include <evring/framing.h>

/* Copy the numeric fields and the clock of @m; the strings are the caller's. */
static inline void evr_process_info_scalars(struct evr_process_info *pi, const Evr__ProcessInfo *m)
{
	pi->pid = m->pid;
	pi->ppid = m->has_ppid ? m->ppid : 0;
	pi->uid = m->has_uid ? m->uid : 0;
	pi->ns_pid = m->has_ns_pid ? m->ns_pid : 0;
	pi->nr_cpus = m->has_nr_cpus ? m->nr_cpus : 0;
	pi->sessions_active = m->has_sessions_active ? m->sessions_active : 0;
	pi->start_realtime_ns = m->has_start_realtime_ns ? m->start_realtime_ns : 0;
	if (m->clock) {
		pi->clock = (struct evr_clock_calib){
			.kind = m->clock->kind,
			.shift = m->clock->shift,
			.mult = m->clock->mult,
			.ts_base = m->clock->ts_base,
			.mono_base = m->clock->mono_base,
			.real_base = m->clock->real_base,
			.ticks_per_sec = m->clock->has_ticks_per_sec ? m->clock->ticks_per_sec : 0,
		};
	}
	if (m->clock_choice) {
		const Evr__ClockChoice *c = m->clock_choice;
		struct evr_process_clock *k = &pi->clock_choice;

		k->known = true;
		k->kind = c->kind;
		snprintf(k->source, sizeof(k->source), "%s", c->source ? c->source : "");
		snprintf(k->reason, sizeof(k->reason), "%s", c->reason ? c->reason : "");
		k->tsc_hz = c->has_tsc_hz ? c->tsc_hz : 0;
		k->skew_bound_ns = c->has_skew_bound_ns ? c->skew_bound_ns : 0;
		k->skew_pairs = c->has_skew_pairs ? c->skew_pairs : 0;
		k->rdtsc_ns = c->has_rdtsc_ns ? c->rdtsc_ns : 0;
		k->gettime_ns = c->has_gettime_ns ? c->gettime_ns : 0;
	}
}

/* Free the strings of @pi (not pb, whose owner differs between callers). */
static inline void evr_process_info_free_strings(struct evr_process_info *pi)
{
	if (pi->argv) {
		for (uint32_t i = 0; i < pi->argc; i++)
			free(pi->argv[i]);
	}
	free(pi->argv);
	free(pi->exe);
	free(pi->hostname);
	free(pi->evring_version);
}

#endif /* EVR_PROCESS_INFO_H */
