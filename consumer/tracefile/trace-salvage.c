// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trace file reader: damaged files. A file is a sequence of chunks, each with a
 * CRC of its header and one of its payload, so damage is always detected; this
 * file decides what to make of it, and keeps the words for it.
 *
 * - One flipped bit (the most common damage a disk, a network copy or a memory
 *   error leaves) is repaired from the CRC it fails (evr_crc32c_fix1()): the
 *   chunk then reads as written, and the repair is reported.
 * - A chunk header beyond repair hides the chunk's length: the reader looks for
 *   the next valid header (its magic, its CRC and a chunk number no smaller
 *   than expected; ring bytes do not carry that by chance) and reads on there.
 * - A small chunk whose payload is damaged beyond repair gives what can be
 *   trusted: a METADATA chunk the descriptions that still decode (the others'
 *   events show as undescribed), a SESSION chunk its fields if they validate;
 *   thread names, a process description, a loss count, an END chunk are
 *   skipped. An EVENTS chunk beyond repair is skipped whole (trace-merge.c),
 *   and the next packet header of its ring accounts for its events.
 * - Removing chunks cleanly (CRCs and numbers made consistent) goes unseen by
 *   the CRCs, but not by the END chunk: it says how many events the recorder
 *   stored. What the file lacks of them is damage, and the LOST views that a
 *   missing chunk caused are counted as such (evr_trace_check_end()).
 * Every one of these is a line for evr_trace_reader_problems(), so that tools
 * say it; none is silent.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace-chunk.h"
#include "trace-salvage.h"
#include "trace-take.h"

#define RESYNC_BLOCK (64u * 1024u)

bool evr_trace_all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;

	/* Whole words first: a tail of zeros is up to a few hundred MiB. */
	for (; len >= 8; len -= 8, b += 8) {
		uint64_t v;

		memcpy(&v, b, sizeof(v));
		if (v)
			return false;
	}
	while (len--)
		if (*b++)
			return false;
	return true;
}

int evr_trace_zero_tail(struct evr_trace_reader *r, uint64_t off)
{
	uint8_t *buf = malloc(RESYNC_BLOCK);
	int ret = 1;

	if (!buf)
		return -ENOMEM;
	while (off < r->file_size) {
		uint64_t n = r->file_size - off < RESYNC_BLOCK ? r->file_size - off : RESYNC_BLOCK;

		ret = evr_trace_pread(r, buf, (size_t)n, off);
		if (ret)
			break;
		if (!evr_trace_all_zero(buf, (size_t)n)) {
			ret = 0;
			break;
		}
		off += n;
		ret = 1;
	}
	free(buf);
	return ret;
}

int evr_trace_resync(struct evr_trace_reader *r, uint64_t off, uint32_t seq, uint64_t *ret_off,
		     uint32_t *ret_seq)
{
	uint8_t *buf = malloc(RESYNC_BLOCK);
	uint64_t at = off + 8;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	/* Blocks overlap by a header, so a header across two blocks is seen. */
	while (at < r->file_size && r->file_size - at >= EVR_TRACE_CHUNK_HDR_SIZE) {
		uint64_t n = r->file_size - at < RESYNC_BLOCK ? r->file_size - at : RESYNC_BLOCK;

		ret = evr_trace_pread(r, buf, (size_t)n, at);
		if (ret)
			break;
		for (uint64_t i = 0; i + EVR_TRACE_CHUNK_HDR_SIZE <= n; i += 8) {
			struct evr_trace_chunk_hdr h;
			uint32_t magic;

			memcpy(&magic, buf + i, sizeof(magic));
			if (magic != EVR_TRACE_CHUNK_MAGIC)
				continue;
			memcpy(&h, buf + i, sizeof(h));
			if (!evr_trace_chunk_hdr_ok(&h) || !evr_trace_chunk_len_ok(h.kind, h.len))
				continue;
			/* Another process's chunk (format 2) has numbers of its own. */
			if (r->multi && evr_trace_chunk_stream(&h) != r->want) {
				*ret_off = at + i;
				*ret_seq = seq;
				free(buf);
				return 1;
			}
			if (h.seq < seq)
				continue;
			*ret_off = at + i;
			*ret_seq = h.seq;
			free(buf);
			return 1;
		}
		if (n < RESYNC_BLOCK)
			break;
		at += RESYNC_BLOCK - EVR_TRACE_CHUNK_HDR_SIZE;
	}
	free(buf);
	return ret;
}

