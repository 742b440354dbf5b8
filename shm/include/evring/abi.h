/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring shared-memory ABI: everything a producer and a consumer process share.
 *
 * This is the ONLY description of the session memory. Everything here is
 * fixed-width, explicitly padded and offset based (never pointers); changing
 * any layout bumps EVR_ABI_VERSION.
 *
 * A session is one sealed memfd:
 *
 *   [0, 4096)                      struct evr_shm_hdr
 *   [ring_ctl_off, +nr_rings*256)  struct evr_ring_ctl, one per ring
 *   [meta_off, +meta_size)         the metadata area (page aligned), see below
 *   [ring_data_off + i*ring_size)  ring i data, ring_size bytes (page aligned)
 *
 * A ring is cut into packets of packet_size bytes (both powers of two). Every
 * packet starts with a struct evr_packet_hdr; records follow, 8-byte aligned,
 * and never straddle a packet. A packet is either filled exactly or closed by an
 * END record that pads it to its end.
 *
 * Protocol (one writer per ring at a time; see shm/ring.c for the full block):
 *  - the writer writes bytes at [head, head+n) and then publishes head+n with a
 *    store-release of evr_ring_ctl.head (a 64-bit free-running byte position;
 *    ring offset = position & (ring_size - 1));
 *  - a reader load-acquires head and reads only below it: everything it sees is
 *    complete. Published bytes are never rewritten within a lap;
 *  - discard mode: the writer never writes past tail + ring_size, where tail is
 *    stored (release) by the session's one gating reader;
 *  - overwrite mode: tail is ignored; readers copy, then re-load head, and drop
 *    what the writer may have reached (position < head + packet_size - ring_size).
 *
 * Metadata area: an append-only sequence of struct evr_meta_entry, each followed
 * by its payload and padded to 8 bytes, written only by the producer under its
 * registry lock. The producer appends the description of every event the session
 * may receive, then publishes the end of the valid bytes with a store-release of
 * evr_shm_hdr.meta_head, and only then lets writers write that event into this
 * session. So a consumer that meets an unknown event id in a ring load-acquires
 * meta_head and finds its description below it: metadata always arrives before
 * the first record that needs it, even if the producer has died since.
 * An event whose description does not fit is never written to the session; it is
 * counted in meta_dropped instead.
 *
 * Loss accounting is exact: the packet header carries the cumulative number of
 * event records written to the ring before it and the cumulative number of
 * events lost before it. A reader that skips from one packet to another (lapped
 * in overwrite mode) knows exactly how many events it missed.
 */
#ifndef EVR_ABI_H
#define EVR_ABI_H

#include <stddef.h>
#include <stdint.h>

/* C11's _Static_assert is C++'s static_assert: the layout checks hold in both. */
#ifdef __cplusplus
#define EVR_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define EVR_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define EVR_SHM_MAGIC		0x5652455645524e47ULL	/* "GNREVERV" little-endian: "evring" tag */
#define EVR_PACKET_MAGIC	0x45565231u		/* "1RVE" */
#define EVR_ABI_VERSION		3u

#define EVR_SHM_HDR_SIZE	4096u
#define EVR_RING_CTL_SIZE	256u
#define EVR_CACHELINE		64u

/* Packet and ring geometry limits. */
#define EVR_PACKET_SIZE_MIN	(16u * 1024u)
#define EVR_PACKET_SIZE_MAX	(64u * 1024u)
#define EVR_RING_PACKETS_MIN	4u
#define EVR_RING_SIZE_MAX	(1ull << 32)
#define EVR_MAX_RINGS		1024u
#define EVR_META_SIZE_MIN	4096u
#define EVR_META_SIZE_MAX	(16u << 20)

/*
 * Largest record a writer accepts: a packet of the smallest size must still
 * hold its header, a THREAD record, a LOST record and the record itself.
 */
#define EVR_REC_HDR_SIZE	16u
#define EVR_MAX_RECORD		(EVR_PACKET_SIZE_MIN - 128u)
#define EVR_MAX_PAYLOAD		(EVR_MAX_RECORD - EVR_REC_HDR_SIZE)

enum evr_mode {
	EVR_MODE_DISCARD = 0,	/* drop (and count) new events when the gating reader is behind */
	EVR_MODE_OVERWRITE = 1,	/* flight recorder: never look at tail, readers may be lapped */
};

enum evr_clock_kind {
	EVR_CLOCK_MONOTONIC = 0,	/* timestamps are CLOCK_MONOTONIC nanoseconds */
	EVR_CLOCK_TSC = 1,		/* timestamps are raw invariant-TSC ticks, see evr_clock_calib */
};

