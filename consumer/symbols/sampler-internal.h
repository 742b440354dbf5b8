/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CPU sampler (sampler.c), driven by the recorder's side-band source (sideband.c). */
#ifndef EVR_SAMPLER_INTERNAL_H
#define EVR_SAMPLER_INTERNAL_H

#include <evring/symbols.h>

struct evr_sampler;

/*
 * Sampling @event (EVR_COUNTER_*: EVR_COUNTER_CPU_CLOCK, or a hardware event
 * where the caller found a PMU: evr_pmu_check()).
 * Open a software cpu-clock event per thread of @pid and CPU, at @hz, with user
 * call chains, context switches and new executable mappings, all written to one
 * ring per CPU; enabled on return.
 */
int evr_sampler_new(pid_t pid, uint16_t event, uint32_t hz, struct evr_sampler **ret,
		    char *errbuf, size_t errlen);

/*
 * Open a software cpu-clock event on every CPU for every process (pid -1), at
 * @hz, with user and (where allowed) kernel call chains, CPU-wide context
 * switches, COMM/FORK/EXIT records and the new executable mappings of @pid;
 * the processes that run now are named from /proc. Enabled on return.
 * Return: 0, -EACCES/-EPERM (@errbuf names the paranoid value and CAP_PERFMON
 * on one line), -ENOMEM, -errno.
 */
int evr_sampler_new_system(pid_t pid, uint16_t event, uint32_t hz, struct evr_sampler **ret,
			   char *errbuf, size_t errlen);

/*
 * Drain the rings: samples, switches and losses go into SAMPLES chunks, new
 * mappings into MODULES chunks, through @emit. System-wide, only when a ring
 * is an eighth full or a second has passed since the last drain (0 otherwise).
 */
int evr_sampler_drain(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx);

/* The SAMPLER chunk's payload (struct evr_sampler_rec) at the end. */
int evr_sampler_finish(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx);

void evr_sampler_totals(const struct evr_sampler *s, struct evr_sampler_totals *ret);

void evr_sampler_free(struct evr_sampler *s);

/* sampler-tick.c: the timer-tick source (EVR_SAMPLER_TIMER_TICK). */

/* The kernel's HZ: CONFIG_HZ from /proc/config.gz or /boot/config-RELEASE, else 250. */
unsigned evr_tick_kernel_hz(void);

/*
 * The id of the tracepoint timer:hrtimer_expire_entry under tracefs, or -errno
 * with @errbuf naming what is missing or refused on one line.
 */
long evr_tick_tracepoint_id(char *errbuf, size_t errlen);

/*
 * The tracepoint filter that keeps the tick's own hrtimer, into @buf.
 * Return: 0, -ENOENT (@errbuf said).
 */
int evr_tick_filter(char *buf, size_t len, char *errbuf, size_t errlen);

#endif /* EVR_SAMPLER_INTERNAL_H */
