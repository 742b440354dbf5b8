// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CRC-32C (Castagnoli: reflected polynomial 0x82f63b78, initial value and final
 * XOR 0xffffffff), the checksum of trace file chunks.
 *
 * Software: "slicing by 8", eight 256-entry tables built once, so the loop
 * consumes 8 bytes per step with eight independent lookups instead of one
 * dependent lookup per byte (about 5x faster than the byte-wise table). CPUs
 * with SSE4.2 have a crc32 instruction for exactly this polynomial, several
 * times faster again; the recorder computes the CRC of every span it writes, so
 * it is worth the few lines. Both give identical results (test_trace checks).
 *
 * The crc32 instruction takes 3 cycles to give its result but accepts a new
 * one every cycle, so one chain of it runs at a third of its speed. Long
 * buffers are therefore cut into three consecutive blocks of CRC3_BLOCK bytes
 * whose CRCs run as three independent chains, and then joined. Joining uses
 * the linearity of the CRC register: processing bytes D from register r gives
 * Z_|D|(r) xor R(0, D), where Z_n (n zero bytes) is a linear map of the 32-bit
 * register, so R(r, A B C) = Z_2n(R(r, A)) xor Z_n(R(0, B)) xor R(0, C) for
 * blocks of n bytes. Z_n and Z_2n are tabulated once (4 x 256 entries each,
 * built by running the instruction over zeros from each single-bit register),
 * so a join is 8 table lookups per 3 KiB. Measured here: 0.107 -> 0.04 ns per
 * byte, which is most of what the recorder spends in user space per event.
 * That is on bytes in the cache; the recorder's are not (the producer wrote
 * them on another CPU), and there the three chains waited on memory: 0.24-0.32
 * ns per byte over 256 MiB, 0.20-0.25 with each group's lines prefetched while
 * the group before it is summed. evr-bench-crc-lag (bench/) later measured
 * 0.07-0.08 ns per byte on packets another CPU had just written, whatever
 * their age (0 to 119 MiB written since): what makes the recorder's CRC
 * expensive is its first lap through the session's pages: on a guest whose
 * host shadows its page tables (PVM), the first read of each page through a
 * new mapping costs 5-12 us in the host, one guest fault per 16 pages
 * (evr-bench-firsttouch; docs/recorder.md, "Checksums").
 */
#include <errno.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <evring/trace.h>

#include "crc32c.h"

#define CRC32C_POLY 0x82f63b78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void crc_table_build(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1u)));
		crc_table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = crc_table[0][n];

		for (int t = 1; t < 8; t++) {
			c = crc_table[0][c & 0xff] ^ (c >> 8);
			crc_table[t][n] = c;
		}
	}
}

