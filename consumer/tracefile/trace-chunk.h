/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The trace reader's bottom layer (trace-chunk.c): reading chunks and checking
 * them (CRCs, one-bit repairs, kinds and lengths), and the words the reader
 * keeps about damage. Every other file of the reader builds on it.
 */
#ifndef EVR_TRACE_CHUNK_H
#define EVR_TRACE_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-format.h"
#include "trace-state.h"

/*
 * Write "fmt..." to @buf (may be NULL): the reader's one-line errors. Hidden:
 * the version script's evr_trace_* would export it, and it is no API.
 */
__attribute__((format(printf, 3, 4), visibility("hidden")))
void evr_trace_set_err(char *buf, size_t len, const char *fmt, ...);

/* pread exactly @len bytes at @off; -EIO if the file is shorter now. */
int evr_trace_pread(struct evr_trace_reader *r, void *buf, size_t len, uint64_t off);

/* Grow *@buf to hold @need bytes. */
int evr_trace_buf_reserve(uint8_t **buf, uint32_t *cap, uint32_t need);

/* The name of a chunk kind, "unknown" for kinds this reader does not know. */
const char *evr_trace_kind_name(uint32_t kind);

/*
 * Read the chunk at @off (header and payload) into *@buf and check both CRCs,
 * its kind and its length. A payload one flipped bit away from its CRC is
 * repaired in *@buf (and said, evr_trace_problem()). Return: 0, -EBADMSG (@why
 * says what; after a payload CRC mismatch the payload is in *@buf, its length
 * in *@ret_len), -EIO, -ENOMEM.
 */
int evr_trace_load_chunk(struct evr_trace_reader *r, uint64_t off, uint32_t kind, uint8_t **buf,
			 uint32_t *cap, uint32_t *ret_len, const char **why);

/*
 * Check the payload @buf of the chunk @h at @off against its CRC, repairing one
 * flipped bit in place (and saying so). Return: 0, -EBADMSG (@why says what).
 */
int evr_trace_check_payload(struct evr_trace_reader *r, uint64_t off,
			    const struct evr_trace_chunk_hdr *h, uint8_t *buf, const char **why);

/* Stop reading at @off: the file is readable up to there, truncated_why says why. */
__attribute__((format(printf, 3, 4)))
void evr_trace_stop_at(struct evr_trace_reader *r, uint64_t off, const char *fmt, ...);

/* Ring and position of an EVENTS chunk of @len payload bytes fit the session. */
bool evr_trace_events_rec_fits(const struct evr_trace_reader *r,
			       const struct evr_trace_events_rec *rec, uint32_t len);

/* A line about damage for evr_trace_reader_problems() (the first few are kept). */
__attribute__((format(printf, 2, 3)))
void evr_trace_problem(struct evr_trace_reader *r, const char *fmt, ...);

/* A repair at @off: true the first time (count and say it), false if said already. */
bool evr_trace_note_repair(struct evr_trace_reader *r, uint64_t off);

/* Repair @h in place if one flipped bit (data or CRC) keeps it from validating. */
bool evr_trace_chunk_hdr_fix(struct evr_trace_chunk_hdr *h);

/*
 * A chunk header at @off that does not validate: repair it in @h if one bit is
 * flipped and say so (return true), else false.
 */
bool evr_trace_repair_hdr(struct evr_trace_reader *r, uint64_t off, struct evr_trace_chunk_hdr *h);

#endif /* EVR_TRACE_CHUNK_H */
