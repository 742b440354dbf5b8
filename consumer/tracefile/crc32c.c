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

bool evr_crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2");
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
#endif

uint32_t evr_crc32c(uint32_t crc, const void *data, size_t len)
{
	/* Re-evaluated per call: __builtin_cpu_supports() reads a variable that
	 * libgcc fills before constructors run, so this is one load and a branch,
	 * and there is no function pointer to initialize racily. */
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
