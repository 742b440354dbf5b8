/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CRC-32C internals (crc32c.c): both implementations and the one-bit repair. */
#ifndef EVR_CRC32C_H
#define EVR_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The two implementations behind evr_crc32c(), exposed for the tests. */
uint32_t evr_crc32c_sw(uint32_t crc, const void *data, size_t len);
uint32_t evr_crc32c_hw(uint32_t crc, const void *data, size_t len);
bool evr_crc32c_hw_available(void);

/*
 * Folding by carry-less multiplication on 256- or 512-bit vectors (x86-64 with
 * VPCLMULQDQ), what evr_crc32c() uses for buffers of EVR_CRC32C_FOLD_MIN bytes
 * or more where evr_crc32c_fold_width() says 512 or 256 (0: neither). Each
 * gives the same CRC as the others on any buffer (shorter ones go through the
 * crc32 instruction); call each only where its width is available.
 */
#define EVR_CRC32C_FOLD_MIN 1024u
uint32_t evr_crc32c_fold256(uint32_t crc, const void *data, size_t len);
uint32_t evr_crc32c_fold512(uint32_t crc, const void *data, size_t len);
int evr_crc32c_fold_width(void);

/**
 * evr_crc32c_fix1() - is @data one flipped bit away from having CRC-32C @want?
 * @ret_bit: the bit to flip back: byte @ret_bit / 8, bit @ret_bit % 8 (1 << bit).
 * Return: 1 a data bit (in @ret_bit), 0 the data is intact and one bit of @want
 * itself is flipped, -EINVAL the CRC matches, -EBADMSG more damage than one bit.
 * Context: any thread; time linear in @len (about a nanosecond per bit).
 */
int evr_crc32c_fix1(const void *data, size_t len, uint32_t want, uint64_t *ret_bit);

#endif /* EVR_CRC32C_H */
