/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Session memory: creation (producer), validation and mapping (any reader), and
 * the multi-ring reader used by consumers and by in-process sessions.
 */
#ifndef EVR_SHM_H
#define EVR_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <evring/abi.h>
#include <evring/reader.h>
#include <evring/ring.h>

#define EVR_META_SIZE_DEFAULT	(256u << 10)

struct evr_shm_geometry {
	uint32_t nr_rings;
	uint32_t packet_size;
	uint64_t ring_size;
	uint32_t mode;			/* enum evr_mode */
	uint32_t meta_size;		/* metadata area bytes; 0: EVR_META_SIZE_DEFAULT */
	uint32_t session_id;
	uint64_t session_serial;
	struct evr_clock_calib clock;
};

/**
 * evr_shm_geometry_check() - validate sizes before creating a session.
 * @g: the geometry.
 * @errbuf: receives one line naming the bad value, may be NULL.
 * @errlen: size of @errbuf.
 *
 * Return: 0, or -EINVAL.
 */
int evr_shm_geometry_check(const struct evr_shm_geometry *g, char *errbuf, size_t errlen);

/**
 * evr_shm_session_size() - the bytes of a session of geometry @g (header, ring
 * control blocks, metadata area, rings); @g need not be checked, but then the
 * product may wrap: check it first when its sizes are untrusted.
 */
uint64_t evr_shm_session_size(const struct evr_shm_geometry *g);

/**
 * evr_shm_session_create() - create, size, seal and map a session memfd.
 * The ring pages are not backed (no page is faulted in): the caller decides
 * which to back and when (MADV_POPULATE_WRITE on evr_shm_ring_data()).
 * @g: geometry, checked with evr_shm_geometry_check().
 * @ret_fd: the memfd (close-on-exec); the caller owns it.
 * @ret_hdr: the read-write mapping; unmap with evr_shm_session_unmap().
 *
 * Return: 0, or -errno (-EINVAL, -ENOMEM, -EMFILE...). Outputs untouched on failure.
 */
int evr_shm_session_create(const struct evr_shm_geometry *g, int *ret_fd,
			   struct evr_shm_hdr **ret_hdr);

/*
 * The address range evr_shm_session_map() reserves right below a session's
 * mapping (PROT_NONE, no memory): a consumer may map buffers of its own there
 * (MAP_FIXED), so that they and the session are one range. The recorder's
 * io_uring engine registers its stages and the session as one fixed buffer
 * that way, whose pages are those its reads already mapped (a second mapping
 * of the session would be faulted in again by the registration's pins and
 * unmapped again at the end: 8-11 ms of 64 MiB on the Intel guest).
 */
#define EVR_SHM_MAP_HEADROOM	((size_t)16 << 20)

/*
 * Every session mapping (the producer's and the consumers') starts on a
 * multiple of this, so that the producer's huge pages (producer/memory.c) map
 * as such everywhere.
 */
#define EVR_SHM_HUGE_SIZE	((size_t)2 << 20)

/**
 * evr_shm_session_map() - map a session memfd received from a producer.
 * @fd: the memfd; borrowed (the mapping stays valid after it is closed).
 * @ret_hdr: the validated mapping, right above a reserved range of
 * EVR_SHM_MAP_HEADROOM (evr_shm_session_headroom()); unmap with
 * evr_shm_session_unmap().
 *
 * Refuses an fd that is not sealed against shrinking (a producer could then make
 * the reader fault) and any header that is inconsistent with the fd's size.
 * Return: 0, -EBADMSG (bad header), -EPERM (not sealed), or -errno.
 */
int evr_shm_session_map(int fd, struct evr_shm_hdr **ret_hdr);

/**
 * evr_shm_session_validate() - check a header against the mapping size.
 * Return: 0, or -EBADMSG.
 */
int evr_shm_session_validate(const struct evr_shm_hdr *h, uint64_t map_size);

/**
 * evr_shm_meta_append() - append one metadata entry and publish it.
 * @h: the producer's mapping.
 * @kind: enum evr_meta_kind.
 * @data: @len payload bytes.
 * Return: 0, or -ENOSPC (counted in meta_dropped).
 * Context: the producer's single metadata writer (the registry lock).
 */
int evr_shm_meta_append(struct evr_shm_hdr *h, uint32_t kind, const void *data, uint32_t len);

/**
 * evr_shm_meta_next() - iterate the published metadata entries.
 * @h: a validated mapping.
 * @pos: in: where to start (0 at first); out: where the next entry starts.
 * @ret_kind, @ret_data, @ret_len: the entry; @ret_data points into the mapping.
 * Return: 1 an entry, 0 none published past @pos, -EBADMSG an entry that
 * overruns the published bytes (a hostile or broken producer).
 */
