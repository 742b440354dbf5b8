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
 * evr_shm_session_create() - create, size, seal and map a session memfd.
 * @g: geometry, checked with evr_shm_geometry_check().
 * @ret_fd: the memfd (close-on-exec); the caller owns it.
 * @ret_hdr: the read-write mapping; unmap with evr_shm_session_unmap().
 *
 * Return: 0, or -errno (-EINVAL, -ENOMEM, -EMFILE...). Outputs untouched on failure.
 */
int evr_shm_session_create(const struct evr_shm_geometry *g, int *ret_fd,
			   struct evr_shm_hdr **ret_hdr);

/**
 * evr_shm_session_map() - map a session memfd received from a producer.
 * @fd: the memfd; borrowed (the mapping stays valid after it is closed).
 * @ret_hdr: the validated mapping; unmap with evr_shm_session_unmap().
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

/* Unmap a session mapping; accepts NULL. */
void evr_shm_session_unmap(struct evr_shm_hdr *h);

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

#endif /* EVR_SHM_H */
