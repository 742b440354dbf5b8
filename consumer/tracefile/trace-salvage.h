/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The trace reader's damaged files (trace-salvage.c): resync, salvage, END check. */
#ifndef EVR_TRACE_SALVAGE_H
#define EVR_TRACE_SALVAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-state.h"

/*
 * After a chunk header at @off that cannot be repaired: the offset of the next
 * valid chunk header (8-byte aligned, numbered @seq or later, inside the file).
 * Return: 1 found (*@ret_off, its number in *@ret_seq), 0 none, -errno.
 */
int evr_trace_resync(struct evr_trace_reader *r, uint64_t off, uint32_t seq, uint64_t *ret_off,
		     uint32_t *ret_seq);

/*
 * A chunk header of zeros at @off: is the file zeros from there to its end?
 * That is the space a recorder allocates ahead of its direct writes
 * (fallocate(), cut back when it stops), left behind by one that did not
 * stop (killed): the file ends there, undamaged. Zeros followed by anything
 * else are damage, as before.
 * Return: 1 zeros to the end, 0 not, -errno.
 */
int evr_trace_zero_tail(struct evr_trace_reader *r, uint64_t off);

/* Are these @len bytes all zero? */
bool evr_trace_all_zero(const void *p, size_t len);

/*
 * The scan skipped from the header beyond repair at @from to the valid one at
 * @to (after evr_trace_resync()): keep it for the chunk walk. Offsets rise
 * from call to call. Return: 0 or -ENOMEM.
 */
int evr_trace_note_skip(struct evr_trace_reader *r, uint64_t from, uint64_t to);

/* Where the chunk walk goes on from @off: past the skipped place that starts there, else @off. */
uint64_t evr_trace_skip_end(const struct evr_trace_reader *r, uint64_t off);

/*
 * A small chunk whose payload failed its CRC beyond repair: use what can be
 * trusted of it (@p, @len as read) and say what was skipped.
 * Return: 0 go on, 1 stop the scan here (nothing after it can be read), -errno.
 */
int evr_trace_salvage_small(struct evr_trace_reader *r, uint64_t off,
			    const struct evr_trace_chunk_hdr *h, const uint8_t *p, uint32_t len);

/* Once every view was returned: compare the END chunk's totals with them. */
void evr_trace_check_end(struct evr_trace_reader *r);

#endif /* EVR_TRACE_SALVAGE_H */