int evr_trace_note_skip(struct evr_trace_reader *r, uint64_t from, uint64_t to)
{
	if (r->nskips == r->skips_cap) {
		uint32_t cap = r->skips_cap ? 2 * r->skips_cap : 8;
		struct evr_trace_skip *n;

		if (cap < r->skips_cap)
			return -ENOMEM;
		n = reallocarray(r->skips, cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->skips = n;
		r->skips_cap = cap;
	}
	r->skips[r->nskips++] = (struct evr_trace_skip){ .from = from, .to = to };
	return 0;
}

uint64_t evr_trace_skip_end(const struct evr_trace_reader *r, uint64_t off)
{
	uint32_t lo = 0, hi = r->nskips;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->skips[mid].from == off)
			return r->skips[mid].to;
		if (r->skips[mid].from < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return off;
}

int evr_trace_salvage_small(struct evr_trace_reader *r, uint64_t off,
			    const struct evr_trace_chunk_hdr *h, const uint8_t *p, uint32_t len)
{
	const unsigned long long o = (unsigned long long)off;
	uint32_t used = 0, skipped = 0;
	char err[160];
	int ret;

	if (len != h->len)
		return 1;	/* not read at all */
	switch (h->kind) {
	case EVR_CHUNK_SESSION:
		/* Without it nothing can be read: use it if every field validates. */
		if (r->has_session)
			return 1;
		ret = evr_trace_take_session(r, p, len, err, sizeof(err), off);
		if (ret == -EBADMSG)
			return 1;
		if (ret)
			return ret;
		r->salvaged_chunks++;
		evr_trace_problem(r, "SESSION chunk at offset %llu is damaged beyond repair; its "
				  "fields validate and are used, but timestamps may be off", o);
		return 0;
	case EVR_CHUNK_METADATA:
		ret = evr_trace_take_metadata_lenient(r, p, len, &used, &skipped);
		if (ret)
			return ret;
		r->salvaged_chunks++;
		evr_trace_problem(r, "METADATA chunk at offset %llu is damaged beyond repair: %u event "
				  "descriptions still decode and are used (a name or a field type in "
				  "them may be wrong), %u skipped (their events show as undescribed)",
				  o, used, skipped);
		return 0;
	case EVR_CHUNK_PROCESS:
		evr_trace_problem(r, "PROCESS chunk at offset %llu is damaged beyond repair: skipped "
				  "(the traced process is unknown)", o);
		break;
	case EVR_CHUNK_THREADS:
		evr_trace_problem(r, "THREADS chunk at offset %llu is damaged beyond repair: skipped "
				  "(some threads may have no name)", o);
		break;
	case EVR_CHUNK_LOST:
		evr_trace_problem(r, "LOST chunk at offset %llu is damaged beyond repair: skipped "
				  "(a count of events lost at the end of a ring is unknown)", o);
		break;
	case EVR_CHUNK_DISCARD:
		/* The recorder writes a DISCARD right after the chunk it retracts. */
		if (r->last_events_off != UINT64_MAX && r->last_events_ring != UINT32_MAX &&
		    r->last_chunk_off == r->last_events_off) {
			struct evr_trace_ring *ring = &r->rings[r->last_events_ring];

			if (ring->nchunks && ring->chunks[ring->nchunks - 1] == r->last_events_off)
				ring->nchunks--;
		}
		r->last_events_off = UINT64_MAX;
		evr_trace_problem(r, "DISCARD chunk at offset %llu is damaged beyond repair: the "
				  "EVENTS chunk before it was retracted, as a DISCARD always names it",
				  o);
		break;
	case EVR_CHUNK_SYNC:
		evr_trace_problem(r, "SYNC chunk at offset %llu is damaged beyond repair: skipped "
				  "(times convert with the clock sync points around it)", o);
		break;
	case EVR_CHUNK_END:
		r->end_damaged = true;
		evr_trace_problem(r, "END chunk at offset %llu is damaged beyond repair: the "
				  "recorder's totals are unknown", o);
		break;
	default:
		return 1;
	}
	r->salvaged_chunks++;
	r->damage_since_events = true;
	return 0;
}

void evr_trace_check_end(struct evr_trace_reader *r)
{
	uint64_t e = r->out_events, l = r->out_lost, E, L;

	if (r->end_checked)
		return;
	r->end_checked = true;
	if (!r->has_end)
		return;
	E = r->end.events;
	L = r->end.lost;
	if (E > e) {
		/*
		 * Events the recorder stored that are not here. Those behind a
		 * packet header that was read came out as LOST views (the header
		 * counts them); those after a ring's last readable header did not.
		 */
		uint64_t unseen = E + L > e + l ? E + L - (e + l) : 0;

		r->damaged_events = E - e;
		r->lost_damaged = r->damaged_events > unseen ? r->damaged_events - unseen : 0;
		if (r->lost_damaged > l)
			r->lost_damaged = l;
		evr_trace_problem(r, "the END chunk says the recorder stored %llu events and lost "
				  "%llu; %llu events are not in the file (damage, not loss: the "
				  "file lost them, not the recording)", (unsigned long long)E,
				  (unsigned long long)L, (unsigned long long)(E - e));
	} else if (e > E || e + l != E + L) {
		evr_trace_problem(r, "the END chunk says %llu events and %llu lost, the file holds "
				  "%llu events and %llu lost: it does not match its recording",
				  (unsigned long long)E, (unsigned long long)L,
				  (unsigned long long)e, (unsigned long long)l);
	}
}

int evr_trace_reader_problems(const struct evr_trace_reader *r, evr_trace_problem_fn *fn,
			      void *arg)
{
	char line[512];
	int n = 0;

	if (!r || !fn)
		return -EINVAL;
	if (r->truncated) {
		snprintf(line, sizeof(line), "truncated after byte %llu (%s): read up to its last "
			 "complete chunk", (unsigned long long)r->good_end, r->truncated_why);
		fn(arg, line);
		n++;
	}
	for (uint32_t i = 0; i < r->nproblems; i++, n++)
		fn(arg, r->problems[i]);
	if (r->problems_dropped) {
		snprintf(line, sizeof(line), "and %u more damaged places", r->problems_dropped);
		fn(arg, line);
		n++;
	}
	if (r->corrupt_chunks || r->corrupt_packets) {
		snprintf(line, sizeof(line), "%llu EVENTS chunks damaged beyond repair and %llu "
			 "packets holding invalid records were skipped (their events are counted "
			 "lost)", (unsigned long long)r->corrupt_chunks,
			 (unsigned long long)r->corrupt_packets);
		fn(arg, line);
		n++;
	}
	return n;
}
