// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for proto/framing.c: round trips of every request and reply,
 * frames with fds over a real socketpair, incremental receive, the bounded
 * send queue, and hostile input (10^4 random buffers, every truncation of
 * valid frames, oversize lengths): errors, never crashes or leaks.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <evring/framing.h>
#include <evring/pprof.pb-c.h>

/* xorshift64*: reproducible "random" input. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
}

/* ---- sample messages ------------------------------------------------------------ */

static uint8_t *frame_of(const ProtobufCMessage *m, size_t *len)
{
	uint8_t *f;

	assert_int_equal(evr_frame_build(m, &f, len), 0);
	return f;
}

static uint8_t *sample_start_frame(size_t *len)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__StartSession s = EVR__START_SESSION__INIT;

	s.providers = "Foo:0x10:4,Bar";
	s.has_ring_size = true;
	s.ring_size = 1 << 20;
	s.has_packet_size = true;
	s.packet_size = 16384;
	s.has_mode = true;
	s.mode = 1;
	s.has_meta_size = true;
	s.meta_size = 8192;
	s.has_counter_interval_ms = true;
	s.counter_interval_ms = 1000;
	req.body_case = EVR__REQUEST__BODY_START;
	req.start = &s;
	return frame_of(&req.base, len);
}

static uint8_t *sample_hello_reply_frame(size_t *len)
{
	static char *argv[] = { "prog", "--flag", "" };
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__HelloReply hr = EVR__HELLO_REPLY__INIT;
	Evr__ProcessInfo pi = EVR__PROCESS_INFO__INIT;
	Evr__ClockCalib ck = EVR__CLOCK_CALIB__INIT;

	ck.kind = 1;
	ck.shift = 32;
	ck.mult = 123456789;
	ck.ts_base = 1;
	ck.mono_base = 2;
	ck.real_base = 3;
	pi.pid = 4242;
	pi.has_ppid = true;
	pi.ppid = 1;
	pi.n_argv = 3;
	pi.argv = argv;
	pi.exe = "/usr/bin/prog";
	pi.hostname = "host";
	pi.clock = &ck;
	hr.protocol_version = 1;
	hr.process = &pi;
	r.body_case = EVR__REPLY__BODY_HELLO;
	r.hello = &hr;
	return frame_of(&r.base, len);
}

/* ---- round trips ------------------------------------------------------------------ */

static void test_frame_request_roundtrip(void **state)
{
	const uint8_t *payload;
	Evr__Request *req;
	uint32_t plen;
	size_t len;
	uint8_t *f = sample_start_frame(&len);

	(void)state;
	assert_int_equal(evr_frame_parse(f, len, &payload, &plen), (long)len);
	assert_int_equal(plen + EVR_FRAME_HDR, len);
	assert_int_equal(evr_pb_unpack_request(payload, plen, &req), 0);
	assert_int_equal(req->body_case, EVR__REQUEST__BODY_START);
	assert_string_equal(req->start->providers, "Foo:0x10:4,Bar");
	assert_true(req->start->has_ring_size && req->start->ring_size == 1 << 20);
	assert_int_equal(req->start->packet_size, 16384);
	assert_int_equal(req->start->mode, 1);
	assert_int_equal(req->start->meta_size, 8192);
	assert_int_equal(req->start->counter_interval_ms, 1000);
	assert_false(req->start->has_stacks);
	evr_pb_request_free(req);
	free(f);
}

static void test_frame_every_request_kind(void **state)
{
	Evr__Hello h = EVR__HELLO__INIT;
	Evr__StopSession stop = EVR__STOP_SESSION__INIT;
	Evr__ListEvents le = EVR__LIST_EVENTS__INIT;
	Evr__ListSessions ls = EVR__LIST_SESSIONS__INIT;
	Evr__Resume res = EVR__RESUME__INIT;
	Evr__Request reqs[5];
	const Evr__Request__BodyCase kinds[5] = {
		EVR__REQUEST__BODY_HELLO, EVR__REQUEST__BODY_STOP, EVR__REQUEST__BODY_LIST_EVENTS,
		EVR__REQUEST__BODY_LIST_SESSIONS, EVR__REQUEST__BODY_RESUME,
	};

	(void)state;
	h.protocol_version = 1;
	h.client = "test";
	for (int i = 0; i < 5; i++) {
		evr__request__init(&reqs[i]);
		reqs[i].body_case = kinds[i];
	}
	reqs[0].hello = &h;
	reqs[1].stop = &stop;
	reqs[2].list_events = &le;
	reqs[3].list_sessions = &ls;
	reqs[4].resume = &res;
	for (int i = 0; i < 5; i++) {
		const uint8_t *payload;
		Evr__Request *back;
		uint32_t plen;
		size_t len;
		uint8_t *f = frame_of(&reqs[i].base, &len);

		assert_true(evr_frame_parse(f, len, &payload, &plen) > 0);
		assert_int_equal(evr_pb_unpack_request(payload, plen, &back), 0);
		assert_int_equal(back->body_case, kinds[i]);
		if (i == 0) {
			assert_int_equal(back->hello->protocol_version, 1);
			assert_string_equal(back->hello->client, "test");
		}
		evr_pb_request_free(back);
		free(f);
	}
}

