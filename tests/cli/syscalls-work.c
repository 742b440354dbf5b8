// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A known number of system calls, for the --syscalls test (tests/cli/syscalls.sh):
 * WRITES write()s of one byte to /dev/null, MISSING openat()s of a file that
 * does not exist (ENOENT each), and FOUND openat()s of /dev/null (each closed).
 * Linked statically and without stdio, so that `strace -c -f` of it counts
 * these calls and nothing else of their kinds (no dynamic loader opening
 * libraries); run by syscalls-launch under `evring record`.
 * Usage: evr-syscalls-work WRITES MISSING FOUND
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long writes, missing, found;
	int fd;

	if (argc != 4)
		return 2;
	writes = strtol(argv[1], NULL, 10);
	missing = strtol(argv[2], NULL, 10);
	found = strtol(argv[3], NULL, 10);
	fd = openat(AT_FDCWD, "/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return 3;
	for (long i = 0; i < writes; i++)
		if (write(fd, "x", 1) != 1)
			return 4;
	for (long i = 0; i < missing; i++)
		if (openat(AT_FDCWD, "/nonexistent/evring-syscalls-test", O_RDONLY) >= 0 ||
		    errno != ENOENT)
			return 5;
	for (long i = 0; i < found; i++) {
		int f = openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);

		if (f < 0)
			return 6;
		close(f);
	}
	close(fd);
	return 0;
}
