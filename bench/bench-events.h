/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The benchmark's event: u64, u64, u32 (20 bytes), as in the LTTng-UST anchor;
 * and two of variable size, a string and a byte array after a u64 (the
 * reader's checksum, as in the first).
 */
#ifndef EVR_BENCH_EVENTS_H
#define EVR_BENCH_EVENTS_H

#include <evring/evring.h>

#define BENCH_EVENTS(EVENT) \
	EVENT(bench_ev, "Ev", 1, EVR_LEVEL_INFO, 0x1, (u64, a), (u64, b), (u32, c)) \
	EVENT(bench_str, "Str", 2, EVR_LEVEL_INFO, 0x1, (u64, a), (str, s))      \
	EVENT(bench_bytes, "Bytes", 3, EVR_LEVEL_INFO, 0x1, (u64, a), (bytes, b))

EVR_PROVIDER_DECLARE(bench_provider, BENCH_EVENTS)

#endif