static void test_frame_reply_roundtrip(void **state)
{
	const uint8_t *payload;
	Evr__Reply *r;
	uint32_t plen;
	size_t len;
	uint8_t *f = sample_hello_reply_frame(&len);

	(void)state;
	assert_true(evr_frame_parse(f, len, &payload, &plen) > 0);
	assert_int_equal(evr_pb_unpack_reply(payload, plen, &r), 0);
	assert_int_equal(r->body_case, EVR__REPLY__BODY_HELLO);
	assert_int_equal(r->hello->process->pid, 4242);
	assert_int_equal(r->hello->process->n_argv, 3);
	assert_string_equal(r->hello->process->argv[1], "--flag");
	assert_string_equal(r->hello->process->argv[2], "");
	assert_int_equal(r->hello->process->clock->mult, 123456789);
	assert_false(r->hello->process->has_uid);
	evr_pb_reply_free(r);
	free(f);
}

static void test_pb_pack_empty_message(void **state)
{
	Evr__StopSession stop = EVR__STOP_SESSION__INIT;
	ProtobufCMessage *m;
	uint8_t *data;
	size_t len;

	(void)state;
	assert_int_equal(evr_pb_pack(&stop.base, &data, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(evr_pb_unpack(&evr__stop_session__descriptor, data, len, &m), 0);
	evr_pb_free(m);
	free(data);
	/* A message with required fields does not unpack from nothing. */
	assert_int_equal(evr_pb_unpack(&evr__event_desc__descriptor, NULL, 0, &m), -EBADMSG);
	assert_int_equal(evr_pb_unpack(&evr__event_desc__descriptor, "", EVR_FRAME_MAX + 1, &m),
			 -EMSGSIZE);
}

/* Collects what evr_pb_pack_to() hands over; fails at byte @fail_at. */
struct collect {
	uint8_t buf[4096];
	size_t len, fail_at, calls;
};

static int collect_sink(void *ctx, const uint8_t *data, size_t len)
{
	struct collect *c = ctx;

	c->calls++;
	if (c->len + len > c->fail_at)
		return -EIO;
	assert_true(c->len + len <= sizeof(c->buf));
	memcpy(c->buf + c->len, data, len);
	c->len += len;
	return 0;
}

static void test_pb_pack_to_equals_pack(void **state)
{
	Evr__Pprof__Profile prof = EVR__PPROF__PROFILE__INIT;
	Evr__Pprof__Sample sample = EVR__PPROF__SAMPLE__INIT, *sp = &sample;
	char *strs[] = { "", "samples", "count", "spin_hot" };
	uint64_t locs[] = { 1, 2, 3 };
	int64_t values[] = { 7 };
	struct collect c = { .fail_at = SIZE_MAX };
	uint8_t *data;
	size_t len;

	(void)state;
	sample.n_location_id = 3;
	sample.location_id = locs;
	sample.n_value = 1;
	sample.value = values;
	prof.n_sample = 1;
	prof.sample = &sp;
	prof.n_string_table = 4;
	prof.string_table = strs;
	prof.period = 1001001;
	assert_int_equal(evr_pb_pack(&prof.base, &data, &len), 0);
	assert_int_equal(evr_pb_pack_to(&prof.base, collect_sink, &c), 0);
	assert_int_equal(c.len, len);
	assert_memory_equal(c.buf, data, len);
	assert_true(c.calls > 1);
	free(data);
	/* The sink's first error stops it and is returned; it is not called again. */
	c = (struct collect){ .fail_at = 5 };
	assert_int_equal(evr_pb_pack_to(&prof.base, collect_sink, &c), -EIO);
	assert_true(c.len <= 5);
	assert_int_equal(evr_pb_pack_to(NULL, collect_sink, &c), -EINVAL);
}

/* ---- sockets ------------------------------------------------------------------------- */

static void same_file(int a, int b)
{
	struct stat sa, sb;

	assert_int_equal(fstat(a, &sa), 0);
	assert_int_equal(fstat(b, &sb), 0);
	assert_int_equal(sa.st_dev, sb.st_dev);
	assert_int_equal(sa.st_ino, sb.st_ino);
}

static void test_frame_send_recv_with_fds(void **state)
{
	struct evr_frame_rx rx;
	const uint8_t *payload;
	uint32_t plen;
	Evr__Request *req;
	int sv[2], fds[2], got[2];
	size_t len;
	uint8_t *f = sample_start_frame(&len);

	(void)state;
	pair(sv);
	fds[0] = memfd_create("test", MFD_CLOEXEC);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	assert_true(fds[0] >= 0 && fds[1] >= 0);
	assert_int_equal(evr_frame_send(sv[0], f, len, fds, 2, 1000), 0);
	/* A second frame without fds right behind it. */
	assert_int_equal(evr_frame_send(sv[0], f, len, NULL, 0, 1000), 0);
	evr_frame_rx_init(&rx);
	assert_int_equal(evr_frame_recv(&rx, sv[1], 1000, &payload, &plen), 1);
	assert_int_equal(evr_pb_unpack_request(payload, plen, &req), 0);
	evr_pb_request_free(req);
	evr_frame_rx_pop(&rx);
	assert_int_equal(evr_frame_rx_take_fds(&rx, got, 2), 0);
	same_file(fds[0], got[0]);
	same_file(fds[1], got[1]);
	assert_true(fcntl(got[0], F_GETFD) & FD_CLOEXEC);
	assert_int_equal(evr_frame_rx_take_fds(&rx, got, 1), -EBADMSG);
	assert_int_equal(evr_frame_recv(&rx, sv[1], 1000, &payload, &plen), 1);
	evr_frame_rx_pop(&rx);
	/* Nothing more: a timeout, then EOF once the peer closes. */
	assert_int_equal(evr_frame_recv(&rx, sv[1], 0, &payload, &plen), -ETIMEDOUT);
	close(sv[0]);
	assert_int_equal(evr_frame_recv(&rx, sv[1], 1000, &payload, &plen), -ECONNRESET);
	evr_frame_rx_fini(&rx);
	for (int i = 0; i < 2; i++) {
		close(fds[i]);
		close(got[i]);
	}
	close(sv[1]);
	free(f);
}

/* Bytes arriving one at a time complete the frame only at its last byte. */
static void test_frame_rx_incremental(void **state)
{
	struct evr_frame_rx rx;
	const uint8_t *payload;
	uint32_t plen;
	int sv[2];
	size_t len;
	uint8_t *f = sample_hello_reply_frame(&len);

	(void)state;
	pair(sv);
	evr_frame_rx_init(&rx);
	assert_int_equal(evr_frame_rx_read(&rx, sv[1]), -EAGAIN);
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(evr_frame_rx_next(&rx, &payload, &plen), 0);
		assert_int_equal(write(sv[0], f + i, 1), 1);
		assert_int_equal(evr_frame_rx_read(&rx, sv[1]), 1);
	}
	assert_int_equal(evr_frame_rx_next(&rx, &payload, &plen), 1);
	assert_int_equal(plen + EVR_FRAME_HDR, len);
	evr_frame_rx_pop(&rx);
	assert_int_equal(rx.len, 0);
	/* Two frames in one write: both come out. */
	assert_int_equal(write(sv[0], f, len), (ssize_t)len);
	assert_int_equal(write(sv[0], f, len), (ssize_t)len);
	assert_true(evr_frame_rx_read(&rx, sv[1]) > 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(evr_frame_rx_next(&rx, &payload, &plen), 1);
		evr_frame_rx_pop(&rx);
	}
	assert_int_equal(evr_frame_rx_next(&rx, &payload, &plen), 0);
	evr_frame_rx_fini(&rx);
	close(sv[0]);
	close(sv[1]);
	free(f);
}

static void test_frame_oversize_length(void **state)
{
	const uint8_t big[8] = { 0x01, 0x00, 0x10, 0x00, 1, 2, 3, 4 };	/* 1 MiB + 1 */
	const uint8_t max[4] = { 0x00, 0x00, 0x10, 0x00 };		/* exactly 1 MiB */
	struct evr_frame_rx rx;
	const uint8_t *payload;
	uint32_t plen;
	int sv[2];

	(void)state;
	assert_int_equal(evr_frame_parse(big, sizeof(big), &payload, &plen), -EPROTO);
	assert_int_equal(evr_frame_parse(max, sizeof(max), &payload, &plen), 0);
	pair(sv);
	evr_frame_rx_init(&rx);
	assert_int_equal(write(sv[0], big, sizeof(big)), (ssize_t)sizeof(big));
	assert_true(evr_frame_rx_read(&rx, sv[1]) > 0);
	assert_int_equal(evr_frame_rx_next(&rx, &payload, &plen), -EPROTO);
	evr_frame_rx_fini(&rx);
	close(sv[0]);
	close(sv[1]);
}

/* Every truncation of a valid frame, followed by EOF: -EPROTO. */
static void test_frame_every_truncation(void **state)
{
	size_t len;
	uint8_t *f = sample_hello_reply_frame(&len);

	(void)state;
	for (size_t k = 1; k < len; k++) {
		struct evr_frame_rx rx;
		const uint8_t *payload;
		uint32_t plen;
		int sv[2];

		pair(sv);
		evr_frame_rx_init(&rx);
		assert_int_equal(write(sv[0], f, k), (ssize_t)k);
		close(sv[0]);
		assert_int_equal(evr_frame_recv(&rx, sv[1], 1000, &payload, &plen), -EPROTO);
		evr_frame_rx_fini(&rx);
		close(sv[1]);
	}
	free(f);
}

/* Every truncation of valid payloads: unpacks or -EBADMSG, never a crash. */
static void test_pb_unpack_every_truncation(void **state)
{
	size_t lens[2];
	uint8_t *frames[2] = { sample_hello_reply_frame(&lens[0]), sample_start_frame(&lens[1]) };
	int ok = 0;

	(void)state;
	for (int i = 0; i < 2; i++) {
		for (size_t k = 0; k < lens[i] - EVR_FRAME_HDR; k++) {
			Evr__Reply *r;
			Evr__Request *q;
			int e1 = evr_pb_unpack_reply(frames[i] + EVR_FRAME_HDR, k, &r);
			int e2 = evr_pb_unpack_request(frames[i] + EVR_FRAME_HDR, k, &q);

			assert_true(e1 == 0 || e1 == -EBADMSG);
			assert_true(e2 == 0 || e2 == -EBADMSG);
			ok += (e1 == 0) + (e2 == 0);
			if (e1 == 0)
				evr_pb_reply_free(r);
			if (e2 == 0)
				evr_pb_request_free(q);
		}
		free(frames[i]);
	}
	/* The empty prefix is an empty Request and an empty Reply. */
	assert_true(ok >= 2);
}

static void test_pb_unpack_random(void **state)
{
	uint8_t buf[512];

	(void)state;
	for (int i = 0; i < 10000; i++) {
		size_t len = rnd() % sizeof(buf);
		Evr__Request *q;
		Evr__Reply *r;
		ProtobufCMessage *m;
		const uint8_t *payload;
		uint32_t plen;

		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)rnd();
		/* Bias some inputs towards plausible tags so that deeper paths run. */
		if (i % 3 == 0 && len > 2) {
			buf[0] = (uint8_t)((1 + rnd() % 15) << 3 | 2);
			buf[1] = (uint8_t)(rnd() % len);
		}
		if (evr_pb_unpack_request(buf, len, &q) == 0)
			evr_pb_request_free(q);
		if (evr_pb_unpack_reply(buf, len, &r) == 0)
			evr_pb_reply_free(r);
		if (evr_pb_unpack(&evr__event_desc__descriptor, buf, len, &m) == 0)
			evr_pb_free(m);
		assert_true(evr_frame_parse(buf, len, &payload, &plen) >= -EPROTO);
	}
}

