// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Framing of the control protocol, and every protobuf-c pack and unpack call in
 * evring (<evring/framing.h>). Input is hostile: lengths are checked before any
 * allocation, and received fds are never leaked (closed unless taken).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <evring/framing.h>

/* ---- protobuf-c --------------------------------------------------------------- */

/*
 * Pack @msg at offset @hdr of a new buffer of @hdr + packed size bytes (at least
 * one byte): the one packer behind evr_pb_pack() and evr_frame_build().
 * @ret_len: the packed size, without @hdr.
 */
static int pack_after(const ProtobufCMessage *msg, size_t hdr, uint8_t **ret_buf, size_t *ret_len)
{
	size_t n;
	uint8_t *buf;

	if (!msg || !ret_buf || !ret_len)
		return -EINVAL;
	n = protobuf_c_message_get_packed_size(msg);
	if (n > EVR_FRAME_MAX)
		return -EMSGSIZE;
	buf = malloc(hdr + n ? hdr + n : 1);
	if (!buf)
		return -ENOMEM;
	if (protobuf_c_message_pack(msg, buf + hdr) != n) {
		free(buf);
		return -EMSGSIZE;
	}
	*ret_buf = buf;
	*ret_len = n;
	return 0;
}

int evr_pb_pack(const ProtobufCMessage *msg, uint8_t **ret_data, size_t *ret_len)
{
	return pack_after(msg, 0, ret_data, ret_len);
}

/* protobuf-c's output buffer, passing each piece on and keeping the first error. */
struct sink_buffer {
	ProtobufCBuffer base;		/* first: protobuf-c calls base.append(&base, ...) */
	evr_pb_sink_fn *sink;
	void *ctx;
	int err;
};

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct sink_buffer *sb = (struct sink_buffer *)b;

	if (!sb->err && len)
		sb->err = sb->sink(sb->ctx, data, len);
}

int evr_pb_pack_to(const ProtobufCMessage *msg, evr_pb_sink_fn *sink, void *ctx)
{
	struct sink_buffer sb = { .base.append = sink_append, .sink = sink, .ctx = ctx };

	if (!msg || !sink)
		return -EINVAL;
	protobuf_c_message_pack_to_buffer(msg, &sb.base);
	return sb.err;
}

int evr_pb_unpack(const ProtobufCMessageDescriptor *desc, const void *data, size_t len,
		  ProtobufCMessage **ret)
{
	ProtobufCMessage *m;

	if (!desc || (len && !data) || !ret)
		return -EINVAL;
	if (len > EVR_FRAME_MAX)
		return -EMSGSIZE;
	/* protobuf-c checks every length and required field; NULL is all it says. */
	m = protobuf_c_message_unpack(desc, NULL, len, len ? data : (const uint8_t *)"");
	if (!m)
		return -EBADMSG;
	*ret = m;
	return 0;
}

void evr_pb_free(ProtobufCMessage *msg)
{
	if (msg)
		protobuf_c_message_free_unpacked(msg, NULL);
}

int evr_pb_unpack_request(const void *data, size_t len, Evr__Request **ret)
{
	ProtobufCMessage *m;
	int err = evr_pb_unpack(&evr__request__descriptor, data, len, &m);

	if (err == 0)
		*ret = (Evr__Request *)m;
	return err;
}

int evr_pb_unpack_reply(const void *data, size_t len, Evr__Reply **ret)
{
	ProtobufCMessage *m;
	int err = evr_pb_unpack(&evr__reply__descriptor, data, len, &m);

	if (err == 0)
		*ret = (Evr__Reply *)m;
	return err;
}

void evr_pb_request_free(Evr__Request *m)
{
	evr_pb_free(m ? &m->base : NULL);
}

void evr_pb_reply_free(Evr__Reply *m)
{
	evr_pb_free(m ? &m->base : NULL);
}

/* ---- frames ------------------------------------------------------------------------- */

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int evr_frame_build(const ProtobufCMessage *msg, uint8_t **ret_frame, size_t *ret_len)
{
	size_t n;
	uint8_t *buf;
	int err;

	if (!ret_frame || !ret_len)
		return -EINVAL;
	err = pack_after(msg, EVR_FRAME_HDR, &buf, &n);
	if (err < 0)
		return err;
	put_le32(buf, (uint32_t)n);
	*ret_frame = buf;
	*ret_len = EVR_FRAME_HDR + n;
	return 0;
}

