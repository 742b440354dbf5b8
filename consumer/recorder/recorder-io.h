/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's choice between direct I/O and the page cache, as pure
 * functions of what it measured (recorder.c adapt_io(); docs/recorder.md).
 */
#ifndef EVR_RECORDER_IO_H
#define EVR_RECORDER_IO_H

#include <stdbool.h>
#include <stdint.h>

/*
 * evr_recorder_disk_bps() - what the disk took while direct I/O was on: the
 * bytes written directly over the time the writes took (bytes per second),
 * 0 when nothing was timed.
 */
static inline uint64_t evr_recorder_disk_bps(uint64_t bytes, uint64_t write_ns)
{
	if (!write_ns)
		return 0;
	return (uint64_t)((double)bytes * 1e9 / (double)write_ns);
}

/*
 * evr_recorder_stream_fits() - whether the process sent few enough bytes,
 * @bytes in @dt_ns, for a disk that took @disk_bps: less than three quarters
 * of it. True when the disk's rate is unknown (0) or no time passed, so that
 * the calm rings alone decide, as before any direct write was timed.
 * In doubles: no product overflows.
 */
static inline bool evr_recorder_stream_fits(uint64_t bytes, uint64_t dt_ns, uint64_t disk_bps)
{
	if (!disk_bps || !dt_ns)
		return true;
	return (double)bytes * 1e9 < 0.75 * (double)disk_bps * (double)dt_ns;
}

/*
 * Direct I/O leaves the rings as the only buffer between a writer and the
 * disk, where the page cache takes gigabytes: a disk's stall longer than a
 * ring holds loses events that buffered writes would have kept. The first
 * direct writes of a recording stalled 20-37 ms on a virtio disk; direct I/O
 * is used only where one ring holds twice that of the stream (a thread
 * writes into one ring at the stream's whole rate).
 */
#define EVR_RECORDER_DIRECT_HOLD_NS	64000000ull
/* The stream is not known at the start: direct I/O from the first byte only
 * with rings that hold EVR_RECORDER_DIRECT_HOLD_NS of a 500 MB/s stream
 * (12 M events/s); smaller rings start through the page cache. */
#define EVR_RECORDER_DIRECT_START_RING	(32ull << 20)

/*
 * evr_recorder_rings_hold() - whether a ring of @ring_size bytes holds
 * EVR_RECORDER_DIRECT_HOLD_NS of a stream that sent @bytes in @dt_ns. True
 * when no time passed (nothing to judge by). In doubles: no overflow.
 */
static inline bool evr_recorder_rings_hold(uint64_t ring_size, uint64_t bytes, uint64_t dt_ns)
{
	if (!dt_ns)
		return true;
	return (double)ring_size * (double)dt_ns >=
	       (double)bytes * (double)EVR_RECORDER_DIRECT_HOLD_NS;
}

/*
 * evr_recorder_disk_behind() - whether a ring whose writers may not reuse
 * @backlog bytes, @unread of them not yet read by the recorder (the rest held
 * by writes in flight), says that the disk is behind: at least half of it is
 * the disk's. A ring that fills while the writes complete is the recorder's
 * own lag (on the development guest, the first lap through the rings, whose
 * first read is dear there: 29.6 MB unread, nothing held, 0.16 s in), which
 * the page cache would not help.
 */
static inline bool evr_recorder_disk_behind(uint64_t backlog, uint64_t unread)
{
	return unread <= backlog && backlog - unread >= backlog - backlog / 2;
}

/*
 * evr_recorder_cache_dear() - whether writing through the page cache costs the
 * recorder too much CPU to keep up: @cpu_ns of its thread's CPU time in
 * @wall_ns (at least EVR_RECORDER_CACHE_PRICE_NS) while it wrote through the
 * page cache, half of a CPU or more. Where new page-cache pages are cheap (a
 * copy, 0.1-0.3 ns a byte) a 500 MB/s stream takes 5-15% of a CPU; on guests
 * whose host backs each new page on first touch (1.3-3.3 ns a byte measured),
 * more than the recorder has: it then loses more than the disk's stall would
 * have cost it (docs/recorder.md, "Direct I/O").
 */
#define EVR_RECORDER_CACHE_PRICE_NS 200000000ull

static inline bool evr_recorder_cache_dear(uint64_t cpu_ns, uint64_t wall_ns)
{
	return wall_ns >= EVR_RECORDER_CACHE_PRICE_NS && cpu_ns >= wall_ns / 2;
}

#endif