uint32_t evr_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t c = ~crc;

	pthread_once(&crc_table_once, crc_table_build);
	while (len && ((uintptr_t)p & 7u)) {
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		uint32_t lo, hi;

		memcpy(&w, p, 8);	/* little endian: byte 0 is the low byte */
		lo = (uint32_t)w ^ c;
		hi = (uint32_t)(w >> 32);
		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

#if defined(__x86_64__)
#define CRC3_BLOCK 1024u

/* zshift[0]: Z_CRC3_BLOCK, zshift[1]: Z_(2 CRC3_BLOCK), one table per register byte. */
static uint32_t zshift[2][4][256];
static pthread_once_t zshift_once = PTHREAD_ONCE_INIT;

/* The raw register after @n zero bytes from @reg. */
__attribute__((target("sse4.2")))
static uint32_t zeros_from(uint32_t reg, size_t n)
{
	uint64_t c = reg;

	for (size_t i = 0; i < n; i += 8)
		c = __builtin_ia32_crc32di(c, 0);
	return (uint32_t)c;
}

static void zshift_build(void)
{
	for (int t = 0; t < 2; t++) {
		uint32_t bit[32];

		for (int i = 0; i < 32; i++)
			bit[i] = zeros_from(1u << i, (size_t)CRC3_BLOCK * (size_t)(t + 1));
		/* Linear: the image of a byte value is the xor of its bits' images. */
		for (int k = 0; k < 4; k++)
			for (uint32_t v = 0; v < 256; v++) {
				uint32_t x = 0;

				for (int j = 0; j < 8; j++)
					if (v & (1u << j))
						x ^= bit[8 * k + j];
				zshift[t][k][v] = x;
			}
	}
}

static inline uint32_t zshift_apply(int t, uint32_t reg)
{
	return zshift[t][0][reg & 0xff] ^ zshift[t][1][(reg >> 8) & 0xff] ^
	       zshift[t][2][(reg >> 16) & 0xff] ^ zshift[t][3][reg >> 24];
}

/* From register @c (not inverted), the rest of a buffer a word, then a byte, at a time;
 * the final inversion. */
__attribute__((target("sse4.2")))
static uint32_t crc_tail(uint64_t c, const uint8_t *p, size_t len)
{
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

__attribute__((target("sse4.2")))
uint32_t evr_crc32c_hw(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t c = ~crc;

	while (len && ((uintptr_t)p & 7u)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	if (len >= 3 * CRC3_BLOCK) {
		pthread_once(&zshift_once, zshift_build);
		do {
			/* Never past the end: behind a whole packet, the
			 * producer is writing the next one's first lines. */
			const bool pf = len >= 6 * CRC3_BLOCK;
			uint64_t c1 = 0, c2 = 0;

			for (uint32_t i = 0; i < CRC3_BLOCK; i += 8) {
				uint64_t w0, w1, w2;

				/* The next group's lines, a group ahead: the
				 * recorder's packets were just written by another
				 * CPU, and three interleaved streams within 3 KiB
				 * leave the hardware prefetcher behind. */
				if (pf && !(i & 63u)) {
					__builtin_prefetch(p + 3 * CRC3_BLOCK + i);
					__builtin_prefetch(p + 4 * CRC3_BLOCK + i);
					__builtin_prefetch(p + 5 * CRC3_BLOCK + i);
				}
				memcpy(&w0, p + i, 8);
				memcpy(&w1, p + CRC3_BLOCK + i, 8);
				memcpy(&w2, p + 2 * CRC3_BLOCK + i, 8);
				c = __builtin_ia32_crc32di(c, w0);
				c1 = __builtin_ia32_crc32di(c1, w1);
				c2 = __builtin_ia32_crc32di(c2, w2);
			}
			c = zshift_apply(1, (uint32_t)c) ^ zshift_apply(0, (uint32_t)c1) ^ (uint32_t)c2;
			p += 3 * CRC3_BLOCK;
			len -= 3 * CRC3_BLOCK;
		} while (len >= 3 * CRC3_BLOCK);
	}
	return crc_tail(c, p, len);
}

bool evr_crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2");
}

/*
 * Folding with carry-less multiplication (VPCLMULQDQ), for long buffers on CPUs
 * that have it on 256-bit (Zen 3 on, Intel since Ice Lake) or 512-bit vectors.
 * The crc32 instruction consumes 8 bytes a cycle at best (0.045 ns a byte on
 * the Intel guest this was measured on); four vectors of 128-bit lanes folded
 * forward with two multiplications each take 0.021 (256-bit) and 0.014
 * (512-bit) ns a byte there, on bytes in the cache.
 *
 * The algebra, in the reflected bit order of this CRC (the first byte's bit 0
 * is the message's highest power of x). A 16-byte block loaded as lanes lo
 * (bytes 0-7) and hi (8-15) is the polynomial A = LO x^64 + HI of degree < 128,
 * where a 64-bit lane's bit i is the coefficient of x^(63 - i). Moving A
 * forward by T bits, onto the block that lies T bits further on, multiplies it
 * by x^T, and modulo P that is LO (x^(T+64) mod P) + HI (x^T mod P): two
 * products of a 64-bit lane by a 32-bit constant, each under 96 bits. A
 * carry-less product of two reflected 64-bit lanes is their polynomial product
 * times x, read as a reflected 128-bit value, so the constants are x^(T+63) and
 * x^(T-1) mod P; a 32-bit reflected constant sits in the upper half of its lane
 * (bit 32 + j is x^(31 - j)). Each 128-bit lane of a vector is folded forward
 * by the width of the four vectors (1024 or 2048 bits) onto the block at its
 * place in the next group, the sum taken with the loaded bytes; at the end the
 * lanes are folded onto the last one (by 128, 256, ... bits). What remains is
 * one block A whose CRC register, (A x^32) mod P, is what two crc32
 * instructions give from a register of 0; the initial register is the XOR of
 * the first four bytes, as always. The constants are computed here at first
 * use, x^e mod P by shifting, not copied from a table.
 */
#define CRC32C_POLY_NORMAL 0x11edc6f41ull	/* x^32 + ...: bit i is x^i */

/* [i]: folding by 128 i bits (i >= 1); [16], [8]: by 2048 and 1024. */
static uint64_t fold_k[17][2];
static pthread_once_t fold_once = PTHREAD_ONCE_INIT;

/* @r (a remainder mod P, bit i is x^i) times x^@n, mod P. */
static uint64_t times_xn(uint64_t r, unsigned int n)
{
	while (n--) {
		r <<= 1;
		if (r & (1ull << 32))
			r ^= CRC32C_POLY_NORMAL;
	}
	return r;
}

/* A remainder as a reflected 32-bit constant in the upper half of a 64-bit lane. */
static uint64_t lane_const(uint64_t r)
{
	uint32_t refl = 0;

	for (int j = 0; j < 32; j++)
		if (r & (1ull << j))
			refl |= 1u << (31 - j);
	return (uint64_t)refl << 32;
}

/* Each exponent 128 above the one before: 4,400 shifts in all, where computing
 * each of the 32 from 1 took 36,000 (0.1 ms of every reader's start). */
static void fold_build(void)
{
	uint64_t lo = times_xn(1, 128 + 63), hi = times_xn(1, 128 - 1);

	for (unsigned int i = 1; i <= 16; i++) {
		fold_k[i][0] = lane_const(lo);	/* x^(128 i + 63): times the lo lane */
		fold_k[i][1] = lane_const(hi);	/* x^(128 i - 1): times the hi lane */
		lo = times_xn(lo, 128);
		hi = times_xn(hi, 128);
	}
}

/* Lanes @n 128-bit blocks, block i of the last group, folded onto the last one; its CRC. */
__attribute__((target("pclmul,sse4.2")))
static uint64_t fold_lanes(const __m128i *lanes, unsigned int n)
{
	__m128i acc = lanes[n - 1];
	uint64_t c;

	for (unsigned int i = 0; i + 1 < n; i++) {
		const __m128i k = _mm_set_epi64x((long long)fold_k[n - 1 - i][1],
						 (long long)fold_k[n - 1 - i][0]);

		acc = _mm_xor_si128(acc, _mm_xor_si128(_mm_clmulepi64_si128(lanes[i], k, 0x00),
						       _mm_clmulepi64_si128(lanes[i], k, 0x11)));
	}
	c = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(acc));
	return __builtin_ia32_crc32di(c, (uint64_t)_mm_extract_epi64(acc, 1));
}

/*
 * The lines of the group FOLD_PREFETCH bytes ahead of @p (@group bytes), while
 * the buffer (@len bytes from @p) goes that far: the recorder's packets were
 * written a moment before by another CPU, and the hardware prefetcher alone
 * leaves the folds waiting (evr-bench-crc-lag, four alternating pairs on the
 * Intel guest: 10-15% less with 2 KiB ahead at every lag from 4 to 192
 * packets, 0.060-0.092 ns a byte against 0.069-0.104; 512 B and 8 KiB ahead
 * did less than 2 KiB in one series).
 * Never past the end: behind a whole packet, the producer is writing the next
 * one's first lines.
 */
#define FOLD_PREFETCH 2048u

static inline void fold_prefetch(const uint8_t *p, size_t len, unsigned int group)
{
	if (len >= FOLD_PREFETCH + group)
		for (unsigned int q = 0; q < group; q += 64)
			__builtin_prefetch(p + FOLD_PREFETCH + q);
}

__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2")))
uint32_t evr_crc32c_fold256(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t c = ~crc;

	if (len >= 256) {
		__m256i a0, a1, a2, a3, k;
		__m128i lanes[8];

		pthread_once(&fold_once, fold_build);
		k = _mm256_broadcastsi128_si256(_mm_set_epi64x((long long)fold_k[8][1],
							       (long long)fold_k[8][0]));
		a0 = _mm256_loadu_si256((const void *)p);
		a1 = _mm256_loadu_si256((const void *)(p + 32));
		a2 = _mm256_loadu_si256((const void *)(p + 64));
		a3 = _mm256_loadu_si256((const void *)(p + 96));
		a0 = _mm256_xor_si256(a0, _mm256_castsi128_si256(_mm_cvtsi32_si128((int)(uint32_t)c)));
		p += 128;
		len -= 128;
#define FOLD256(a, off)                                                                          \
	a = _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(a, k, 0x00),               \
					      _mm256_clmulepi64_epi128(a, k, 0x11)),              \
			     _mm256_loadu_si256((const void *)(p + (off))))
		while (len >= 128) {
			fold_prefetch(p, len, 128);
			FOLD256(a0, 0);
			FOLD256(a1, 32);
			FOLD256(a2, 64);
			FOLD256(a3, 96);
			p += 128;
			len -= 128;
		}
#undef FOLD256
		_mm256_storeu_si256((void *)&lanes[0], a0);
		_mm256_storeu_si256((void *)&lanes[2], a1);
		_mm256_storeu_si256((void *)&lanes[4], a2);
		_mm256_storeu_si256((void *)&lanes[6], a3);
		c = fold_lanes(lanes, 8);
	}
	return crc_tail(c, p, len);
}

