// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * minirt's work items: what the simulated application does.
 *
 * A request builds an HttpRequest object graph (path, header list, body, a
 * result list), then runs an entry method. Each method call goes through the
 * JIT (rt_call), allocates a linked list of nodes holding strings, buffers
 * and small domain objects, walks it, may keep part of it in the request's
 * results (so it survives a while), may read or fill the shared cache under
 * one of its striped monitors, calls some of its callees, and may throw. An
 * exception unwinds frames (their roots) to the nearest method with a
 * handler; entry methods always have one. Some requests take the global
 * configuration lock, some make a blocking I/O call, some queue a
 * continuation item, a few induce a full collection.
 *
 * Long-lived data (what gets promoted to gen1 and gen2 and what the write
 * barrier sees): the cache, an object array of CACHE_SLOTS entries whose
 * entries are replaced as keys miss, and the configuration, a dictionary
 * whose values are sometimes replaced. Both hang off the statics.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "runtime.h"

#define CACHE_SLOTS 1024u
#define CACHE_KEYS 8192u
#define CACHE_STRIPES 4u
#define CONFIG_ENTRIES 64u
#define MAX_DEPTH 7u
#define CONFIG_HOLD_ITERATIONS 4000u

enum { RT_OK, RT_THROWN };
enum { REQ_PATH, REQ_HEADERS, REQ_BODY, REQ_RESULTS, REQ_USER, REQ_NREFS };

struct item_ctx {
	struct rt_work_mix mix;
	uint64_t id;
	uint32_t req;			/* root slot of the request (or task) object */
	uint64_t checksum;
};

static struct {
	_Atomic uint32_t alloc_scale, loh, throw_, cache, config, spawn, block, block_us, induce;
} mix;

static struct rt_monitor stripes[CACHE_STRIPES];
static struct rt_monitor config_lock;

static const struct {
	const char *type;
	const char *message;
	uint32_t hresult;
} exc_types[] = {
	{ "System.InvalidOperationException",
	  "Collection was modified; enumeration operation may not execute.", 0x80131509u },
	{ "System.ArgumentNullException", "Value cannot be null. (Parameter 'customerId')",
	  0x80004003u },
	{ "System.IO.IOException",
	  "Unable to read data from the transport connection: Connection reset by peer.",
	  0x80131620u },
	{ "System.TimeoutException", "The operation has timed out after 30000 ms.", 0x80131505u },
	{ "System.FormatException", "Input string was not in a correct format.", 0x80131537u },
	{ "System.Collections.Generic.KeyNotFoundException",
	  "The given key was not present in the dictionary.", 0x80131577u },
	{ "MiniRT.Data.ConcurrencyException", "The order was modified by another transaction.",
	  0x80131500u },
};

#define NEXC (sizeof(exc_types) / sizeof(exc_types[0]))

static const char *const paths[] = { "/api/orders", "/api/orders/{id}", "/api/customers/{id}",
				     "/api/cart", "/api/checkout", "/api/search", "/health",
				     "/api/reports/daily" };
static const char *const headers[] = { "Accept: application/json", "Connection: keep-alive",
				       "User-Agent: minirt-load/1.0", "Accept-Encoding: gzip",
				       "Authorization: Bearer eyJhbGciOi", "Cookie: session=8f3a" };

void rt_work_set_mix(const struct rt_work_mix *m)
{
	atomic_store_explicit(&mix.alloc_scale, m->alloc_scale ? m->alloc_scale : 1,
			      memory_order_relaxed);
	atomic_store_explicit(&mix.loh, m->loh_permille, memory_order_relaxed);
	atomic_store_explicit(&mix.throw_, m->throw_permille, memory_order_relaxed);
	atomic_store_explicit(&mix.cache, m->cache_permille, memory_order_relaxed);
	atomic_store_explicit(&mix.config, m->config_permille, memory_order_relaxed);
	atomic_store_explicit(&mix.spawn, m->spawn_permille, memory_order_relaxed);
	atomic_store_explicit(&mix.block, m->block_permille, memory_order_relaxed);
	atomic_store_explicit(&mix.block_us, m->block_max_us, memory_order_relaxed);
	atomic_store_explicit(&mix.induce, m->induce_permille, memory_order_relaxed);
}