long evr_frame_parse(const void *buf, size_t len, const uint8_t **ret_payload, uint32_t *ret_len)
{
	const uint8_t *p = buf;
	uint32_t n;

	if (len < EVR_FRAME_HDR)
		return 0;
	n = get_le32(p);
	if (n > EVR_FRAME_MAX)
		return -EPROTO;
	if (len - EVR_FRAME_HDR < n)
		return 0;
	*ret_payload = p + EVR_FRAME_HDR;
	*ret_len = n;
	return (long)(EVR_FRAME_HDR + n);
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Milliseconds left until @deadline (-1: none), for poll(). */
static int left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ms();
	return left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

static int wait_fd(int sock, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = sock, .events = events };
	int n;

	for (;;) {
		n = poll(&pfd, 1, left_ms(deadline));
		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* One sendmsg() of @buf[0..len); fds only when @nfds. Returns bytes sent or -errno. */
static ssize_t send_some(int sock, const uint8_t *buf, size_t len, const int *fds,
			 unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * EVR_FRAME_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

int evr_frame_send(int sock, const void *frame, size_t len, const int *fds, unsigned int nfds,
		   int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	const uint8_t *p = frame;
	size_t off = 0;

	if (sock < 0 || !frame || len < EVR_FRAME_HDR || nfds > EVR_FRAME_MAX_FDS ||
	    (nfds && !fds))
		return -EINVAL;
	while (off < len) {
		ssize_t n = send_some(sock, p + off, len - off, off ? NULL : fds, off ? 0 : nfds);

		if (n == -EAGAIN) {
			int err = wait_fd(sock, POLLOUT, deadline);

			if (err < 0)
				return err;
			continue;
		}
		if (n < 0)
			return n == -ECONNRESET ? -EPIPE : (int)n;
		off += (size_t)n;
	}
	return 0;
}

/* ---- incremental receive -------------------------------------------------------------- */

void evr_frame_rx_init(struct evr_frame_rx *rx)
{
	memset(rx, 0, sizeof(*rx));
}

void evr_frame_rx_drop_fds(struct evr_frame_rx *rx)
{
	for (unsigned int i = 0; i < rx->nfds; i++)
		close(rx->fds[i]);
	rx->nfds = 0;
}

void evr_frame_rx_fini(struct evr_frame_rx *rx)
{
	if (!rx)
		return;
	evr_frame_rx_drop_fds(rx);
	free(rx->buf);
	memset(rx, 0, sizeof(*rx));
}

/* Keep the fds of every SCM_RIGHTS message; close what does not fit. */
static void rx_collect_fds(struct evr_frame_rx *rx, struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;
		int fd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (rx->nfds < EVR_FRAME_MAX_FDS) {
				rx->fds[rx->nfds++] = fd;
			} else {
				close(fd);
				rx->fd_overflow = true;
			}
		}
	}
}

int evr_frame_rx_read(struct evr_frame_rx *rx, int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * EVR_FRAME_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t want = 64 * 1024;
	ssize_t n;

	if (rx->eof)
		return 0;
	/*
	 * Grow to at most one whole frame plus slack: a peer cannot make us buffer
	 * more than that, because a frame is consumed (or the peer dropped) before
	 * the next read.
	 */
	if (rx->cap - rx->len < want) {
		size_t cap = rx->cap ? rx->cap : want;
		uint8_t *nb;

		while (cap - rx->len < want)
			cap *= 2;
		if (cap > 2 * (EVR_FRAME_HDR + (size_t)EVR_FRAME_MAX) + want)
			return -ENOBUFS;
		nb = realloc(rx->buf, cap);
		if (!nb)
			return -ENOMEM;
		rx->buf = nb;
		rx->cap = cap;
	}
	iov.iov_base = rx->buf + rx->len;
	iov.iov_len = rx->cap - rx->len;
	mh.msg_control = cbuf.buf;
	mh.msg_controllen = sizeof(cbuf.buf);
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	rx_collect_fds(rx, &mh);
	if (mh.msg_flags & MSG_CTRUNC)
		rx->fd_overflow = true;
	if (n == 0) {
		rx->eof = true;
		return 0;
	}
	rx->len += (size_t)n;
	return (int)(n > INT32_MAX ? INT32_MAX : n);
}

int evr_frame_rx_next(struct evr_frame_rx *rx, const uint8_t **ret_payload, uint32_t *ret_len)
{
	long n = evr_frame_parse(rx->buf, rx->len, ret_payload, ret_len);

	if (n < 0)
		return (int)n;
	if (n == 0)
		return rx->eof && rx->len ? -EPROTO : 0;
	return 1;
}

void evr_frame_rx_pop(struct evr_frame_rx *rx)
{
	const uint8_t *payload;
	uint32_t len;
	long n = evr_frame_parse(rx->buf, rx->len, &payload, &len);

	if (n <= 0)
		return;
	memmove(rx->buf, rx->buf + n, rx->len - (size_t)n);
	rx->len -= (size_t)n;
}

int evr_frame_rx_take_fds(struct evr_frame_rx *rx, int *ret_fds, unsigned int n)
{
	if (rx->fd_overflow || rx->nfds < n)
		return -EBADMSG;
	memcpy(ret_fds, rx->fds, sizeof(int) * n);
	memmove(rx->fds, rx->fds + n, sizeof(int) * (rx->nfds - n));
	rx->nfds -= n;
	return 0;
}

int evr_frame_recv(struct evr_frame_rx *rx, int sock, int timeout_ms, const uint8_t **ret_payload,
		   uint32_t *ret_len)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

	for (;;) {
		int ret = evr_frame_rx_next(rx, ret_payload, ret_len);

		if (ret != 0)
			return ret;
		if (rx->eof)
			return -ECONNRESET;
		ret = evr_frame_rx_read(rx, sock);
		if (ret == -EAGAIN) {
			ret = wait_fd(sock, POLLIN, deadline);
			if (ret < 0)
				return ret;
			continue;
		}
		if (ret < 0)
			return ret;
	}
}