/* Random bytes on a socket: the receiver reports frames or -EPROTO, nothing else. */
static void test_frame_rx_random_stream(void **state)
{
	uint8_t buf[4096];

	(void)state;
	for (int i = 0; i < 200; i++) {
		struct evr_frame_rx rx;
		const uint8_t *payload;
		uint32_t plen;
		size_t len = 1 + rnd() % sizeof(buf);
		int sv[2], ret;

		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)rnd();
		/* Small lengths now and then, so that several frames parse. */
		if (i % 2)
			buf[2] = buf[3] = 0;
		pair(sv);
		evr_frame_rx_init(&rx);
		assert_int_equal(write(sv[0], buf, len), (ssize_t)len);
		close(sv[0]);
		while ((ret = evr_frame_recv(&rx, sv[1], 1000, &payload, &plen)) == 1) {
			Evr__Request *q;

			if (evr_pb_unpack_request(payload, plen, &q) == 0)
				evr_pb_request_free(q);
			evr_frame_rx_pop(&rx);
		}
		assert_true(ret == -EPROTO || ret == -ECONNRESET);
		evr_frame_rx_fini(&rx);
		close(sv[1]);
	}
}

/* ---- the send queue ---------------------------------------------------------------- */

static void test_txq_cap_and_partial_flush(void **state)
{
	struct evr_frame_txq q;
	struct evr_frame_rx rx;
	const uint8_t *payload;
	uint32_t plen;
	int sv[2], sndbuf = 4096, fd, got, frames = 0, ret;
	size_t len;

	(void)state;
	pair(sv);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	evr_frame_txq_init(&q, 256 * 1024);
	fd = eventfd(0, EFD_CLOEXEC);
	/* Fill to the cap: 100 frames of ~2 KiB fit, the rest is refused. */
	for (int i = 0;; i++) {
		Evr__Reply r = EVR__REPLY__INIT;
		Evr__Error e = EVR__ERROR__INIT;
		char msg[2048];
		uint8_t *f;

		memset(msg, 'a' + i % 26, sizeof(msg) - 1);
		msg[sizeof(msg) - 1] = '\0';
		e.code = i;
		e.message = msg;
		r.body_case = EVR__REPLY__BODY_ERROR;
		r.error = &e;
		assert_int_equal(evr_frame_build(&r.base, &f, &len), 0);
		ret = evr_frame_txq_push(&q, f, len, i == 0 ? &fd : NULL, i == 0);
		if (ret == -ENOBUFS)
			break;
		assert_int_equal(ret, 0);
		frames++;
	}
	assert_int_equal(frames, 256 * 1024 / len);
	/* The socket takes part of it: flush says "more", reading makes room. */
	assert_int_equal(evr_frame_txq_flush(&q, sv[0]), 1);
	evr_frame_rx_init(&rx);
	for (got = 0; got < frames;) {
		ret = evr_frame_rx_next(&rx, &payload, &plen);
		if (ret == 1) {
			Evr__Reply *r;

			assert_int_equal(evr_pb_unpack_reply(payload, plen, &r), 0);
			assert_int_equal(r->error->code, got);
			evr_pb_reply_free(r);
			evr_frame_rx_pop(&rx);
			got++;
			continue;
		}
		ret = evr_frame_rx_read(&rx, sv[1]);
		if (ret == -EAGAIN)
			assert_true(evr_frame_txq_flush(&q, sv[0]) >= 0);
		else
			assert_true(ret > 0);
	}
	assert_true(evr_frame_txq_empty(&q));
	assert_int_equal(evr_frame_txq_flush(&q, sv[0]), 0);
	/* The fd came with the first frame; the queue's duplicate is closed. */
	{
		int rfd;

		assert_int_equal(evr_frame_rx_take_fds(&rx, &rfd, 1), 0);
		same_file(fd, rfd);
		close(rfd);
	}
	evr_frame_rx_fini(&rx);
	evr_frame_txq_fini(&q);
	close(fd);
	/* The peer is gone: -EPIPE, and no SIGPIPE. */
	close(sv[1]);
	{
		uint8_t *f = sample_start_frame(&len);

		assert_int_equal(evr_frame_send(sv[0], f, len, NULL, 0, 100), -EPIPE);
		free(f);
	}
	close(sv[0]);
}

