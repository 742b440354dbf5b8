// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Writes the seed inputs of the agent, ring and provider_spec fuzz targets:
 *   fuzz_mkseeds tests/fuzz/corpus
 * (the trace and convert seeds are real recordings: tests/fuzz/mktraces.sh).
 * Seeds are small, valid examples of each input, so that fuzzing starts from
 * what real consumers and producers do; the fuzzer mutates from there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <evring/framing.h>

static const char *root;

static void put(const char *target, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/seed-%s", root, target, name);
	f = fopen(path, "wbe");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "fuzz_mkseeds: %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

/* ---- agent: a control byte, then frames --------------------------------------- */

struct stream {
	uint8_t buf[8192];
	size_t len;
};

static void frame(struct stream *s, const Evr__Request *req)
{
	uint8_t *f;
	size_t n;

	if (evr_frame_build(&req->base, &f, &n) < 0 || s->len + n > sizeof(s->buf))
		exit(1);
	memcpy(s->buf + s->len, f, n);
	s->len += n;
	free(f);
}

static void hello(struct stream *s, uint32_t version)
{
	Evr__Request r = EVR__REQUEST__INIT;
	Evr__Hello h = EVR__HELLO__INIT;

	h.protocol_version = version;
	h.client = (char *)"fuzz";
	r.body_case = EVR__REQUEST__BODY_HELLO;
	r.hello = &h;
	frame(s, &r);
}

static void start(struct stream *s, const char *providers, uint64_t ring, uint32_t mode,
		  uint32_t interval_ms)
{
	Evr__Request r = EVR__REQUEST__INIT;
	Evr__StartSession m = EVR__START_SESSION__INIT;

	m.providers = (char *)providers;
	m.has_ring_size = true;
	m.ring_size = ring;
	m.has_mode = true;
	m.mode = mode;
	m.has_meta_size = true;
	m.meta_size = 8192;
	if (interval_ms) {
		m.has_counter_interval_ms = true;
		m.counter_interval_ms = interval_ms;
	}
	r.body_case = EVR__REQUEST__BODY_START;
	r.start = &m;
	frame(s, &r);
}

static void simple(struct stream *s, Evr__Request__BodyCase which)
{
	Evr__Request r = EVR__REQUEST__INIT;
	Evr__StopSession stop = EVR__STOP_SESSION__INIT;
	Evr__ListEvents le = EVR__LIST_EVENTS__INIT;
	Evr__ListSessions ls = EVR__LIST_SESSIONS__INIT;
	Evr__Resume rs = EVR__RESUME__INIT;
	Evr__ListThreads lt = EVR__LIST_THREADS__INIT;

	r.body_case = which;
	switch (which) {
	case EVR__REQUEST__BODY_STOP: r.stop = &stop; break;
	case EVR__REQUEST__BODY_LIST_EVENTS: r.list_events = &le; break;
	case EVR__REQUEST__BODY_LIST_SESSIONS: r.list_sessions = &ls; break;
	case EVR__REQUEST__BODY_RESUME: r.resume = &rs; break;
	case EVR__REQUEST__BODY_LIST_THREADS: r.list_threads = &lt; break;
	default: break;
	}
	frame(s, &r);
}

static void agent_seeds(void)
{
	struct stream s;

	/* The recorder's conversation, whole. */
	s = (struct stream){ .buf = { 0 }, .len = 1 };
	hello(&s, 1);
	start(&s, "Fuzz:0x3:5", 65536, 0, 0);
	simple(&s, EVR__REQUEST__BODY_LIST_THREADS);
	simple(&s, EVR__REQUEST__BODY_STOP);
	put("agent", "record", s.buf, s.len);
	/* The same, delivered 7 bytes at a time. */
	s.buf[0] = 1 << 1;
	put("agent", "record-pieces", s.buf, s.len);
	/* clrtop: counters only, every provider's listing first. */
	s = (struct stream){ .buf = { 0 }, .len = 1 };
	hello(&s, 1);
	simple(&s, EVR__REQUEST__BODY_LIST_EVENTS);
	start(&s, "Process:0x0:0,Fuzz:0x0:0", 65536, 0, 100);
	put("agent", "clrtop", s.buf, s.len);
	/* evring ps. */
	s = (struct stream){ .buf = { 0 }, .len = 1 };
	hello(&s, 1);
	simple(&s, EVR__REQUEST__BODY_LIST_SESSIONS);
	put("agent", "ps", s.buf, s.len);
	/* The reverse connection of record -- PROGRAM. */
	s = (struct stream){ .buf = { 1 }, .len = 1 };
	hello(&s, 1);
	start(&s, "*", 65536, 1, 0);
	simple(&s, EVR__REQUEST__BODY_RESUME);
	put("agent", "reverse", s.buf, s.len);
	/* Mistakes: a request before Hello, another version, a second session. */
	s = (struct stream){ .buf = { 0 }, .len = 1 };
	simple(&s, EVR__REQUEST__BODY_LIST_EVENTS);
	put("agent", "no-hello", s.buf, s.len);
	s = (struct stream){ .buf = { 0 }, .len = 1 };
	hello(&s, 2);
	hello(&s, 1);
	start(&s, "Fuzz::verbose:key=value;x=\"a,b\"", 65536, 0, 0);
	start(&s, "Fuzz", 65536, 0, 0);
	put("agent", "mistakes", s.buf, s.len);
}

/* ---- ring: geometry byte, then operations (fuzz_ring.c) ---------------------- */

static void ring_seeds(void)
{
	/* write 40 events, read, write 200, read all: discard, 2 rings, records. */
	static const uint8_t records[] = { 0x41, 0, 0, 39, 1, 0, 1, 0, 100, 0, 0, 0, 199, 7, 0,
					   1, 0, 0xff, 0xff };
	/* The same with spans (the recorder). */
	static const uint8_t spans[] = { 0x61, 0, 0, 39, 1, 0, 1, 0, 100, 0, 0, 0, 199, 7, 0,
					 1, 0, 0xff, 0xff };
	/* Overwrite mode, lapped: 4 rounds of 255 events without reading. */
	static const uint8_t lapped[] = { 0x45, 0, 0, 255, 3, 0, 0, 0, 255, 4, 0, 0, 0, 255, 5,
					  0, 0, 0, 255, 6, 0, 1, 0, 0xff, 0xff };
	/* A reader that attaches late to a full discard ring. */
	static const uint8_t late[] = { 0x80, 0, 0, 255, 9, 0, 1, 0, 0x10, 0 };
	/* Corruption: a ring byte, a control block's head, a header word. */
	static const uint8_t corrupt[] = { 0x41, 0, 0, 60, 2, 0, 2, 1, 40, 0, 0, 0, 4, 0xff,
					   0xff, 0x7f, 0x00, 3, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
					   1, 0, 0xff, 0 };

	put("ring", "records", records, sizeof(records));
	put("ring", "spans", spans, sizeof(spans));
	put("ring", "lapped", lapped, sizeof(lapped));
	put("ring", "late", late, sizeof(late));
	put("ring", "corrupt", corrupt, sizeof(corrupt));
}

/* ---- provider specs: what users type -------------------------------------- */

static void spec_seeds(void)
{
	static const char *const specs[] = {
		"*", "Demo:0x5:4", "MiniRT,System.Runtime,Process", "Foo:0x10:informational",
		"Bar::error:Interval=1;Filter=\"a;b,c\"", "Microsoft-Windows-DotNETRuntime:0x1:5",
		"A:ff:0, B:0x0:verbose ,C", "X:0xffffffffffffffff:5:k=\"\"",
	};

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		char name[16];

		snprintf(name, sizeof(name), "%zu", i);
		put("provider_spec", name, specs[i], strlen(specs[i]));
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_mkseeds CORPUS-DIR\n");
		return 2;
	}
	root = argv[1];
	agent_seeds();
	ring_seeds();
	spec_seeds();
	return 0;
}