static void load_mix(struct rt_work_mix *m)
{
	m->alloc_scale = atomic_load_explicit(&mix.alloc_scale, memory_order_relaxed);
	m->loh_permille = atomic_load_explicit(&mix.loh, memory_order_relaxed);
	m->throw_permille = atomic_load_explicit(&mix.throw_, memory_order_relaxed);
	m->cache_permille = atomic_load_explicit(&mix.cache, memory_order_relaxed);
	m->config_permille = atomic_load_explicit(&mix.config, memory_order_relaxed);
	m->spawn_permille = atomic_load_explicit(&mix.spawn, memory_order_relaxed);
	m->block_permille = atomic_load_explicit(&mix.block, memory_order_relaxed);
	m->block_max_us = atomic_load_explicit(&mix.block_us, memory_order_relaxed);
	m->induce_permille = atomic_load_explicit(&mix.induce, memory_order_relaxed);
}

static bool chance(struct rt_thread *t, uint32_t permille)
{
	return rt_rand_below(&t->rng, 1000) < permille;
}

static uint64_t checksum(struct rt_obj *o)
{
	const uint8_t *p;
	uint64_t sum = 0, w;
	uint32_t n;

	if (!o)
		return 0;
	p = rt_payload(o);
	n = rt_payload_size(o);
	/* Large buffers: one word per page, like a parser skimming a body. */
	for (uint32_t i = 0; i + 8 <= n; i += n > 65536 ? 4096 : 8) {
		memcpy(&w, p + i, 8);
		sum = sum * 31 + w;
	}
	return sum + o->hash;
}

static void fill(struct rt_obj *o, uint64_t seed)
{
	uint8_t *p = rt_payload(o);
	uint32_t n = rt_payload_size(o);

	for (uint32_t i = 0; i + 8 <= n; i += 8) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		memcpy(p + i, &seed, 8);
	}
}

/* A fresh, unrooted data object for a list node. GC point. */
static struct rt_obj *alloc_data(struct rt_thread *t, struct item_ctx *c)
{
	struct rt_obj *o, *sub;
	char buf[96];
	uint32_t slot;

	switch (rt_rand_below(&t->rng, 5)) {
	case 0:
		snprintf(buf, sizeof(buf), "order-%" PRIu64 "-line-%u", c->id,
			 rt_rand_below(&t->rng, 100));
		return rt_alloc_string(t, buf);
	case 1:
		o = rt_alloc(t, RT_T_BYTES, 0, 32 + rt_rand_below(&t->rng, 480));
		fill(o, c->id);
		return o;
	case 2:
		/* An order and its customer. */
		slot = rt_root_push(t, rt_alloc(t, RT_T_ORDER, 2, 48));
		fill(RT_ROOT(t, slot), c->id);
		sub = rt_alloc(t, RT_T_CUSTOMER, 1, 96);
		fill(sub, c->id ^ 0x5a);
		rt_store(RT_ROOT(t, slot), 0, sub);
		o = RT_ROOT(t, slot);
		rt_roots_pop(t, slot);
		return o;
	case 3:
		/* A dictionary entry: key string, value buffer. */
		slot = rt_root_push(t, rt_alloc(t, RT_T_DICTIONARY_ENTRY, 2, 8));
		snprintf(buf, sizeof(buf), "key-%u", rt_rand_below(&t->rng, 4096));
		sub = rt_alloc_string(t, buf);
		rt_store(RT_ROOT(t, slot), 0, sub);
		sub = rt_alloc(t, RT_T_BYTES, 0, 64);
		rt_store(RT_ROOT(t, slot), 1, sub);
		o = RT_ROOT(t, slot);
		rt_roots_pop(t, slot);
		return o;
	default:
		o = rt_alloc(t, RT_T_OBJECT_ARRAY, 4, 0);
		return o;
	}
}