/*
 * Conversion of raw timestamps to nanoseconds:
 *   mono_ns = mono_base + ((ts - ts_base) * mult) >> shift
 *   real_ns = mono_ns + (real_base - mono_base)
 * For EVR_CLOCK_MONOTONIC, mult = 1, shift = 0 and ts_base = mono_base.
 * (ts - ts_base) is computed modulo 2^64 and treated as signed; the product
 * needs 128 bits (see evr_clock_to_mono_ns()).
 */
struct evr_clock_calib {
	uint32_t kind;			/* enum evr_clock_kind */
	uint32_t shift;
	uint64_t mult;
	uint64_t ts_base;
	uint64_t mono_base;		/* CLOCK_MONOTONIC ns at ts_base */
	uint64_t real_base;		/* CLOCK_REALTIME ns at ts_base */
	uint64_t ticks_per_sec;		/* informational */
};

/* Header of the whole session mapping. Written once by the producer before the
 * memfd is shared, except for the fields marked "live". */
struct evr_shm_hdr {
	uint64_t magic;			/* EVR_SHM_MAGIC */
	uint32_t abi_version;		/* EVR_ABI_VERSION */
	uint32_t hdr_size;		/* EVR_SHM_HDR_SIZE */
	uint64_t total_size;		/* size of the memfd */
	uint32_t nr_rings;
	uint32_t mode;			/* enum evr_mode */
	uint64_t ring_size;		/* bytes per ring, power of two */
	uint32_t packet_size;		/* power of two */
	uint32_t ring_ctl_size;		/* EVR_RING_CTL_SIZE */
	uint64_t ring_ctl_off;
	uint64_t ring_data_off;
	uint32_t producer_pid;
	uint32_t session_id;		/* slot in the producer's session table, 0..63 */
	uint64_t session_serial;	/* unique per producer process */
	struct evr_clock_calib clock;
	uint64_t meta_off;		/* metadata area, page aligned */
	uint64_t meta_size;		/* multiple of 4096, EVR_META_SIZE_MIN..MAX */
	uint8_t pad0[EVR_CACHELINE * 4 - 144];
	/* live, written by the producer: set to 1 (release) once the session is stopped
	 * and every ring has been flushed; readers may then drain to head and finish. */
	uint32_t ended;
	uint32_t pad1;
	uint8_t pad2[EVR_CACHELINE - 8];
	/* live, written by consumers: doorbell flag. A consumer about to sleep stores 1,
	 * issues a full fence and re-checks heads; a writer closing a packet issues a
	 * full fence, and if it sees 1, exchanges it to 0 and signals the eventfd. */
	uint32_t waiting;
	uint32_t pad3;
	uint8_t pad4[EVR_CACHELINE - 8];
	/* live, producer: bytes of valid entries in the metadata area (store-release,
	 * after the entries are written), and the number of event descriptions that
	 * did not fit (those events are never written to this session). */
	uint64_t meta_head;
	uint64_t meta_dropped;
	uint8_t pad5[EVR_CACHELINE - 16];
	uint8_t reserved[EVR_SHM_HDR_SIZE - EVR_CACHELINE * 7];
};

enum evr_meta_kind {
	EVR_META_EVENT = 1,	/* payload: a packed protobuf evr.EventDesc (proto/evring.proto) */
};

/* Header of one metadata entry; the next entry starts at align8(8 + size). */
struct evr_meta_entry {
	uint32_t size;			/* payload bytes */
	uint32_t kind;			/* enum evr_meta_kind; readers skip kinds they do not know */
};

/* Per-ring control block: each live field on its own cache line. */
struct evr_ring_ctl {
	/* live, producer: published byte position (store-release). */
	uint64_t head;
	uint8_t pad0[EVR_CACHELINE - 8];
	/* live, the gating reader (discard mode): released byte position (store-release).
	 * The producer clamps it to [head - ring_size, head]. */
	uint64_t tail;
	uint8_t pad1[EVR_CACHELINE - 8];
	/* live, producer: diagnostic totals, updated at packet boundaries and at flush.
	 * The exact per-event truth is in the packet headers and LOST records. */
	uint64_t events_total;		/* event records written, as of the last packet switch */
	uint64_t lost_total;		/* events lost, as of the last packet switch, drop or flush */
	/* Events dropped without the ring's lock (ring busy, per-CPU full ring):
	 * cumulative, added at each such drop; and the part of it already counted
	 * in lost_total, stored after lost_total. See evr_ring_ctl_lost(). */
	uint64_t lost_async_total;
	uint64_t lost_async_absorbed;
	/* Events a per-CPU write dropped in its critical section, the ring full
	 * (discard mode): cumulative; and the part of it already counted in
	 * lost_total, stored after lost_total. Readers of older versions do not
	 * know them: for a producer that died with such drops unreported, they
	 * count those drops short. */
	uint64_t lost_fast_total;
	uint64_t lost_fast_absorbed;
	uint8_t pad2[EVR_CACHELINE - 48];
	/* written once */
	uint32_t ring_index;
	uint32_t cpu;			/* CPU this ring serves first */
	uint8_t pad3[EVR_CACHELINE - 8];
};

