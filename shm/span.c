// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Raw spans for zero-copy recorders: runs of whole published records of one
 * ring, inside one packet, handed out where they lie in the mapping.
 *
 * Protocol (see <evring/ring.h> for the writer's side):
 *  - a span ends at min(head, end of its packet), head load-acquired (pairs
 *    with the writer's store-release of head), so every byte in it is a
 *    complete record; records never straddle packets, so neither do spans;
 *  - gating reader (discard mode): writers never pass tail + ring_size, so a
 *    span stays intact until evr_span_reader_done() store-releases tail past
 *    it (pairs with the writer's load-acquire of tail);
 *  - passive reader (overwrite mode): writers may lap it. A writer only
 *    touches positions below head + packet_size, so bytes below
 *    head - (ring_size - packet_size) may be rewritten at any time. After
 *    using a span the reader issues an acquire fence (pairs with the writer's
 *    release fence F1) and re-loads head; if the span start fell below that
 *    bound, it may have been overwritten: -ESTALE, and the reader resumes at
 *    the oldest packet surely intact. That packet's header carries the
 *    cumulative event and loss counts, so what was skipped stays exact.
 *
 * Whole packets (EVR_SPAN_WHOLE): a recorder moves packets, not records. Once
 * the next packet of the ring has begun (head is past its header), the packet
 * before it is complete, and the two headers say how many events and losses
 * it holds (events_before and lost_before are cumulative): it is handed out
 * whole, from where the reader stands to the packet's end, without looking at
 * a single record. Only the part of a packet still being filled is walked
 * record by record, when the caller asks for it (a flush, or the session's
 * end). A packet whose next header does not add up is walked as well, which
 * finds what is wrong with it.
 * Records are read with relaxed 8-byte atomic loads: a lapped reader races
 * with the writer by design, and validates afterwards.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <evring/shm.h>

#include "shm-internal.h"

#include "doorbell.h"

struct span_ring {
	struct evr_ring_ctl *ctl;
	const uint8_t *data;
	uint64_t pos;			/* next byte to hand out */
	uint64_t events;		/* event records accounted (headers + records done) */
	uint64_t lost;			/* losses accounted */
	bool in_packet;			/* pos is inside a packet whose header was seen */
	bool held;			/* hold mode: tail is behind pos */
};

struct evr_span_reader {
	struct evr_shm_hdr *hdr;
	uint64_t ring_size;
	uint32_t packet_size;
	uint32_t nr, cur, flags;
	bool gone;
	bool drained;
	bool pending;			/* a span is out, not done yet */
	bool hold;			/* done spans keep their space until release */
	struct evr_shm_span out;
	/* ring state to apply when the pending span is done */
	uint64_t next_pos, next_events, next_lost;
	bool next_in_packet;
	uint64_t corrupt;
	uint64_t consumed;		/* bytes of spans done, all rings (pacing) */
	struct evr_pace pace;
	struct evr_span_wait_stats waits;
	struct span_ring *rings;
};

static uint64_t load_u64(const uint8_t *p)
{
	return __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_RELAXED);
}

int evr_span_reader_new(struct evr_shm_hdr *hdr, uint32_t flags, struct evr_span_reader **ret)
{
	struct evr_span_reader *sr;
	struct evr_shm_hdr geo;

	if (!hdr || !ret)
		return -EINVAL;
	evr_shm_geometry_of(hdr, &geo);
	if (geo.nr_rings == 0)
		return -EINVAL;
	sr = calloc(1, sizeof(*sr));
	if (!sr)
		return -ENOMEM;
	sr->rings = calloc(geo.nr_rings, sizeof(*sr->rings));
	if (!sr->rings) {
		free(sr);
		return -ENOMEM;
	}
	/* The geometry as validated: the mapping stays writable by a hostile producer. */
	sr->hdr = hdr;
	sr->ring_size = geo.ring_size;
	sr->packet_size = geo.packet_size;
	sr->nr = geo.nr_rings;
	sr->flags = flags;
	for (uint32_t i = 0; i < sr->nr; i++) {
		struct span_ring *rg = &sr->rings[i];

		rg->ctl = evr_shm_geo_ctl(hdr, &geo, i);
		rg->data = evr_shm_geo_data(hdr, &geo, i);
		if (flags & EVR_READER_GATING)
			rg->pos = __atomic_load_n(&rg->ctl->tail, __ATOMIC_ACQUIRE);
	}
	*ret = sr;
	return 0;
}

void evr_span_reader_free(struct evr_span_reader *sr)
{
	if (!sr)
		return;
	free(sr->rings);
	free(sr);
}

static bool passive(const struct evr_span_reader *sr)
{
	return !(sr->flags & EVR_READER_GATING);
}

/* Oldest position a passive reader may trust given head @h. */
static uint64_t first_safe(const struct evr_span_reader *sr, uint64_t h)
{
	return evr_ring_first_safe(sr->ring_size, sr->packet_size, h);
}

static uint64_t packet_end(const struct evr_span_reader *sr, uint64_t pos)
{
	uint64_t end = (pos | (sr->packet_size - 1)) + 1;

	/* Saturate under a hostile head near 2^64 rather than wrap to 0. */
	return end ? end : UINT64_MAX;
}

/* Passive readers: after reading at @pos, were those bytes still intact? */
static bool still_intact(const struct evr_span_reader *sr, const struct span_ring *rg,
			 uint64_t pos)
{
	/* Pairs with the writer's release fence F1 (<evring/ring.h>). */
	atomic_thread_fence(memory_order_acquire);
	/* Pairs with the writer's store-release of head. */
	return pos >= first_safe(sr, __atomic_load_n(&rg->ctl->head, __ATOMIC_ACQUIRE));
}

static void store_tail(const struct evr_span_reader *sr, struct span_ring *rg)
{
	if (sr->flags & EVR_READER_GATING)
		/* Pairs with the writer's load-acquire of tail: we are done with the
		 * bytes below pos before it may reuse them. */
		__atomic_store_n(&rg->ctl->tail, rg->pos, __ATOMIC_RELEASE);
}

/* Hand the space below pos back to the writers, or in hold mode note it. */
static void release_tail(const struct evr_span_reader *sr, struct span_ring *rg)
{
	if (sr->hold) {
		rg->held = true;
		return;
	}
	store_tail(sr, rg);
}

static void skip_packet(struct evr_span_reader *sr, struct span_ring *rg, bool bad)
{
	sr->corrupt += bad;
	rg->pos = packet_end(sr, rg->pos);
	rg->in_packet = false;
	release_tail(sr, rg);
}

/*
 * Walk the records in [@p, @limit) of @rg, all inside one packet and below
 * head. Stops at an END record (the packet is then complete up to its end) or
 * at the first record that is not valid. Returns where the valid records end.
 */
static uint64_t walk(const struct evr_span_reader *sr, const struct span_ring *rg, uint64_t p,
		     uint64_t limit, bool *ret_end, bool *ret_bad, uint64_t *events, uint64_t *lost)
{
	const uint64_t rmask = sr->ring_size - 1;

	*ret_end = false;
	*ret_bad = false;
	while (p < limit) {
		uint64_t w0 = load_u64(rg->data + (p & rmask));
		uint32_t size = (uint32_t)(w0 & 0xffff);
		uint32_t type = (uint32_t)(w0 >> 16) & 0xff;
		uint64_t asize = evr_align8(size);
		uint32_t min = evr_rec_min_size(type);

		if (!min || size < min) {
			*ret_bad = true;
			return p;
		}
		if (type == EVR_REC_END) {
			/* The writer publishes the packet's end right after its END. */
			if (packet_end(sr, p) > limit) {
				*ret_bad = true;
				return p;
			}
			*ret_end = true;
			return packet_end(sr, p);
		}
		if (size > EVR_MAX_RECORD || asize > limit - p) {
			*ret_bad = true;
			return p;
		}
		if (type == EVR_REC_EVENT)
			(*events)++;
		else if (type == EVR_REC_LOST)
			*lost += load_u64(rg->data + ((p + EVR_REC_HDR_SIZE) & rmask));
		p += asize;
	}
	return p;
}

/* Copy the packet header at ring position @pos (relaxed loads: see the top). */
static void load_packet_hdr(const struct evr_span_reader *sr, const struct span_ring *rg,
			    uint64_t pos, struct evr_packet_hdr *ph)
{
	for (uint32_t i = 0; i < EVR_PACKET_HDR_SIZE; i += 8) {
		uint64_t v = load_u64(rg->data + ((pos + i) & (sr->ring_size - 1)));

		memcpy((uint8_t *)ph + i, &v, 8);
	}
}

/*
 * The header of the packet after the one ending at @pe, when it is published:
 * does it account for the packet's records from @pos (where @events and @lost
 * were the ring's counts) to @pe? Return: true, with the counts in @ret.
 */
static bool next_hdr_counts(const struct evr_span_reader *sr, const struct span_ring *rg,
			    uint32_t index, uint64_t pos, uint64_t pe, uint64_t events,
			    uint64_t lost, struct evr_packet_hdr *ret)
{
	load_packet_hdr(sr, rg, pe, ret);
	/* A record takes at least EVR_REC_HDR_SIZE bytes: no more events than that. */
	return ret->magic == EVR_PACKET_MAGIC && ret->ring_index == index &&
	       ret->seq == pe / sr->packet_size && ret->events_before >= events &&
	       ret->lost_before >= lost &&
	       ret->events_before - events <= (pe - pos) / EVR_REC_HDR_SIZE;
}

/*
 * Try to cut the next span from @rg. @partial: a span may end before its
 * packet does (else only whole rests of packets, counted by the next header).
 * Return 1 (in sr->out), 0 nothing now.
 */
static int ring_span(struct evr_span_reader *sr, uint32_t index, bool partial)
{
	struct span_ring *rg = &sr->rings[index];
	const uint64_t pmask = sr->packet_size - 1;

	for (;;) {
		/* Pairs with the writer's store-release of head. */
		uint64_t head = __atomic_load_n(&rg->ctl->head, __ATOMIC_ACQUIRE);
		uint64_t pos = rg->pos, start, limit, end, pe;
		uint64_t events = rg->events, lost = rg->lost, ev_in = 0, lost_in = 0, missed = 0;
		bool at_end, bad;

		if (pos == head)
			return 0;
		if (head < pos) {
			/* Skipped past head out of a bad packet, or head went back. */
			sr->corrupt++;
			rg->pos = head;
			rg->in_packet = false;
			release_tail(sr, rg);
			return 0;
		}
		if ((passive(sr) && pos < first_safe(sr, head)) || head - pos > sr->ring_size) {
			/* Lapped: resume at the oldest packet surely intact. */
			rg->pos = (first_safe(sr, head) + pmask) & ~pmask;
			rg->in_packet = false;
			if (rg->pos >= head)
				return 0;
			continue;
		}
		start = pos;
		pe = packet_end(sr, pos);
		if (!partial && (head < pe || head - pe < EVR_PACKET_HDR_SIZE))
			return 0;	/* the packet is not complete, or its successor not begun */
		if ((pos & pmask) == 0) {
			struct evr_packet_hdr ph;

			if (head - pos < EVR_PACKET_HDR_SIZE) {
				skip_packet(sr, rg, true);
				continue;
			}
			load_packet_hdr(sr, rg, pos, &ph);
			if (passive(sr) && !still_intact(sr, rg, pos))
				continue;
			if (ph.magic != EVR_PACKET_MAGIC || ph.seq != pos / sr->packet_size ||
			    ph.ring_index != index || ph.events_before < rg->events ||
			    ph.lost_before < rg->lost) {
				skip_packet(sr, rg, true);
				continue;
			}
			/* What a lapped reader skipped, exactly, from the cumulative counts. */
			missed = (ph.events_before - rg->events) + (ph.lost_before - rg->lost);
			events = ph.events_before;
			lost = ph.lost_before;
			pos += EVR_PACKET_HDR_SIZE;
		} else if (!rg->in_packet) {
			skip_packet(sr, rg, false);
			continue;
		}
		if (head >= pe && head - pe >= EVR_PACKET_HDR_SIZE) {
			struct evr_packet_hdr nh;
			bool ok = next_hdr_counts(sr, rg, index, pos, pe, events, lost, &nh);

			/* The next header lies above start: intact if start still is. */
			if (passive(sr) && !still_intact(sr, rg, start))
				continue;
			if (ok) {
				sr->out = (struct evr_shm_span){
					.ring = index,
					.pos = start,
					.data = rg->data + (start & (sr->ring_size - 1)),
					.len = (uint32_t)(pe - start),
					.events = nh.events_before - events,
					.lost = missed + (nh.lost_before - lost),
				};
				sr->next_events = nh.events_before;
				sr->next_lost = nh.lost_before;
				sr->next_pos = pe;
				sr->next_in_packet = false;
				return 1;
			}
			/* Does not add up: the walk below finds out what is wrong. */
		}
		limit = pe;
		if (limit > head)
			limit = head;
		end = walk(sr, rg, pos, limit, &at_end, &bad, &ev_in, &lost_in);
		if (passive(sr) && !still_intact(sr, rg, start))
			continue;	/* what we walked may be garbage: resync */
		if (end == start) {
			/* Nothing valid here: the first record is bad. */
			skip_packet(sr, rg, true);
			continue;
		}
		sr->out = (struct evr_shm_span){
			.ring = index,
			.pos = start,
			.data = rg->data + (start & (sr->ring_size - 1)),
			.len = (uint32_t)(end - start),
			.events = ev_in,
			.lost = missed + lost_in,
		};
		sr->next_events = events + ev_in;
		sr->next_lost = lost + lost_in;
		sr->next_pos = bad ? packet_end(sr, end) : end;
		sr->next_in_packet = !bad && !at_end && (end & pmask) != 0;
		sr->corrupt += bad;
		return 1;
	}
}

int evr_span_reader_next(struct evr_span_reader *sr, struct evr_shm_span *ret)
{
	return evr_span_reader_get(sr, 0, ret);
}

int evr_span_reader_get(struct evr_span_reader *sr, uint32_t flags, struct evr_shm_span *ret)
{
	bool ended;

	if (!sr || !ret || (flags & ~EVR_SPAN_WHOLE))
		return -EINVAL;
	if (sr->pending)
		return -EBUSY;
	if (sr->drained)
		return 0;
	/* Pairs with the store-release of ended when the producer stops the
	 * session: if set, the heads loaded below are final. */
	ended = __atomic_load_n(&sr->hdr->ended, __ATOMIC_ACQUIRE) || sr->gone;
	for (uint32_t tried = 0; tried < sr->nr; tried++) {
		uint32_t i = sr->cur;

		sr->cur = sr->cur + 1 == sr->nr ? 0 : sr->cur + 1;
		/* At the end, whatever is left, packets still open included. */
		if (ring_span(sr, i, ended || !(flags & EVR_SPAN_WHOLE))) {
			sr->pending = true;
			*ret = sr->out;
			return 1;
		}
	}
	if (ended)
		sr->drained = true;
	return 0;
}

int evr_span_reader_done(struct evr_span_reader *sr, const struct evr_shm_span *sp)
{
	struct span_ring *rg;

	if (!sr || !sp || !sr->pending || sp->ring != sr->out.ring || sp->pos != sr->out.pos)
		return -EINVAL;
	sr->pending = false;
	rg = &sr->rings[sp->ring];
	if (passive(sr) && !still_intact(sr, rg, sp->pos)) {
		/* Resync at the oldest intact packet: its header accounts for the
		 * events of this span too, since rg->events was not advanced. */
		uint64_t head = __atomic_load_n(&rg->ctl->head, __ATOMIC_ACQUIRE);
		uint64_t pmask = sr->packet_size - 1;

		rg->pos = (first_safe(sr, head) + pmask) & ~pmask;
		rg->in_packet = false;
		return -ESTALE;
	}
	sr->consumed += sr->next_pos - rg->pos;
	rg->pos = sr->next_pos;
	rg->events = sr->next_events;
	rg->lost = sr->next_lost;
	rg->in_packet = sr->next_in_packet;
	release_tail(sr, rg);
	return 0;
}

void evr_span_reader_release(struct evr_span_reader *sr)
{
	if (!sr)
		return;
	for (uint32_t i = 0; i < sr->nr; i++) {
		if (sr->rings[i].held) {
			sr->rings[i].held = false;
			store_tail(sr, &sr->rings[i]);
		}
	}
}

uint64_t evr_span_reader_pos(const struct evr_span_reader *sr, uint32_t ring)
{
	if (!sr || ring >= sr->nr)
		return 0;
	return sr->rings[ring].pos;
}

void evr_span_reader_release_to(struct evr_span_reader *sr, uint32_t ring, uint64_t pos)
{
	struct span_ring *rg;

	if (!sr || ring >= sr->nr || !(sr->flags & EVR_READER_GATING))
		return;
	rg = &sr->rings[ring];
	/* Never past what was consumed, never back below what was released. */
	if (pos > rg->pos)
		pos = rg->pos;
	if (pos <= __atomic_load_n(&rg->ctl->tail, __ATOMIC_RELAXED))
		return;
	/* Pairs with the writer's load-acquire of tail, as store_tail(). */
	__atomic_store_n(&rg->ctl->tail, pos, __ATOMIC_RELEASE);
	if (pos == rg->pos)
		rg->held = false;
}

uint64_t evr_span_reader_backlog(const struct evr_span_reader *sr)
{
	uint64_t most = 0;

	if (!sr)
		return 0;
	for (uint32_t i = 0; i < sr->nr; i++) {
		/* The validated control blocks; the writers' head, our own tail. */
		uint64_t head = __atomic_load_n(&sr->rings[i].ctl->head, __ATOMIC_ACQUIRE);
		uint64_t tail = __atomic_load_n(&sr->rings[i].ctl->tail, __ATOMIC_RELAXED);

		if (head > tail && head - tail > most)
			most = head - tail;
	}
	return most;
}

uint64_t evr_span_reader_unread(const struct evr_span_reader *sr)
{
	uint64_t most = 0;

	if (!sr)
		return 0;
	for (uint32_t i = 0; i < sr->nr; i++) {
		uint64_t head = __atomic_load_n(&sr->rings[i].ctl->head, __ATOMIC_ACQUIRE);
		uint64_t pos = sr->rings[i].pos;

		if (head > pos && head - pos > most)
			most = head - pos;
	}
	return most;
}

void evr_span_reader_hold(struct evr_span_reader *sr, bool on)
{
	if (!sr)
		return;
	sr->hold = on;
	if (!on)
		evr_span_reader_release(sr);
}

/* The packet at some ring's position is complete and its successor has begun:
 * a whole span waits (what evr_span_reader_get() with EVR_SPAN_WHOLE takes). */
static bool whole_span_waits(const struct evr_span_reader *sr)
{
	for (uint32_t i = 0; i < sr->nr; i++) {
		uint64_t head = __atomic_load_n(&sr->rings[i].ctl->head, __ATOMIC_ACQUIRE);
		uint64_t pe = packet_end(sr, sr->rings[i].pos);

		if (head >= pe && head - pe >= EVR_PACKET_HDR_SIZE)
			return true;
	}
	return false;
}

/* Ask the writers to ring the doorbell when they close a packet. */
static void ask_doorbell(struct evr_span_reader *sr)
{
	__atomic_store_n(&sr->hdr->waiting, 1, __ATOMIC_RELAXED);
	/* Pairs with the full fence in the writer's doorbell: either a writer
	 * closing a packet sees waiting == 1, or we see its head in span_ready(). */
	atomic_thread_fence(memory_order_seq_cst);
}

/* Nothing to sleep for: the session ended, or a whole span waits. */
static bool span_ready(const struct evr_span_reader *sr)
{
	return __atomic_load_n(&sr->hdr->ended, __ATOMIC_ACQUIRE) || whole_span_waits(sr);
}

int evr_span_reader_arm(struct evr_span_reader *sr)
{
	if (!sr)
		return -EINVAL;
	if (sr->pending || sr->gone || sr->drained)
		return 1;
	sr->waits.doorbell++;
	ask_doorbell(sr);
	return span_ready(sr);
}

int evr_span_reader_wait_fds(struct evr_span_reader *sr, int doorbell_fd, struct pollfd *extra,
			     unsigned int nextra, int timeout_ms)
{
	uint64_t pace;

	if (!sr || doorbell_fd < 0 || nextra > EVR_WAIT_EXTRA_MAX || (nextra && !extra))
		return -EINVAL;
	for (unsigned int i = 0; i < nextra; i++)
		extra[i].revents = 0;
	if (sr->pending || sr->gone || sr->drained)
		return 0;
	/*
	 * While spans are held (a recorder gathering a direct-I/O batch), by a
	 * sixteenth of a ring (evr_pace_batch_ns()): what it holds fills the
	 * rings beyond what it measures. Paced by an eighth, the direct-I/O
	 * recorder let rings pass half full at 12 M events/s on a Zen guest
	 * whose first lap through the rings was slow (3 runs of 5 fell back
	 * to the page cache, under the fall rule of that time).
	 */
	pace = evr_pace_next(&sr->pace, sr->ring_size, sr->packet_size, sr->consumed, timeout_ms,
			     sr->hold);
	if (!pace)
		ask_doorbell(sr);
	if (span_ready(sr))
		return 0;
	if (pace) {
		/* A steady stream: as long as the doorbell would have let us sleep,
		 * the doorbell unarmed, so that the writers never ring it. */
		sr->waits.paced++;
		return evr_doorbell_poll_ns(doorbell_fd, extra, nextra, pace);
	}
	sr->waits.doorbell++;
	return evr_doorbell_poll(doorbell_fd, extra, nextra, timeout_ms);
}

void evr_span_reader_wait_stats(const struct evr_span_reader *sr, struct evr_span_wait_stats *ret)
{
	*ret = sr ? sr->waits : (struct evr_span_wait_stats){ 0 };
}

void evr_span_reader_producer_gone(struct evr_span_reader *sr)
{
	if (sr)
		sr->gone = true;
}

bool evr_span_reader_drained(struct evr_span_reader *sr)
{
	return sr && sr->drained;
}

int evr_span_reader_final_lost(struct evr_span_reader *sr, uint32_t ring, uint64_t *ret_count)
{
	uint64_t total;

	if (!sr || !ret_count || ring >= sr->nr)
		return -EINVAL;
	if (!sr->drained)
		return -EAGAIN;
	total = evr_ring_ctl_lost(sr->rings[ring].ctl);
	*ret_count = total > sr->rings[ring].lost ? total - sr->rings[ring].lost : 0;
	return 0;
}

uint64_t evr_span_reader_corrupt(const struct evr_span_reader *sr)
{
	return sr ? sr->corrupt : 0;
}

int evr_span_walk(const void *data, uint32_t len, uint64_t pos, uint64_t *ret_events,
		  uint64_t *ret_lost)
{
	const uint8_t *d = data;
	uint64_t events = 0, lost = 0;
	uint32_t p = 0;

	if ((len && !data) || !ret_events || !ret_lost)
		return -EINVAL;
	if (pos % EVR_PACKET_SIZE_MIN == 0 && len >= EVR_PACKET_HDR_SIZE) {
		uint32_t magic;

		/* A record header never looks like this: its type byte would be 0x56. */
		memcpy(&magic, d, sizeof(magic));
		if (magic == EVR_PACKET_MAGIC)
			p = EVR_PACKET_HDR_SIZE;
	}
	while (p < len) {
		struct evr_rec_hdr h;
		uint32_t asize;

		if (len - p < 8)
			return -EBADMSG;
		memcpy(&h, d + p, 8);
		if (h.type == EVR_REC_END)
			break;
		asize = (uint32_t)evr_align8(h.size);
		if (!evr_rec_min_size(h.type) || h.size < evr_rec_min_size(h.type) ||
		    asize > len - p)
			return -EBADMSG;
		if (h.type == EVR_REC_EVENT) {
			events++;
		} else if (h.type == EVR_REC_LOST) {
			uint64_t n;

			memcpy(&n, d + p + EVR_REC_HDR_SIZE, sizeof(n));
			lost += n;
		}
		p += asize;
	}
	*ret_events = events;
	*ret_lost = lost;
	return 0;
}
