// SPDX-License-Identifier: LGPL-2.1-or-later
// A provider defined in a C++ file (a C++ program with no C file at all).
#include <evring/evring.h>

#define CXXAPP_EVENTS(EVENT)                                                                 \
	EVENT(cxxapp_step, "Step", 1, EVR_LEVEL_INFO, 0x1, (u32, n), (str, what))            \
	EVENT(cxxapp_big, "Big", 2, EVR_LEVEL_INFO, 0x1, (bytes, data))                      \
	EVENT(cxxapp_none, "None", 3, EVR_LEVEL_INFO, 0x0, )

EVR_PROVIDER_DECLARE(cxxapp, CXXAPP_EVENTS)
EVR_PROVIDER_DEFINE(cxxapp, "CxxApp", CXXAPP_EVENTS)

void cxxapp_run(const char *what, const void *big, uint32_t len);

void cxxapp_run(const char *what, const void *big, uint32_t len)
{
	char buf[64] = "fixed";

	cxxapp_step(1, what);
	cxxapp_step(2, buf);
	cxxapp_big(big, len);
	cxxapp_none();
}