int evr_shm_meta_next(const struct evr_shm_hdr *h, uint64_t *pos, uint32_t *ret_kind,
		      const void **ret_data, uint32_t *ret_len);

/* Unmap a session mapping and its headroom; accepts NULL. A consumer gives
 * back what it mapped in the headroom first (PROT_NONE again, MAP_FIXED). */
void evr_shm_session_unmap(struct evr_shm_hdr *h);

/**
 * evr_shm_session_headroom() - the range reserved below @h.
 * @ret_len: its length (0 for a mapping of evr_shm_session_create()).
 * Return: its start (it ends at @h), or NULL.
 */
void *evr_shm_session_headroom(const struct evr_shm_hdr *h, size_t *ret_len);


/*
 * Raw spans: runs of whole published records of one ring inside one packet,
 * handed out in place for zero-copy recorders (shm/span.c). A span that starts
 * at a packet boundary includes the packet header.
 */
struct evr_shm_span {
	uint32_t ring;
	uint64_t pos;			/* ring byte position of data[0] */
	const void *data;		/* points into the mapping */
	uint32_t len;
	/* What the span holds, counted when it was handed out. */
	uint64_t events;		/* EVENT records */
	uint64_t lost;			/* events reported lost in it (LOST records, and a
					 * packet header's jump for a lapped reader) */
};

/*
 * The number of rings of mapping @h, and their published heads (at most @max),
 * by the geometry this process created or validated: never the header's
 * current fields, which the other side may have rewritten since. Return: the
 * rings (evr_shm_nr_rings()), the heads stored (evr_shm_read_heads()).
 * Context: any thread.
 */
uint32_t evr_shm_nr_rings(const struct evr_shm_hdr *h);

/**
 * evr_shm_geometry_of() - the header of mapping @h as it was when this process
 * created or validated it (evr_shm_session_create(), evr_shm_session_map()).
 * A mapping made some other way (tests building one by hand) is taken as it is
 * now: its maker vouches for it.
 * @ret: receives the copy; only its geometry fields are meaningful.
 * Context: any thread.
 */
void evr_shm_geometry_of(const struct evr_shm_hdr *h, struct evr_shm_hdr *ret);
uint32_t evr_shm_read_heads(const struct evr_shm_hdr *h, uint64_t *ret, uint32_t max);

struct evr_span_reader;

/**
 * evr_span_reader_new() - iterate the spans of every ring of a session.
 * @hdr: validated mapping; borrowed until evr_span_reader_free().
 * @flags: EVR_READER_GATING for the session's gating reader (discard mode):
 *         evr_span_reader_done() then hands the space back to the writers.
 *         Without it (overwrite mode) spans are checked against head after
 *         use, since the writers may lap the reader.
 * Return: 0, -EINVAL, -ENOMEM.
 */
int evr_span_reader_new(struct evr_shm_hdr *hdr, uint32_t flags, struct evr_span_reader **ret);
/* Accepts NULL. */
void evr_span_reader_free(struct evr_span_reader *sr);

/**
 * evr_span_reader_next() - the next span, rings taken round robin. Does not
 * consume it: evr_span_reader_done() does.
 * Return: 1 a span, 0 nothing published now, -EBUSY the previous span was not
 * done yet.
 */
int evr_span_reader_next(struct evr_span_reader *sr, struct evr_shm_span *ret);

/*
 * EVR_SPAN_WHOLE: hand out only spans that reach the end of their packet, when
 * the ring's next packet has begun; their counts come from the two packet
 * headers, without a walk over the records. A span may still start inside a
 * packet (after a partial one). Once the session ended or the producer is gone,
 * partial spans come out anyway: that is the rest of the data.
 */
#define EVR_SPAN_WHOLE 0x1u

/**
 * evr_span_reader_get() - evr_span_reader_next() with @flags (EVR_SPAN_WHOLE).
 * Return: 1 a span, 0 nothing ready now, -EBUSY, -EINVAL (unknown flags).
 */
int evr_span_reader_get(struct evr_span_reader *sr, uint32_t flags, struct evr_shm_span *ret);

/**
 * evr_span_reader_done() - consume the span evr_span_reader_next() returned.
 * Return: 0 intact, -ESTALE (overwrite mode) the writers may have reached it
 * while it was used: drop it; the reader resumes at the oldest intact packet,
 * whose header accounts for what was skipped. -EINVAL not the pending span.
 */
int evr_span_reader_done(struct evr_span_reader *sr, const struct evr_shm_span *sp);

