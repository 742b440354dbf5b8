/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The macros behind EVR_PROVIDER_DECLARE() and EVR_PROVIDER_DEFINE() (<evring/evring.h>,
 * which documents them and includes this file): per field type, the fire function's
 * parameters, encoded size and packing. Not an API of its own: include <evring/evring.h>.
 * Everything here compiles in C11 (no GNU extension but attributes and builtins) and in
 * C++17, where a provider's functions get C linkage so C and C++ files can share it.
 */
#ifndef EVR_BITS_EVRING_GEN_H
#define EVR_BITS_EVRING_GEN_H

#ifndef EVR_EVRING_H
#error "include <evring/evring.h>, not <evring/bits/evring-gen.h>"
#endif

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
/*
 * The number of strings and bytes among fields, a constant: the paths that pack fields into
 * words (EVR__PACKW) take none. A constant size is not enough to tell: the compiler folds
 * strlen() of a string literal, so a str field can have a constant size too.
 */
#define EVR__NVAR(t, n) +EVR__ISVAR_##t(n)

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
/* Never reached (those paths take no string or bytes: EVR__NVAR), but must compile. */
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

/*
 * A str or json field's length, capped at EVR_MAX_PAYLOAD (longer ones make the event too
 * big: counted as lost). strlen(), not strnlen(): strnlen() is POSIX, not C11, and its
 * bound, larger than the caller's char buf[64], made gcc 12 warn at -O2
 * (-Wstringop-overread) in instrumented programs. The argument is a C string either way.
 */
static inline uint32_t evr__strlen(const char *s)
{
	size_t n;

	if (!s)
		return 0;
	n = strlen(s);
	return n < EVR_MAX_PAYLOAD ? (uint32_t)n : EVR_MAX_PAYLOAD;
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

/* A provider's events and functions have C linkage, in C++ too. */
#ifdef __cplusplus
#define EVR__EXTERN_C_BEGIN extern "C" {
#define EVR__EXTERN_C_END }
#else
#define EVR__EXTERN_C_BEGIN
#define EVR__EXTERN_C_END
#endif

/*
 * The out-of-line fire function's buffer for a payload over 256 bytes: a variable-length
 * array in C; C++ has none, and gets the same stack space from alloca.
 */
#ifdef __cplusplus
#define EVR__VARBUF(name, words) uint64_t *name = (uint64_t *)__builtin_alloca((words) * 8u)
#else
#define EVR__VARBUF(name, words) uint64_t name[words]
#endif

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
		if ((0 EVR__MAP(EVR__NVAR, EVR__NOSEP, __VA_ARGS__)) == 0 &&             \
		    __builtin_constant_p(len_) && len_ <= 32u) {                          \
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
	    (0 EVR__MAP(EVR__NVAR, EVR__NOSEP, EVR__INIT(__VA_ARGS__))) == 0 &&          \
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
	/* Positional initializers (name, id, level, opcode, flags, keywords, nfields, \
	 * fields; mask, percpu, rid, flags, desc, provider): C++17 has no designated ones. */ \
	static const struct evr_event_desc sym##__desc = {                                \
		(name_), (id_), (uint8_t)((level_) & 0xffu),                              \
		(uint8_t)((unsigned)(level_) >> 8), 0u, (keywords_),                      \
		0u EVR__MAP(EVR__ONE, EVR__NOSEP, __VA_ARGS__), sym##__fields,            \
	};                                                                                \
	struct evr_event sym##__event = { 0u, NULL, 0u, 0u, &sym##__desc, NULL };        \
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
		EVR__VARBUF(buf_, len_ / 8u + 1u);                                        \
		EVR__PACK_WRITE(sym, buf_, len_, __VA_ARGS__);                            \
	}

#define EVR__EVENT_PTR(sym, ...) &sym##__event,

/**
 * EVR_PROVIDER_DECLARE() - declare provider @prov and the typed functions of the
 * events in @LIST (a macro taking one macro argument, see the top of this file).
 * Put it in a header.
 */
#define EVR_PROVIDER_DECLARE(prov, LIST)                                                  \
	EVR__EXTERN_C_BEGIN                                                               \
	extern struct evr_provider prov;                                                  \
	LIST(EVR__DECLARE_EVENT)                                                          \
	EVR__EXTERN_C_END

/**
 * EVR_PROVIDER_DEFINE() - define provider @prov named @pname and its events, and
 * register them when the program or library is loaded (unregister on unload).
 * Put it in exactly one .c file, after EVR_PROVIDER_DECLARE().
 */
#define EVR_PROVIDER_DEFINE(prov, pname, LIST)                                            \
	LIST(EVR__DEFINE_EVENT)                                                           \
	static struct evr_event *const prov##__events[] = { LIST(EVR__EVENT_PTR) NULL }; \
	struct evr_provider prov = { (pname), prov##__events, NULL, NULL, 0u, 0u, 0u, NULL }; \
	__attribute__((constructor)) static void prov##__register(void)                   \
	{                                                                                 \
		(void)evr_provider_register(&prov);                                       \
	}                                                                                 \
	__attribute__((destructor)) static void prov##__unregister(void)                  \
	{                                                                                 \
		evr_provider_unregister(&prov);                                           \
	}

#endif /* EVR_BITS_EVRING_GEN_H */
