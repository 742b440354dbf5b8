/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* USDT probes (usdt.c): driven by the agent thread. */
#ifndef EVR_USDT_INTERNAL_H
#define EVR_USDT_INTERNAL_H

#include "producer-internal.h"

/* How often the agent looks at the probes' semaphores, at most. */
#define EVR_USDT_POLL_MS 200

/*
 * evr_usdt_poll() - start the probes' listener when a tracer attached to a
 * probe, stop it when none is attached any more. Nothing without <sys/sdt.h>.
 * Context: the agent thread, without the agent's lock.
 */
EVR_HIDDEN void evr_usdt_poll(void);

/* Stop the probes' listener, dispatching what was written. Context: the agent
 * thread is joined (library destructor). */
EVR_HIDDEN void evr_usdt_stop(void);

/* A listener runs (evr_usdt_stop() has something to flush). Context: the agent thread
 * is not in evr_usdt_poll(), and its last call happened before (agent.c). */
EVR_HIDDEN bool evr_usdt_active(void);

#endif /* EVR_USDT_INTERNAL_H */