/* Look up a key in the shared cache and fill the slot on a miss. GC point. */
static void cache_access(struct rt_thread *t, struct item_ctx *c)
{
	/* Skewed keys: a few hot ones, a long tail, as real caches see. */
	uint32_t key = rt_rand_below(&t->rng, rt_rand_below(&t->rng, CACHE_KEYS) + 1);
	uint32_t slot = key % CACHE_SLOTS, base = t->nroots, e;
	struct rt_obj *o;
	char buf[48];

	rt_monitor_enter(t, &stripes[slot % CACHE_STRIPES], rt_static_get(RT_STATIC_CACHE));
	o = rt_load(rt_static_get(RT_STATIC_CACHE), slot);
	if (o && *(uint32_t *)rt_payload(o) == key) {
		c->checksum += checksum(rt_load(o, 1)) + checksum(rt_load(o, 0));
		goto out;
	}
	o = rt_alloc(t, RT_T_CACHE_ENTRY, 2, 16);
	*(uint32_t *)rt_payload(o) = key;
	e = rt_root_push(t, o);
	snprintf(buf, sizeof(buf), "customer:%u", key);
	o = rt_alloc_string(t, buf);
	rt_store(RT_ROOT(t, e), 0, o);
	o = rt_alloc(t, RT_T_CUSTOMER, 2, 64 + rt_rand_below(&t->rng, 960));
	fill(o, key);
	rt_store(RT_ROOT(t, e), 1, o);
	/* The cache is old, the entry young: the write barrier remembers the cache. */
	rt_store(rt_static_get(RT_STATIC_CACHE), slot, RT_ROOT(t, e));
out:
	rt_monitor_exit(&stripes[slot % CACHE_STRIPES]);
	rt_roots_pop(t, base);
}

/*
 * A synchronous database call: the worker blocks (in preemptive mode, so
 * collections go on) and the pool sees its throughput drop, which is what
 * makes a real thread pool inject threads.
 */
static void blocking_io(struct rt_thread *t, uint32_t max_us)
{
	uint32_t us = 1 + rt_rand_below(&t->rng, max_us);
	struct timespec ts = { us / 1000000u, (long)(us % 1000000u) * 1000L };

	rt_coop_leave(t);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
	rt_coop_enter(t);
}

/* Read the configuration under its global lock; sometimes update a value. */
static void config_access(struct rt_thread *t, struct item_ctx *c)
{
	uint64_t sum = 0;
	struct rt_obj *cfg;

	rt_monitor_enter(t, &config_lock, rt_static_get(RT_STATIC_CONFIG));
	if (chance(t, 125)) {
		char buf[48];
		struct rt_obj *s;

		snprintf(buf, sizeof(buf), "value-%" PRIu64, c->id);
		s = rt_alloc_string(t, buf);
		cfg = rt_static_get(RT_STATIC_CONFIG);
		rt_store(rt_load(cfg, rt_rand_below(&t->rng, CONFIG_ENTRIES)), 1, s);
		/* Written through to the configuration store with the lock held: the
		 * classic cause of a convoy behind one monitor. */
		blocking_io(t, 1000);
	}
	cfg = rt_static_get(RT_STATIC_CONFIG);
	for (uint32_t i = 0; i < CONFIG_ENTRIES; i++) {
		struct rt_obj *e = rt_load(cfg, i);

		sum += checksum(rt_load(e, 0)) ^ checksum(rt_load(e, 1));
	}
	/* Work done under the lock: what makes it contended. */
	for (uint32_t i = 0; i < CONFIG_HOLD_ITERATIONS; i++)
		sum = sum * 6364136223846793005ull + i;
	rt_monitor_exit(&config_lock);
	c->checksum += sum;
}

static void throw_exception(struct rt_thread *t, struct item_ctx *c, const struct rt_method *m)
{
	uint32_t k = rt_rand_below(&t->rng, NEXC), base = t->nroots, msg;
	struct rt_obj *o;
	char buf[160];

	snprintf(buf, sizeof(buf), "%s (item %" PRIu64 ")", exc_types[k].message, c->id);
	msg = rt_root_push(t, rt_alloc_string(t, buf));
	o = rt_alloc(t, RT_T_EXCEPTION, 3, 8);
	*(uint32_t *)rt_payload(o) = k;
	rt_store(o, 0, RT_ROOT(t, msg));
	t->exception = o;
	rt_roots_pop(t, base);
	rt_stat_add(&minirt_stats.exceptions, 1);
	/* Flags 0x10: CLS-compliant, as .NET sets for exceptions thrown by managed code. */
	ev_exception_thrown(exc_types[k].type, rt_payload(rt_load(o, 0)), rt_method_code(m),
			    exc_types[k].hresult, 0x10);
}