__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))
uint32_t evr_crc32c_fold512(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t c = ~crc;

	if (len >= 512) {
		__m512i a0, a1, a2, a3, k;
		__m128i lanes[16];

		pthread_once(&fold_once, fold_build);
		k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)fold_k[16][1],
							  (long long)fold_k[16][0]));
		a0 = _mm512_loadu_si512(p);
		a1 = _mm512_loadu_si512(p + 64);
		a2 = _mm512_loadu_si512(p + 128);
		a3 = _mm512_loadu_si512(p + 192);
		a0 = _mm512_xor_si512(a0, _mm512_castsi128_si512(_mm_cvtsi32_si128((int)(uint32_t)c)));
		p += 256;
		len -= 256;
		/* 0x96: the XOR of the three. */
#define FOLD512(a, off)                                                                          \
	a = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),                       \
				      _mm512_clmulepi64_epi128(a, k, 0x11),                       \
				      _mm512_loadu_si512(p + (off)), 0x96)
		while (len >= 256) {
			fold_prefetch(p, len, 256);
			FOLD512(a0, 0);
			FOLD512(a1, 64);
			FOLD512(a2, 128);
			FOLD512(a3, 192);
			p += 256;
			len -= 256;
		}
#undef FOLD512
		_mm512_storeu_si512(&lanes[0], a0);
		_mm512_storeu_si512(&lanes[4], a1);
		_mm512_storeu_si512(&lanes[8], a2);
		_mm512_storeu_si512(&lanes[12], a3);
		c = fold_lanes(lanes, 16);
	}
	return crc_tail(c, p, len);
}

