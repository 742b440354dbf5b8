/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private to shm/: the sleep shared by the record and span readers. */
#ifndef EVR_SHM_DOORBELL_H
#define EVR_SHM_DOORBELL_H

#include <poll.h>

/* The most extra fds a *_wait_fds() call accepts. */
#define EVR_WAIT_EXTRA_MAX 8u

/*
 * evr_doorbell_poll() - poll @doorbell_fd and the @nextra (<= EVR_WAIT_EXTRA_MAX)
 * entries of @extra for @timeout_ms, after the caller armed the doorbell
 * handshake and found nothing to read. Sets the revents of @extra and drains
 * the eventfd counter if it fired.
 * Return: 1 woken, 0 timeout or EINTR, -errno.
 * Context: the reader's thread.
 */
int evr_doorbell_poll(int doorbell_fd, struct pollfd *extra, unsigned int nextra, int timeout_ms);

#endif /* EVR_SHM_DOORBELL_H */
