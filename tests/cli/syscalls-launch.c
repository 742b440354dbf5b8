// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An instrumented program (it links libevring, so `evring record -- PROGRAM`
 * can trace it) that runs a command as its child and exits with its status:
 * the child, started after the recording began, is followed by the
 * system-call tracer's inherited events (tests/cli/syscalls.sh). posix_spawn()
 * (a vfork): no fork handler of libevring runs in the child before the exec,
 * so that the child's calls are the command's own.
 * With --wait, it first prints "ready PID" and waits for a line on its standard
 * input (the test sends it once `evring record -p PID` said it records).
 * Usage: evr-syscalls-launch [--wait] COMMAND [ARGS...]
 */
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <evring/evring.h>

/* One event at the child's start: a provider also keeps libevring linked in. */
#define LAUNCH_EVENTS(EVENT) EVENT(launch_child, "Child", 1, EVR_LEVEL_INFO, 0x1, (u64, pid))

EVR_PROVIDER_DECLARE(launch, LAUNCH_EVENTS)
EVR_PROVIDER_DEFINE(launch, "SyscallsLaunch", LAUNCH_EVENTS)

extern char **environ;

int main(int argc, char **argv)
{
	int status;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "--wait")) {
		char line[64];

		argv++;
		argc--;
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 4;
	}
	if (argc < 2)
		return 2;
	if (posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ) != 0)
		return 3;
	launch_child((uint64_t)pid);
	while (waitpid(pid, &status, 0) < 0)
		;
	printf("child %d status %d\n", (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