/* At the start of every packet; written before the packet's first record is
 * published, never rewritten. */
struct evr_packet_hdr {
	uint32_t magic;			/* EVR_PACKET_MAGIC */
	uint32_t ring_index;
	uint64_t seq;			/* absolute packet number: position / packet_size */
	uint64_t ts_begin;		/* timestamp of the packet's first record */
	uint64_t events_before;		/* event records written to this ring before this packet */
	uint64_t lost_before;		/* events lost on this ring before this packet */
};
#define EVR_PACKET_HDR_SIZE	40u

enum evr_rec_type {
	EVR_REC_EVENT = 1,	/* event_id + ts + payload */
	EVR_REC_END = 2,	/* pads to the end of the packet; may be only 8 bytes */
	EVR_REC_LOST = 3,	/* payload: struct evr_rec_lost */
	EVR_REC_THREAD = 4,	/* payload: struct evr_rec_thread; the thread of the records that follow */
};

/* Record header. Records are 8-byte aligned; size includes this header and the
 * payload but not the alignment padding (the next record starts at
 * position + align8(size)). An END record may consist of the first 8 bytes only. */
struct evr_rec_hdr {
	uint16_t size;
	uint8_t type;			/* enum evr_rec_type */
	uint8_t flags;			/* EVR_REC_F_* */
	uint32_t event_id;		/* EVENT: the event's id in the producer's registry */
	uint64_t ts;			/* raw timestamp, see evr_clock_calib */
};

#define EVR_REC_F_STACK		0x01u	/* EVENT: a stack block precedes the payload */

/*
 * The stack block of an EVENT record with EVR_REC_F_STACK: right after the
 * record header, this 8-byte header, then nframes little-endian u64 return
 * addresses of the writing thread, innermost first (the caller of the
 * library's write function first); the event's payload follows, so it starts
 * at 16 + 8 + 8 * nframes and is size - that long. The addresses are return
 * addresses: a symbolizer looks up address - 1.
 */
struct evr_stack_hdr {
	uint16_t nframes;		/* 0 .. EVR_STACK_MAX_FRAMES */
	uint8_t kind;			/* EVR_STACK_KIND_* */
	uint8_t flags;			/* EVR_STACK_F_* */
	uint32_t reserved;		/* 0 */
};
#define EVR_STACK_MAX_FRAMES	127u
#define EVR_STACK_KIND_FP	0u	/* a frame-pointer walk */
#define EVR_STACK_F_TRUNCATED	0x01u	/* the walk stopped at the depth asked for */

/*
 * LOST: `count` events were lost on this ring between the previous record and
 * this one (ring full in discard mode, ring busy, or record too big).
 */
struct evr_rec_lost {
	uint64_t count;
};

/*
 * THREAD: every EVENT record after this one in the same packet was written by
 * thread `tid`. Emitted when the writing thread changes and at each packet's
 * first event, so that a packet is self-contained for lapped readers.
 */
struct evr_rec_thread {
	uint32_t tid;
	uint32_t pad;
};

/*
 * Ring @i's control block and data in a validated mapping @h (the producer's or
 * a consumer's; const-ness is the caller's: consumers only write tail and the
 * waiting flag).
 */
static inline struct evr_ring_ctl *evr_shm_ring_ctl(const struct evr_shm_hdr *h, uint32_t i)
{
	return (struct evr_ring_ctl *)((uintptr_t)h + h->ring_ctl_off +
				       (uint64_t)i * EVR_RING_CTL_SIZE);
}

static inline uint8_t *evr_shm_ring_data(const struct evr_shm_hdr *h, uint32_t i)
{
	return (uint8_t *)((uintptr_t)h + h->ring_data_off + (uint64_t)i * h->ring_size);
}

/*
 * Smallest valid size of a record of @type (an END record may be just its first
 * 8 bytes); 0 for a type this ABI does not define. Every reader checks records
 * against this, and against EVR_MAX_RECORD, before trusting them.
 */
static inline uint32_t evr_rec_min_size(uint32_t type)
{
	switch (type) {
	case EVR_REC_EVENT:
		return EVR_REC_HDR_SIZE;
	case EVR_REC_END:
		return 8;
	case EVR_REC_LOST:
		return EVR_REC_HDR_SIZE + (uint32_t)sizeof(struct evr_rec_lost);
	case EVR_REC_THREAD:
		return EVR_REC_HDR_SIZE + (uint32_t)sizeof(struct evr_rec_thread);
	default:
		return 0;
	}
}

