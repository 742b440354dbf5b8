// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * minirt's JIT: modules, a method table and a static call graph, compilation
 * on first call, and tier-up of hot methods on a background thread.
 *
 * A method's state goes COLD -> JITTING -> READY under jit.lock; the first
 * caller compiles it (in preemptive mode, as .NET's JIT runs), later callers
 * that find it JITTING wait on jit.cond. The "compiler" makes optimization
 * passes over the method's synthetic IL and writes the result into a code
 * buffer, so compile time grows with IL size and tier, as it does for real.
 * After RT_TIER1_CALLS calls a method is queued for the tier-1 thread, which
 * compiles it again with more passes and publishes the new code.
 *
 * The code is real: each compilation allocates the method's code in an
 * executable code heap and starts it with a stub of x86-64 machine code that
 * sets up a frame pointer and calls the method body (rt_body_fn) with its own
 * arguments; the rest is the "compiled" bytes. A method that runs is therefore
 * a frame on its thread's stack, with a return address inside its code, as
 * with a real JIT; with --perf-map each compiled method is also appended to
 * /tmp/perf-PID.map ("START SIZE Namespace.Type::Method"), the convention
 * profilers (perf, evring) use to name JIT frames. Tier-1 code is new code at a
 * new address; the old code stays mapped (a thread may still run it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "events.h"
#include "runtime.h"

#define RT_TIER1_CALLS 30u
#define RT_MAX_CALLEES 3u
#define RT_CALLEE_SPAN 48u
#define RT_TIER0_PASSES 12u
#define RT_TIER1_PASSES 48u

enum { M_COLD, M_JITTING, M_READY };

struct rt_module {
	const char *name;
	const char *classes[6];
	bool loaded;			/* under jit.lock */
};

struct rt_method {
	uint32_t id;
	uint32_t module;
	uint32_t token;
	uint32_t il_size;
	uint32_t ncallees;
	uint32_t callees[RT_MAX_CALLEES];
	bool has_handler;
	_Atomic uint32_t state;
	_Atomic uint32_t calls;
	_Atomic(uint8_t *) code;	/* current code: the stub first */
	uint8_t *tier_code[2];		/* in the code heap */
	struct rt_method *tier_next;	/* tier-1 queue, under jit.lock */
	char ns[64];			/* declaring type, namespace included */
	char name[32];
	char sig[96];
	char full[128];			/* "Type::Method" */
};

static struct rt_module modules[] = {
	{ .name = "MiniRT.Web", .classes = { "OrdersController", "CustomersController", "RequestPipeline",
			   "Router", "ResponseWriter", "AuthMiddleware" } },
	{ .name = "MiniRT.Services", .classes = { "OrderService", "CustomerService", "PricingService",
				"InventoryService", "NotificationService", "AuditService" } },
	{ .name = "MiniRT.Data", .classes = { "OrderRepository", "CustomerRepository", "SqlCommandBuilder",
			    "ConnectionPool", "RowMapper", "UnitOfWork" } },
	{ .name = "MiniRT.Caching", .classes = { "MemoryCache", "CacheEntry", "ExpirationScanner", "CacheKeyBuilder",
			       "SizeTracker", "EvictionPolicy" } },
	{ .name = "System.Text.Json", .classes = { "Utf8JsonWriter", "Utf8JsonReader", "JsonSerializer",
				 "JsonDocument", "JsonElement", "JsonPropertyInfo" } },
	{ .name = "System.Private.CoreLib", .classes = { "String", "StringBuilder", "Dictionary`2", "List`1",
				       "Number", "Buffer" } },
};

#define NMODULES (sizeof(modules) / sizeof(modules[0]))
#define METHODS_PER_CLASS 8u
#define NMETHODS (NMODULES * 6u * METHODS_PER_CLASS)
/* The first two Web classes are the entry points: controller actions. */
#define NENTRIES (2u * METHODS_PER_CLASS)

static const char *const verbs[] = { "Get", "Find", "Create", "Update", "Validate", "Serialize",
				     "Parse", "Compute", "Load", "Save", "Format", "Dispatch",
				     "Handle", "Resolve", "Build", "Merge" };
static const char *const nouns[] = { "Order", "Customer", "Invoice", "Item", "Session",
				     "Token", "Price", "Address", "Cart", "Report" };
static const char *const sigs[] = {
	"instance void ()",
	"instance bool (int32)",
	"instance class System.String (class System.String)",
	"instance class System.Threading.Tasks.Task`1<class MiniRT.Data.Order> (int64,bool)",
	"class System.Collections.Generic.List`1<!!0> (class System.Collections.Generic.IEnumerable`1<!!0>)",
	"instance valuetype System.ReadOnlySpan`1<uint8> (int32,int32)",
	"instance int32 (class System.Object,class System.Object)",
	"void (class MiniRT.Web.HttpContext)",
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a method became READY; tier-1 work queued */
	struct rt_method *tier_head, *tier_tail;
	bool stop;
	bool tier_thread_started;
	pthread_t tier_thread;
} jit;

static struct rt_method methods[NMETHODS];

/* Where compiled code goes: one executable mapping, bump-allocated. */
#define CODE_HEAP_SIZE (16u << 20)
#define STUB_SIZE 32u

static struct {
	uint8_t *base;
	_Atomic size_t used;
	rt_body_fn *body;
	int perf_map_fd;		/* -1: no perf map */
} code_heap = { .perf_map_fd = -1 };

/*
 * The method stub: push %rbp; mov %rsp,%rbp; movabs $body,%r11; call *%r11;
 * pop %rbp; ret. The arguments (rdi, rsi, rdx, rcx) pass through untouched, and
 * the stack stays 16-byte aligned at the call. The rest of the stub is int3.
 */
static void write_stub(uint8_t *p, rt_body_fn *body)
{
	static const uint8_t head[] = { 0x55, 0x48, 0x89, 0xe5, 0x49, 0xbb };
	static const uint8_t tail[] = { 0x41, 0xff, 0xd3, 0x5d, 0xc3 };
	uint64_t target = (uint64_t)(uintptr_t)body;

	memset(p, 0xcc, STUB_SIZE);
	memcpy(p, head, sizeof(head));
	memcpy(p + sizeof(head), &target, 8);
	memcpy(p + sizeof(head) + 8, tail, sizeof(tail));
}

/* @size bytes of code, 16-byte aligned; NULL when the heap is full. */
static uint8_t *code_alloc(uint32_t size)
{
	size_t sz = (size + 15u) & ~(size_t)15u;
	size_t at = atomic_fetch_add_explicit(&code_heap.used, sz, memory_order_relaxed);

	if (!code_heap.base || at + sz > CODE_HEAP_SIZE)
		return NULL;
	return code_heap.base + at;
}

/* Append "START SIZE name" to the perf map: one write(), atomic with O_APPEND. */
static void perf_map_add(const void *code, uint32_t size, const char *name)
{
	char line[256];
	int n;

	if (code_heap.perf_map_fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%lx %x %s\n", (unsigned long)(uintptr_t)code, size,
		     name);
	if (n > 0 && (size_t)n < sizeof(line) && write(code_heap.perf_map_fd, line, (size_t)n) < 0)
		code_heap.perf_map_fd = -1;	/* a full /tmp: stop trying */
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Compile @m at @tier: passes over its IL into a fresh code buffer. */
static void compile(struct rt_method *m, uint32_t tier)
{
	uint32_t passes = tier ? RT_TIER1_PASSES : RT_TIER0_PASSES;
	uint32_t size = m->il_size * (tier ? 2u : 3u) + 16u;
	uint64_t module_id = (uint64_t)(uintptr_t)&modules[m->module];
	uint64_t h = mix64(m->id + 1);
	uint8_t *code;

	ev_method_jitting_started((uint64_t)(uintptr_t)m, module_id, m->token, m->il_size, m->ns,
				  m->name, m->sig);
	size += STUB_SIZE;
	code = code_alloc(size);
	if (!code)
		rt_oom("JIT code heap");
	/* The stub first, then the "compiled" bytes (never executed: the stub returns). */
	write_stub(code, code_heap.body);
	memset(code + STUB_SIZE, 0xcc, size - STUB_SIZE);
	for (uint32_t p = 0; p < passes; p++) {
		for (uint32_t i = 0; i < m->il_size; i++) {
			uint8_t il = (uint8_t)mix64(((uint64_t)m->id << 32) | i);

			h = (h ^ il) * 0x100000001b3ull;
			code[STUB_SIZE + (i * 3u + p) % (size - STUB_SIZE)] ^= (uint8_t)(h >> 29);
		}
	}
	/* Named before it can run: a profiler that sees the frame finds the name. */
	perf_map_add(code, size, m->full);
	m->tier_code[tier] = code;
	/* Pairs with the acquire load in rt_method_code(). */
	atomic_store_explicit(&m->code, code, memory_order_release);
	rt_stat_add(&minirt_stats.methods_jitted, 1);
	rt_stat_add(&minirt_stats.il_bytes_jitted, m->il_size);
	/* MethodFlags: 0x8 jitted, optimization tier in bits 7..9 as .NET does. */
	ev_method_load_verbose((uint64_t)(uintptr_t)m, module_id, code, size, m->token,
			       0x8u | ((tier ? 4u : 2u) << 7), m->ns, m->name, m->sig);
}

static void load_module_locked(uint32_t i)
{
	struct rt_module *mod = &modules[i];
	char path[128];

	if (mod->loaded)
		return;
	mod->loaded = true;
	rt_stat_add(&minirt_stats.assemblies_loaded, 1);
	if (ev_module_load_enabled()) {
		snprintf(path, sizeof(path), "/usr/lib/minirt/%s.dll", mod->name);
		ev_module_load((uint64_t)(uintptr_t)mod, (uint64_t)(uintptr_t)&mod->classes, 0x8u,
			       path, "");
	}
}

static void jit_slow(struct rt_thread *t, struct rt_method *m)
{
	rt_coop_leave(t);
	pthread_mutex_lock(&jit.lock);
	while (atomic_load_explicit(&m->state, memory_order_relaxed) == M_JITTING)
		pthread_cond_wait(&jit.cond, &jit.lock);
	if (atomic_load_explicit(&m->state, memory_order_relaxed) == M_COLD) {
		atomic_store_explicit(&m->state, M_JITTING, memory_order_relaxed);
		load_module_locked(m->module);
		pthread_mutex_unlock(&jit.lock);
		compile(m, 0);
		pthread_mutex_lock(&jit.lock);
		/* Pairs with the acquire load in rt_call(): READY means compiled. */
		atomic_store_explicit(&m->state, M_READY, memory_order_release);
		pthread_cond_broadcast(&jit.cond);
	}
	pthread_mutex_unlock(&jit.lock);
	rt_coop_enter(t);
}

const struct rt_method *rt_call(struct rt_thread *t, uint32_t id)
{
	struct rt_method *m = &methods[id % NMETHODS];
	uint32_t calls;

	/* Pairs with the release store of M_READY in jit_slow(). */
	if (atomic_load_explicit(&m->state, memory_order_acquire) != M_READY)
		jit_slow(t, m);
	else
		rt_safepoint(t);
	calls = atomic_fetch_add_explicit(&m->calls, 1, memory_order_relaxed) + 1;
	if (calls == RT_TIER1_CALLS) {
		pthread_mutex_lock(&jit.lock);
		if (jit.tier_tail)
			jit.tier_tail->tier_next = m;
		else
			jit.tier_head = m;
		jit.tier_tail = m;
		pthread_cond_broadcast(&jit.cond);
		pthread_mutex_unlock(&jit.lock);
	}
	return m;
}

static void *tier_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&jit.lock);
	for (;;) {
		struct rt_method *m;

		while (!jit.tier_head && !jit.stop)
			pthread_cond_wait(&jit.cond, &jit.lock);
		if (jit.stop)
			break;
		m = jit.tier_head;
		jit.tier_head = m->tier_next;
		if (!jit.tier_head)
			jit.tier_tail = NULL;
		pthread_mutex_unlock(&jit.lock);
		compile(m, 1);
		pthread_mutex_lock(&jit.lock);
	}
	pthread_mutex_unlock(&jit.lock);
	return NULL;
}

int rt_method_invoke(const struct rt_method *m, void *a, void *b, uint64_t c, uint64_t d)
{
	rt_body_fn *code = (rt_body_fn *)(uintptr_t)rt_method_code(m);

	return code(a, b, c, d);
}

int rt_jit_init(rt_body_fn *body, bool perf_map)
{
	uint32_t id = 0;
	void *heap;
	int err;

	/* Writable and executable: methods are compiled while others run (a real JIT
	 * would map the heap twice, W^X; this one trades that for simplicity). */
	heap = mmap(NULL, CODE_HEAP_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (heap == MAP_FAILED)
		return -errno;
	code_heap.base = heap;
	code_heap.body = body;
	if (perf_map) {
		char path[64];

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		code_heap.perf_map_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
						   O_CLOEXEC | O_NOFOLLOW, 0644);
		if (code_heap.perf_map_fd < 0)
			return -errno;
	}

	pthread_mutex_init(&jit.lock, NULL);
	pthread_cond_init(&jit.cond, NULL);
	for (uint32_t mod = 0; mod < NMODULES; mod++) {
		for (uint32_t c = 0; c < 6; c++) {
			for (uint32_t k = 0; k < METHODS_PER_CLASS; k++, id++) {
				struct rt_method *m = &methods[id];
				uint64_t r = mix64(id * 7919u + 17u);
				const char *verb = verbs[(r >> 24) % 16];
				const char *noun = nouns[(r >> 28) % 10];
				const char *suffix = (r >> 20) % 3 == 0 ? "Async" : "";

				m->id = id;
				m->module = mod;
				m->token = 0x06000000u | (c * METHODS_PER_CLASS + k + 1);
				/* Most methods are small, a few are large. */
				m->il_size = 16u + (uint32_t)(r % 64) * (1u + (uint32_t)((r >> 8) % 24));
				m->has_handler = id < NENTRIES || (r >> 16) % 4 == 0;
				snprintf(m->ns, sizeof(m->ns), "%s.%s", modules[mod].name,
					 modules[mod].classes[c]);
				snprintf(m->name, sizeof(m->name), "%s%s%s", verb, noun, suffix);
				snprintf(m->sig, sizeof(m->sig), "%s", sigs[(r >> 32) % 8]);
				snprintf(m->full, sizeof(m->full), "%s.%s::%s%s%s", modules[mod].name,
					 modules[mod].classes[c], verb, noun, suffix);
				/* Calls go "down" the table: the graph is acyclic. */
				for (uint32_t i = 0; i < RT_MAX_CALLEES; i++) {
					uint32_t callee =
						id + 1 + (uint32_t)((r >> (40 + 8 * i)) % RT_CALLEE_SPAN);

					if (callee < NMETHODS && (((r >> (36 + i)) & 1) || i == 0))
						m->callees[m->ncallees++] = callee;
				}
			}
		}
	}
	err = pthread_create(&jit.tier_thread, NULL, tier_main, NULL);
	if (err)
		return -err;
	jit.tier_thread_started = true;
	(void)pthread_setname_np(jit.tier_thread, "jit-tier");
	return 0;
}

void rt_jit_fini(void)
{
	if (jit.tier_thread_started) {
		pthread_mutex_lock(&jit.lock);
		jit.stop = true;
		pthread_cond_broadcast(&jit.cond);
		pthread_mutex_unlock(&jit.lock);
		pthread_join(jit.tier_thread, NULL);
		jit.tier_thread_started = false;
	}
	if (code_heap.perf_map_fd >= 0) {
		close(code_heap.perf_map_fd);
		code_heap.perf_map_fd = -1;
	}
	/* Every thread has stopped running methods: the code heap can go. */
	if (code_heap.base) {
		munmap(code_heap.base, CODE_HEAP_SIZE);
		code_heap.base = NULL;
	}
	pthread_cond_destroy(&jit.cond);
	pthread_mutex_destroy(&jit.lock);
}

uint32_t rt_method_count(void)
{
	return NMETHODS;
}

uint32_t rt_entry_method_count(void)
{
	return NENTRIES;
}

const char *rt_method_name(const struct rt_method *m)
{
	return m->full;
}

const void *rt_method_code(const struct rt_method *m)
{
	/* Pairs with the release store in compile(). */
	return atomic_load_explicit(&m->code, memory_order_acquire);
}

bool rt_method_has_handler(const struct rt_method *m)
{
	return m->has_handler;
}

uint32_t rt_method_ncallees(const struct rt_method *m)
{
	return m->ncallees;
}

uint32_t rt_method_callee(const struct rt_method *m, uint32_t i)
{
	return m->callees[i];
}
