// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring monitor: run the monitor program (consumer/monitor/, evring-monitor)
 * installed beside this one. It is a program of its own so that its HTTP,
 * JSON and archive libraries stay out of the other subcommands; to the user
 * `evring monitor` and `evring-monitor` are the same command.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define CMD "monitor"

int evr_cmd_monitor(int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	(void)argc;
	if (n < 0) {
		evr_cli_error(CMD, "cannot find this program's directory: %s", strerror(errno));
		return EVR_EXIT_FAILURE;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	snprintf(path, sizeof(path), "%.*s/evring-monitor", slash ? (int)(slash - self) : 0, self);
	/* argv[0] "evring-monitor": its messages say "evring monitor: ..." either way. */
	argv[0] = "evring-monitor";
	execv(path, argv);
	evr_cli_error(CMD, "cannot run %s: %s (is the monitor built? it needs libmicrohttpd)",
		      path, strerror(errno));
	return EVR_EXIT_FAILURE;
}