/*
 * Overwrite mode: the oldest ring position a passive reader may still trust
 * when the writer has published up to @head. The writer may be filling the
 * packet after head already, so a whole packet less than the ring.
 */
static inline uint64_t evr_ring_first_safe(uint64_t ring_size, uint32_t packet_size,
					   uint64_t head)
{
	uint64_t margin = ring_size - packet_size;

	return head > margin ? head - margin : 0;
}

/*
 * Every event lost on a ring so far, as far as shared memory tells: exact once
 * the session ended; after the producer died, exact unless it died within the
 * few instructions between two of these stores. Readers subtract the losses
 * they saw in-band to report the rest.
 */
static inline uint64_t evr_ring_ctl_lost(const struct evr_ring_ctl *c)
{
	uint64_t total = __atomic_load_n(&c->lost_total, __ATOMIC_RELAXED);
	uint64_t async = __atomic_load_n(&c->lost_async_total, __ATOMIC_RELAXED);
	uint64_t absorbed = __atomic_load_n(&c->lost_async_absorbed, __ATOMIC_RELAXED);
	uint64_t fast = __atomic_load_n(&c->lost_fast_total, __ATOMIC_RELAXED);
	uint64_t fast_absorbed = __atomic_load_n(&c->lost_fast_absorbed, __ATOMIC_RELAXED);

	return total + (async > absorbed ? async - absorbed : 0) +
	       (fast > fast_absorbed ? fast - fast_absorbed : 0);
}

/* __int128 is an extension of gcc and clang (x86-64): marked as one, for -Wpedantic users. */
__extension__ typedef __int128 evr_i128_t;

/* Convert a raw timestamp to CLOCK_MONOTONIC nanoseconds (128-bit intermediate). */
static inline uint64_t evr_clock_to_mono_ns(const struct evr_clock_calib *c, uint64_t ts)
{
	int64_t d = (int64_t)(ts - c->ts_base);
	evr_i128_t ns = ((evr_i128_t)d * (evr_i128_t)c->mult) >> c->shift;

	return c->mono_base + (uint64_t)(int64_t)ns;
}

static inline uint64_t evr_align8(uint64_t x)
{
	return (x + 7u) & ~(uint64_t)7u;
}

EVR_STATIC_ASSERT(sizeof(struct evr_clock_calib) == 48, "clock calib layout");
EVR_STATIC_ASSERT(offsetof(struct evr_shm_hdr, clock) == 80, "shm hdr layout");
EVR_STATIC_ASSERT(offsetof(struct evr_shm_hdr, ended) == EVR_CACHELINE * 4, "ended on its own line");
EVR_STATIC_ASSERT(offsetof(struct evr_shm_hdr, waiting) == EVR_CACHELINE * 5, "waiting on its own line");
EVR_STATIC_ASSERT(offsetof(struct evr_shm_hdr, meta_head) == EVR_CACHELINE * 6, "meta_head on its own line");
EVR_STATIC_ASSERT(sizeof(struct evr_shm_hdr) == EVR_SHM_HDR_SIZE, "shm hdr size");
EVR_STATIC_ASSERT(sizeof(struct evr_meta_entry) == 8, "meta entry header");
EVR_STATIC_ASSERT(offsetof(struct evr_ring_ctl, tail) == EVR_CACHELINE, "tail on its own line");
EVR_STATIC_ASSERT(offsetof(struct evr_ring_ctl, events_total) == 2 * EVR_CACHELINE, "counters line");
EVR_STATIC_ASSERT(sizeof(struct evr_ring_ctl) == EVR_RING_CTL_SIZE, "ring ctl size");
EVR_STATIC_ASSERT(sizeof(struct evr_packet_hdr) == EVR_PACKET_HDR_SIZE, "packet hdr size");
EVR_STATIC_ASSERT(sizeof(struct evr_rec_hdr) == EVR_REC_HDR_SIZE, "record hdr size");
EVR_STATIC_ASSERT(sizeof(struct evr_stack_hdr) == 8, "stack block header");
EVR_STATIC_ASSERT(EVR_PACKET_HDR_SIZE % 8 == 0, "records stay 8-byte aligned");
EVR_STATIC_ASSERT(EVR_PACKET_HDR_SIZE + 2 * EVR_REC_HDR_SIZE + 16 + EVR_MAX_RECORD <= EVR_PACKET_SIZE_MIN,
	       "a maximal record with THREAD and LOST records fits an empty packet");

#endif /* EVR_ABI_H */
