// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The escaping and value helpers of `evring report` and `convert --format chrome`
 * (consumer/export/report-util.c): whatever bytes a trace holds, the JSON and HTML
 * written are valid UTF-8 with nothing unescaped; integers beyond 2^53 are strings.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export-internal.h"

/* Valid UTF-8 throughout (the same rules as the writer: no overlongs or surrogates). */
static bool utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		unsigned char b = p[i];
		size_t need;
		unsigned lo = 0x80, hi = 0xbf;

		if (b < 0x80) {
			i++;
			continue;
		}
		if (b >= 0xc2 && b <= 0xdf)
			need = 1;
		else if (b >= 0xe0 && b <= 0xef)
			need = 2, lo = b == 0xe0 ? 0xa0 : 0x80, hi = b == 0xed ? 0x9f : 0xbf;
		else if (b >= 0xf0 && b <= 0xf4)
			need = 3, lo = b == 0xf0 ? 0x90 : 0x80, hi = b == 0xf4 ? 0x8f : 0xbf;
		else
			return false;
		for (size_t k = 1; k <= need; k++) {
			if (i + k >= n || p[i + k] < lo || p[i + k] > hi)
				return false;
			lo = 0x80;
			hi = 0xbf;
		}
		i += need + 1;
	}
	return true;
}

static void test_json_str_escapes(void **state)
{
	struct evr_strbuf sb = { 0 };

	(void)state;
	assert_int_equal(evr_strbuf_json_string(&sb, "a\"b\\c\n\t\x01\x7f", 9), 0);
	assert_string_equal(sb.buf, "\"a\\\"b\\\\c\\n\\t\\u0001\x7f\"");
	sb.len = 0;
	/* An overlong slash and a lone continuation byte: replaced, never passed on. */
	assert_int_equal(evr_strbuf_json_string(&sb, "\xc0\xaf\x80\xc3\xa9", 5), 0);
	assert_string_equal(sb.buf, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9\"");
	free(sb.buf);
}

static void test_json_value_big_integers(void **state)
{
	struct evr_strbuf sb = { 0 };
	struct evr_field_value v = { .type = EVR_FT_U64, .u = UINT64_C(1) << 53 };

	(void)state;
	assert_int_equal(evr_rpt_json_value(&sb, &v), 0);
	assert_string_equal(sb.buf, "9007199254740992");
	sb.len = 0;
	v.u++;
	assert_int_equal(evr_rpt_json_value(&sb, &v), 0);
	assert_string_equal(sb.buf, "\"9007199254740993\"");
	sb.len = 0;
	v.type = EVR_FT_I64;
	v.i = INT64_MIN;
	assert_int_equal(evr_rpt_json_value(&sb, &v), 0);
	assert_string_equal(sb.buf, "\"-9223372036854775808\"");
	sb.len = 0;
	v.i = -5;
	assert_int_equal(evr_rpt_json_value(&sb, &v), 0);
	assert_string_equal(sb.buf, "-5");
	sb.len = 0;
	v.type = EVR_FT_F64;
	v.f = 0.0 / 0.0;
	assert_int_equal(evr_rpt_json_value(&sb, &v), 0);
	assert_string_equal(sb.buf, "null");
	free(sb.buf);
}

static void test_html_str_escapes(void **state)
{
	struct evr_strbuf sb = { 0 };

	(void)state;
	assert_int_equal(evr_rpt_html_cstr(&sb, "<script>alert('x&y\")</script>"), 0);
	assert_string_equal(sb.buf, "&lt;script&gt;alert(&#39;x&amp;y&quot;)&lt;/script&gt;");
	free(sb.buf);
}

/* Random and truncated bytes: the output is always valid UTF-8, quotes balanced. */
static void test_escape_random_bytes(void **state)
{
	struct evr_strbuf j = { 0 }, h = { 0 };
	unsigned char buf[64];
	uint32_t seed = 12345;

	(void)state;
	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(round % 64);

		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (unsigned char)(seed >> 16);
			if (round & 1)
				buf[i] |= 0x80;	/* mostly multi-byte starts and continuations */
		}
		j.len = h.len = 0;
		assert_int_equal(evr_strbuf_json_string(&j, buf, n), 0);
		assert_int_equal(evr_rpt_html_str(&h, buf, n), 0);
		assert_true(utf8_valid(j.buf, j.len));
		assert_true(utf8_valid(h.buf, h.len));
		assert_true(j.len >= 2 && j.buf[0] == '"' && j.buf[j.len - 1] == '"');
		for (size_t i = 1; i + 1 < j.len; i++) {
			assert_true((unsigned char)j.buf[i] >= 0x20);
			if (j.buf[i] == '\\')
				i++;	/* the escaped character */
			else
				assert_true(j.buf[i] != '"');
		}
		for (size_t i = 0; i < h.len; i++) {
			assert_true((unsigned char)h.buf[i] >= 0x20);
			assert_true(!strchr("<>\"'", h.buf[i]));
		}
	}
	free(j.buf);
	free(h.buf);
}

