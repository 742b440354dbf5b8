// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recorder's side-band source: the chunks `evring record` writes besides
 * the producer's rings, so that the trace can be symbolized later and
 * elsewhere (module map, perf map) and carries CPU samples (sampler.c). The
 * recorder calls new() before its sandbox, start() once the trace has its
 * header, poll() from its loop and finish() before the END chunk.
 *
 * The perf map is opened at new() when it exists and read at finish() through
 * that descriptor, so the symbols of code compiled during the recording are
 * included. A map created after the recording started (a JIT that starts its
 * map late, or a program `evring record` launched) is opened at finish(): the
 * confined recorder asks its broker (evr_sideband_opts.open_perf_map).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <evring/syscalls.h>
#include <evring/trace.h>
#include <evring/untrusted-file.h>

#include "perf-counters-internal.h"
#include "sampler-internal.h"
#include "symbols-internal.h"

struct evr_sideband {
	pid_t pid;
	uid_t owner;			/* the process's user: a perf map must be theirs */
	bool have_owner;
	struct evr_modmap *mods;
	int perf_map_fd;
	evr_sideband_open_fn *open_perf_map;
	void *open_ctx;
	struct evr_sampler *sampler;
	char sampler_note[256];		/* why system-wide sampling fell back */
	struct evr_syscalls *syscalls;
	char syscalls_note[128];
	struct evr_perf_counters *counters;
	char pmu_note[256];		/* no hardware PMU: what was done instead */
};

/*
 * The hardware events of @o when there is no PMU: the sampler on cpu-clock,
 * the hardware counters left out (task-clock when none remain), and one line
 * in @sb->pmu_note. Return: the event to sample; @ids/@n the counters.
 */
static uint16_t without_pmu(struct evr_sideband *sb, const struct evr_sideband_opts *o,
			    uint16_t *ids, uint32_t *n)
{
	uint16_t event = o->sample_event ? o->sample_event : EVR_COUNTER_CPU_CLOCK;
	bool hw = o->sample_hz && EVR_COUNTER_HARDWARE(event);
	char why[160];
	uint32_t k = 0;

	*n = 0;
	for (uint32_t i = 0; i < o->ncounters && i < EVR_PERF_COUNTERS_MAX; i++) {
		hw |= EVR_COUNTER_HARDWARE(o->counters[i]);
		ids[(*n)++] = o->counters[i];
	}
	if (!hw || evr_pmu_check(why, sizeof(why)))
		return event;
	for (uint32_t i = 0; i < *n; i++)
		if (!EVR_COUNTER_HARDWARE(ids[i]))
			ids[k++] = ids[i];
	if (*n && !k)
		ids[k++] = EVR_COUNTER_TASK_CLOCK;
	snprintf(sb->pmu_note, sizeof(sb->pmu_note), "%s: %s", why,
		 o->sample_hz && EVR_COUNTER_HARDWARE(event) ?
			 (*n ? "sampling the software cpu-clock, counting software events only"
			     : "sampling the software cpu-clock instead") :
			 "counting software events only");
	*n = k;
	return EVR_COUNTER_HARDWARE(event) ? EVR_COUNTER_CPU_CLOCK : event;
}

/*
 * /tmp/perf-PID.map when it is a regular file of the process's user or root (as
 * perf trusts it), or -1. Whatever else is planted there is refused without
 * blocking (evr_untrusted_open()).
 */
static int perf_map_open(const struct evr_sideband *sb)
{
	const struct evr_untrusted_rules rules = {
		.owner = sb->owner, .max_size = EVR_PERF_MAP_MAX, .nofollow = true,
	};
	char path[64];
	int fd;

	if (!sb->have_owner)
		return -1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)sb->pid);
	fd = evr_untrusted_open(AT_FDCWD, path, &rules, NULL);
	return fd >= 0 ? fd : -1;
}

int evr_sideband_new(const struct evr_sideband_opts *o, struct evr_sideband **ret,
		     char *errbuf, size_t errlen)
{
	uint16_t ids[EVR_PERF_COUNTERS_MAX], event;
	struct evr_sideband *sb;
	uint32_t nids;
	int err;

	err = evr_proc_check_access(o->pid, "you can record only your own processes", errbuf,
				    errlen);
	if (err < 0)
		return err;
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return -ENOMEM;
	sb->pid = o->pid;
	sb->perf_map_fd = -1;
	sb->open_perf_map = o->open_perf_map;
	sb->open_ctx = o->open_ctx;
	sb->have_owner = evr_proc_uid(o->pid, &sb->owner) == 0;
	err = evr_modmap_new(&sb->mods);
	if (err < 0)
		goto fail;
	/* Mappings that exist now; later ones come from the sampler (mmap2 records). */
	err = evr_modmap_read_pid(sb->mods, o->pid, 0);
	if (err < 0) {
		snprintf(errbuf, errlen, "cannot read the memory map of process %d: %s",
			 (int)o->pid, strerror(-err));
		goto fail;
	}
	sb->perf_map_fd = perf_map_open(sb);
	event = without_pmu(sb, o, ids, &nids);
	if (o->sample_hz && o->system) {
		err = evr_sampler_new_system(o->pid, event, o->sample_hz, &sb->sampler,
					     sb->sampler_note,
					     sizeof(sb->sampler_note));
		/* Refused: the recorded process alone, which needs no privilege (not the
		 * timer-tick source, which is every CPU's). */
		if (err < 0 && ((err != -EACCES && err != -EPERM) ||
				event == EVR_SAMPLER_TIMER_TICK)) {
			snprintf(errbuf, errlen, "%s", sb->sampler_note);
			goto fail;
		}
		if (err >= 0)
			sb->sampler_note[0] = '\0';
	}
	if (o->sample_hz && !sb->sampler) {
		err = evr_sampler_new(o->pid, event, o->sample_hz, &sb->sampler, errbuf, errlen);
		if (err < 0)
			goto fail;
	}
	if (nids) {
		err = evr_perf_counters_new(o->pid, ids, nids, &sb->counters, errbuf, errlen);
		if (err < 0)
			goto fail;
	}
	if (o->syscalls) {
		err = evr_syscalls_new(o->pid, o->syscall_list, &sb->syscalls, sb->syscalls_note,
				       sizeof(sb->syscalls_note), errbuf, errlen);
		if (err < 0)
			goto fail;
	}
	*ret = sb;
	return 0;
fail:
	evr_sideband_free(sb);
	return err;
}

