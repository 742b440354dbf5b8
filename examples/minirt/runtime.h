/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * minirt: a small managed-runtime simulator. Internal API shared by its files.
 *
 * The pieces, each in its own file:
 *   heap.c        regions, allocation contexts, the LOH, mutator threads, the
 *                 cooperative/preemptive modes and stop-the-world suspension,
 *                 the write barrier and the remembered set
 *   gc.c          the generational copying collector and the heap verifier
 *   threadpool.c  workers, the work queue, hill-climbing injection, retirement
 *   jit.c         modules, the method table, first-call JIT and tier-up
 *   work.c        work items: object graphs, exceptions, monitors, the cache
 *   stats.c       struct minirt_stats and its one-line summary
 *   main.c        options, load phases, the load generator
 *
 * GC-safety rule (the same one a real runtime's native code follows): a thread
 * in cooperative mode may hold raw struct rt_obj pointers only between GC
 * points. The GC points are rt_alloc*(), rt_safepoint(), rt_call(),
 * rt_monitor_enter() and rt_coop_enter()/rt_coop_leave(). Anything that must
 * survive one lives in a root slot (rt_root_push(), RT_ROOT()) and is read back
 * from there afterwards, because the collector moves objects.
 */
#ifndef MINIRT_RUNTIME_H
#define MINIRT_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- statistics, for the counters another part will publish ---------------- */

/*
 * Everything is a relaxed atomic: each value is read on its own, for display,
 * and no reader infers anything about other memory from it.
 * Collection counts follow .NET's GC.CollectionCount(): a gen1 collection also
 * counts as a gen0 one, a gen2 collection as all three.
 */
struct minirt_stats {
	_Atomic uint64_t heap_size;		/* gen0 allocated + gen1 + gen2 + LOH, bytes */
	_Atomic uint64_t gen_collections[3];
	_Atomic uint64_t gc_time_ns;		/* cumulative, suspension to restart */
	_Atomic uint64_t gc_last_pause_ns;
	_Atomic uint64_t bytes_allocated;	/* cumulative */
	_Atomic uint64_t gen_size[3];		/* after the last collection */
	_Atomic uint64_t loh_size;
	_Atomic uint32_t pool_threads;
	_Atomic uint32_t queue_length;
	_Atomic uint64_t work_items_completed;
	_Atomic uint64_t exceptions;
	_Atomic uint64_t contentions;
	_Atomic uint64_t methods_jitted;	/* compilations, tier-up included */
	_Atomic uint64_t il_bytes_jitted;	/* IL compiled, tier-up included, bytes */
	_Atomic uint64_t assemblies_loaded;	/* modules loaded (ModuleLoad events) */
};

extern struct minirt_stats minirt_stats;

/* The System.Runtime counters (counters.c): create them, and feed the work-item
 * duration counters from the workers. */
int rt_counters_init(void);
void rt_counters_work_done(uint64_t duration_ns);

/* Format the one-line summary into @buf (always NUL-terminated). */
void minirt_stats_format(char *buf, size_t len, double elapsed_s, const char *phase);

static inline void rt_stat_add(_Atomic uint64_t *v, uint64_t n)
{
	atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

uint64_t rt_now_ns(void);
/* Out of memory: print what could not be allocated and abort, as a runtime does. */
_Noreturn void rt_oom(const char *what);
uint64_t rt_gettid(void);

/* xorshift64*: cheap per-thread randomness for the simulated workload. */
static inline uint64_t rt_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n). */
static inline uint32_t rt_rand_below(uint64_t *state, uint32_t n)
{
	return (uint32_t)(((rt_rand(state) >> 32) * (uint64_t)n) >> 32);
}

/* ---- objects and types ---------------------------------------------------- */

enum {
	RT_GEN_LOH = 3,			/* large objects, collected with gen2 */
	RT_OBJ_FORWARDED = 0x1,		/* moved: @fwd is the new copy */
	RT_OBJ_REMEMBERED = 0x2,	/* in the remembered set */
	RT_OBJ_MARKED = 0x4,		/* LOH mark; verifier visit mark */
};

struct rt_obj {
	uint32_t size;			/* bytes, header included, multiple of 8 */
	uint16_t type;			/* index in rt_types[] */
	uint8_t gen;			/* 0, 1, 2 or RT_GEN_LOH */
	uint8_t flags;			/* RT_OBJ_* */
	uint32_t nrefs;
	uint32_t hash;			/* identity hash; survives moves */
	struct rt_obj *fwd;		/* valid with RT_OBJ_FORWARDED */
	struct rt_obj *refs[];		/* nrefs references, then the payload */
};

enum rt_type_id {
	RT_T_STRING,
	RT_T_BYTES,
	RT_T_OBJECT_ARRAY,
	RT_T_REQUEST,
	RT_T_NODE,
	RT_T_DICTIONARY_ENTRY,
	RT_T_CACHE_ENTRY,
	RT_T_ORDER,
	RT_T_CUSTOMER,
	RT_T_EXCEPTION,
	RT_T_TASK,
	RT_T_COUNT,
};

extern const char *const rt_type_names[RT_T_COUNT];

static inline void *rt_payload(struct rt_obj *o)
{
	return (void *)&o->refs[o->nrefs];
}

static inline uint32_t rt_payload_size(const struct rt_obj *o)
{
	return o->size - (uint32_t)sizeof(*o) - o->nrefs * (uint32_t)sizeof(o->refs[0]);
}

/* ---- mutator threads ------------------------------------------------------ */

#define RT_MAX_ROOTS 1024

/*
 * A thread that touches the heap. Its root slots are its simulated stack: the
 * collector reads and updates them while the thread is suspended or in
 * preemptive mode.
 */
struct rt_thread {
	struct rt_thread *next, *prev;	/* heap thread list, under the suspend lock */
	uint8_t *alloc_ptr, *alloc_end;	/* gen0 allocation context; reset by the GC */
	uint64_t alloc_unflushed;	/* bytes not yet added to minirt_stats */
	uint64_t tick_bytes;		/* toward the next GCAllocationTick */
	struct rt_obj *exception;	/* the exception in flight: a root */
	uint32_t nroots;
	bool coop;			/* in cooperative mode */
	uint64_t tid;
	uint64_t rng;
	struct rt_obj *roots[RT_MAX_ROOTS];
};

#define RT_ROOT(t, i) ((t)->roots[(i)])

/* Push @o (may be NULL) as a new root slot and return its index. */
static inline uint32_t rt_root_push(struct rt_thread *t, struct rt_obj *o)
{
	/* A fixed simulated stack: overflowing it is a bug in minirt, not input. */
	if (t->nroots >= RT_MAX_ROOTS)
		__builtin_trap();
	t->roots[t->nroots] = o;
	return t->nroots++;
}

/* Pop root slots back to @mark (a value of t->nroots taken earlier). */
static inline void rt_roots_pop(struct rt_thread *t, uint32_t mark)
{
	t->nroots = mark;
}

struct rt_heap_config {
	uint64_t gen0_budget;		/* bytes allocated in gen0 between collections */
	uint64_t gen1_budget;		/* gen1 size that makes the next GC a gen1 one */
	uint64_t gen2_min_budget;	/* gen2 size that makes the next GC a gen2 one */
	uint64_t loh_budget;		/* LOH bytes allocated between gen2 GCs */
	bool verify;			/* check the whole heap after every collection */
};

/* Create the heap. Return: 0, -ENOMEM. Context: before any other rt_ call. */
int rt_heap_init(const struct rt_heap_config *cfg);

/* Free every region and large object. Context: no thread attached. */
void rt_heap_fini(void);

/* Attach the calling thread as a mutator, in preemptive mode. NULL: no memory. */
struct rt_thread *rt_thread_attach(void);
/* Detach (must be in preemptive mode, with no roots); frees @t. */
void rt_thread_detach(struct rt_thread *t);

/* Enter cooperative mode: waits while a collection runs. GC point. */
void rt_coop_enter(struct rt_thread *t);
/* Enter preemptive mode: the GC may run and move objects from now on. GC point. */
void rt_coop_leave(struct rt_thread *t);
/* Let a pending collection run. GC point. */
void rt_safepoint_slow(struct rt_thread *t);

extern _Atomic bool rt_suspend_pending;

static inline void rt_safepoint(struct rt_thread *t)
{
	/* Relaxed: a poll. rt_safepoint_slow() synchronizes under the suspend lock. */
	if (atomic_load_explicit(&rt_suspend_pending, memory_order_relaxed))
		rt_safepoint_slow(t);
}

/*
 * Allocate an object of @type with @nrefs NULL references and @payload zeroed
 * bytes, in gen0, or in the LOH when it is large (then @nrefs must be 0).
 * Never fails: running out of memory ends the process, as in a real runtime.
 * GC point.
 */
struct rt_obj *rt_alloc(struct rt_thread *t, enum rt_type_id type, uint32_t nrefs,
			uint32_t payload);

/* A string object holding @s and its NUL. GC point. */
struct rt_obj *rt_alloc_string(struct rt_thread *t, const char *s);

/* Store @v into @o->refs[@i], with the generational write barrier. */
void rt_store(struct rt_obj *o, uint32_t i, struct rt_obj *v);

static inline struct rt_obj *rt_load(struct rt_obj *o, uint32_t i)
{
	return o->refs[i];
}

/* Static roots, owned by the runtime: read them again after every GC point. */
enum { RT_STATIC_CACHE, RT_STATIC_CONFIG, RT_STATIC_COUNT };
struct rt_obj *rt_static_get(uint32_t i);
void rt_static_set(uint32_t i, struct rt_obj *o);

/* GC reasons, as in .NET's GCStart. */
enum { RT_GC_REASON_ALLOC_SMALL = 0, RT_GC_REASON_INDUCED = 1, RT_GC_REASON_ALLOC_LARGE = 4 };

/* Collect at least generation @gen now (an induced GC). GC point. */
void rt_gc_collect(struct rt_thread *t, uint32_t gen);

/* ---- monitors ---------------------------------------------------------------- */

struct rt_monitor {
	pthread_mutex_t mu;
	_Atomic uint64_t owner_tid;	/* informational, for ContentionStart */
};

void rt_monitor_init(struct rt_monitor *m);
void rt_monitor_fini(struct rt_monitor *m);
/* Acquire @m; a contended acquire waits in preemptive mode. GC point. */
void rt_monitor_enter(struct rt_thread *t, struct rt_monitor *m, const void *object);
void rt_monitor_exit(struct rt_monitor *m);

/* ---- JIT ---------------------------------------------------------------------- */

struct rt_method;

/*
 * A method body as the JIT-compiled code runs it: each method's code is a small
 * stub of real machine code (with a frame pointer) that calls @body with its
 * own arguments, so a running method is a frame on the thread's stack, named by
 * the perf map like a real JIT's.
 */
typedef int rt_body_fn(void *a, void *b, uint64_t c, uint64_t d);

/*
 * Build the module and method tables. @body: what methods run; @perf_map:
 * append every compiled method to /tmp/perf-PID.map. Return: 0, -ENOMEM, -errno.
 */
int rt_jit_init(rt_body_fn *body, bool perf_map);

/* Run @m's current code, which calls the body with these arguments. */
int rt_method_invoke(const struct rt_method *m, void *a, void *b, uint64_t c, uint64_t d);
/* Stop the tier-up thread and free code and tables. */
void rt_jit_fini(void);

uint32_t rt_method_count(void);
/* Number of entry-point methods (ids 0 .. n-1): where work items start. */
uint32_t rt_entry_method_count(void);

/* Call method @id: JIT-compile it on first use (in preemptive mode). GC point. */
const struct rt_method *rt_call(struct rt_thread *t, uint32_t id);

const char *rt_method_name(const struct rt_method *m);
const void *rt_method_code(const struct rt_method *m);
bool rt_method_has_handler(const struct rt_method *m);
/* Callee @i (0 .. n-1) of @m, n = rt_method_ncallees(). */
uint32_t rt_method_ncallees(const struct rt_method *m);
uint32_t rt_method_callee(const struct rt_method *m, uint32_t i);

/* ---- thread pool --------------------------------------------------------------- */

struct rt_work;
typedef void rt_work_fn(struct rt_thread *t, struct rt_work *w);

/* A unit of work. Allocated by the enqueuer, freed by the pool after it ran. */
struct rt_work {
	struct rt_work *next;
	rt_work_fn *fn;
	uint64_t id;
	uint32_t kind;
	uint32_t arg;
};

struct rt_pool_config {
	uint32_t min_threads;
	uint32_t max_threads;
	uint32_t queue_cap;		/* producers outside the pool wait above this */
	uint32_t retire_ms;		/* an idle worker above the minimum exits after this */
};

/* Start min_threads workers and the gate thread. Return: 0, -errno. */
int rt_pool_start(const struct rt_pool_config *cfg);
/*
 * Queue @w (takes ownership). @from_worker: called by a pool thread, which
 * never waits for space (it could be the thread that would make it).
 */
void rt_pool_enqueue(struct rt_work *w, bool from_worker);
/* Let the queue drain, then stop every thread. */
void rt_pool_stop(void);

/* ---- work items ------------------------------------------------------------------ */

/* How the current load phase shapes each work item. */
struct rt_work_mix {
	uint32_t alloc_scale;		/* small allocations per method, multiplier */
	uint32_t loh_permille;		/* chance per item of a large buffer */
	uint32_t throw_permille;	/* chance per method call of throwing */
	uint32_t cache_permille;	/* chance per method call of a cache access */
	uint32_t config_permille;	/* chance per item of taking the global config lock */
	uint32_t spawn_permille;	/* chance per item of a continuation item */
	uint32_t block_permille;	/* chance per item of a blocking I/O call ... */
	uint32_t block_max_us;		/* ... lasting up to this long */
	uint32_t induce_permille;	/* chance per item of an induced gen2 GC */
};

/* Allocate the statics (cache, config) and the monitors. Return: 0, -ENOMEM. */
int rt_work_init(void);
/* The body of every method (rt_jit_init()). */
int rt_work_method_body(void *t, void *c, uint64_t m, uint64_t depth);
void rt_work_fini(void);
/* Switch the mix new and running items use; called by the load generator. */
void rt_work_set_mix(const struct rt_work_mix *mix);
/* A new request item (to pass to rt_pool_enqueue()). NULL: no memory. */
struct rt_work *rt_work_new_request(uint64_t id);

#endif /* MINIRT_RUNTIME_H */