static void test_frame_send_full_times_out(void **state)
{
	int sv[2], sndbuf = 4096;
	size_t len;
	uint8_t *f = sample_hello_reply_frame(&len);
	int ret;

	(void)state;
	pair(sv);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	/* Nobody reads: sooner or later a send cannot complete. */
	while ((ret = evr_frame_send(sv[0], f, len, NULL, 0, 0)) == 0)
		;
	assert_int_equal(ret, -ETIMEDOUT);
	close(sv[0]);
	close(sv[1]);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_request_roundtrip),
		cmocka_unit_test(test_frame_every_request_kind),
		cmocka_unit_test(test_frame_reply_roundtrip),
		cmocka_unit_test(test_pb_pack_empty_message),
		cmocka_unit_test(test_pb_pack_to_equals_pack),
		cmocka_unit_test(test_frame_send_recv_with_fds),
		cmocka_unit_test(test_frame_rx_incremental),
		cmocka_unit_test(test_frame_oversize_length),
		cmocka_unit_test(test_frame_every_truncation),
		cmocka_unit_test(test_pb_unpack_every_truncation),
		cmocka_unit_test(test_pb_unpack_random),
		cmocka_unit_test(test_frame_rx_random_stream),
		cmocka_unit_test(test_txq_cap_and_partial_flush),
		cmocka_unit_test(test_frame_send_full_times_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
