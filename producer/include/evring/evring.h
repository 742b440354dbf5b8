/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring: the producer API. An instrumented program includes only this header.
 *
 * Defining a provider and its events, one line of schema per event:
 *
 *   // myapp-events.h
 *   #include <evring/evring.h>
 *   #define MYAPP_EVENTS(EVENT)                                                   \
 *       EVENT(myapp_alloc, "Alloc", 1, EVR_LEVEL_VERBOSE, 0x1, (u64, addr), (u32, size)) \
 *       EVENT(myapp_log,   "Log",   2, EVR_LEVEL_INFO,    0x2, (str, text))         \
 *       EVENT(myapp_tick,  "Tick",  3, EVR_LEVEL_INFO,    0x0, )
 *   EVR_PROVIDER_DECLARE(myapp, MYAPP_EVENTS)
 *
 *   // exactly one .c file
 *   EVR_PROVIDER_DEFINE(myapp, "MyApp", MYAPP_EVENTS)
 *
 *   // anywhere
 *   myapp_alloc(p, n);                        // typed, checked by the compiler
 *   if (myapp_log_enabled()) myapp_log(build_expensive_message());
 *
 * Each EVENT line is (symbol, name, id, level, keywords, fields...) where a field
 * is (type, name) and type is one of u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bool
 * ptr str json bytes (bytes takes two arguments: a pointer and a uint32_t length).
 * An event without fields ends with an empty argument, as `myapp_tick` above.
 * Up to 16 fields per event.
 *
 * Activities: an event that opens or closes one (a request, a collection) says
 * so in its level column, EVR_START(level) or EVR_STOP(level); consumers pair
 * them (Chrome/Perfetto slices, durations in reports):
 *       EVENT(myapp_req_begin, "RequestStart", 4, EVR_START(EVR_LEVEL_INFO), 0x4, (u64, id)) \
 *       EVENT(myapp_req_end,   "RequestStop",  5, EVR_STOP(EVR_LEVEL_INFO),  0x4, (u64, id))
 *
 * Costs: a disabled event is one relaxed load and a branch in the caller. An
 * enabled one is written into each interested session's ring for this CPU with
 * no lock, no allocation and no system call.
 *
 * Payload encoding (what consumers decode): fields packed in order, little
 * endian, no padding; bool is one byte; ptr is 8 bytes; str, json and bytes are a
 * uint32_t length followed by that many bytes (strings without their NUL).
 */
#ifndef EVR_EVRING_H
#define EVR_EVRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <evring/abi.h>
#include <evring/provider-spec.h>
#include <evring/reader.h>

/*
 * The atomic fields of struct evr_event and struct evr_provider. C++ before C++23 has no
 * _Atomic: there they are the plain words they are in memory (the same size and alignment
 * on x86-64), which the inline checks below read with the compiler's atomic builtins.
 */
#ifdef __cplusplus
#define EVR__ATOMIC(T) T
#define EVR__LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#else
#include <stdatomic.h>
#define EVR__ATOMIC(T) _Atomic(T)
#define EVR__LOAD_RELAXED(p) atomic_load_explicit((p), memory_order_relaxed)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define EVR_API __attribute__((visibility("default")))

enum evr_type {
	EVR_TYPE_U8 = 1, EVR_TYPE_U16, EVR_TYPE_U32, EVR_TYPE_U64,
	EVR_TYPE_I8, EVR_TYPE_I16, EVR_TYPE_I32, EVR_TYPE_I64,
	EVR_TYPE_F32, EVR_TYPE_F64, EVR_TYPE_BOOL, EVR_TYPE_PTR,
	EVR_TYPE_STR, EVR_TYPE_JSON, EVR_TYPE_BYTES,
	EVR_TYPE_MAX_,
};

struct evr_field_desc {
	const char *name;
	uint32_t type;			/* enum evr_type */
};

/* Opcodes of struct evr_event_desc: what an event means for an activity. */
enum evr_opcode {
	EVR_OPCODE_INFO = 0,
	EVR_OPCODE_START = 1,
	EVR_OPCODE_STOP = 2,
};

/* The level column of an EVENT line for an event that opens / closes an activity. */
#define EVR_START(level) ((unsigned)(level) | (EVR_OPCODE_START << 8))
#define EVR_STOP(level) ((unsigned)(level) | (EVR_OPCODE_STOP << 8))

struct evr_event_desc {
	const char *name;
	uint32_t id;			/* provider-local id, stable across versions */
	uint8_t level;			/* enum evr_level */
	uint8_t opcode;			/* 0 info, 1 start, 2 stop (activities) */
	uint16_t flags;
	uint64_t keywords;
	uint32_t nfields;
	const struct evr_field_desc *fields;
};

struct evr_provider;
struct evr_ring_writer;

