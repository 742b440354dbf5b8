/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by the example programs that print "ready PID" for a consumer to attach. */
#ifndef EVR_EXAMPLE_AGENT_READY_H
#define EVR_EXAMPLE_AGENT_READY_H

#include <signal.h>

/**
 * evr_example_wait_agent() - wait until libevring's agent socket of this process
 * exists ($EVR_RUNTIME_DIR/PID.sock, default /tmp/evring-EUID/PID.sock), so that
 * "ready" promises a consumer can attach. Returns at once with EVR_AGENT=0.
 * @prog: the program's name, for the warning printed if the socket does not
 *        appear within 5 s.
 * @stop: may be NULL; when it becomes non-zero, stop waiting (and warn).
 * Context: main thread, after the runtime started.
 */
void evr_example_wait_agent(const char *prog, volatile sig_atomic_t *stop);

#endif /* EVR_EXAMPLE_AGENT_READY_H */
