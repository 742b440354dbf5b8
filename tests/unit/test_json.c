// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for evr_event_to_json(): the exact text for every field type,
 * string escaping, invalid UTF-8, non-finite floats, unknown schemas,
 * undecodable payloads and LOST records.
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

#include <evring/abi.h>
#include <evring/schema.h>

#include "payload_build.h"

/* Render @v and compare with @want exactly. */
static void expect_json(const struct evr_event_view *v, const char *want)
{
	struct evr_strbuf sb = {0};

	assert_int_equal(evr_event_to_json(v, &sb), 0);
	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, want);
	assert_int_equal(sb.len, strlen(want));
	free(sb.buf);
}

static struct evr_event_view event_view(const struct evr_schema_event *ev, const struct pbuf *p)
{
	return (struct evr_event_view){
		.type = EVR_REC_EVENT, .rid = ev ? ev->rid : 42, .schema = ev, .ring = 1,
		.tid = 4242, .ts_ns = 123456789012ull, .payload = p->b, .len = p->n,
	};
}

static void test_event_to_json_every_type(void **state)
{
	static const struct evr_schema_field f[] = {
		{"u8", EVR_FT_U8},   {"u16", EVR_FT_U16}, {"u32", EVR_FT_U32}, {"u64", EVR_FT_U64},
		{"i8", EVR_FT_I8},   {"i16", EVR_FT_I16}, {"i32", EVR_FT_I32}, {"i64", EVR_FT_I64},
		{"f32", EVR_FT_F32}, {"f64", EVR_FT_F64}, {"ok", EVR_FT_BOOL}, {"no", EVR_FT_BOOL},
		{"p", EVR_FT_PTR},   {"s", EVR_FT_STR},   {"j", EVR_FT_JSON},  {"raw", EVR_FT_BYTES},
	};
	const struct evr_schema_event ev = {
		.rid = 9, .id = 5, .provider = "Demo", .name = "All",
		.nfields = sizeof(f) / sizeof(f[0]), .fields = f,
	};
	struct evr_event_view v;
	struct pbuf p = {.n = 0};

	(void)state;
	put_le(&p, 255, 1);
	put_le(&p, 65535, 2);
	put_le(&p, 4294967295u, 4);
	put_le(&p, UINT64_MAX, 8);
	put_le(&p, 0x80, 1);
	put_le(&p, 0x8000, 2);
	put_le(&p, 0x80000000u, 4);
	put_le(&p, 0x8000000000000000ull, 8);
	put_f32(&p, 0.1f);
	put_f64(&p, 0.1);
	put_le(&p, 1, 1);
	put_le(&p, 0, 1);
	put_le(&p, 0x7ffde0a1b2c8ull, 8);
	put_blob(&p, "hello", 5);
	put_blob(&p, "{\"a\":1}", 7);
	put_blob(&p, "\x00\xab\xff", 3);
	v = event_view(&ev, &p);
	expect_json(&v,
		    "{\"type\":\"event\",\"ts\":123456789012,\"provider\":\"Demo\",\"event\":\"All\","
		    "\"id\":5,\"cpu\":1,\"tid\":4242,\"fields\":{"
		    "\"u8\":255,\"u16\":65535,\"u32\":4294967295,\"u64\":18446744073709551615,"
		    "\"i8\":-128,\"i16\":-32768,\"i32\":-2147483648,\"i64\":-9223372036854775808,"
		    "\"f32\":0.10000000149011612,\"f64\":0.10000000000000001,"
		    "\"ok\":true,\"no\":false,\"p\":\"0x7ffde0a1b2c8\","
		    "\"s\":\"hello\",\"j\":\"{\\\"a\\\":1}\",\"raw\":\"00abff\"}}");
}

static void test_event_to_json_no_fields(void **state)
{
	const struct evr_schema_event ev = {.rid = 1, .id = 0, .provider = "P", .name = "Tick"};
	struct pbuf p = {.n = 0};
	struct evr_event_view v = event_view(&ev, &p);

	(void)state;
	expect_json(&v, "{\"type\":\"event\",\"ts\":123456789012,\"provider\":\"P\",\"event\":\"Tick\","
			"\"id\":0,\"cpu\":1,\"tid\":4242,\"fields\":{}}");
}

