/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A set of perf events on one process's threads, written into one ring per CPU
 * (perf-ring.c): what the CPU sampler (sampler.c) and the system-call tracer
 * (syscalls.c) share.
 */
#ifndef EVR_PERF_RING_INTERNAL_H
#define EVR_PERF_RING_INTERNAL_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct evr_perf_set;

struct evr_perf_set_opts {
	pid_t pid;
	/* Every process: each attr once per CPU with pid -1 (no thread scan); pid is
	 * then only for messages. */
	bool cpu_wide;
	/* Opened on each (thread, CPU), in this order; inherit is expected set. */
	const struct perf_event_attr *attrs;
	uint32_t nattrs;
	uint32_t ring_pages;		/* data pages per CPU ring, a power of two */
	const char *what;		/* "sample", "trace the system calls of": for errors */
	/* Why perf_event_open() failed with errno @err, as " (...)", or "". */
	const char *(*hint)(int err);
	/* A tracepoint filter (PERF_EVENT_IOC_SET_FILTER) set on each event before it
	 * is enabled, or NULL. */
	const char *filter;
};

/**
 * evr_perf_set_new() - open @o->attrs on every (thread, CPU) of @o->pid with
 * one ring per CPU: the first event of each CPU owns it, the others write into
 * it (PERF_EVENT_IOC_SET_OUTPUT); every event is enabled on return. Threads
 * created later are covered by the events' inherit flag.
 * @ret: free with evr_perf_set_free().
 * Return: 0, -ESRCH (the process exited), -EACCES/-EPERM, -ENOMEM, -errno;
 * @errbuf says which.
 */
int evr_perf_set_new(const struct evr_perf_set_opts *o, struct evr_perf_set **ret,
		     char *errbuf, size_t errlen);

/*
 * Called for each whole record: in the ring itself (the kernel leaves it alone until the
 * drain ends), or a copy where it wraps the ring's end. 8-byte aligned either way; read it
 * with memcpy and keep no pointer into it. Non-zero stops the drain.
 */
typedef int evr_perf_rec_fn(void *ctx, const uint8_t *rec, const struct perf_event_header *h);

/**
 * evr_perf_set_drain() - hand every record the rings hold to @fn, then free
 * their space. Records larger than 4 KiB are skipped.
 * Return: 0 or what @fn returned. Context: only memory accesses.
 */
int evr_perf_set_drain(struct evr_perf_set *ps, evr_perf_rec_fn *fn, void *ctx);

uint32_t evr_perf_set_threads(const struct evr_perf_set *ps);	/* threads opened */
uint32_t evr_perf_set_cpus(const struct evr_perf_set *ps);	/* rings mapped */
/* The most bytes one ring holds unread, and the size of a ring (@ring_size). */
uint64_t evr_perf_set_fill(const struct evr_perf_set *ps, uint64_t *ring_size);

/**
 * evr_perf_set_fds() - the event descriptors, for ioctl()s on every event
 * (PERF_EVENT_IOC_SET_FILTER).
 */
const int *evr_perf_set_fds(const struct evr_perf_set *ps, uint32_t *n);

/* Descriptor @i of evr_perf_set_fds(): the index of its attr, and its thread. */
uint32_t evr_perf_set_fd_attr(const struct evr_perf_set *ps, uint32_t i, uint32_t *ret_tid);

void evr_perf_set_free(struct evr_perf_set *ps);

#endif /* EVR_PERF_RING_INTERNAL_H */
