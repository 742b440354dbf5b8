// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for evr_decode_fields(): every field type, little-endian and
 * sign handling, and payloads that are too short, too long, or random.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <evring/schema.h>

#include "payload_build.h"

static const struct evr_schema_field all_fields[] = {
	{"u8", EVR_FT_U8},	{"u16", EVR_FT_U16},	{"u32", EVR_FT_U32},
	{"u64", EVR_FT_U64},	{"i8", EVR_FT_I8},	{"i16", EVR_FT_I16},
	{"i32", EVR_FT_I32},	{"i64", EVR_FT_I64},	{"f32", EVR_FT_F32},
	{"f64", EVR_FT_F64},	{"b", EVR_FT_BOOL},	{"p", EVR_FT_PTR},
	{"s", EVR_FT_STR},	{"j", EVR_FT_JSON},	{"raw", EVR_FT_BYTES},
};
#define NALL (sizeof(all_fields) / sizeof(all_fields[0]))

static const struct evr_schema_event all_ev = {
	.rid = 7, .id = 3, .provider = "P", .name = "All", .nfields = NALL, .fields = all_fields,
};

/* The payload of all_ev with extreme values in every field. */
static void all_payload(struct pbuf *p)
{
	p->n = 0;
	put_le(p, 0xff, 1);
	put_le(p, 0xfffe, 2);
	put_le(p, 0xfffffffdu, 4);
	put_le(p, UINT64_MAX, 8);
	put_le(p, 0x80, 1);			/* -128 */
	put_le(p, 0x8000, 2);			/* -32768 */
	put_le(p, 0xffffffffu, 4);		/* -1 */
	put_le(p, 0x8000000000000000ull, 8);	/* INT64_MIN */
	put_f32(p, 1.5f);
	put_f64(p, -2.25e300);
	put_le(p, 1, 1);
	put_le(p, 0x7fff12345678ull, 8);
	put_blob(p, "hi", 2);
	put_blob(p, "{}", 2);
	put_blob(p, "\x00\x01\x02", 3);
}

static void test_decode_fields_every_type(void **state)
{
	struct evr_field_value v[NALL];
	struct pbuf p;

	(void)state;
	all_payload(&p);
	assert_int_equal(evr_decode_fields(&all_ev, p.b, p.n, v), (int)NALL);
	for (uint32_t i = 0; i < NALL; i++)
		assert_int_equal(v[i].type, all_fields[i].type);
	assert_true(v[0].u == 0xff);
	assert_true(v[1].u == 0xfffe);
	assert_true(v[2].u == 0xfffffffdu);
	assert_true(v[3].u == UINT64_MAX);
	assert_true(v[4].i == -128);
	assert_true(v[5].i == -32768);
	assert_true(v[6].i == -1);
	assert_true(v[7].i == INT64_MIN);
	assert_true(v[8].f == 1.5);
	assert_true(v[9].f == -2.25e300);
	assert_true(v[10].u == 1);
	assert_true(v[11].u == 0x7fff12345678ull);
	assert_int_equal(v[12].b.len, 2);
	assert_memory_equal(v[12].b.data, "hi", 2);
	assert_int_equal(v[13].b.len, 2);
	assert_memory_equal(v[13].b.data, "{}", 2);
	assert_int_equal(v[14].b.len, 3);
	assert_memory_equal(v[14].b.data, "\x00\x01\x02", 3);
	/* Variable-size values point into the payload, not into a copy. */
	assert_ptr_equal(v[12].b.data, p.b + p.n - 4 - 3 - 4 - 2 - 2);
}

static void test_decode_fields_truncated(void **state)
{
	struct evr_field_value v[NALL];
	struct pbuf p;

	(void)state;
	all_payload(&p);
	for (uint32_t len = 0; len < p.n; len++)
		assert_int_equal(evr_decode_fields(&all_ev, p.b, len, v), -EBADMSG);
}

static void test_decode_fields_overlong(void **state)
{
	struct evr_field_value v[NALL];
	struct pbuf p;

	(void)state;
	all_payload(&p);
	p.b[p.n++] = 0;
	assert_int_equal(evr_decode_fields(&all_ev, p.b, p.n, v), -EBADMSG);
}

