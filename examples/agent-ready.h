/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by the example programs that print "ready PID" for a consumer to attach. */
#ifndef EVR_EXAMPLE_AGENT_READY_H
#define EVR_EXAMPLE_AGENT_READY_H

#include <signal.h>

/**
 * evr_example_wait_agent() - make sure "ready" can promise that a consumer can
 * attach: libevring's agent listens from before main() on, so this only warns
 * on stderr, with the reason evr_agent_status() gives, when there is no agent
 * (EVR_AGENT=0 is silent).
 * @prog: the program's name, for the warning.
 * @stop: unused (kept for the callers).
 * Context: main thread.
 */
void evr_example_wait_agent(const char *prog, volatile sig_atomic_t *stop);

#endif /* EVR_EXAMPLE_AGENT_READY_H */
