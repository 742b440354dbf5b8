/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent thread of libevring: connections and request handling. */
#ifndef EVR_AGENT_INTERNAL_H
#define EVR_AGENT_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <evring/framing.h>

#include "producer-internal.h"

#ifndef EVR_PROTOCOL_VERSION
#define EVR_PROTOCOL_VERSION 1u
#endif

/* Consumers that said Hello, served at once. */
#define EVR_AGENT_MAX_CLIENTS	256u
/*
 * Connections that have not said Hello yet. They have their own slots, so that
 * idle connections never take a real consumer's; a new one beyond this closes
 * the oldest of them. Each also has EVR_AGENT_HELLO_TIMEOUT_MS to say Hello.
 */
#define EVR_AGENT_MAX_PENDING	64u
#define EVR_AGENT_HELLO_TIMEOUT_MS	3000u
/*
 * Ring bytes backed with pages per turn of the agent's loop (a few ms): a large
 * session is set up without the agent ceasing to answer others meanwhile.
 */
#define EVR_AGENT_POPULATE_SLICE	(8u << 20)
/* Replies queued for one consumer that does not read: two maximal frames. */
#define EVR_AGENT_TXQ_CAP	(2u * (EVR_FRAME_HDR + EVR_FRAME_MAX))

/* One consumer connection (accepted, the reverse one of EVR_CONNECT, or listen mode's). */
struct evr_agent_conn {
	struct evr_agent_conn *next;
	int fd;				/* non-blocking, -1 once closed */
	struct evr_frame_rx rx;
	struct evr_frame_txq tx;
	struct evr_session *session;	/* at most one, lives as long as the connection */
	struct evr_populate populate;	/* backing the session's rings, a slice at a time */
	char *client;			/* from Hello */
	uint64_t hello_deadline_ns;	/* CLOCK_MONOTONIC; closed if no Hello by then */
	uint32_t peer_pid;		/* SO_PEERCRED */
	uint32_t peer_uid;
	bool hello;			/* Hello answered */
	bool reverse;			/* EVR_CONNECT: Resume lets the constructor return */
	bool dialed;			/* listen mode (EVR_MONITOR_SOCKET): ours, made to the monitor */
	bool closing;			/* read nothing more; close once the replies are out */
	bool dead;			/* closed; freed at the end of the event batch */
	bool want_out;			/* EPOLLOUT registered */
};

/**
 * evr_agent_handle() - answer one request: queue exactly one reply on @c.
 * May set @c->closing (protocol errors). Returns 0, or -errno when the reply
 * could not be queued (the connection must be dropped).
 * Context: the agent thread, agent lock held, registry lock not held.
 */
EVR_HIDDEN int evr_agent_handle(struct evr_agent_conn *c, const Evr__Request *req);

/**
 * evr_agent_conn_input() - answer every whole request buffered in @c->rx (by
 * evr_frame_rx_read()), in order, until it holds only part of a frame or @c is
 * closing. The one decoder of what consumers send: agent.c calls it after each
 * read, the fuzz target (tests/fuzz/fuzz_agent.c) on bytes of its own, without
 * a socket.
 * @ret_violation: set when 1 is returned: what the peer did wrong, for the
 *                 Error reply.
 * Return: 0, 1 the peer broke the protocol (a frame over EVR_FRAME_MAX or a
 * payload that is not an evr.Request: close the connection), or -errno when a
 * reply could not be queued (drop the connection).
 * Context: as evr_agent_handle().
 */
EVR_HIDDEN int evr_agent_conn_input(struct evr_agent_conn *c, const char **ret_violation);

/*
 * Build the frame of Error{@code, message formatted from @fmt}, the one builder
 * of Error replies: queued by evr_agent_error(), sent once by agent.c to a
 * refused peer. @ret_frame: malloc'ed. Return: 0, -ENOMEM.
 */
EVR_HIDDEN int evr_agent_error_vframe(int code, uint8_t **ret_frame, size_t *ret_len,
				      const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* Queue Error{@code, message} on @c. Return as evr_agent_handle(). */
EVR_HIDDEN int evr_agent_error(struct evr_agent_conn *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Consumers that said Hello and are still connected. Agent lock held. */
EVR_HIDDEN uint32_t evr_agent_served(void);

/* Resume arrived on the reverse connection: let the constructor return. */
EVR_HIDDEN void evr_agent_resume_constructor(void);

#endif /* EVR_AGENT_INTERNAL_H */
