/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test helper: build event payloads in the encoding of <evring/schema.h>. */
#ifndef EVR_TEST_PAYLOAD_BUILD_H
#define EVR_TEST_PAYLOAD_BUILD_H

#include <stdint.h>
#include <string.h>

struct pbuf {
	uint8_t b[512];
	uint32_t n;
};

/* @n bytes of @v, little-endian. */
static inline void put_le(struct pbuf *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p->b[p->n++] = (uint8_t)(v >> (8 * i));
}

/* A length-prefixed field (str, json, bytes). */
static inline void put_blob(struct pbuf *p, const void *d, uint32_t n)
{
	put_le(p, n, 4);
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static inline void put_f64(struct pbuf *p, double d)
{
	uint64_t b;

	memcpy(&b, &d, 8);
	put_le(p, b, 8);
}

static inline void put_f32(struct pbuf *p, float f)
{
	uint32_t b;

	memcpy(&b, &f, 4);
	put_le(p, b, 4);
}

#endif /* EVR_TEST_PAYLOAD_BUILD_H */
