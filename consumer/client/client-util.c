// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: the client's bottom, used by client.c (the connection)
 * and client-find.c (finding it), so that neither calls into the other for
 * them: a pidfd for the producer, and the one-line error of a failed call.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client-internal.h"

int evr_consumer_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	/* pidfds are close-on-exec by definition. */
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

int evr_client_fail(char *errbuf, size_t errlen, int err, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}
