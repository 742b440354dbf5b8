/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private to shm/: the sleep shared by the record and span readers. */
#ifndef EVR_SHM_DOORBELL_H
#define EVR_SHM_DOORBELL_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

/* The most extra fds a *_wait_fds() call accepts. */
#define EVR_WAIT_EXTRA_MAX 8u

/*
 * evr_doorbell_poll() - poll @doorbell_fd and the @nextra (<= EVR_WAIT_EXTRA_MAX)
 * entries of @extra for @timeout_ms, after the caller armed the doorbell
 * handshake and found nothing to read. Sets the revents of @extra and drains
 * the eventfd counter if it fired.
 * Return: 1 woken, 0 timeout or EINTR, -errno.
 * Context: the reader's thread.
 */
int evr_doorbell_poll(int doorbell_fd, struct pollfd *extra, unsigned int nextra, int timeout_ms);

/* The same with a timeout in nanoseconds (>= 0). */
int evr_doorbell_poll_ns(int doorbell_fd, struct pollfd *extra, unsigned int nextra,
			 uint64_t timeout_ns);

/* A paced reader sleeps at least this long (below, it would spin). */
#define EVR_PACE_MIN_NS 50000ull
/* Writers slower than an eighth of a ring in this long get the doorbell. */
#define EVR_PACE_MAX_NS 50000000ull

/**
 * evr_pace_ns() - how long a reader may sleep on a timer instead of the
 * doorbell, having consumed @bytes since its previous wait began, @ns ago:
 * at that rate, as long as the writers would have taken to ring it (a packet
 * of @packet_size, and at most once per EVR_RING_BELL_INTERVAL_US), but never
 * longer than they take to fill an eighth of a ring of @ring_size bytes, and
 * at least EVR_PACE_MIN_NS; 0 (use the doorbell) when nothing was consumed or
 * an eighth takes longer than EVR_PACE_MAX_NS.
 *
 * Why: every doorbell is a write() on the writer's CPU, and waking a reader
 * whose CPU idles costs it more (an IPI: 12 us a ring in the KVM guest this
 * was measured on). A writer closing packets at 1000 a second (64 KiB packets
 * at 64 MB/s), with a reader waiting after each, pays that for each packet:
 * 12 ms a second, 1.2% of its CPU. A reader that keeps up with a steady
 * stream knows when the next packet will be there: it wakes as often as the
 * doorbell would have woken it, and the writers never see it waiting. When
 * the stream slows, the next wait finds less than it expected and arms the
 * doorbell again.
 * Context: pure.
 */
uint64_t evr_pace_ns(uint64_t ring_size, uint32_t packet_size, uint64_t bytes, uint64_t ns);

/**
 * evr_pace_batch_ns() - how long a reader that gathers what it reads into
 * batches (a direct-I/O recorder, whose spans keep their space until the batch
 * is written) may sleep on a timer, having consumed @bytes since its previous
 * wait began, @ns ago: as long as the writers take to fill a sixteenth of a
 * ring of @ring_size bytes at that rate, at least EVR_PACE_MIN_NS; 0 (the
 * doorbell) as evr_pace_ns() says it.
 *
 * Why: such a reader does nothing with a packet as it comes but add it to a
 * batch of several (4 MiB); woken by each packet's doorbell (at most one a
 * millisecond), it woke about 1,100 times a second at 500 MB/s, and each
 * doorbell was also a write() on the writer's CPU. Paced by a sixteenth of
 * its 32 MiB rings (4 ms there), on a 2-vCPU Intel KVM guest: 320 wakes a
 * second, the recorder's CPU per event 7.6-8.2 -> 6.6-7.2 ns and the traced
 * process's system time 0.33-0.54 -> 0.10-0.15 s for 160 M events
 * (docs/recorder.md, "Waking up").
 * A sixteenth, not an eighth: what it holds (up to five batches) fills the
 * rings beyond what it measures.
 * Context: pure.
 */
uint64_t evr_pace_batch_ns(uint64_t ring_size, uint64_t bytes, uint64_t ns);

/* A reader's pacing state: when its last wait began, and what it had consumed. */
struct evr_pace {
	uint64_t wait_ns;		/* CLOCK_MONOTONIC, 0 before the first wait */
	uint64_t consumed;
};

/**
 * evr_pace_next() - at the start of a wait, with @consumed bytes consumed so
 * far (all rings): the paced sleep (evr_pace_ns(), or evr_pace_batch_ns() for
 * a reader that gathers batches, @batch), at most @timeout_ms when that is
 * >= 0, or 0 for the doorbell (also with @timeout_ms 0: no sleep).
 * Updates @p.
 */
uint64_t evr_pace_next(struct evr_pace *p, uint64_t ring_size, uint32_t packet_size,
		       uint64_t consumed, int timeout_ms, bool batch);

#endif /* EVR_SHM_DOORBELL_H */
