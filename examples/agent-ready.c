// SPDX-License-Identifier: LGPL-2.1-or-later
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent-ready.h"

void evr_example_wait_agent(const char *prog, volatile sig_atomic_t *stop)
{
	const char *env = getenv("EVR_AGENT");
	const char *dir = getenv("EVR_RUNTIME_DIR");
	struct timespec ms = { 0, 1000000 };
	char path[4096], defdir[64];
	struct stat st;

	if (env && strcmp(env, "0") == 0)
		return;
	if (!dir || !*dir) {
		snprintf(defdir, sizeof(defdir), "/tmp/evring-%u", (unsigned)geteuid());
		dir = defdir;
	}
	snprintf(path, sizeof(path), "%s/%d.sock", dir, (int)getpid());
	/* The agent thread creates it right after start-up; 5 s is far beyond that. */
	for (int i = 0; i < 5000 && !(stop && *stop); i++) {
		if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
			return;
		nanosleep(&ms, NULL);
	}
	fprintf(stderr, "%s: warning: the agent socket %s did not appear\n", prog, path);
}