static void test_map_put_get(void **state)
{
	struct evr_rpt_map m = { 0 };
	static int vals[5000];

	(void)state;
	assert_null(evr_rpt_map_get(&m, 7));
	for (uint32_t i = 0; i < 5000; i++)
		assert_int_equal(evr_rpt_map_put(&m, i * 7919u, &vals[i]), 0);
	for (uint32_t i = 0; i < 5000; i++)
		assert_ptr_equal(evr_rpt_map_get(&m, i * 7919u), &vals[i]);
	assert_null(evr_rpt_map_get(&m, 1));
	assert_int_equal(evr_rpt_map_put(&m, 0, &vals[1]), 0);
	assert_ptr_equal(evr_rpt_map_get(&m, 0), &vals[1]);
	assert_int_equal(m.n, 5000);
	evr_rpt_map_fini(&m);
}


/* evr_rpt_fmt_double() writes what snprintf("%.17g") does, byte for byte. */
static void check_double(double v)
{
	char want[64], got[64];

	snprintf(want, sizeof(want), "%.17g", v);
	evr_rpt_fmt_double(got, v);
	if (strcmp(want, got))
		fail_msg("%a: printf says %s, evr_rpt_fmt_double %s", v, want, got);
}

static void test_fmt_double_as_printf(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	double p10 = 1e-6;

	(void)state;
	for (int i = 0; i < 24; i++, p10 *= 10) {
		/* Around every power of ten the range covers, and its neighbours. */
		check_double(p10);
		check_double(-p10);
		check_double(nextafter(p10, 0));
		check_double(nextafter(p10, INFINITY));
		check_double(p10 * 9.999999999999999);
	}
	for (int i = 0; i < 2000; i++) {
		check_double(i / 1000.0);
		check_double(i * 0.1);
		check_double((double)i);
		check_double(i + 0.5);
	}
	check_double(0.0);
	check_double(-0.0);
	check_double(5e-324);
	check_double(1.7976931348623157e308);
	check_double(9999999999999998.0);
	check_double(9007199254740993.0);
	check_double(0.1 + 0.2);
	/* Random bit patterns (every exponent) and random values of the fast range. */
	for (int i = 0; i < 300000; i++) {
		double v;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(&v, &x, sizeof(v));
		if (isfinite(v))
			check_double(v);
		check_double((double)(x >> 11) / (double)(1ull << (x % 60)));
		check_double((double)(x % 100000000) / 1000.0);
	}
}

/* JSON has no NaN or infinity: null, whatever their sign or payload (printf
 * writes "-nan", which no JSON reader takes); finite values as printf's %.17g. */
static void test_json_double_non_finite(void **state)
{
	const double bad[] = { NAN, -NAN, INFINITY, -INFINITY };
	const double good[] = { 0.0, -0.0, 4.375, -1e300, 5e-324, 0.1 + 0.2 };
	struct evr_strbuf sb = { 0 };
	uint64_t bits = 0x7ff0000000000001ull;	/* a signalling NaN's payload */
	double snan;
	char want[40];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sb.len = 0;
		assert_int_equal(evr_rpt_json_double(&sb, bad[i]), 0);
		assert_int_equal(sb.len, 4);
		assert_memory_equal(sb.buf, "null", 4);
	}
	memcpy(&snan, &bits, sizeof(snan));
	sb.len = 0;
	assert_int_equal(evr_rpt_json_double(&sb, -snan), 0);
	assert_true(sb.len == 4 && !memcmp(sb.buf, "null", 4));
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(want, sizeof(want), "%.17g", good[i]);
		sb.len = 0;
		assert_int_equal(evr_rpt_json_double(&sb, good[i]), 0);
		assert_true(sb.len == strlen(want) && !memcmp(sb.buf, want, sb.len));
	}
	free(sb.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_double_as_printf),
		cmocka_unit_test(test_json_double_non_finite),
		cmocka_unit_test(test_json_str_escapes),
		cmocka_unit_test(test_json_value_big_integers),
		cmocka_unit_test(test_html_str_escapes),
		cmocka_unit_test(test_escape_random_bytes),
		cmocka_unit_test(test_map_put_get),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