/* @m handles the exception in flight: log it and clear it. GC point. */
static void catch_exception(struct rt_thread *t, const struct rt_method *m)
{
	struct rt_obj *s;
	char buf[224];
	uint32_t k;

	/* MethodID is the method's address, as in the JIT events (.NET: its MethodDesc). */
	ev_exception_catch_start(rt_method_code(m), (uint64_t)(uintptr_t)m, rt_method_name(m));
	k = *(uint32_t *)rt_payload(t->exception);
	snprintf(buf, sizeof(buf), "fail: %s: %s", exc_types[k % NEXC].type,
		 (const char *)rt_payload(rt_load(t->exception, 0)));
	s = rt_alloc_string(t, buf);
	(void)s;
	t->exception = NULL;
	ev_exception_catch_stop();
}

static int exec_method(struct rt_thread *t, struct item_ctx *c, uint32_t id, uint32_t depth)
{
	const struct rt_method *m = rt_call(t, id);

	/* Through the method's JIT-compiled code: it is then a frame on the stack. */
	return rt_method_invoke(m, t, c, (uint64_t)(uintptr_t)m, depth);
}

int rt_work_method_body(void *tp, void *cp, uint64_t mp, uint64_t dp)
{
	struct rt_thread *t = tp;
	struct item_ctx *c = cp;
	const struct rt_method *m = (const struct rt_method *)(uintptr_t)mp;
	uint32_t depth = (uint32_t)dp;
	uint32_t base = t->nroots, list = rt_root_push(t, NULL);
	uint32_t n = 1 + rt_rand_below(&t->rng, 4 * c->mix.alloc_scale);
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct rt_obj *node = rt_alloc(t, RT_T_NODE, 2, 16), *data;

		rt_store(node, 0, RT_ROOT(t, list));
		RT_ROOT(t, list) = node;
		data = alloc_data(t, c);
		rt_store(RT_ROOT(t, list), 1, data);
	}
	for (struct rt_obj *o = RT_ROOT(t, list); o; o = rt_load(o, 0))
		sum += checksum(rt_load(o, 1));
	c->checksum += sum;
	if (chance(t, 250)) {
		struct rt_obj *keep = rt_alloc(t, RT_T_NODE, 2, 8), *req = RT_ROOT(t, c->req);

		rt_store(keep, 0, rt_load(req, REQ_RESULTS));
		rt_store(keep, 1, RT_ROOT(t, list));
		rt_store(req, REQ_RESULTS, keep);
	}
	if (chance(t, c->mix.cache_permille))
		cache_access(t, c);
	if (depth < MAX_DEPTH) {
		for (uint32_t i = 0; i < rt_method_ncallees(m); i++) {
			if (!chance(t, 600 / (depth + 1)))
				continue;
			if (exec_method(t, c, rt_method_callee(m, i), depth + 1) == RT_OK)
				continue;
			if (depth > 0 && !rt_method_has_handler(m)) {
				rt_roots_pop(t, base);
				return RT_THROWN;
			}
			catch_exception(t, m);
		}
	}
	rt_roots_pop(t, base);
	if (depth > 0 && chance(t, c->mix.throw_permille)) {
		throw_exception(t, c, m);
		return RT_THROWN;
	}
	return RT_OK;
}

