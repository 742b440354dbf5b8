// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * USDT probes (<sys/sdt.h>, Debian systemtap-sdt-dev): bpftrace, perf probe
 * and other BPF or uprobe tools see evring's events without an evring
 * session, with nothing on the write path.
 *
 *   evring:event(provider, event, fields, tid, level, ts_ns)
 *   evring:counter(provider, counter, value, kind, interval_ms)
 *
 * Strings are NUL-terminated: provider and event names; fields, the event's
 * payload fields as one JSON object ({"seq":5,"path":"/api"}, as evring dump
 * --json writes them); value, the counter's value as text ("%.17g": BPF tools
 * have no floating point); tid is the writer's, ts_ns CLOCK_MONOTONIC when it
 * wrote the event; level 0 LogAlways to 5 verbose; kind 1 mean, 2 rate, 3
 * gauge, 4 histogram. At most six arguments each, as every tool reads them
 * from registers or the stack (bpftrace 0.17 refuses arg6 and up on x86-64).
 *
 * Each probe has a semaphore (a counter in .probes that tracers increment
 * when they attach: the kernel's uprobe ref_ctr_offset, which bpftrace and
 * libbpf use). The write path is not touched at all: the agent thread looks
 * at the semaphores every EVR_USDT_POLL_MS and, while one is nonzero, runs an
 * in-process listener (<evring/listener.h>) on every provider
 * ($EVR_USDT_PROVIDERS to narrow it; counters every second) whose dispatch
 * thread fires the probes, decoded: the payload's fields as a JSON object,
 * and the raw payload. So the disabled event stays one relaxed load, and an
 * attached tracer costs the writers what one more session costs.
 *
 * What this gives up against a probe on the writing thread: the probe fires
 * on the dispatch thread (arguments carry the writer's tid and time), within
 * the listener's latency (100 ms at most), for events written once the
 * listener runs (up to EVR_USDT_POLL_MS after the tracer attached), and the
 * writer's stack is not the probe's (evring record --stacks has stacks).
 *
 * Threads: evr_usdt_poll() runs on the agent thread only; evr_usdt_stop() once
 * the agent thread is joined (the library's destructor). After fork() the
 * child forgets the parent's listener (its thread did not come along).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/listener.h>

#include "producer-internal.h"
#include "usdt-internal.h"

#if EVR_HAVE_SDT
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

/* Incremented by tracers that attach to the probes (never written here). */
__attribute__((section(".probes"), used)) volatile unsigned short evring_event_semaphore;
__attribute__((section(".probes"), used)) volatile unsigned short evring_counter_semaphore;

/* Read at every exit (evr_usdt_active()): EVR_LOAD_DATA. */
EVR_LOAD_DATA static struct evr_listener *listener;
static struct evr_strbuf json;		/* the dispatch thread's */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static bool wanted(void)
{
	return evring_event_semaphore || evring_counter_semaphore;
}

static void on_event(const struct evr_event_view *ev, const struct evr_field_value *f, void *ctx)
{
	const struct evr_schema_event *s = ev->schema;
	const char *fields = "{}";
	static const char key[] = ",\"fields\":";

	if (!evring_event_semaphore)
		return;
	/* The "fields" member of the event's JSON (its last; every '"' inside a
	 * JSON string is escaped, so the first match is the member). */
	json.len = 0;
	if (evr_event_to_json(ev, &json) == 0 && json.len && evr_strbuf_append(&json, "", 1) == 0) {
		char *at = strstr(json.buf, key);

		if (at) {
			json.buf[json.len - 2] = 0;
			fields = at + sizeof(key) - 1;
		}
	}
	STAP_PROBE6(evring, event, s->provider, s->name, fields, ev->tid, s->level, ev->ts_ns);
}

static void on_counter(const struct evr_counter_sample *c, void *ctx)
{
	char name[256], value[40];

	if (!evring_counter_semaphore)
		return;
	snprintf(name, sizeof(name), "%.*s", (int)c->name_len, c->name);
	snprintf(value, sizeof(value), "%.17g", c->value);
	STAP_PROBE5(evring, counter, c->provider, name, value, c->kind, c->interval_ms);
}

static void forget_in_child(void)
{
	/* The listener's thread and session stay the parent's. */
	listener = NULL;
	memset(&json, 0, sizeof(json));
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_in_child);
}

void evr_usdt_poll(void)
{
	struct evr_listener_opts o = { .on_event = on_event, .on_counter = on_counter,
				       .counter_interval_ms = 1000 };
	const char *env;

	if (wanted() == (listener != NULL))
		return;
	if (listener) {
		evr_listener_free(listener);
		listener = NULL;
		return;
	}
	pthread_once(&atfork_once, register_atfork);
	env = getenv("EVR_USDT_PROVIDERS");
	o.providers = env && *env ? env : "*";
	/* A failure (64 sessions live, a bad EVR_USDT_PROVIDERS) is tried again at
	 * the next poll; there is no one to tell. */
	(void)evr_listener_new(&o, &listener, NULL, 0);
}

bool evr_usdt_active(void)
{
	return listener != NULL;
}

void evr_usdt_stop(void)
{
	/*
	 * Everything written before is dispatched, and probed, first: the probes
	 * are cheap, but a free() alone would drop what is queued (it is bounded
	 * by the callback in progress), so flush, with a bound for the exit.
	 */
	if (listener)
		(void)evr_listener_flush(listener, 1000);
	evr_listener_free(listener);
	listener = NULL;
	free(json.buf);
	memset(&json, 0, sizeof(json));
}

#else

void evr_usdt_poll(void)
{
}

bool evr_usdt_active(void)
{
	return false;
}

void evr_usdt_stop(void)
{
}

#endif
