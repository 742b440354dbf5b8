/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A provider as an instrumented program declares it, shared by C and C++ files: every field
 * type, strings and bytes last or not, activities, an event without fields.
 */
#ifndef MYAPP_EVENTS_H
#define MYAPP_EVENTS_H

#include <evring/evring.h>

#define MYAPP_EVENTS(EVENT)                                                                  \
	EVENT(myapp_alloc, "Alloc", 1, EVR_LEVEL_VERBOSE, 0x1, (u64, addr), (u32, size))     \
	EVENT(myapp_log, "Log", 2, EVR_LEVEL_INFO, 0x2, (str, text))                         \
	EVENT(myapp_tick, "Tick", 3, EVR_LEVEL_INFO, 0x0, )                                  \
	EVENT(myapp_req_begin, "RequestStart", 4, EVR_START(EVR_LEVEL_INFO), 0x4, (u64, id)) \
	EVENT(myapp_req_end, "RequestStop", 5, EVR_STOP(EVR_LEVEL_INFO), 0x4, (u64, id),     \
	      (i32, status))                                                                 \
	EVENT(myapp_kv, "KeyValue", 6, EVR_LEVEL_INFO, 0x8, (u32, shard), (str, key),        \
	      (str, value))                                                                  \
	EVENT(myapp_doc, "Doc", 7, EVR_LEVEL_INFO, 0x8, (json, doc))                         \
	EVENT(myapp_blob, "Blob", 8, EVR_LEVEL_VERBOSE, 0x10, (u16, kind), (bytes, data))    \
	EVENT(myapp_all, "All", 9, EVR_LEVEL_VERBOSE, 0x20, (u8, a), (u16, b), (u32, c),     \
	      (u64, d), (i8, e), (i16, f), (i32, g), (i64, h), (f32, x), (f64, y),           \
	      (bool, ok), (ptr, where), (str, s), (json, j), (bytes, raw))                   \
	EVENT(myapp_flag, "Flag", 10, EVR_LEVEL_INFO, 0x0, (bool, on))

EVR_PROVIDER_DECLARE(myapp, MYAPP_EVENTS)

#endif