/*
 * An event. The first field is what the hot-path check reads; the second is
 * what the write path reads next, on the same line (the struct is 16-aligned).
 */
struct evr_event {
	EVR__ATOMIC(uint64_t) mask;	/* bit i: session slot i wants this event */
	/* libevring's: when exactly one session wants the event and that session
	 * has a ring per CPU, its rings; otherwise NULL. */
	EVR__ATOMIC(struct evr_ring_writer *) percpu;
	uint32_t rid;			/* registry id written in records; 0 until registered */
	uint32_t flags;
	const struct evr_event_desc *desc;
	struct evr_provider *provider;
} __attribute__((aligned(16)));

/**
 * evr_provider_enable_fn - called when a provider's aggregate enablement changes.
 * @p: the provider.
 * @enabled: some session wants some of its events.
 * @level: highest level any session asks for.
 * @keywords: union of the keywords sessions ask for.
 * @args: key=value arguments of the session whose change triggered the call
 *        (NULL when disabled); borrowed for the duration of the call.
 * @ctx: the provider's callback_ctx.
 * Context: called with the registry lock held: must not start or stop sessions.
 */
typedef void evr_provider_enable_fn(struct evr_provider *p, bool enabled, uint8_t level,
				    uint64_t keywords, const struct evr_provider_spec *args,
				    void *ctx);

struct evr_provider_priv;

struct evr_provider {
	const char *name;
	struct evr_event *const *events;	/* static events, NULL-terminated */
	evr_provider_enable_fn *callback;	/* may be NULL; set before registering */
	void *callback_ctx;
	EVR__ATOMIC(uint64_t) mask;		/* sessions enabling this provider */
	EVR__ATOMIC(uint64_t) keywords;		/* union over those sessions */
	EVR__ATOMIC(uint32_t) level;		/* max over those sessions */
	struct evr_provider_priv *priv;		/* registry state */
};

/* ---- hot-path checks ------------------------------------------------------ */

/**
 * evr_event_enabled() - does any session want @ev?
 * Context: any, including signal handlers. Costs one relaxed load.
 */
static inline bool evr_event_enabled(const struct evr_event *ev)
{
	return EVR__LOAD_RELAXED(&ev->mask) != 0;
}

/**
 * evr_provider_enabled() - would an event of @level and @keywords from @p be
 * wanted by some session? For code that wants to skip preparing a payload.
 */
static inline bool evr_provider_enabled(const struct evr_provider *p, uint8_t level,
					uint64_t keywords)
{
	if (!EVR__LOAD_RELAXED(&p->mask))
		return false;
	return evr_level_match((uint8_t)EVR__LOAD_RELAXED(&p->level), level) &&
	       evr_keywords_match(EVR__LOAD_RELAXED(&p->keywords), keywords);
}

/* ---- registration ----------------------------------------------------------- */

/**
 * evr_provider_register() - make @p and its static events known.
 * Done automatically by EVR_PROVIDER_DEFINE() at load time. Events may be
 * registered at any time, including while sessions run: their enable masks are
 * computed at once. @p is borrowed until evr_provider_unregister().
 * Return: 0, -EEXIST (another provider has that name), -ENOMEM, -EINVAL.
 */
EVR_API int evr_provider_register(struct evr_provider *p);

/* Unregister @p and every event it owns; waits for writers to leave them. */
EVR_API void evr_provider_unregister(struct evr_provider *p);

/**
 * evr_event_define() - a self-describing event defined at run time.
 * @p: registered provider.
 * @desc: name, id, level, keywords and fields; copied.
 * @ret: the event, owned by @p (freed by evr_provider_unregister()).
 * Return: 0, -EINVAL (bad field type, too many fields), -ENOMEM.
 */
EVR_API int evr_event_define(struct evr_provider *p, const struct evr_event_desc *desc,
			     struct evr_event **ret);

/* ---- writing --------------------------------------------------------------- */

/**
 * evr_event_write() - write an already encoded payload.
 * @ev: registered event.
 * @payload: @len bytes in the encoding described at the top of this file.
 * Return: 0 (written or, if a ring was full or busy, counted as lost), or
 * -EMSGSIZE when @len > EVR_MAX_PAYLOAD (the event is counted as lost in every
 * session that wanted it).
 * Context: any thread, signal handlers included; never blocks. A @len that is
 * not a multiple of 8 is first copied, zero-padded, to the stack (up to
 * EVR_MAX_PAYLOAD bytes there): evr_event_write_padded() avoids the copy.
 */
EVR_API int evr_event_write(struct evr_event *ev, const void *payload, uint32_t len);

/**
 * evr_event_write_padded() - evr_event_write() for a payload that the rings can
 * take in whole 8-byte words: @payload is readable for @len rounded up to a
 * multiple of 8 bytes, and the bytes past @len are zero. What the generated
 * fire functions call; it saves evr_event_write() a padded copy.
 */