static void test_event_to_json_escaping(void **state)
{
	static const struct evr_schema_field f[] = {{"s", EVR_FT_STR}};
	const struct evr_schema_event ev = {
		.rid = 2, .id = 1, .provider = "Pro\"v", .name = "N\\m", .nfields = 1, .fields = f,
	};
	static const char s[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f" "\x00" "end";
	struct pbuf p = {.n = 0};
	struct evr_event_view v;

	(void)state;
	put_blob(&p, s, sizeof(s) - 1);
	v = event_view(&ev, &p);
	expect_json(&v, "{\"type\":\"event\",\"ts\":123456789012,\"provider\":\"Pro\\\"v\","
			"\"event\":\"N\\\\m\",\"id\":1,\"cpu\":1,\"tid\":4242,\"fields\":{\"s\":"
			"\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\\u0000end\"}}");
}

static void test_event_to_json_utf8(void **state)
{
	static const struct evr_schema_field f[] = {{"s", EVR_FT_STR}};
	const struct evr_schema_event ev = {
		.rid = 2, .id = 1, .provider = "P", .name = "E", .nfields = 1, .fields = f,
	};
	/* Valid: é (2 bytes), € (3), 𝄞 (4). Then: a lone continuation byte, an
	 * overlong '/', a surrogate, a 4-byte lead cut short by 'x', a lead byte
	 * at the very end. Each maximal invalid subpart becomes one U+FFFD. */
	static const char s[] = "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e"
				"|\x80|\xc0\xaf|\xed\xa0\x80|\xf0\x9d\x84x|\xe2\x82";
	struct pbuf p = {.n = 0};
	struct evr_event_view v;

	(void)state;
	put_blob(&p, s, sizeof(s) - 1);
	v = event_view(&ev, &p);
	expect_json(&v, "{\"type\":\"event\",\"ts\":123456789012,\"provider\":\"P\",\"event\":\"E\","
			"\"id\":1,\"cpu\":1,\"tid\":4242,\"fields\":{\"s\":\""
			"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e"
			"|\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
			"|\xef\xbf\xbdx|\xef\xbf\xbd\"}}");
}

static void test_event_to_json_nonfinite(void **state)
{
	static const struct evr_schema_field f[] = {
		{"nan", EVR_FT_F64}, {"inf", EVR_FT_F64}, {"ninf", EVR_FT_F32},
		{"neg0", EVR_FT_F64}, {"big", EVR_FT_F64}, {"one", EVR_FT_F32},
	};
	const struct evr_schema_event ev = {
		.rid = 3, .id = 2, .provider = "P", .name = "F", .nfields = 6, .fields = f,
	};
	struct pbuf p = {.n = 0};
	struct evr_event_view v;

	(void)state;
	put_f64(&p, NAN);
	put_f64(&p, INFINITY);
	put_f32(&p, -INFINITY);
	put_f64(&p, -0.0);
	put_f64(&p, 1e300);
	put_f32(&p, 1.0f);
	v = event_view(&ev, &p);
	expect_json(&v, "{\"type\":\"event\",\"ts\":123456789012,\"provider\":\"P\",\"event\":\"F\","
			"\"id\":2,\"cpu\":1,\"tid\":4242,\"fields\":{\"nan\":null,\"inf\":null,"
			"\"ninf\":null,\"neg0\":-0,\"big\":1.0000000000000001e+300,\"one\":1}}");
}

static void test_event_to_json_unknown_schema(void **state)
{
	struct pbuf p = {.n = 0};
	struct evr_event_view v;

	(void)state;
	put_le(&p, 0xdeadbeef, 4);
	v = event_view(NULL, &p);
	v.rid = 77;
	expect_json(&v, "{\"type\":\"event\",\"ts\":123456789012,\"provider\":null,\"event\":null,"
			"\"rid\":77,\"cpu\":1,\"tid\":4242,\"payload\":\"efbeadde\"}");
}

static void test_event_to_json_undecodable(void **state)
{
	static const struct evr_schema_field f[] = {{"size", EVR_FT_U64}};
	const struct evr_schema_event ev = {
		.rid = 4, .id = 3, .provider = "P", .name = "Alloc", .nfields = 1, .fields = f,
	};
	struct pbuf p = {.n = 0};
	struct evr_event_view v;

	(void)state;
	put_le(&p, 0x0102, 2);
	v = event_view(&ev, &p);
	expect_json(&v, "{\"type\":\"event\",\"ts\":123456789012,\"provider\":\"P\",\"event\":\"Alloc\","
			"\"id\":3,\"cpu\":1,\"tid\":4242,\"fields\":null,\"payload\":\"0201\","
			"\"error\":\"payload ends inside field 'size' (u64)\"}");
	put_le(&p, 0, 6);
	put_le(&p, 0xff, 1);
	v = event_view(&ev, &p);
	expect_json(&v, "{\"type\":\"event\",\"ts\":123456789012,\"provider\":\"P\",\"event\":\"Alloc\","
			"\"id\":3,\"cpu\":1,\"tid\":4242,\"fields\":null,\"payload\":\"020100000000"
			"0000ff\",\"error\":\"1 bytes left over after the last field\"}");
}

static void test_event_to_json_lost(void **state)
{
	const struct evr_event_view v = {
		.type = EVR_REC_LOST, .ring = 3, .ts_ns = 99, .lost = 12345678901ull,
	};

	(void)state;
	expect_json(&v, "{\"type\":\"lost\",\"ts\":99,\"cpu\":3,\"count\":12345678901}");
}

static void test_event_to_json_appends(void **state)
{
	const struct evr_event_view v = {.type = EVR_REC_LOST, .ring = 0, .ts_ns = 1, .lost = 2};
	const struct evr_event_view bad = {.type = EVR_REC_THREAD};
	struct evr_strbuf sb = {0};

	(void)state;
	assert_int_equal(evr_strbuf_append(&sb, "x", 1), 0);
	assert_int_equal(evr_event_to_json(&v, &sb), 0);
	assert_int_equal(evr_event_to_json(&bad, &sb), -EINVAL);
	assert_int_equal(evr_event_to_json(NULL, &sb), -EINVAL);
	assert_string_equal(sb.buf, "x{\"type\":\"lost\",\"ts\":1,\"cpu\":0,\"count\":2}");
	free(sb.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_to_json_every_type),
		cmocka_unit_test(test_event_to_json_no_fields),
		cmocka_unit_test(test_event_to_json_escaping),
		cmocka_unit_test(test_event_to_json_utf8),
		cmocka_unit_test(test_event_to_json_nonfinite),
		cmocka_unit_test(test_event_to_json_unknown_schema),
		cmocka_unit_test(test_event_to_json_undecodable),
		cmocka_unit_test(test_event_to_json_lost),
		cmocka_unit_test(test_event_to_json_appends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
