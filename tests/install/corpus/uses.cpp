// SPDX-License-Identifier: LGPL-2.1-or-later
// The same calls from C++: std::string's c_str(), a char buf[64], a std::vector's bytes, the
// provider defined in C (C linkage through EVR_PROVIDER_DECLARE()).
#include <cstdio>
#include <string>
#include <vector>

#include "myapp-events.h"

void myapp_uses_cxx(unsigned n);

void myapp_uses_cxx(unsigned n)
{
	std::string who = "c++";
	std::vector<unsigned char> raw(100, 7);
	char buf[64];

	for (unsigned i = 0; i < n; i++) {
		std::snprintf(buf, sizeof(buf), "from %s, %u", who.c_str(), i);
		myapp_log(buf);
		myapp_kv(i, who.c_str(), buf);
		myapp_blob(1, raw.data(), static_cast<uint32_t>(raw.size()));
	}
	myapp_tick();
	myapp_flag(true);
	myapp_all(1, 2, 3, 4, -1, -2, -3, -4, 1.5f, 2.5, false, nullptr, buf, "[]", raw.data(),
		  static_cast<uint32_t>(raw.size()));
}
