// SPDX-License-Identifier: LGPL-2.1-or-later
// Fires N (argv[1]) InstallApp/Ping events, each with a char buf[64] as its string, then one
// KeyValue and one Pair event whose strings are literals.
#include <cstdio>
#include <cstdlib>

#include "app-events.h"

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10)) : 100;
	char buf[64];

	for (unsigned i = 0; i < n; i++) {
		std::snprintf(buf, sizeof(buf), "ping %u", i);
		app_ping(i, buf);
	}
	app_kv("literal-key", 7);
	app_pair(3, "k", "literal-value");
	std::printf("fired %u\n", n);
	return 0;
}