void evr_sideband_free(struct evr_sideband *sb)
{
	if (!sb)
		return;
	evr_sampler_free(sb->sampler);
	evr_syscalls_free(sb->syscalls);
	evr_perf_counters_free(sb->counters);
	evr_modmap_free(sb->mods);
	if (sb->perf_map_fd >= 0)
		close(sb->perf_map_fd);
	free(sb);
}

int evr_sideband_start(struct evr_sideband *sb, evr_sideband_emit_fn *emit, void *ctx)
{
	void *buf;
	size_t len;
	int err;

	if (!sb->mods->n)
		return 0;
	err = evr_modmap_encode(sb->mods, &buf, &len);
	if (err < 0)
		return err;
	err = emit(ctx, EVR_CHUNK_MODULES, buf, len);
	free(buf);
	return err;
}

int evr_sideband_poll(struct evr_sideband *sb, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = sb->sampler ? evr_sampler_drain(sb->sampler, emit, ctx) : 0;

	if (!err && sb->syscalls)
		err = evr_syscalls_drain(sb->syscalls, emit, ctx);
	if (!err && sb->counters)
		err = evr_perf_counters_drain(sb->counters, emit, ctx);
	return err;
}

/* The perf map's text, read through the descriptor opened before the sandbox. */
static int emit_perf_map(struct evr_sideband *sb, evr_sideband_emit_fn *emit, void *ctx)
{
	size_t cap = 1u << 16, len = 8;
	uint8_t *buf = malloc(cap);
	uint32_t pid = (uint32_t)sb->pid;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	/* PERF_MAP chunk: u32 pid, u32 reserved, then the map's text (docs/trace-format.md). */
	memcpy(buf, &pid, 4);
	memset(buf + 4, 0, 4);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			uint8_t *nb;

			if (cap >= EVR_PERF_MAP_MAX)
				break;
			nb = realloc(buf, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = pread(sb->perf_map_fd, buf + len, cap - len, (off_t)(len - 8));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	/* Whole lines only: the runtime may be writing the last one. */
	while (len > 8 && buf[len - 1] != '\n')
		len--;
	if (!err && len > 8)
		err = emit(ctx, EVR_CHUNK_PERF_MAP, buf, len > EVR_TRACE_CHUNK_MAX ?
			   EVR_TRACE_CHUNK_MAX : len);
	free(buf);
	return err;
}

bool evr_sideband_has_perf_map(const struct evr_sideband *sb)
{
	return sb->perf_map_fd >= 0;
}

void evr_sideband_set_perf_map_opener(struct evr_sideband *sb, evr_sideband_open_fn *fn,
				      void *ctx)
{
	sb->open_perf_map = fn;
	sb->open_ctx = ctx;
}

/* A perf map that appeared during the recording; -1 when there is none (or not trusted). */
static int open_late_perf_map(struct evr_sideband *sb)
{
	int fd;

	if (!sb->have_owner)
		return -1;
	if (sb->open_perf_map) {
		fd = sb->open_perf_map(sb->open_ctx, sb->pid, sb->owner);
		return fd >= 0 ? fd : -1;
	}
	return perf_map_open(sb);
}

int evr_sideband_finish(struct evr_sideband *sb, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = 0;

	if (sb->sampler)
		err = evr_sampler_finish(sb->sampler, emit, ctx);
	if (!err && sb->syscalls)
		err = evr_syscalls_finish(sb->syscalls, emit, ctx);
	if (!err && sb->counters)
		err = evr_perf_counters_finish(sb->counters, emit, ctx);
	if (!err && sb->perf_map_fd < 0)
		sb->perf_map_fd = open_late_perf_map(sb);
	if (!err && sb->perf_map_fd >= 0)
		err = emit_perf_map(sb, emit, ctx);
	return err;
}

void evr_sideband_totals(const struct evr_sideband *sb, struct evr_sampler_totals *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (sb->sampler)
		evr_sampler_totals(sb->sampler, ret);
	snprintf(ret->note, sizeof(ret->note), "%s", sb->sampler_note);
}

bool evr_sideband_syscalls(const struct evr_sideband *sb, struct evr_syscall_info_rec *ret,
			   const char **note)
{
	if (!sb->syscalls)
		return false;
	evr_syscalls_info(sb->syscalls, ret);
	if (note)
		*note = sb->syscalls_note;
	return true;
}

bool evr_sideband_counters(const struct evr_sideband *sb, struct evr_perf_counters_totals *ret,
			   const char **pmu_note)
{
	if (pmu_note)
		*pmu_note = sb->pmu_note;
	if (!sb->counters) {
		memset(ret, 0, sizeof(*ret));
		return false;
	}
	evr_perf_counters_totals(sb->counters, ret);
	return true;
}