/**
 * evr_span_reader_hold() - with @on, evr_span_reader_done() moves the reader
 * past a span but keeps its space from the writers (discard mode) until
 * evr_span_reader_release(): a recorder that writes several spans in one
 * system call (direct I/O) takes them all before any may be reused. Several
 * done spans per ring may be held; spans are still handed out one at a time.
 * Turning it off releases what is held. Overwrite mode has nothing to hold.
 */
void evr_span_reader_hold(struct evr_span_reader *sr, bool on);

/* Hand back the space of every span done so far (hold mode). Accepts NULL. */
void evr_span_reader_release(struct evr_span_reader *sr);

/* Where the reader stands on @ring: the end of the last span done (0: no such ring). */
uint64_t evr_span_reader_pos(const struct evr_span_reader *sr, uint32_t ring);

/*
 * evr_span_reader_release_to() - hand back the space of @ring below @pos only
 * (hold mode): a recorder with several writes in flight gives back a ring's
 * spans as the write that holds them completes. @pos is clamped to where the
 * reader stands; a @pos at or below what was released does nothing.
 */
void evr_span_reader_release_to(struct evr_span_reader *sr, uint32_t ring, uint64_t pos);

/* The most bytes any ring holds that the writers may not reuse yet (head - tail). */
uint64_t evr_span_reader_backlog(const struct evr_span_reader *sr);

/* The most bytes any ring holds that the reader has not taken (head - its position). */
uint64_t evr_span_reader_unread(const struct evr_span_reader *sr);

/**
 * evr_span_reader_arm() - the doorbell handshake of evr_span_reader_wait_fds()
 * without its sleep, for a caller that sleeps on many sessions' doorbells at
 * once (epoll): asks the writers to ring the doorbell when a packet completes,
 * then looks once more. Never paced: the caller decides which sessions are
 * armed (a session whose writers would ring often is better looked at on a
 * timer, leaving it unarmed).
 * Return: 1 a whole span waits, the session ended or nothing more will come
 * (do not sleep on it), 0 armed.
 */
int evr_span_reader_arm(struct evr_span_reader *sr);

/**
 * evr_span_reader_wait_fds() - sleep like evr_reader_wait_fds(): until a packet
 * completes on some ring and the next one has begun (doorbell handshake on
 * @doorbell_fd), the session ends, an @extra fd is ready, or @timeout_ms
 * passes. Data of packets still open waits for the timeout. A reader that
 * keeps up with a steady stream (an eighth of a ring within 50 ms) sleeps
 * on a timer instead, as long as the writers would have taken to ring (at the
 * rate it measured), and leaves the doorbell unarmed: the writers then make
 * no system call for it (evr_pace_ns() in shm/doorbell.h). In hold mode, as
 * long as they take to fill a sixteenth of a ring (evr_pace_batch_ns()).
 * Return: 1 woken, 0 timeout or data already there, -errno.
 */
int evr_span_reader_wait_fds(struct evr_span_reader *sr, int doorbell_fd, struct pollfd *extra,
			     unsigned int nextra, int timeout_ms);

/* How a span reader slept: on the doorbell, or paced by a timer. */
struct evr_span_wait_stats {
	uint64_t doorbell;
	uint64_t paced;
};

void evr_span_reader_wait_stats(const struct evr_span_reader *sr, struct evr_span_wait_stats *ret);

/* The producer died: finish once what it published is consumed. */
void evr_span_reader_producer_gone(struct evr_span_reader *sr);

/* True once the session ended (or the producer is gone) and every span is done. */
bool evr_span_reader_drained(struct evr_span_reader *sr);

/**
 * evr_span_reader_final_lost() - once drained: events lost on @ring that no
 * record in the spans accounts for (losses still pending in the producer when
 * the session ended, as its ring counters show).
 * Return: 0, -EAGAIN (not drained), -EINVAL (no such ring).
 */
int evr_span_reader_final_lost(struct evr_span_reader *sr, uint32_t ring, uint64_t *ret_count);

/* Packets abandoned because they failed validation. */
uint64_t evr_span_reader_corrupt(const struct evr_span_reader *sr);

/**
 * evr_span_walk() - count the EVENT records and the events reported by LOST
 * records in @len bytes of records that start at ring position @pos (a packet
 * header at @pos, recognized by its magic on a 16 KiB boundary, is skipped).
 * Every record size is checked against @len; an END record ends the walk.
 * Return: 0, or -EBADMSG (outputs untouched).
 */
int evr_span_walk(const void *data, uint32_t len, uint64_t pos, uint64_t *ret_events,
		  uint64_t *ret_lost);

#endif /* EVR_SHM_H */
