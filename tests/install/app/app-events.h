/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef APP_EVENTS_H
#define APP_EVENTS_H
#include <evring/evring.h>

/* Strings from a char buf[64] and from literals (whose length the compiler folds), first,
 * last and in the middle of the fields. */
#define APP_EVENTS(EVENT)                                                                    \
	EVENT(app_ping, "Ping", 1, EVR_LEVEL_INFO, 0x1, (u32, i), (str, text))               \
	EVENT(app_kv, "KeyValue", 2, EVR_LEVEL_INFO, 0x1, (str, key), (u32, v))              \
	EVENT(app_pair, "Pair", 3, EVR_LEVEL_INFO, 0x1, (u16, a), (str, k), (str, v))

EVR_PROVIDER_DECLARE(app, APP_EVENTS)
#endif
