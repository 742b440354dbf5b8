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

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <evring/abi.h>
#include <evring/provider-spec.h>
#include <evring/shm.h>

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
	_Atomic uint64_t mask;		/* bit i: session slot i wants this event */
	/* libevring's: when exactly one session wants the event and that session
	 * has a ring per CPU, its rings; otherwise NULL. */
	struct evr_ring_writer *_Atomic percpu;
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
	_Atomic uint64_t mask;			/* sessions enabling this provider */
	_Atomic uint64_t keywords;		/* union over those sessions */
	_Atomic uint32_t level;			/* max over those sessions */
	struct evr_provider_priv *priv;		/* registry state */
};

/* ---- hot-path checks ------------------------------------------------------ */

/**
 * evr_event_enabled() - does any session want @ev?
 * Context: any, including signal handlers. Costs one relaxed load.
 */
static inline bool evr_event_enabled(const struct evr_event *ev)
{
	return atomic_load_explicit(&ev->mask, memory_order_relaxed) != 0;
}

/**
 * evr_provider_enabled() - would an event of @level and @keywords from @p be
 * wanted by some session? For code that wants to skip preparing a payload.
 */
static inline bool evr_provider_enabled(const struct evr_provider *p, uint8_t level,
					uint64_t keywords)
{
	if (!atomic_load_explicit(&p->mask, memory_order_relaxed))
		return false;
	return evr_level_match((uint8_t)atomic_load_explicit(&p->level, memory_order_relaxed),
			       level) &&
	       evr_keywords_match(atomic_load_explicit(&p->keywords, memory_order_relaxed),
				  keywords);
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

/* ---- the definition macros --------------------------------------------------- */

#define EVR__CAT(a, b) EVR__CAT_(a, b)
#define EVR__CAT_(a, b) a##b
#define EVR__NARG(...) EVR__NARG_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define EVR__NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, N, ...) N
#define EVR__FIRST(...) EVR__FIRST_(__VA_ARGS__, ~)
#define EVR__FIRST_(a, ...) a
/* 1 if x is a parenthesized field such as (u32, n), 0 if x is empty. */
#define EVR__IS_PAREN(x) EVR__SECOND(EVR__IS_PAREN_PROBE x, 0, ~)
#define EVR__IS_PAREN_PROBE(...) ~, 1
#define EVR__SECOND(...) EVR__SECOND_(__VA_ARGS__)
#define EVR__SECOND_(a, b, ...) b
#define EVR__HAS_FIELDS(...) EVR__IS_PAREN(EVR__FIRST(__VA_ARGS__))

#define EVR__COMMA() ,
#define EVR__NOSEP()
/* EVR__MAP(m, sep, (t, n), ...): m(t, n) sep() m(t, n) ..., nothing when empty. */
#define EVR__MAP(m, sep, ...) EVR__CAT(EVR__MAPSEL_, EVR__HAS_FIELDS(__VA_ARGS__))(m, sep, __VA_ARGS__)
#define EVR__MAPSEL_0(m, sep, ...)
#define EVR__MAPSEL_1(m, sep, ...) EVR__CAT(EVR__MAP_, EVR__NARG(__VA_ARGS__))(m, sep, __VA_ARGS__)
#define EVR__MAP_1(m, s, x) m x
#define EVR__MAP_2(m, s, x, ...) m x s() EVR__MAP_1(m, s, __VA_ARGS__)
#define EVR__MAP_3(m, s, x, ...) m x s() EVR__MAP_2(m, s, __VA_ARGS__)
#define EVR__MAP_4(m, s, x, ...) m x s() EVR__MAP_3(m, s, __VA_ARGS__)
#define EVR__MAP_5(m, s, x, ...) m x s() EVR__MAP_4(m, s, __VA_ARGS__)
#define EVR__MAP_6(m, s, x, ...) m x s() EVR__MAP_5(m, s, __VA_ARGS__)
#define EVR__MAP_7(m, s, x, ...) m x s() EVR__MAP_6(m, s, __VA_ARGS__)
#define EVR__MAP_8(m, s, x, ...) m x s() EVR__MAP_7(m, s, __VA_ARGS__)
#define EVR__MAP_9(m, s, x, ...) m x s() EVR__MAP_8(m, s, __VA_ARGS__)
#define EVR__MAP_10(m, s, x, ...) m x s() EVR__MAP_9(m, s, __VA_ARGS__)
#define EVR__MAP_11(m, s, x, ...) m x s() EVR__MAP_10(m, s, __VA_ARGS__)
#define EVR__MAP_12(m, s, x, ...) m x s() EVR__MAP_11(m, s, __VA_ARGS__)
#define EVR__MAP_13(m, s, x, ...) m x s() EVR__MAP_12(m, s, __VA_ARGS__)
#define EVR__MAP_14(m, s, x, ...) m x s() EVR__MAP_13(m, s, __VA_ARGS__)
#define EVR__MAP_15(m, s, x, ...) m x s() EVR__MAP_14(m, s, __VA_ARGS__)
#define EVR__MAP_16(m, s, x, ...) m x s() EVR__MAP_15(m, s, __VA_ARGS__)

/* Per field type: parameter, call argument, encoded size, packing, type code. */
#define EVR__PARAM(t, n) EVR__PARAM_##t(n)
#define EVR__PARAM_u8(n) uint8_t n
#define EVR__PARAM_u16(n) uint16_t n
#define EVR__PARAM_u32(n) uint32_t n
#define EVR__PARAM_u64(n) uint64_t n
#define EVR__PARAM_i8(n) int8_t n
#define EVR__PARAM_i16(n) int16_t n
#define EVR__PARAM_i32(n) int32_t n
#define EVR__PARAM_i64(n) int64_t n
#define EVR__PARAM_f32(n) float n
#define EVR__PARAM_f64(n) double n
#define EVR__PARAM_bool(n) bool n
#define EVR__PARAM_ptr(n) const void *n
#define EVR__PARAM_str(n) const char *n
#define EVR__PARAM_json(n) const char *n
#define EVR__PARAM_bytes(n) const void *n, uint32_t n##_len

#define EVR__ARG(t, n) EVR__ARG_##t(n)
#define EVR__ARG_u8(n) n
#define EVR__ARG_u16(n) n
#define EVR__ARG_u32(n) n
#define EVR__ARG_u64(n) n
#define EVR__ARG_i8(n) n
#define EVR__ARG_i16(n) n
#define EVR__ARG_i32(n) n
#define EVR__ARG_i64(n) n
#define EVR__ARG_f32(n) n
#define EVR__ARG_f64(n) n
#define EVR__ARG_bool(n) n
#define EVR__ARG_ptr(n) n
#define EVR__ARG_str(n) n
#define EVR__ARG_json(n) n
#define EVR__ARG_bytes(n) n, n##_len

#define EVR__SIZE(t, n) +EVR__SIZE_##t(n)
#define EVR__SIZE_u8(n) 1u
#define EVR__SIZE_u16(n) 2u
#define EVR__SIZE_u32(n) 4u
#define EVR__SIZE_u64(n) 8u
#define EVR__SIZE_i8(n) 1u
#define EVR__SIZE_i16(n) 2u
#define EVR__SIZE_i32(n) 4u
#define EVR__SIZE_i64(n) 8u
#define EVR__SIZE_f32(n) 4u
#define EVR__SIZE_f64(n) 8u
#define EVR__SIZE_bool(n) 1u
#define EVR__SIZE_ptr(n) 8u
#define EVR__SIZE_str(n) (4u + (uint64_t)evr__strlen(n))
#define EVR__SIZE_json(n) (4u + (uint64_t)evr__strlen(n))
#define EVR__SIZE_bytes(n) (4u + (uint64_t)(n ? n##_len : 0))

/* A variable-size field's bytes, for evr__event_write_v(). */
#define EVR__VSRC_u8(n) ((const void *)0)
#define EVR__VSRC_u16(n) ((const void *)0)
#define EVR__VSRC_u32(n) ((const void *)0)
#define EVR__VSRC_u64(n) ((const void *)0)
#define EVR__VSRC_i8(n) ((const void *)0)
#define EVR__VSRC_i16(n) ((const void *)0)
#define EVR__VSRC_i32(n) ((const void *)0)
#define EVR__VSRC_i64(n) ((const void *)0)
#define EVR__VSRC_f32(n) ((const void *)0)
#define EVR__VSRC_f64(n) ((const void *)0)
#define EVR__VSRC_bool(n) ((const void *)0)
#define EVR__VSRC_ptr(n) ((const void *)0)
#define EVR__VSRC_str(n) ((const void *)(n))
#define EVR__VSRC_json(n) ((const void *)(n))
#define EVR__VSRC_bytes(n) ((const void *)(n))
#define EVR__ISVAR_u8(n) 0
#define EVR__ISVAR_u16(n) 0
#define EVR__ISVAR_u32(n) 0
#define EVR__ISVAR_u64(n) 0
#define EVR__ISVAR_i8(n) 0
#define EVR__ISVAR_i16(n) 0
#define EVR__ISVAR_i32(n) 0
#define EVR__ISVAR_i64(n) 0
#define EVR__ISVAR_f32(n) 0
#define EVR__ISVAR_f64(n) 0
#define EVR__ISVAR_bool(n) 0
#define EVR__ISVAR_ptr(n) 0
#define EVR__ISVAR_str(n) 1
#define EVR__ISVAR_json(n) 1
#define EVR__ISVAR_bytes(n) 1
/* The bytes of a string or bytes field: its encoded size less the length word
 * (meaningless for fixed-size types, where EVR__DIRECT() never uses it). */
#define EVR__VN(t, n) ((uint32_t)(EVR__SIZE_##t(n) - 4u))
#define EVR__VSRC(t, n) EVR__VSRC_##t(n)
#define EVR__ISVAR(t, n) EVR__ISVAR_##t(n)

/* EVR__APPLY(m, (t, n)): m(t, n). */
#define EVR__APPLY(m, x) m x
/* The last of a list of fields, and the list without it (16 at most). */
#define EVR__LAST(...) EVR__CAT(EVR__LAST_, EVR__NARG(__VA_ARGS__))(__VA_ARGS__)
#define EVR__LAST_1(a) a
#define EVR__LAST_2(a, ...) EVR__LAST_1(__VA_ARGS__)
#define EVR__LAST_3(a, ...) EVR__LAST_2(__VA_ARGS__)
#define EVR__LAST_4(a, ...) EVR__LAST_3(__VA_ARGS__)
#define EVR__LAST_5(a, ...) EVR__LAST_4(__VA_ARGS__)
#define EVR__LAST_6(a, ...) EVR__LAST_5(__VA_ARGS__)
#define EVR__LAST_7(a, ...) EVR__LAST_6(__VA_ARGS__)
#define EVR__LAST_8(a, ...) EVR__LAST_7(__VA_ARGS__)
#define EVR__LAST_9(a, ...) EVR__LAST_8(__VA_ARGS__)
#define EVR__LAST_10(a, ...) EVR__LAST_9(__VA_ARGS__)
#define EVR__LAST_11(a, ...) EVR__LAST_10(__VA_ARGS__)
#define EVR__LAST_12(a, ...) EVR__LAST_11(__VA_ARGS__)
#define EVR__LAST_13(a, ...) EVR__LAST_12(__VA_ARGS__)
#define EVR__LAST_14(a, ...) EVR__LAST_13(__VA_ARGS__)
#define EVR__LAST_15(a, ...) EVR__LAST_14(__VA_ARGS__)
#define EVR__LAST_16(a, ...) EVR__LAST_15(__VA_ARGS__)
#define EVR__INIT(...) EVR__CAT(EVR__INIT_, EVR__NARG(__VA_ARGS__))(__VA_ARGS__)
#define EVR__INIT_1(a)
#define EVR__INIT_2(a, ...) a
#define EVR__INIT_3(a, ...) a, EVR__INIT_2(__VA_ARGS__)
#define EVR__INIT_4(a, ...) a, EVR__INIT_3(__VA_ARGS__)
#define EVR__INIT_5(a, ...) a, EVR__INIT_4(__VA_ARGS__)
#define EVR__INIT_6(a, ...) a, EVR__INIT_5(__VA_ARGS__)
#define EVR__INIT_7(a, ...) a, EVR__INIT_6(__VA_ARGS__)
#define EVR__INIT_8(a, ...) a, EVR__INIT_7(__VA_ARGS__)
#define EVR__INIT_9(a, ...) a, EVR__INIT_8(__VA_ARGS__)
#define EVR__INIT_10(a, ...) a, EVR__INIT_9(__VA_ARGS__)
#define EVR__INIT_11(a, ...) a, EVR__INIT_10(__VA_ARGS__)
#define EVR__INIT_12(a, ...) a, EVR__INIT_11(__VA_ARGS__)
#define EVR__INIT_13(a, ...) a, EVR__INIT_12(__VA_ARGS__)
#define EVR__INIT_14(a, ...) a, EVR__INIT_13(__VA_ARGS__)
#define EVR__INIT_15(a, ...) a, EVR__INIT_14(__VA_ARGS__)
#define EVR__INIT_16(a, ...) a, EVR__INIT_15(__VA_ARGS__)

/* Each field's encoded size, once (strings are measured here), and their sum. */
#define EVR__VLEN(t, n) const uint64_t n##_vlen_ = EVR__SIZE_##t(n);
#define EVR__VSIZE(t, n) +n##_vlen_

#define EVR__PACK(t, n) EVR__PACK_##t(n);
#define EVR__PACK_u8(n) evr__put(&p_, &n, 1)
#define EVR__PACK_u16(n) evr__put(&p_, &n, 2)
#define EVR__PACK_u32(n) evr__put(&p_, &n, 4)
#define EVR__PACK_u64(n) evr__put(&p_, &n, 8)
#define EVR__PACK_i8(n) evr__put(&p_, &n, 1)
#define EVR__PACK_i16(n) evr__put(&p_, &n, 2)
#define EVR__PACK_i32(n) evr__put(&p_, &n, 4)
#define EVR__PACK_i64(n) evr__put(&p_, &n, 8)
#define EVR__PACK_f32(n) evr__put(&p_, &n, 4)
#define EVR__PACK_f64(n) evr__put(&p_, &n, 8)
#define EVR__PACK_bool(n) evr__put_u8(&p_, (uint8_t)(n ? 1 : 0))
#define EVR__PACK_ptr(n) evr__put_u64(&p_, (uint64_t)(uintptr_t)(n))
/* A string's length is measured once, in EVR__VLEN(). */
#define EVR__PACK_str(n) evr__put_var(&p_, n, (uint32_t)(n##_vlen_ - 4u))
#define EVR__PACK_json(n) evr__put_var(&p_, n, (uint32_t)(n##_vlen_ - 4u))
#define EVR__PACK_bytes(n) evr__put_var(&p_, n, n ? n##_len : 0)

/* The same, into the words q_ of a fixed-size payload of at most 32 bytes, at o_. */
#define EVR__PACKW(t, n) EVR__PACKW_##t(n);
#define EVR__PACKW_u8(n) evr__putw(q_, &o_, &n, 1)
#define EVR__PACKW_u16(n) evr__putw(q_, &o_, &n, 2)
#define EVR__PACKW_u32(n) evr__putw(q_, &o_, &n, 4)
#define EVR__PACKW_u64(n) evr__putw(q_, &o_, &n, 8)
#define EVR__PACKW_i8(n) evr__putw(q_, &o_, &n, 1)
#define EVR__PACKW_i16(n) evr__putw(q_, &o_, &n, 2)
#define EVR__PACKW_i32(n) evr__putw(q_, &o_, &n, 4)
#define EVR__PACKW_i64(n) evr__putw(q_, &o_, &n, 8)
#define EVR__PACKW_f32(n) evr__putw(q_, &o_, &n, 4)
#define EVR__PACKW_f64(n) evr__putw(q_, &o_, &n, 8)
#define EVR__PACKW_bool(n) evr__putw_u64(q_, &o_, (uint64_t)(n ? 1 : 0), 1)
#define EVR__PACKW_ptr(n) evr__putw_u64(q_, &o_, (uint64_t)(uintptr_t)(n), 8)
/* Never reached (not a fixed size), but must compile. */
#define EVR__PACKW_str(n) (void)(n)
#define EVR__PACKW_json(n) (void)(n)
#define EVR__PACKW_bytes(n) (void)(n), (void)n##_len

#define EVR__TYPE_u8 EVR_TYPE_U8
#define EVR__TYPE_u16 EVR_TYPE_U16
#define EVR__TYPE_u32 EVR_TYPE_U32
#define EVR__TYPE_u64 EVR_TYPE_U64
#define EVR__TYPE_i8 EVR_TYPE_I8
#define EVR__TYPE_i16 EVR_TYPE_I16
#define EVR__TYPE_i32 EVR_TYPE_I32
#define EVR__TYPE_i64 EVR_TYPE_I64
#define EVR__TYPE_f32 EVR_TYPE_F32
#define EVR__TYPE_f64 EVR_TYPE_F64
#define EVR__TYPE_bool EVR_TYPE_BOOL
#define EVR__TYPE_ptr EVR_TYPE_PTR
#define EVR__TYPE_str EVR_TYPE_STR
#define EVR__TYPE_json EVR_TYPE_JSON
#define EVR__TYPE_bytes EVR_TYPE_BYTES

/*
 * In C before C23, <stdbool.h> defines bool as a macro for _Bool, and a field
 * (bool, n) reaches the pastes above already expanded: give _Bool the same
 * meaning.
 */
#define EVR__PARAM__Bool(n) EVR__PARAM_bool(n)
#define EVR__ARG__Bool(n) EVR__ARG_bool(n)
#define EVR__SIZE__Bool(n) EVR__SIZE_bool(n)
#define EVR__PACK__Bool(n) EVR__PACK_bool(n)
#define EVR__PACKW__Bool(n) EVR__PACKW_bool(n)
#define EVR__VSRC__Bool(n) EVR__VSRC_bool(n)
#define EVR__ISVAR__Bool(n) EVR__ISVAR_bool(n)
#define EVR__TYPE__Bool EVR__TYPE_bool
#define EVR__FIELD(t, n) { #n, EVR__TYPE_##t },
#define EVR__ONE(t, n) +1u

static inline uint32_t evr__strlen(const char *s)
{
	return s ? (uint32_t)strnlen(s, EVR_MAX_PAYLOAD) : 0;
}

static inline void evr__put(uint8_t **p, const void *v, uint32_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

/*
 * Put the @n (<= 8) low bytes of @v at byte @*o of the words @q, with shifts
 * rather than stores: with @*o a constant the words stay in registers (a word
 * loaded after narrower stores into it would miss the store buffer).
 */
static inline void evr__putw_u64(uint64_t *q, uint32_t *o, uint64_t v, uint32_t n)
{
	uint32_t i = *o / 8u, sh = (*o % 8u) * 8u;

	if (n < 8u)
		v &= (1ull << (8u * n)) - 1u;
	q[i] |= v << sh;
	if (sh && *o % 8u + n > 8u)
		q[i + 1] |= v >> (64u - sh);
	*o += n;
}

static inline void evr__putw(uint64_t *q, uint32_t *o, const void *v, uint32_t n)
{
	uint64_t x = 0;

	memcpy(&x, v, n);
	evr__putw_u64(q, o, x, n);
}

static inline void evr__put_u8(uint8_t **p, uint8_t v)
{
	evr__put(p, &v, 1);
}

static inline void evr__put_u64(uint8_t **p, uint64_t v)
{
	evr__put(p, &v, 8);
}

static inline void evr__put_var(uint8_t **p, const void *v, uint32_t n)
{
	evr__put(p, &n, 4);
	if (n)
		evr__put(p, v, n);
}

/* The fire function's call for a payload of @len <= 32 bytes in the words @q. */
#define EVR__WRITE_Q(ev, len, q)                                                          \
	((len) == 0u ? evr__event_write_q0((ev), (len)) :                                 \
	 (len) <= 8u ? evr__event_write_q1((ev), (len), (q)[0]) :                         \
	 (len) <= 16u ? evr__event_write_q2((ev), (len), (q)[0], (q)[1]) :                \
	 (len) <= 24u ? evr__event_write_q3((ev), (len), (q)[0], (q)[1], (q)[2]) :        \
			evr__event_write_q4((ev), (len), (q)[0], (q)[1], (q)[2], (q)[3]))

#define EVR__PARAMS(...) EVR__CAT(EVR__PARAMS_, EVR__HAS_FIELDS(__VA_ARGS__))(__VA_ARGS__)
#define EVR__PARAMS_0(...) void
#define EVR__PARAMS_1(...) EVR__MAP(EVR__PARAM, EVR__COMMA, __VA_ARGS__)

#define EVR__DECLARE_EVENT(sym, name_, id_, level_, keywords_, ...)                          \
	extern struct evr_event sym##__event;                                             \
	int sym##__emit(EVR__PARAMS(__VA_ARGS__));                                        \
	/* unused: clang warns about unused static inline functions of the .c file. */ \
	static inline __attribute__((unused)) bool sym##_enabled(void)                    \
	{                                                                                 \
		return evr_event_enabled(&sym##__event);                                  \
	}                                                                                 \
	/* always_inline: the disabled check is a load and a branch in the caller; \
	 * a function that fires an event in several places (three in one loop, \
	 * evring-bench's worker) saw gcc call an outlined copy instead: 1.7 ns a \
	 * disabled event instead of 0.3. */                                      \
	static inline __attribute__((unused, always_inline)) int sym(EVR__PARAMS(__VA_ARGS__)) \
	{                                                                                 \
		if (__builtin_expect(!evr_event_enabled(&sym##__event), 1))               \
			return 0;                                                         \
		/* Up to 32 bytes of a fixed size: whole words, in registers, with     \
		 * one call. The rest: sym##__emit(), out of line. */                  \
		const uint64_t len_ = 0u EVR__MAP(EVR__SIZE, EVR__NOSEP, __VA_ARGS__);    \
		if (__builtin_constant_p(len_) && len_ <= 32u) {                          \
			uint64_t q_[5] = { 0, 0, 0, 0, 0 };                               \
			uint32_t o_ = 0;                                                  \
			EVR__MAP(EVR__PACKW, EVR__NOSEP, __VA_ARGS__)                     \
			(void)o_;                                                         \
			return EVR__WRITE_Q(&sym##__event, (uint32_t)len_, q_);           \
		}                                                                         \
		EVR__DIRECT(sym, __VA_ARGS__)                                            \
		return sym##__emit(EVR__MAP(EVR__ARG, EVR__COMMA, __VA_ARGS__));          \
	}

/*
 * Pack the fields into the words @buf (at least @len / 8 + 1 of them), the one
 * holding the end zeroed first (the padding), and write them: the out-of-line
 * fire function's return.
 */
#define EVR__PACK_WRITE(sym, buf, len, ...)                                               \
	do {                                                                              \
		uint8_t *p_ = (uint8_t *)(buf);                                           \
		(buf)[(len) / 8u] = 0;                                                    \
		EVR__MAP(EVR__PACK, EVR__NOSEP, __VA_ARGS__)                              \
		(void)p_;                                                                 \
		return evr_event_write_padded(&sym##__event, (buf), (uint32_t)(len));     \
	} while (0)

/*
 * 1 when the program is built with a sanitizer that checks memory accesses: its
 * fire functions then copy strings and bytes with memcpy(), which the sanitizer
 * sees (a wrong length, a racing writer), not inside libevring's critical
 * section, which it does not.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EVR__SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                \
	__has_feature(memory_sanitizer)
#define EVR__SANITIZED 1
#endif
#endif
#ifndef EVR__SANITIZED
#define EVR__SANITIZED 0
#endif

/*
 * The fire function's path for an event whose last field is a string or bytes
 * after at most 20 bytes of fixed fields (a message, a name, a key and its
 * value): the fixed fields and the length in words, in registers, and the
 * bytes copied once, from the caller's memory straight into the ring, by one
 * call. Measuring a string here rather than in the out-of-line function saves
 * a call: 40-byte strings cost 1.32-1.36x the 20-byte event instead of
 * 1.43x (evring-bench enabled_str40). Other shapes compile it away (the
 * condition is a constant).
 */
#define EVR__DIRECT(sym, ...) EVR__CAT(EVR__DIRECT_, EVR__HAS_FIELDS(__VA_ARGS__))(sym, __VA_ARGS__)
#define EVR__DIRECT_0(sym, ...)
#define EVR__DIRECT_1(sym, ...)                                                          \
	if (!EVR__SANITIZED && EVR__APPLY(EVR__ISVAR, EVR__LAST(__VA_ARGS__)) &&          \
	    __builtin_constant_p(0u EVR__MAP(EVR__SIZE, EVR__NOSEP, EVR__INIT(__VA_ARGS__))) && \
	    (0u EVR__MAP(EVR__SIZE, EVR__NOSEP, EVR__INIT(__VA_ARGS__))) <= 20u) {     \
		uint64_t q_[4] = { 0, 0, 0, 0 };                                          \
		uint32_t o_ = 0;                                                          \
		const uint32_t n_ = EVR__APPLY(EVR__VN, EVR__LAST(__VA_ARGS__));         \
		EVR__MAP(EVR__PACKW, EVR__NOSEP, EVR__INIT(__VA_ARGS__))                  \
		evr__putw_u64(q_, &o_, n_, 4u);                                           \
		return evr__event_write_v(&sym##__event, q_[0], q_[1], q_[2],             \
					  EVR__APPLY(EVR__VSRC, EVR__LAST(__VA_ARGS__)),  \
					  (uint64_t)o_ << 32 | n_);                       \
	}

#define EVR__DEFINE_EVENT(sym, name_, id_, level_, keywords_, ...)                           \
	static const struct evr_field_desc sym##__fields[] = {                            \
		EVR__MAP(EVR__FIELD, EVR__NOSEP, __VA_ARGS__){ NULL, 0 }                  \
	};                                                                                \
	static const struct evr_event_desc sym##__desc = {                                \
		.name = (name_), .id = (id_), .level = (uint8_t)((level_) & 0xffu),      \
		.opcode = (uint8_t)((unsigned)(level_) >> 8), .keywords = (keywords_),    \
		.nfields = 0u EVR__MAP(EVR__ONE, EVR__NOSEP, __VA_ARGS__),                \
		.fields = sym##__fields,                                                  \
	};                                                                                \
	struct evr_event sym##__event = { .desc = &sym##__desc };                        \
	int sym##__emit(EVR__PARAMS(__VA_ARGS__))                                         \
	{                                                                                 \
		EVR__MAP(EVR__VLEN, EVR__NOSEP, __VA_ARGS__)                              \
		uint64_t len_ = 0u EVR__MAP(EVR__VSIZE, EVR__NOSEP, __VA_ARGS__);         \
		if (len_ > EVR_MAX_PAYLOAD)                                               \
			return evr_event_write_too_big(&sym##__event);                    \
		/* Up to 256 bytes in a buffer of fixed size: a variable-length array   \
		 * moves the stack pointer by a variable amount each call, and made a   \
		 * 40-byte string event 10% slower (evring-bench enabled_str40). */     \
		if (len_ <= 256u) {                                                       \
			uint64_t sbuf_[256u / 8u + 1u];                                   \
			EVR__PACK_WRITE(sym, sbuf_, len_, __VA_ARGS__);                   \
		}                                                                         \
		uint64_t buf_[len_ / 8u + 1u];                                            \
		EVR__PACK_WRITE(sym, buf_, len_, __VA_ARGS__);                            \
	}

#define EVR__EVENT_PTR(sym, ...) &sym##__event,

/**
 * EVR_PROVIDER_DECLARE() - declare provider @prov and the typed functions of the
 * events in @LIST (a macro taking one macro argument, see the top of this file).
 * Put it in a header.
 */
#define EVR_PROVIDER_DECLARE(prov, LIST)                                                  \
	extern struct evr_provider prov;                                                  \
	LIST(EVR__DECLARE_EVENT)

/**
 * EVR_PROVIDER_DEFINE() - define provider @prov named @pname and its events, and
 * register them when the program or library is loaded (unregister on unload).
 * Put it in exactly one .c file, after EVR_PROVIDER_DECLARE().
 */
#define EVR_PROVIDER_DEFINE(prov, pname, LIST)                                            \
	LIST(EVR__DEFINE_EVENT)                                                           \
	static struct evr_event *const prov##__events[] = { LIST(EVR__EVENT_PTR) NULL }; \
	struct evr_provider prov = { .name = (pname), .events = prov##__events };        \
	__attribute__((constructor)) static void prov##__register(void)                   \
	{                                                                                 \
		(void)evr_provider_register(&prov);                                       \
	}                                                                                 \
	__attribute__((destructor)) static void prov##__unregister(void)                  \
	{                                                                                 \
		evr_provider_unregister(&prov);                                           \
	}

#ifdef __cplusplus
}
#endif

#include <evring/counters.h>

#endif /* EVR_EVRING_H */
