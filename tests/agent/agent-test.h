/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The provider of the agent integration tests, and the values "typed" emits. */
#ifndef EVR_AGENT_TEST_H
#define EVR_AGENT_TEST_H

#include <evring/evring.h>

#define AGENT_TEST_EVENTS(EVENT)                                                              \
	EVENT(at_ints, "Ints", 1, EVR_LEVEL_INFO, 0x1, (u8, a), (u16, b), (u32, c), (u64, d), \
	      (i8, e), (i16, f), (i32, g), (i64, h))                                          \
	EVENT(at_mixed, "Mixed", 2, EVR_LEVEL_INFO, 0x1, (f32, x), (f64, y), (bool, flag),    \
	      (ptr, p), (str, s), (bytes, blob), (json, doc))                                 \
	EVENT(at_seq, "Seq", 3, EVR_LEVEL_INFO, 0x2, (u64, seq))

EVR_PROVIDER_DECLARE(at, AGENT_TEST_EVENTS)

#define AT_U8 0xfeu
#define AT_U16 0xfedcu
#define AT_U32 0xfedcba98u
#define AT_U64 0xfedcba9876543210ull
#define AT_I8 (-100)
#define AT_I16 (-30000)
#define AT_I32 (-2000000000)
#define AT_I64 (-9000000000000000000ll)
#define AT_F32 1.5f
#define AT_F64 (-2.25e100)
#define AT_PTR 0x7fff12345678ull
#define AT_STR "h\xc3\xa9llo, \"agent\""
#define AT_JSON "{\"k\":[1,2,3]}"

#endif /* EVR_AGENT_TEST_H */
