/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one module through which evring packs and unpacks protobuf-c messages
 * (proto/evring.proto), and frames them on the agent socket.
 *
 * A frame is a 4-byte little-endian payload length followed by that many bytes
 * of a packed evr.Request (consumer to agent) or evr.Reply (agent to consumer).
 * The payload is at most EVR_FRAME_MAX bytes. File descriptors travel as
 * SCM_RIGHTS ancillary data attached to the first byte of their frame.
 *
 * Everything received is untrusted: an oversize length gives -EPROTO, a frame
 * cut short by the end of the stream -EPROTO, a payload that does not unpack
 * -EBADMSG; none of them crashes or allocates more than the frame's size.
 *
 * Nothing here is exported from libevring: the producer's version script keeps
 * evr_frame_* and the generated evr__* symbols local.
 *
 * Context: every function may be called from any thread; a receiver (struct
 * evr_frame_rx) or a send queue belongs to one thread at a time. Nothing here
 * raises SIGPIPE or blocks beyond the timeouts it is given.
 */
#ifndef EVR_FRAMING_H
#define EVR_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <evring/evring.pb-c.h>

#define EVR_FRAME_HDR		4u
#define EVR_FRAME_MAX		(1u << 20)	/* payload bytes */
#define EVR_FRAME_MAX_FDS	8u		/* fds buffered by one receiver */

/* ---- protobuf-c, packed payloads ------------------------------------------ */

/**
 * evr_pb_pack() - pack any message.
 * @msg: the message; borrowed.
 * @ret_data: malloc'ed bytes (at least one byte allocated even for an empty
 *            message), the caller frees them.
 * @ret_len: their number.
 * Return: 0, -EMSGSIZE (packs to more than EVR_FRAME_MAX), -ENOMEM.
 * Context: any thread.
 */
int evr_pb_pack(const ProtobufCMessage *msg, uint8_t **ret_data, size_t *ret_len);

/**
 * evr_pb_unpack() - unpack untrusted bytes as a message of type @desc.
 * @ret: free with evr_pb_free().
 * Return: 0, -EBADMSG (does not unpack, missing required fields), -EMSGSIZE
 * (@len > EVR_FRAME_MAX).
 * Context: any thread.
 */
int evr_pb_unpack(const ProtobufCMessageDescriptor *desc, const void *data, size_t len,
		  ProtobufCMessage **ret);

/* Free what evr_pb_unpack() returned; accepts NULL. */
void evr_pb_free(ProtobufCMessage *msg);

/* Called with successive pieces of a packed message; returns 0 or -errno (which stops it). */
typedef int evr_pb_sink_fn(void *ctx, const uint8_t *data, size_t len);

/**
 * evr_pb_pack_to() - pack @msg of any size (files: a pprof profile), handing the
 * bytes to @sink as they are produced instead of building them in one buffer.
 * Not for frames: nothing limits the size.
 * Return: 0, or the first error @sink returned.
 * Context: any thread.
 */
int evr_pb_pack_to(const ProtobufCMessage *msg, evr_pb_sink_fn *sink, void *ctx);

/* Typed shorthands for the two message types that travel in frames. */
int evr_pb_unpack_request(const void *data, size_t len, Evr__Request **ret);
int evr_pb_unpack_reply(const void *data, size_t len, Evr__Reply **ret);
void evr_pb_request_free(Evr__Request *m);
void evr_pb_reply_free(Evr__Reply *m);

/* ---- frames ----------------------------------------------------------------- */

/**
 * evr_frame_build() - pack @msg into a whole frame: length prefix + payload.
 * @ret_frame: malloc'ed, the caller frees it.
 * Return: 0, -EMSGSIZE, -ENOMEM.
 */
int evr_frame_build(const ProtobufCMessage *msg, uint8_t **ret_frame, size_t *ret_len);

/**
 * evr_frame_parse() - find the first frame in @buf.
 * @ret_payload, @ret_len: its payload, pointing into @buf.
 * Return: the frame's total size (> 0), 0 when @buf holds only part of it,
 * -EPROTO when its length prefix exceeds EVR_FRAME_MAX.
 */
long evr_frame_parse(const void *buf, size_t len, const uint8_t **ret_payload,
		     uint32_t *ret_len);

