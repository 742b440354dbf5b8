/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's io_uring engine (recorder-uring.c, docs/recorder.md "I/O
 * engine"): several direct-I/O batches in flight while the drain goes on
 * reading rings. A ring's space goes back to its writers only once the batch
 * holding its spans, and every batch before it, is in the file.
 */
#ifndef EVR_RECORDER_URING_H
#define EVR_RECORDER_URING_H

#include <stdbool.h>
#include <stdint.h>

#include <evring/consumer.h>
#include <evring/trace.h>

/* Batches in flight at most: then the drain waits for the oldest. */
#define EVR_URING_DEPTH		4u

struct evr_uring;

/* What the engine has measured (for the recorder's choice of I/O and its stats). */
struct evr_uring_stats {
	uint64_t durable;		/* bytes in the file: every batch up to there completed */
	uint64_t events;		/* the recorder's event count once those are in */
	uint64_t busy_ns;		/* time with a write in flight */
	uint64_t bytes;			/* bytes those writes took */
	uint64_t waited_ns;		/* time the drain waited for a free slot */
	uint64_t write_max_ns;		/* the longest write, from submission to completion */
	uint32_t in_flight;
	bool fixed;			/* the session and the stages are a registered buffer */
	uint64_t fixed_writes;		/* batches written from it (IORING_OP_WRITEV_FIXED) */
	bool prealloc;			/* the file's space was allocated ahead of the writes */
	int prealloc_err;		/* why not, or why it stopped: -errno, 0 */
};

/**
 * evr_uring_new() - an io_uring for direct writes to @fd (O_DIRECT already
 * set), restricted to vectored writes to that one file, so that what the
 * kernel does for the recorder stays within what its seccomp filter allows.
 * @events: the recorder's count of events in chunks handed to @w; read when a
 *          batch is submitted.
 * Installs itself as @w's submit engine (evr_trace_writer_set_submit()).
 * Return: 0; -EOPNOTSUPP built without liburing; the kernel's -ENOSYS,
 * -EPERM (io_uring_disabled, a seccomp filter, a container), -ENOMEM, -EINVAL
 * (an old kernel): the caller writes synchronously then.
 */
int evr_uring_new(int fd, struct evr_client *c, struct evr_trace_writer *w,
		  const uint64_t *events, uint32_t nr_rings, struct evr_uring **ret);

/* The eventfd that turns readable when a write completes (wake the drain). */
int evr_uring_fd(const struct evr_uring *u);

/* Writes in flight: only then is the eventfd worth waiting on (it may stay
 * readable from a completion already taken while nothing is in flight). */
uint32_t evr_uring_in_flight(const struct evr_uring *u);

/*
 * evr_uring_arm() - before sleeping on evr_uring_fd() with writes in flight:
 * clear the eventfd, then look whether a completion is already in.
 * Return: 1 one is (do not sleep), 0 the eventfd will say, -errno.
 */
int evr_uring_arm(struct evr_uring *u);

/**
 * evr_uring_reap() - take the completions (all in flight with @wait_all, else
 * only those ready, no system call when none), in file order: each batch
 * whose predecessors are in too gives its rings' space back. A failed or
 * short write fails the writer: once nothing is in flight any more, the file
 * is cut back (ftruncate) to the end of the last batch before it, where it
 * ends with a whole chunk.
 * Return: 0, or the write's -errno (-ENOSPC for a short write).
 */
int evr_uring_reap(struct evr_uring *u, bool wait_all);

void evr_uring_stats(const struct evr_uring *u, struct evr_uring_stats *ret);

/**
 * evr_uring_trim() - the end of the recording (or of its writes): allocate
 * no more space ahead, and cut the file back to @size, the bytes written,
 * where space was allocated ahead of the writes. Call with nothing in flight
 * (evr_uring_reap() with @wait_all first). Accepts NULL.
 * Return: 0, or ftruncate()'s -errno.
 */
int evr_uring_trim(struct evr_uring *u, uint64_t size);

/* Waits for what is in flight, then frees. Accepts NULL. */
void evr_uring_free(struct evr_uring *u);

#endif