int evr_crc32c_fold_width(void)
{
	if (!__builtin_cpu_supports("vpclmulqdq") || !__builtin_cpu_supports("sse4.2"))
		return 0;
	if (__builtin_cpu_supports("avx512f"))
		return 512;
	return __builtin_cpu_supports("avx2") ? 256 : 0;
}
#else
uint32_t evr_crc32c_hw(uint32_t crc, const void *data, size_t len)
{
	return evr_crc32c_sw(crc, data, len);
}

bool evr_crc32c_hw_available(void)
{
	return false;
}

uint32_t evr_crc32c_fold256(uint32_t crc, const void *data, size_t len)
{
	return evr_crc32c_sw(crc, data, len);
}

uint32_t evr_crc32c_fold512(uint32_t crc, const void *data, size_t len)
{
	return evr_crc32c_sw(crc, data, len);
}

int evr_crc32c_fold_width(void)
{
	return 0;
}
#endif

uint32_t evr_crc32c(uint32_t crc, const void *data, size_t len)
{
	/* Re-evaluated per call: __builtin_cpu_supports() reads a variable that
	 * libgcc fills before constructors run, so this is one load and a branch,
	 * and there is no function pointer to initialize racily. */
	if (len >= EVR_CRC32C_FOLD_MIN) {
		switch (evr_crc32c_fold_width()) {
		case 512:
			return evr_crc32c_fold512(crc, data, len);
		case 256:
			return evr_crc32c_fold256(crc, data, len);
		default:
			break;
		}
	}
	if (evr_crc32c_hw_available())
		return evr_crc32c_hw(crc, data, len);
	return evr_crc32c_sw(crc, data, len);
}

/*
 * Single-bit repair. CRC-32C is affine: for two messages of the same length,
 * crc(a) ^ crc(b) = L(a ^ b), where L is the CRC with a zero initial register
 * and no final XOR. So the syndrome crc(data) ^ want is L(e) for the error e.
 * For e one bit (bit b of byte j, bits taken LSB first as the reflected CRC
 * does), L(e) is the register 1 << b after the rest of byte j and the
 * len - 1 - j zero bytes behind it: 1 << 7 shifted 8 (len - j) + 7 - b times
 * by the register step r -> r >> 1 ^ (r & 1 ? poly : 0). So stepping a
 * register from 1 << 7 and counting steps finds the bit, if one bit it is: the
 * step has a period far beyond 2^32 bits for this polynomial, so within a
 * chunk every single-bit error has its own syndrome, and no two-bit error has
 * one of them (the code's minimum distance is at least 4 at these lengths).
 */
int evr_crc32c_fix1(const void *data, size_t len, uint32_t want, uint64_t *ret_bit)
{
	uint32_t syn = evr_crc32c(0, data, len) ^ want;
	uint64_t nbits = (uint64_t)len * 8u;
	uint32_t reg = 1u << 7;

	if (syn == 0)
		return -EINVAL;		/* nothing to repair */
	if ((syn & (syn - 1)) == 0)
		return 0;		/* one bit of the stored CRC itself */
	/* After k steps, k = 8 (len - 1 - j) + (7 - b) + 8, for k in [8, 8 len + 7]. */
	for (uint64_t k = 1; k <= nbits + 7; k++) {
		reg = (reg >> 1) ^ (CRC32C_POLY & (0u - (reg & 1u)));
		if (k >= 8 && reg == syn) {
			uint64_t j = len - 1 - (k - 8) / 8;
			uint64_t bit = 7 - (k - 8) % 8;

			*ret_bit = j * 8 + bit;
			return 1;
		}
	}
	return -EBADMSG;
}