EVR_API int evr_event_write_padded(struct evr_event *ev, const void *payload, uint32_t len);

/*
 * What the generated fire functions call for a payload of a fixed size of at
 * most 32 bytes: evr_event_write_padded() with the payload's (len + 7) / 8
 * words passed by value (-EINVAL if @len needs another number of words).
 */
EVR_API int evr__event_write_q0(struct evr_event *ev, uint32_t len);
EVR_API int evr__event_write_q1(struct evr_event *ev, uint32_t len, uint64_t q0);
EVR_API int evr__event_write_q2(struct evr_event *ev, uint32_t len, uint64_t q0, uint64_t q1);
EVR_API int evr__event_write_q3(struct evr_event *ev, uint32_t len, uint64_t q0, uint64_t q1,
				uint64_t q2);
EVR_API int evr__event_write_q4(struct evr_event *ev, uint32_t len, uint64_t q0, uint64_t q1,
				uint64_t q2, uint64_t q3);

/*
 * For the generated fire functions of events whose last field is a string or
 * bytes after at most 20 bytes of fixed fields: the payload's first
 * @pn >> 32 bytes (4 to 24: those fields and the last one's length) in the
 * words @q0..@q2, zero past them, then the @pn & 0xffffffff bytes at @src,
 * copied once, straight into the ring.
 */
EVR_API int evr__event_write_v(struct evr_event *ev, uint64_t q0, uint64_t q1, uint64_t q2,
			       const void *src, uint64_t pn);

/* Count @ev as lost in every session that wants it; returns -EMSGSIZE. */
EVR_API int evr_event_write_too_big(struct evr_event *ev);

union evr_value {
	uint64_t u;		/* U8..U64, BOOL */
	int64_t i;		/* I8..I64 */
	double f;		/* F32, F64 */
	const void *p;		/* PTR */
	const char *s;		/* STR, JSON (NUL-terminated) */
	struct {
		const void *data;
		uint32_t len;
	} b;			/* BYTES */
};

/**
 * evr_event_writev() - encode @n values by @ev's schema and write them.
 * Return: as evr_event_write(), or -EINVAL if @n differs from the schema.
 */
EVR_API int evr_event_writev(struct evr_event *ev, const union evr_value *values, uint32_t n);

/**
 * evr_dynamic_write() - a dynamic event: a name and an opaque payload, no schema.
 * Recorded as the provider's built-in "Dynamic" event (fields: name, keywords,
 * level, data), filtered by @level and @keywords per session.
 */
EVR_API int evr_dynamic_write(struct evr_provider *p, const char *name, uint8_t level,
			      uint64_t keywords, const void *data, uint32_t len);

/* Like evr_dynamic_write(), with a JSON document: the built-in "Json" event. */
EVR_API int evr_json_write(struct evr_provider *p, const char *name, uint8_t level,
			   uint64_t keywords, const char *json);

/* ---- sessions in this process ---------------------------------------------- */

struct evr_session;

struct evr_session_opts {
	const char *providers;	/* "Name[:0xKEYWORDS[:LEVEL[:k=v;...]]],..." */
	uint64_t ring_size;	/* bytes per CPU ring, power of two; 0: 4 MiB */
	uint32_t packet_size;	/* power of two, 16-64 KiB; 0: 64 KiB (16 KiB for small rings) */
	uint32_t mode;		/* EVR_MODE_DISCARD or EVR_MODE_OVERWRITE */
	uint32_t meta_size;	/* metadata area bytes, multiple of 4 KiB; 0: 256 KiB */
	uint32_t interval_ms;	/* counters of the named providers every this often; 0: none */
	/* Each event carries the writing thread's call stack, at most this many frames
	 * (1..127; a provider's "stacks=0|1|N" argument overrides it per provider);
	 * 0: no stacks. docs/stacks.md. */
	uint32_t stack_depth;
};

/**
 * evr_session_start() - start a session in this process (the same machinery
 * the agent uses for consumers that attach by PID).
 * @opts: options; @opts->providers is parsed and copied.
 * @ret: stop with evr_session_stop(), free with evr_session_free().
 * @errbuf: receives one line saying what is wrong, may be NULL.
 * Return: 0, -EINVAL (bad options), -EBUSY (64 sessions live), -ENOMEM, -errno.
 */
EVR_API int evr_session_start(const struct evr_session_opts *opts, struct evr_session **ret,
			      char *errbuf, size_t errlen);

/**
 * evr_session_stop() - no more events go to @s. Waits until no writer is inside
 * its rings, reports pending losses in-band and marks the session ended, so a
 * reader can drain it completely. Idempotent.
 */
EVR_API void evr_session_stop(struct evr_session *s);

