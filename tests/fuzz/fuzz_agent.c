// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target `agent`: what a consumer sends to a traced process. The input
 * is the byte stream of one connection (length-prefixed evr.Request frames),
 * handed to the agent's own decoder, evr_agent_conn_input(), in pieces, the
 * way reads from a socket would deliver it; the requests run for real (Hello,
 * sessions with their shared memory, ListEvents, ListThreads...).
 *
 * Input: byte 0 bit 0: the connection is the reverse one (EVR_CONNECT); bits
 * 1-7 (k): pieces of 7k bytes (k = 0: the whole stream at once). The rest is
 * the stream.
 *
 * Properties, beyond no crash, leak or sanitizer report: every request the
 * agent consumed gets exactly one reply (none for the frame that broke the
 * protocol), and every reply is a frame that unpacks as an evr.Reply with a
 * body.
 *
 * The agent's constructor must not start a real agent thread here:
 * LLVMFuzzerInitialize() runs the target again with EVR_AGENT=0.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <evring/evring.h>

#include "agent-internal.h"
#include "fuzz.h"

/* Events for the sessions, ListEvents and the metadata to describe. */
#define FUZZ_EVENTS(EVENT)                                                                  \
	EVENT(fuzz_tick, "Tick", 1, EVR_LEVEL_INFO, 0x1, (u64, seq))                        \
	EVENT(fuzz_req_start, "RequestStart", 2, EVR_START(EVR_LEVEL_INFO), 0x2, (str, path)) \
	EVENT(fuzz_req_stop, "RequestStop", 3, EVR_STOP(EVR_LEVEL_INFO), 0x2, (u32, status))
EVR_PROVIDER_DECLARE(fuzz_prov, FUZZ_EVENTS)
EVR_PROVIDER_DEFINE(fuzz_prov, "Fuzz", FUZZ_EVENTS)

/* Sessions the inputs may start: small, so that an execution stays cheap (a
 * session's memory is created and backed for real). Bigger ones are the memory
 * caps' business, not the decoder's. */
#define FUZZ_RING_MAX (256u << 10)
#define FUZZ_META_MAX (1u << 20)

static int sv[2] = { -1, -1 };	/* replies go out on sv[0], are read back on sv[1] */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *agent = getenv("EVR_AGENT");

	if (!agent || strcmp(agent, "0") != 0) {
		setenv("EVR_AGENT", "0", 1);
		execv("/proc/self/exe", *argv);
		fprintf(stderr, "fuzz_agent: cannot run again with EVR_AGENT=0: %s\n",
			strerror(errno));
		exit(1);
	}
	(void)argc;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("fuzz_agent: socketpair");
		exit(1);
	}
	return 0;
}

/* Would this stream start a session too big to fuzz cheaply? */
static bool too_big(const uint8_t *p, size_t len)
{
	for (;;) {
		const uint8_t *payload;
		uint32_t n;
		Evr__Request *req;
		long f = evr_frame_parse(p, len, &payload, &n);
		bool big = false;

		if (f <= 0 || evr_pb_unpack_request(payload, n, &req) < 0)
			return false;
		if (req->body_case == EVR__REQUEST__BODY_START) {
			const Evr__StartSession *s = req->start;

			big = !s->has_ring_size || s->ring_size == 0 || s->ring_size > FUZZ_RING_MAX ||
			      (s->has_meta_size && s->meta_size > FUZZ_META_MAX);
		}
		evr_pb_request_free(req);
		if (big)
			return true;
		p += f;
		len -= (size_t)f;
	}
}

/* Append @n bytes to the connection's receive buffer, as a read would. */
static void feed(struct evr_agent_conn *c, const uint8_t *p, size_t n)
{
	if (c->rx.cap - c->rx.len < n) {
		size_t cap = c->rx.len + n;
		uint8_t *b = realloc(c->rx.buf, cap ? cap : 1);

		fuzz_check(b != NULL);
		c->rx.buf = b;
		c->rx.cap = cap;
	}
	memcpy(c->rx.buf + c->rx.len, p, n);
	c->rx.len += n;
}

/* Send what @c queued and count the replies that come out; close their fds. */
static uint64_t drain_replies(struct evr_agent_conn *c, struct evr_frame_rx *in)
{
	uint64_t replies = 0;

	for (;;) {
		int fl = evr_frame_txq_flush(&c->tx, sv[0]);
		int rd;

		fuzz_check(fl >= 0);
		while ((rd = evr_frame_rx_read(in, sv[1])) > 0) {
			const uint8_t *payload;
			uint32_t n;

			while (evr_frame_rx_next(in, &payload, &n) == 1) {
				Evr__Reply *r;

				fuzz_check(evr_pb_unpack_reply(payload, n, &r) == 0);
				fuzz_check(r->body_case != EVR__REPLY__BODY__NOT_SET);
				evr_pb_reply_free(r);
				evr_frame_rx_pop(in);
				replies++;
			}
			evr_frame_rx_drop_fds(in);
		}
		fuzz_check(rd == -EAGAIN);
		if (fl == 0)
			break;
	}
	fuzz_check(in->len == 0);	/* replies are whole frames */
	return replies;
}

/* Frames in the first @len bytes of @p (the bytes the agent consumed). */
static uint64_t frames_in(const uint8_t *p, size_t len)
{
	uint64_t n = 0;

	while (len) {
		const uint8_t *payload;
		uint32_t plen;
		long f = evr_frame_parse(p, len, &payload, &plen);

		fuzz_check(f > 0);
		p += f;
		len -= (size_t)f;
		n++;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evr_agent_conn c = { .fd = -1 };
	struct evr_frame_rx in;
	const char *why = NULL;
	uint64_t replies = 0, consumed;
	size_t piece, off = 0;
	int ret = 0;

	if (size < 1)
		return 0;
	if (too_big(data + 1, size - 1))
		return -1;	/* not added to the corpus */
	c.reverse = data[0] & 1;
	piece = (size_t)(data[0] >> 1) * 7;
	data++;
	size--;
	if (!piece)
		piece = size ? size : 1;
	evr_frame_rx_init(&c.rx);
	evr_frame_txq_init(&c.tx, EVR_AGENT_TXQ_CAP);
	evr_frame_rx_init(&in);
	c.peer_pid = (uint32_t)getpid();
	c.peer_uid = (uint32_t)geteuid();
	while (off < size && ret == 0 && !c.closing) {
		size_t n = size - off < piece ? size - off : piece;

		feed(&c, data + off, n);
		off += n;
		ret = evr_agent_conn_input(&c, &why);
		replies += drain_replies(&c, &in);
	}
	/* What the agent consumed is what it popped from its buffer. */
	consumed = frames_in(data, off - c.rx.len);
	if (ret == 1) {
		fuzz_check(why && *why);
		/* An oversize frame is not consumed; a payload that does not unpack is,
		 * without a reply. */
		fuzz_check(replies == consumed || replies + 1 == consumed);
	} else if (ret == 0) {
		fuzz_check(replies == consumed);
	}
	evr_session_free(c.session);
	evr_frame_rx_fini(&c.rx);
	evr_frame_txq_fini(&c.tx);
	evr_frame_rx_fini(&in);
	free(c.client);
	return 0;
}
