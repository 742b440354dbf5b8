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

#endif