/**
 * evr_frame_send() - send one whole frame with optional fds, waiting at most
 * @timeout_ms (-1: no limit) for room on @sock, blocking or not.
 * @fds: @nfds descriptors (at most EVR_FRAME_MAX_FDS), borrowed; sent with the
 *       first byte.
 * Return: 0, -ETIMEDOUT, -EPIPE (peer gone), -errno.
 * Context: never raises SIGPIPE.
 */
int evr_frame_send(int sock, const void *frame, size_t len, const int *fds, unsigned int nfds,
		   int timeout_ms);

/* ---- incremental receive (non-blocking sockets) ------------------------------ */

struct evr_frame_rx {
	uint8_t *buf;
	size_t len, cap;
	int fds[EVR_FRAME_MAX_FDS];	/* received, not yet taken, in order */
	unsigned int nfds;
	bool fd_overflow;		/* more fds arrived than fit: they were closed */
	bool eof;
};

/* Zero-initialized storage is a valid empty receiver; free with _fini(). */
void evr_frame_rx_init(struct evr_frame_rx *rx);
/* Free the buffer and close every fd not taken. */
void evr_frame_rx_fini(struct evr_frame_rx *rx);

/**
 * evr_frame_rx_read() - one recvmsg() from @sock into @rx (fds close-on-exec).
 * Return: bytes read (> 0), 0 end of stream (rx->eof set), -EAGAIN, -errno.
 */
int evr_frame_rx_read(struct evr_frame_rx *rx, int sock);

/**
 * evr_frame_rx_next() - the first complete frame buffered in @rx.
 * @ret_payload: points into @rx, valid until evr_frame_rx_pop() or a read.
 * Return: 1 a frame, 0 need more bytes, -EPROTO oversize frame or a frame cut
 * short by the end of the stream.
 */
int evr_frame_rx_next(struct evr_frame_rx *rx, const uint8_t **ret_payload, uint32_t *ret_len);

/* Drop the first frame (the one evr_frame_rx_next() returned). */
void evr_frame_rx_pop(struct evr_frame_rx *rx);

/**
 * evr_frame_rx_take_fds() - take @n received fds, in order of arrival.
 * @ret_fds: receives @n fds, now owned by the caller.
 * Return: 0, -EBADMSG (fewer than @n arrived, or some were lost to overflow).
 */
int evr_frame_rx_take_fds(struct evr_frame_rx *rx, int *ret_fds, unsigned int n);

/* Close every fd received and not taken (after a frame that carries none). */
void evr_frame_rx_drop_fds(struct evr_frame_rx *rx);

/**
 * evr_frame_recv() - wait for the next whole frame on @sock.
 * @timeout_ms: -1 no limit.
 * Return: 1 a frame (as evr_frame_rx_next()), -ETIMEDOUT, -ECONNRESET (the
 * stream ended between frames), -EPROTO, -errno.
 */
int evr_frame_recv(struct evr_frame_rx *rx, int sock, int timeout_ms, const uint8_t **ret_payload,
		   uint32_t *ret_len);

/* ---- a bounded send queue (the agent: never blocks on a peer) --------------- */

struct evr_frame_txq_item;

struct evr_frame_txq {
	struct evr_frame_txq_item *head, *tail;
	size_t bytes;			/* queued, not yet sent */
	size_t cap;			/* evr_frame_txq_push() refuses beyond it */
};

void evr_frame_txq_init(struct evr_frame_txq *q, size_t cap);
/* Free every queued frame and close its fds. */
void evr_frame_txq_fini(struct evr_frame_txq *q);

/**
 * evr_frame_txq_push() - queue a frame.
 * @frame: malloc'ed; the queue takes ownership (also on failure).
 * @fds: duplicated (close-on-exec) into the queue; the caller keeps its own.
 * Return: 0, -ENOBUFS (the queue would exceed its cap: the peer does not read),
 * -EMFILE / -ENOMEM.
 */
int evr_frame_txq_push(struct evr_frame_txq *q, uint8_t *frame, size_t len, const int *fds,
		       unsigned int nfds);

/**
 * evr_frame_txq_flush() - send what the non-blocking @sock takes now.
 * Return: 0 queue empty, 1 data left (wait for EPOLLOUT), -EPIPE, -errno.
 */
int evr_frame_txq_flush(struct evr_frame_txq *q, int sock);

static inline bool evr_frame_txq_empty(const struct evr_frame_txq *q)
{
	return q->head == NULL;
}

#endif /* EVR_FRAMING_H */