/* Stop if needed and free; readers on @s must be freed first. Accepts NULL. */
EVR_API void evr_session_free(struct evr_session *s);

/**
 * evr_session_reader_new() - read @s in this process.
 * @flags: EVR_READER_GATING for the one reader that gates a discard session.
 *
 * The reader accounts for everything written since the session started, even
 * when it is created after writers have lapped an overwrite ring: what it finds
 * overwritten comes back as LOST (EVR_READER_FROM_START is implied).
 * @ret: free with evr_reader_free() before evr_session_free().
 */
EVR_API int evr_session_reader_new(struct evr_session *s, uint32_t flags,
				   struct evr_reader **ret);

/* The session's memory and doorbell, for handing to another process. Borrowed. */
EVR_API int evr_session_memfd(const struct evr_session *s);
EVR_API int evr_session_doorbell_fd(const struct evr_session *s);
EVR_API const struct evr_shm_hdr *evr_session_shm(const struct evr_session *s);

/*
 * What consumers that attach may make this process commit for their sessions
 * (docs/protocol.md, "Session memory"). A session over a limit is refused with
 * a message naming the limit; one that names no ring size gets a ring that fits.
 */
struct evr_session_limits {
	uint64_t session_max;	/* bytes of one consumer's session; 0: the default */
	uint64_t total_max;	/* bytes of all consumers' sessions together; 0: the default */
};

/**
 * evr_session_limits_set() - set the limits for sessions started from now on
 * (live ones keep their memory, and count). Replaces what EVR_MEMORY_MAX_SESSION
 * and EVR_MEMORY_MAX_TOTAL set at start-up. Defaults: total_max a sixteenth of
 * RAM, between 64 MiB and 1 GiB; session_max half of total_max. Sessions the
 * program starts itself (evr_session_start()) are neither limited nor counted.
 * Return: 0, -EINVAL.
 * Context: any thread.
 */
EVR_API int evr_session_limits_set(const struct evr_session_limits *l);

/* The limits in force (defaults resolved). Context: any thread. */
EVR_API void evr_session_limits_get(struct evr_session_limits *ret);

/**
 * evr_agent_status() - where this process's agent listens for consumers, or why
 * it does not (docs/protocol.md, "Finding the process").
 * @buf: receives the socket path ("/tmp/evring-1000/4242.sock"), or one line
 *       saying why there is none ("the agent is disabled (EVR_AGENT=0)",
 *       "refusing /tmp/evring-1000: it belongs to uid 1002 (eve), ..."); may be NULL.
 * Return: 0 the agent listens, -errno (no agent).
 * Context: any thread, once libevring's constructor has run (from main() on).
 */
EVR_API int evr_agent_status(char *buf, size_t len);

/*
 * The clock libevring stamps events with, chosen once per process: raw TSC
 * ticks wherever the CPU's TSC is invariant and trustworthy, whatever
 * clocksource the kernel uses (kvm-clock guests included); else
 * CLOCK_MONOTONIC. EVR_CLOCK=tsc|monotonic forces one. docs/clock.md.
 */
struct evr_clock_info {
	uint32_t kind;			/* enum evr_clock_kind: EVR_CLOCK_TSC or _MONOTONIC */
	char source[32];		/* the kernel's clocksource then ("tsc", "kvm-clock") */
	char reason[224];		/* why, one line */
	uint64_t tsc_hz;		/* the TSC's measured rate, 0 unknown */
	uint32_t rdtsc_ns;		/* cost of rdtsc, as measured for the choice */
	uint32_t gettime_ns;		/* of clock_gettime(CLOCK_MONOTONIC) */
	uint64_t skew_bound_ns;		/* bound on the TSC offset between CPUs, 0 unmeasured */
	uint32_t skew_pairs;		/* CPU pairs the bound comes from */
	uint32_t pad;
};

/**
 * evr_clock_get_info() - which clock events carry, and why.
 * Return: 0, -EINVAL (@ret NULL).
 * Context: any thread; the first call (or the first session) may take a few
 * milliseconds while the choice is made (its cross-CPU check).
 */
EVR_API int evr_clock_get_info(struct evr_clock_info *ret);

/**
 * evr_event_by_rid() - the event with registry id @rid, to decode records read
 * in this process. Borrowed until its provider is unregistered.
 */
EVR_API const struct evr_event *evr_event_by_rid(uint32_t rid);

/* Size in bytes of a fixed-size field type, 0 for variable-size ones. */
EVR_API uint32_t evr_type_size(uint32_t type);
EVR_API const char *evr_type_name(uint32_t type);

#ifdef __cplusplus
}
#endif

/* EVR_PROVIDER_DECLARE() and EVR_PROVIDER_DEFINE(), and what they expand to. */
#include <evring/bits/evring-gen.h>
#include <evring/counters.h>

#endif /* EVR_EVRING_H */
