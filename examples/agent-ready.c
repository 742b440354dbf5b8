// SPDX-License-Identifier: LGPL-2.1-or-later
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/evring.h>

#include "agent-ready.h"

void evr_example_wait_agent(const char *prog, volatile sig_atomic_t *stop)
{
	const char *env = getenv("EVR_AGENT");
	char why[512];

	(void)stop;
	if (env && strcmp(env, "0") == 0)
		return;
	/* The agent listens before main() runs (libevring's constructor binds its
	 * socket), so there is nothing to wait for: only say why there is none. */
	if (evr_agent_status(why, sizeof(why)) < 0)
		fprintf(stderr, "%s: warning: no libevring agent, consumers cannot attach: %s\n",
			prog, why);
}
