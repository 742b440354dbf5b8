/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a session's rings: the records a reader returns and the reader over every ring
 * of a session, for in-process sessions (evr_session_reader_new(), <evring/evring.h>) and
 * for consumers in another process (libevring-consumer). Exported by both libraries.
 */
#ifndef EVR_READER_H
#define EVR_READER_H

#include <stdbool.h>
#include <stdint.h>

#include <evring/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One decoded record, as returned by evr_ring_reader_next(). */
struct evr_record {
	uint32_t type;		/* EVR_REC_EVENT or EVR_REC_LOST */
	uint32_t event_id;
	uint32_t tid;
	uint32_t ring;		/* ring index (the CPU the ring serves) */
	uint64_t ts;		/* raw timestamp */
	uint64_t lost;		/* LOST: number of events lost here */
	const void *payload;	/* EVENT: borrowed until the next call on this reader */
	uint32_t len;
	uint32_t flags;		/* EVENT: the header's flags (EVR_REC_F_*); with EVR_REC_F_STACK
				 * the payload starts with the stack block (<evring/abi.h>) */
};

enum evr_reader_flags {
	/* The reader gates the writer (discard mode): it reads in place and releases
	 * space with evr_ring_reader_release(). At most one per session. Without it,
	 * the reader is a passive tap and copies-then-validates every record. */
	EVR_READER_GATING = 1u << 0,
	/* The reader belongs to the session since its creation (a consumer reading
	 * the session it started): everything written before its first read is its
	 * own, so it starts at position 0 and counts whatever it finds overwritten
	 * as lost, instead of taking a baseline like a tap that joins later. */
	EVR_READER_FROM_START = 1u << 1,
};

/* ------------------------------------------------------------------------- */
/* Reader over every ring of a session.                                      */

struct evr_reader;

struct evr_reader_stats {
	uint64_t events;	/* EVENT records returned */
	uint64_t lost;		/* events reported lost (LOST records returned) */
	uint64_t corrupt;	/* packets abandoned because they failed validation */
};

/**
 * evr_reader_new() - read every ring of a mapped session.
 * @hdr: validated mapping; borrowed until evr_reader_free().
 * @doorbell_fd: the session's eventfd for evr_reader_wait(), or -1; borrowed.
 * @flags: EVR_READER_GATING for the session's one gating reader (discard mode).
 * @ret: free with evr_reader_free().
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int evr_reader_new(struct evr_shm_hdr *hdr, int doorbell_fd, uint32_t flags,
		   struct evr_reader **ret);

/* Accepts NULL. */
void evr_reader_free(struct evr_reader *r);

/**
 * evr_reader_next() - next record from any ring (ring order, not time order).
 * @ret: an EVENT (payload borrowed until the next call) or a LOST record.
 *
 * Once the producer has ended the session and every ring is drained, losses
 * that could not be reported in-band (ring full at the end) come back as LOST
 * records, then evr_reader_ended() turns true.
 * Return: 1 a record, 0 nothing available now.
 */
int evr_reader_next(struct evr_reader *r, struct evr_record *ret);

/* Gating readers: hand the space of everything read back to the writers. */
void evr_reader_release(struct evr_reader *r);

/**
 * evr_reader_wait() - sleep until a packet completes, the session ends, or
 * @timeout_ms passes (-1: no limit). Data in a packet still being written does
 * not end the wait: callers that want it read it after the timeout. Uses the
 * doorbell handshake: at most one wake-up per completed packet, none per event.
 * Return: 1 woken by the doorbell, 0 timeout or data already there, -errno.
 */
int evr_reader_wait(struct evr_reader *r, int timeout_ms);

/* True once the session ended and everything, including final losses, was read. */
bool evr_reader_ended(const struct evr_reader *r);

void evr_reader_get_stats(const struct evr_reader *r, struct evr_reader_stats *ret);

/* Consumers in another process (libevring-consumer). */
struct pollfd;

/**
 * evr_reader_wait_fds() - evr_reader_wait() that also wakes up for @extra
 * (e.g. the producer's pidfd and the control socket).
 * @extra: @nextra entries, their revents are set on return; may be NULL.
 * Return: 1 woken by the doorbell or an @extra fd, 0 timeout or data already
 * there, -errno.
 */
int evr_reader_wait_fds(struct evr_reader *r, struct pollfd *extra, unsigned int nextra,
			int timeout_ms);

/**
 * evr_reader_producer_gone() - the producer died without ending the session:
 * read what it published, then report the losses its ring counters show and
 * finish as if the session had ended (evr_reader_ended() turns true).
 */
void evr_reader_producer_gone(struct evr_reader *r);

#ifdef __cplusplus
}
#endif

#endif /* EVR_READER_H */