static void test_decode_fields_blob_length_overflow(void **state)
{
	static const struct evr_schema_field f[] = {{"s", EVR_FT_STR}, {"x", EVR_FT_U8}};
	const struct evr_schema_event ev = {.provider = "P", .name = "E", .nfields = 2, .fields = f};
	struct evr_field_value v[2];
	uint8_t p[8] = {0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c', 1};
	uint8_t q[8] = {3, 0, 0, 0, 'a', 'b', 'c', 9};

	(void)state;
	/* 4 GiB - 1 claimed, 4 bytes left: no wrap-around may make it fit. */
	assert_int_equal(evr_decode_fields(&ev, p, sizeof(p), v), -EBADMSG);
	assert_int_equal(evr_decode_fields(&ev, q, sizeof(q), v), 2);
	assert_int_equal(v[0].b.len, 3);
	assert_true(v[1].u == 9);
	/* The length prefix itself cut short. */
	assert_int_equal(evr_decode_fields(&ev, q, 3, v), -EBADMSG);
}

static void test_decode_fields_empty_schema(void **state)
{
	const struct evr_schema_event ev = {.provider = "P", .name = "Tick"};
	uint8_t b = 0;

	(void)state;
	assert_int_equal(evr_decode_fields(&ev, NULL, 0, NULL), 0);
	assert_int_equal(evr_decode_fields(&ev, &b, 1, NULL), -EBADMSG);
}

static void test_decode_fields_unknown_type(void **state)
{
	static const struct evr_schema_field f[] = {{"x", 99}};
	const struct evr_schema_event ev = {.provider = "P", .name = "E", .nfields = 1, .fields = f};
	struct evr_field_value v[1];
	uint8_t p[8] = {0};

	(void)state;
	assert_int_equal(evr_decode_fields(&ev, p, sizeof(p), v), -EBADMSG);
}

static void test_decode_fields_bad_args(void **state)
{
	struct evr_field_value v[NALL];

	(void)state;
	assert_int_equal(evr_decode_fields(NULL, "", 0, v), -EINVAL);
	assert_int_equal(evr_decode_fields(&all_ev, "", 0, NULL), -EINVAL);
	assert_int_equal(evr_decode_fields(&all_ev, NULL, 4, v), -EINVAL);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Random schemas against random payloads: no crash, and a success consumed
 * exactly the payload (fixed sizes plus blob lengths add up to it). */
static void test_decode_fields_random(void **state)
{
	static const int fixed[EVR_FT_MAX_] = {0, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 1, 8, -1, -1, -1};
	uint64_t seed = 0x1234567;
	unsigned ok = 0;

	(void)state;
	for (int iter = 0; iter < 20000; iter++) {
		struct evr_schema_field f[8];
		struct evr_schema_event ev = {.provider = "P", .name = "E", .fields = f};
		struct evr_field_value v[8];
		uint8_t *p;
		uint32_t len;
		int n;

		ev.nfields = (uint32_t)(rnd(&seed) % 8);
		for (uint32_t i = 0; i < ev.nfields; i++) {
			f[i].name = "f";
			f[i].type = 1 + (uint32_t)(rnd(&seed) % (EVR_FT_MAX_ - 1));
		}
		len = (uint32_t)(rnd(&seed) % 40);
		p = malloc(len ? len : 1);
		assert_non_null(p);
		for (uint32_t i = 0; i < len; i++) {
			uint64_t r = rnd(&seed);

			/* Mostly small bytes, so blob lengths sometimes fit. */
			p[i] = (uint8_t)(r % 4 ? r % 6 : r >> 8);
		}
		n = evr_decode_fields(&ev, p, len, v);
		if (n >= 0) {
			uint64_t used = 0;

			assert_int_equal(n, ev.nfields);
			for (uint32_t i = 0; i < ev.nfields; i++) {
				if (fixed[f[i].type] > 0) {
					used += (uint64_t)fixed[f[i].type];
				} else {
					assert_true((const uint8_t *)v[i].b.data >= p + 4);
					assert_true((const uint8_t *)v[i].b.data + v[i].b.len <= p + len);
					used += 4 + (uint64_t)v[i].b.len;
				}
			}
			assert_true(used == len);
			ok++;
		} else {
			assert_int_equal(n, -EBADMSG);
		}
		free(p);
	}
	assert_true(ok > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_fields_every_type),
		cmocka_unit_test(test_decode_fields_truncated),
		cmocka_unit_test(test_decode_fields_overlong),
		cmocka_unit_test(test_decode_fields_blob_length_overflow),
		cmocka_unit_test(test_decode_fields_empty_schema),
		cmocka_unit_test(test_decode_fields_unknown_type),
		cmocka_unit_test(test_decode_fields_bad_args),
		cmocka_unit_test(test_decode_fields_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