static void run_request(struct rt_thread *t, struct rt_work *w)
{
	struct item_ctx c = { .id = w->id };
	uint32_t base = t->nroots, nheaders;
	struct rt_obj *o;

	load_mix(&c.mix);
	c.req = rt_root_push(t, rt_alloc(t, RT_T_REQUEST, REQ_NREFS, 64));
	o = rt_alloc_string(t, paths[w->arg % (sizeof(paths) / sizeof(paths[0]))]);
	rt_store(RT_ROOT(t, c.req), REQ_PATH, o);
	nheaders = 2 + rt_rand_below(&t->rng, 5);
	for (uint32_t i = 0; i < nheaders; i++) {
		struct rt_obj *node = rt_alloc(t, RT_T_NODE, 2, 0);

		rt_store(node, 0, rt_load(RT_ROOT(t, c.req), REQ_HEADERS));
		rt_store(RT_ROOT(t, c.req), REQ_HEADERS, node);
		o = rt_alloc_string(t, headers[rt_rand_below(&t->rng, 6)]);
		rt_store(rt_load(RT_ROOT(t, c.req), REQ_HEADERS), 1, o);
	}
	if (chance(t, c.mix.loh_permille))
		o = rt_alloc(t, RT_T_BYTES, 0, 90000 + rt_rand_below(&t->rng, 900000));
	else
		o = rt_alloc(t, RT_T_BYTES, 0, 64 + rt_rand_below(&t->rng, 2048));
	fill(o, w->id);
	rt_store(RT_ROOT(t, c.req), REQ_BODY, o);
	c.checksum += checksum(o);

	exec_method(t, &c, w->arg % rt_entry_method_count(), 0);

	if (c.mix.block_max_us && chance(t, c.mix.block_permille))
		blocking_io(t, c.mix.block_max_us);
	/* An admin endpoint calling GC.Collect(): an induced, full collection. */
	if (chance(t, c.mix.induce_permille))
		rt_gc_collect(t, 2);

	if (chance(t, c.mix.config_permille))
		config_access(t, &c);
	if (chance(t, c.mix.spawn_permille)) {
		struct rt_work *cont = calloc(1, sizeof(*cont));

		if (cont) {
			cont->fn = w->fn;
			cont->id = w->id;
			cont->kind = 1;
			cont->arg = (uint32_t)rt_rand(&t->rng);
			rt_pool_enqueue(cont, true);
		}
	}
	o = rt_alloc(t, RT_T_STRING, 0, 32 + (uint32_t)(c.checksum % 64));
	rt_store(RT_ROOT(t, c.req), REQ_USER, o);
	rt_roots_pop(t, base);
}

/* A continuation (kind 1): a Task completing with a call into the services. */
static void run_continuation(struct rt_thread *t, struct rt_work *w)
{
	struct item_ctx c = { .id = w->id };
	uint32_t base = t->nroots, first = rt_entry_method_count();

	load_mix(&c.mix);
	c.req = rt_root_push(t, rt_alloc(t, RT_T_TASK, REQ_NREFS, 32));
	exec_method(t, &c, first + w->arg % (rt_method_count() - first), 0);
	rt_roots_pop(t, base);
}

static void run_item(struct rt_thread *t, struct rt_work *w)
{
	if (w->kind == 1)
		run_continuation(t, w);
	else
		run_request(t, w);
}

struct rt_work *rt_work_new_request(uint64_t id)
{
	struct rt_work *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fn = run_item;
	w->id = id;
	w->kind = 0;
	/* Which path, which entry method: a cheap hash of the id. */
	w->arg = (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 40);
	return w;
}

int rt_work_init(void)
{
	struct rt_thread *t;
	char buf[48];

	for (uint32_t i = 0; i < CACHE_STRIPES; i++)
		rt_monitor_init(&stripes[i]);
	rt_monitor_init(&config_lock);
	t = rt_thread_attach();
	if (!t)
		return -ENOMEM;
	rt_coop_enter(t);
	rt_static_set(RT_STATIC_CACHE, rt_alloc(t, RT_T_OBJECT_ARRAY, CACHE_SLOTS, 0));
	rt_static_set(RT_STATIC_CONFIG, rt_alloc(t, RT_T_OBJECT_ARRAY, CONFIG_ENTRIES, 0));
	for (uint32_t i = 0; i < CONFIG_ENTRIES; i++) {
		uint32_t e = rt_root_push(t, rt_alloc(t, RT_T_DICTIONARY_ENTRY, 2, 8));
		struct rt_obj *s;

		snprintf(buf, sizeof(buf), "MiniRT.Setting%u", i);
		s = rt_alloc_string(t, buf);
		rt_store(RT_ROOT(t, e), 0, s);
		snprintf(buf, sizeof(buf), "default-%u", i * 7);
		s = rt_alloc_string(t, buf);
		rt_store(RT_ROOT(t, e), 1, s);
		rt_store(rt_static_get(RT_STATIC_CONFIG), i, RT_ROOT(t, e));
		rt_roots_pop(t, e);
	}
	rt_coop_leave(t);
	rt_thread_detach(t);
	return 0;
}

void rt_work_fini(void)
{
	for (uint32_t i = 0; i < CACHE_STRIPES; i++)
		rt_monitor_fini(&stripes[i]);
	rt_monitor_fini(&config_lock);
	rt_static_set(RT_STATIC_CACHE, NULL);
	rt_static_set(RT_STATIC_CONFIG, NULL);
}