/* ---- send queue ---------------------------------------------------------------------- */

struct evr_frame_txq_item {
	struct evr_frame_txq_item *next;
	uint8_t *frame;
	size_t len, off;
	int fds[EVR_FRAME_MAX_FDS];
	unsigned int nfds;
};

void evr_frame_txq_init(struct evr_frame_txq *q, size_t cap)
{
	memset(q, 0, sizeof(*q));
	q->cap = cap;
}

static void item_free(struct evr_frame_txq_item *it)
{
	for (unsigned int i = 0; i < it->nfds; i++)
		close(it->fds[i]);
	free(it->frame);
	free(it);
}

void evr_frame_txq_fini(struct evr_frame_txq *q)
{
	struct evr_frame_txq_item *it, *next;

	if (!q)
		return;
	for (it = q->head; it; it = next) {
		next = it->next;
		item_free(it);
	}
	q->head = q->tail = NULL;
	q->bytes = 0;
}

int evr_frame_txq_push(struct evr_frame_txq *q, uint8_t *frame, size_t len, const int *fds,
		       unsigned int nfds)
{
	struct evr_frame_txq_item *it;
	int err;

	if (!frame || len < EVR_FRAME_HDR || nfds > EVR_FRAME_MAX_FDS || (nfds && !fds)) {
		free(frame);
		return -EINVAL;
	}
	if (q->bytes + len > q->cap) {
		free(frame);
		return -ENOBUFS;
	}
	it = calloc(1, sizeof(*it));
	if (!it) {
		free(frame);
		return -ENOMEM;
	}
	it->frame = frame;
	it->len = len;
	for (unsigned int i = 0; i < nfds; i++) {
		int fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);

		if (fd < 0) {
			err = -errno;
			item_free(it);
			return err;
		}
		it->fds[it->nfds++] = fd;
	}
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->bytes += len;
	return 0;
}

int evr_frame_txq_flush(struct evr_frame_txq *q, int sock)
{
	while (q->head) {
		struct evr_frame_txq_item *it = q->head;
		bool first = it->off == 0;
		ssize_t n = send_some(sock, it->frame + it->off, it->len - it->off,
				      first ? it->fds : NULL, first ? it->nfds : 0);

		if (n == -EAGAIN)
			return 1;
		if (n < 0)
			return n == -ECONNRESET ? -EPIPE : (int)n;
		it->off += (size_t)n;
		q->bytes -= (size_t)n;
		if (first) {
			/* The fds went with the first byte; the peer has its own now. */
			for (unsigned int i = 0; i < it->nfds; i++)
				close(it->fds[i]);
			it->nfds = 0;
		}
		if (it->off < it->len)
			return 1;
		q->head = it->next;
		if (!q->head)
			q->tail = NULL;
		item_free(it);
	}
	return 0;
}
