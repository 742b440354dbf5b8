// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the provider-spec parser and formatter. Error messages are
 * compared exactly: they are what a user sees when a session fails to start.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evring/provider-spec.h"

/* Never dereferenced: only compared, to prove *ret was left alone. */
static struct evr_provider_spec_list sentinel_list;

static struct evr_provider_spec_list *parse_ok(const char *text)
{
	struct evr_provider_spec_list *l = NULL;
	char err[256] = "not cleared";
	int r;

	r = evr_provider_spec_parse(text, &l, err, sizeof(err));
	if (r != 0)
		print_error("parse of '%s' failed: %d %s\n", text, r, err);
	assert_int_equal(r, 0);
	assert_string_equal(err, "");
	assert_non_null(l);
	return l;
}

static void expect_error(const char *text, const char *msg)
{
	struct evr_provider_spec_list *l = &sentinel_list;
	char err[512];
	int r;

	memset(err, 'x', sizeof(err));
	r = evr_provider_spec_parse(text, &l, err, sizeof(err));
	if (r != -EINVAL)
		print_error("parse of '%s' gave %d\n", text, r);
	assert_int_equal(r, -EINVAL);
	assert_ptr_equal(l, &sentinel_list);
	assert_string_equal(err, msg);
	/* Without an error buffer the result must be the same. */
	assert_int_equal(evr_provider_spec_parse(text, &l, NULL, 0), -EINVAL);
	assert_ptr_equal(l, &sentinel_list);
}

static void assert_spec_equal(const struct evr_provider_spec *a, const struct evr_provider_spec *b)
{
	assert_string_equal(a->name, b->name);
	assert_true(a->keywords == b->keywords);
	assert_int_equal(a->level, b->level);
	assert_int_equal(a->nargs, b->nargs);
	for (size_t i = 0; i < a->nargs; i++) {
		assert_string_equal(a->args[i].key, b->args[i].key);
		assert_string_equal(a->args[i].value, b->args[i].value);
	}
}

static void assert_list_equal(const struct evr_provider_spec_list *a,
			      const struct evr_provider_spec_list *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++)
		assert_spec_equal(&a->v[i], &b->v[i]);
}

/* Formats into a heap buffer sized from a first, measuring call. */
static char *format_alloc(const struct evr_provider_spec_list *l)
{
	int n = evr_provider_spec_list_format(l, NULL, 0);
	char *buf;

	assert_true(n > 0);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(evr_provider_spec_list_format(l, buf, (size_t)n + 1), n);
	assert_int_equal(strlen(buf), n);
	return buf;
}

/* ---- evr_provider_spec_parse: accepted input ---- */

static void test_provider_spec_parse_name_only_uses_defaults(void **state)
{
	struct evr_provider_spec_list *l;

	(void)state;
	l = parse_ok("Microsoft-Windows-DotNETRuntime");
	assert_int_equal(l->n, 1);
	assert_string_equal(l->v[0].name, "Microsoft-Windows-DotNETRuntime");
	assert_true(l->v[0].keywords == EVR_KEYWORDS_ALL);
	assert_int_equal(l->v[0].level, EVR_LEVEL_VERBOSE);
	assert_int_equal(l->v[0].nargs, 0);
	assert_null(l->v[0].args);
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_parse_empty_fields_use_defaults(void **state)
{
	static const char *const texts[] = {"Foo:", "Foo::", "Foo:::"};
	struct evr_provider_spec_list *l;

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		l = parse_ok(texts[i]);
		assert_int_equal(l->n, 1);
		assert_string_equal(l->v[0].name, "Foo");
		assert_true(l->v[0].keywords == EVR_KEYWORDS_ALL);
		assert_int_equal(l->v[0].level, EVR_LEVEL_VERBOSE);
		assert_int_equal(l->v[0].nargs, 0);
		evr_provider_spec_list_free(l);
	}

	l = parse_ok("Foo::2");
	assert_true(l->v[0].keywords == EVR_KEYWORDS_ALL);
	assert_int_equal(l->v[0].level, EVR_LEVEL_ERROR);
	evr_provider_spec_list_free(l);

	l = parse_ok("Foo:0x4");
	assert_true(l->v[0].keywords == 0x4);
	assert_int_equal(l->v[0].level, EVR_LEVEL_VERBOSE);
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_parse_keywords_are_hex(void **state)
{
	static const struct {
		const char *text;
		uint64_t keywords;
	} cases[] = {
		{"A:0x10", 0x10},
		{"A:0X1f", 0x1f},
		{"A:10", 0x10},
		{"A:ff", 0xff},
		{"A:0", 0},
		{"A:0x0", 0},
		{"A:0x4c14fccbd", 0x4c14fccbdull},
		{"A:0xFFFFFFFFFFFFFFFF", UINT64_MAX},
		{"A:ffffffffffffffff", UINT64_MAX},
		{"A:0x8000000000000000", 0x8000000000000000ull},
		/* Leading zeros do not count against the 64 bits. */
		{"A:0x000000000000000000000001", 1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct evr_provider_spec_list *l = parse_ok(cases[i].text);

		assert_true(l->v[0].keywords == cases[i].keywords);
		evr_provider_spec_list_free(l);
	}
}

static void test_provider_spec_parse_level_numbers_and_names(void **state)
{
	static const struct {
		const char *text;
		uint8_t level;
	} cases[] = {
		{"A::0", 0},
		{"A::1", 1},
		{"A::2", 2},
		{"A::3", 3},
		{"A::4", 4},
		{"A::5", 5},
		{"A::05", 5},
		{"A::logalways", EVR_LEVEL_LOGALWAYS},
		{"A::LogAlways", EVR_LEVEL_LOGALWAYS},
		{"A::CRITICAL", EVR_LEVEL_CRITICAL},
		{"A::Error", EVR_LEVEL_ERROR},
		{"A::warning", EVR_LEVEL_WARNING},
		{"A::Informational", EVR_LEVEL_INFO},
		{"A::info", EVR_LEVEL_INFO},
		{"A::INFO", EVR_LEVEL_INFO},
		{"A::Verbose", EVR_LEVEL_VERBOSE},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct evr_provider_spec_list *l = parse_ok(cases[i].text);

		assert_int_equal(l->v[0].level, cases[i].level);
		evr_provider_spec_list_free(l);
	}
}

static void test_provider_spec_parse_trims_space_around_entries(void **state)
{
	struct evr_provider_spec_list *l;

	(void)state;
	l = parse_ok("  Foo:1:2 ,\tBar\n, *  ");
	assert_int_equal(l->n, 3);
	assert_string_equal(l->v[0].name, "Foo");
	assert_true(l->v[0].keywords == 1);
	assert_int_equal(l->v[0].level, 2);
	assert_string_equal(l->v[1].name, "Bar");
	assert_string_equal(l->v[2].name, "*");
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_parse_args_keep_order(void **state)
{
	struct evr_provider_spec_list *l;
	const struct evr_provider_spec *s;

	(void)state;
	l = parse_ok("System.Runtime:0:1:EventCounterIntervalSec=1;b=two;a=");
	s = &l->v[0];
	assert_true(s->keywords == 0);
	assert_int_equal(s->level, EVR_LEVEL_CRITICAL);
	assert_int_equal(s->nargs, 3);
	assert_string_equal(s->args[0].key, "EventCounterIntervalSec");
	assert_string_equal(s->args[0].value, "1");
	assert_string_equal(s->args[1].key, "b");
	assert_string_equal(s->args[1].value, "two");
	assert_string_equal(s->args[2].key, "a");
	assert_string_equal(s->args[2].value, "");
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_parse_empty_args_field_means_none(void **state)
{
	struct evr_provider_spec_list *l;

	(void)state;
	l = parse_ok("Foo:1:2:");
	assert_int_equal(l->v[0].nargs, 0);
	assert_null(l->v[0].args);
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_parse_quoted_values_lose_quotes(void **state)
{
	struct evr_provider_spec_list *l;
	const struct evr_provider_spec *s;

	(void)state;
	l = parse_ok(
		"A:1:4:FilterAndPayloadSpecs=\"P/E:-A;B\";sep=\",\";eq=\"a=b\";e=\"\";sp=\" x \"");
	s = &l->v[0];
	assert_int_equal(s->nargs, 5);
	assert_string_equal(evr_provider_spec_arg(s, "FilterAndPayloadSpecs"), "P/E:-A;B");
	assert_string_equal(evr_provider_spec_arg(s, "sep"), ",");
	assert_string_equal(evr_provider_spec_arg(s, "eq"), "a=b");
	assert_string_equal(evr_provider_spec_arg(s, "e"), "");
	assert_string_equal(evr_provider_spec_arg(s, "sp"), " x ");
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_parse_comma_in_quotes_does_not_split(void **state)
{
	struct evr_provider_spec_list *l;

	(void)state;
	l = parse_ok("A::5:f=\"x,y\",B,C::1:g=\"1,2,3\"");
	assert_int_equal(l->n, 3);
	assert_string_equal(l->v[0].name, "A");
	assert_string_equal(evr_provider_spec_arg(&l->v[0], "f"), "x,y");
	assert_string_equal(l->v[1].name, "B");
	assert_string_equal(l->v[2].name, "C");
	assert_string_equal(evr_provider_spec_arg(&l->v[2], "g"), "1,2,3");
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_parse_bare_colon_and_equals_stay_in_value(void **state)
{
	struct evr_provider_spec_list *l;

	(void)state;
	/* Only the first three colons split fields, and only the first '=' a pair. */
	l = parse_ok("A:1:4:url=http://h:80/?a=b;x=y");
	assert_int_equal(l->v[0].nargs, 2);
	assert_string_equal(evr_provider_spec_arg(&l->v[0], "url"), "http://h:80/?a=b");
	assert_string_equal(evr_provider_spec_arg(&l->v[0], "x"), "y");
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_parse_names_are_case_sensitive(void **state)
{
	struct evr_provider_spec_list *l;

	(void)state;
	l = parse_ok("Foo,foo,FOO");
	assert_int_equal(l->n, 3);
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_parse_many_providers(void **state)
{
	enum { N = 5000 };
	struct evr_provider_spec_list *l;
	char *text, *p;
	char name[32];

	(void)state;
	text = malloc(N * 24);
	assert_non_null(text);
	p = text;
	for (int i = 0; i < N; i++)
		p += sprintf(p, "%sP%d:%x:%d", i ? "," : "", i, (unsigned int)i, i % 6);
	l = parse_ok(text);
	assert_int_equal(l->n, N);
	for (int i = 0; i < N; i++) {
		(void)snprintf(name, sizeof(name), "P%d", i);
		assert_string_equal(l->v[i].name, name);
		assert_true(l->v[i].keywords == (uint64_t)i);
		assert_int_equal(l->v[i].level, i % 6);
	}
	assert_ptr_equal(evr_provider_spec_list_find(l, "P4321"), &l->v[4321]);
	evr_provider_spec_list_free(l);
	free(text);
}

static void test_provider_spec_parse_clears_errbuf_on_success(void **state)
{
	struct evr_provider_spec_list *l = NULL;
	char err[16] = "stale";

	(void)state;
	assert_int_equal(evr_provider_spec_parse("A", &l, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	evr_provider_spec_list_free(l);
	/* No error buffer at all is fine too. */
	assert_int_equal(evr_provider_spec_parse("A", &l, NULL, 0), 0);
	evr_provider_spec_list_free(l);
}

/* ---- evr_provider_spec_parse: rejected input, one case per error kind ---- */

static void test_provider_spec_parse_null_arguments_fail(void **state)
{
	struct evr_provider_spec_list *l = &sentinel_list;
	char err[64];

	(void)state;
	assert_int_equal(evr_provider_spec_parse(NULL, &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "no provider list or result pointer given");
	assert_ptr_equal(l, &sentinel_list);
	assert_int_equal(evr_provider_spec_parse("A", NULL, err, sizeof(err)), -EINVAL);
}

static void test_provider_spec_parse_empty_list_fails(void **state)
{
	(void)state;
	expect_error("", "provider list is empty");
	expect_error("  \t ", "provider list is empty");
}

static void test_provider_spec_parse_empty_entry_fails(void **state)
{
	(void)state;
	expect_error("A,,B", "provider 2 \"\": empty entry");
	expect_error("A,", "provider 2 \"\": empty entry");
	expect_error("A, ", "provider 2 \"\": empty entry");
	expect_error(",A", "provider 1 \"\": empty entry");
	expect_error(" , A", "provider 1 \"\": empty entry");
}

static void test_provider_spec_parse_unterminated_quote_fails(void **state)
{
	(void)state;
	expect_error("A:1:4:k=\"x", "provider 1 \"A:1:4:k=\"x\": unterminated quote");
	/* The open quote swallows the comma, so the rest is part of provider 2. */
	expect_error("B,A:1:4:k=\"x,C", "provider 2 \"A:1:4:k=\"x,C\": unterminated quote");
	expect_error("A\"", "provider 1 \"A\"\": unterminated quote");
}

static void test_provider_spec_parse_empty_name_fails(void **state)
{
	(void)state;
	expect_error(":1", "provider 1 \":1\": name is empty");
	expect_error("A,:", "provider 2 \":\": name is empty");
}

static void test_provider_spec_parse_name_with_whitespace_fails(void **state)
{
	(void)state;
	expect_error("Fo o:1", "provider 1 \"Fo o:1\": name \"Fo o\" contains whitespace");
	/* A control character in the text is shown as '?' to keep one line. */
	expect_error("Fo\no", "provider 1 \"Fo?o\": name \"Fo?o\" contains whitespace");
}

static void test_provider_spec_parse_name_with_quote_fails(void **state)
{
	(void)state;
	expect_error("\"Foo\":1", "provider 1 \"\"Foo\":1\": name \"\"Foo\"\" contains a quote");
}

static void test_provider_spec_parse_bad_keywords_fails(void **state)
{
	(void)state;
	expect_error("Bar,Foo:0xZZ",
		     "provider 2 \"Foo:0xZZ\": keywords \"0xZZ\" is not a hexadecimal number");
	expect_error("Foo:0x",
		     "provider 1 \"Foo:0x\": keywords \"0x\" is not a hexadecimal number");
	expect_error("Foo:-1",
		     "provider 1 \"Foo:-1\": keywords \"-1\" is not a hexadecimal number");
	expect_error("Foo: 1",
		     "provider 1 \"Foo: 1\": keywords \" 1\" is not a hexadecimal number");
	expect_error("Foo:1g",
		     "provider 1 \"Foo:1g\": keywords \"1g\" is not a hexadecimal number");
	expect_error("Foo:0x0x1",
		     "provider 1 \"Foo:0x0x1\": keywords \"0x0x1\" is not a hexadecimal number");
	/* Bad characters are reported as such even when the number is also too long. */
	expect_error(
		"Foo:0x1234567890abcdef12z",
		"provider 1 \"Foo:0x1234567890abcdef12z\": keywords \"0x1234567890abcdef12z\" is not a hexadecimal number");
}

static void test_provider_spec_parse_keywords_over_64_bits_fails(void **state)
{
	(void)state;
	expect_error(
		"Foo:0x10000000000000000",
		"provider 1 \"Foo:0x10000000000000000\": keywords \"0x10000000000000000\" does not fit in 64 bits");
	expect_error(
		"Foo:1ffffffffffffffff",
		"provider 1 \"Foo:1ffffffffffffffff\": keywords \"1ffffffffffffffff\" does not fit in 64 bits");
}

/* The tail every level error ends with, spelled out once in full below. */
#define LEVEL_HINT                    \
	"is not 0-5 or a level name " \
	"(logalways, critical, error, warning, informational, verbose)"

static void test_provider_spec_parse_bad_level_fails(void **state)
{
	(void)state;
	expect_error("Foo:1:9", "provider 1 \"Foo:1:9\": level \"9\" is not 0-5 or a level name "
				"(logalways, critical, error, warning, informational, verbose)");
	expect_error("Foo:1:6", "provider 1 \"Foo:1:6\": level \"6\" " LEVEL_HINT);
	expect_error("Foo:1:debug", "provider 1 \"Foo:1:debug\": level \"debug\" " LEVEL_HINT);
	expect_error("Foo:1:-1", "provider 1 \"Foo:1:-1\": level \"-1\" " LEVEL_HINT);
	expect_error("Foo:1:infos", "provider 1 \"Foo:1:infos\": level \"infos\" " LEVEL_HINT);
	expect_error("Foo:1: 1", "provider 1 \"Foo:1: 1\": level \" 1\" " LEVEL_HINT);
	/* Long enough to wrap a naive accumulator back into 0-5. */
	expect_error("Foo:1:4294967296",
		     "provider 1 \"Foo:1:4294967296\": level \"4294967296\" " LEVEL_HINT);
}

static void test_provider_spec_parse_empty_argument_fails(void **state)
{
	(void)state;
	expect_error("Foo:1:5:;", "provider 1 \"Foo:1:5:;\": argument 1 is empty");
	expect_error("Foo:1:5:a=1;", "provider 1 \"Foo:1:5:a=1;\": argument 2 is empty");
	expect_error("Foo:1:5:a=1;;b=2", "provider 1 \"Foo:1:5:a=1;;b=2\": argument 2 is empty");
}

static void test_provider_spec_parse_argument_without_equals_fails(void **state)
{
	(void)state;
	expect_error("Foo:1:5:a",
		     "provider 1 \"Foo:1:5:a\": argument 1 \"a\": no '=' between key and value");
	expect_error(
		"Foo:1:5:a=1;b",
		"provider 1 \"Foo:1:5:a=1;b\": argument 2 \"b\": no '=' between key and value");
}

static void test_provider_spec_parse_empty_key_fails(void **state)
{
	(void)state;
	expect_error("Foo:1:5:=v", "provider 1 \"Foo:1:5:=v\": argument 1 \"=v\": key is empty");
}

static void test_provider_spec_parse_key_with_whitespace_fails(void **state)
{
	(void)state;
	expect_error(
		"Foo:1:5:a b=1",
		"provider 1 \"Foo:1:5:a b=1\": argument 1 \"a b=1\": key \"a b\" contains whitespace");
	expect_error(
		"Foo:1:5:a=1; b=2",
		"provider 1 \"Foo:1:5:a=1; b=2\": argument 2 \" b=2\": key \" b\" contains whitespace");
}

static void test_provider_spec_parse_key_with_quote_fails(void **state)
{
	(void)state;
	expect_error(
		"Foo:1:5:\"a\"=1",
		"provider 1 \"Foo:1:5:\"a\"=1\": argument 1 \"\"a\"=1\": key \"\"a\"\" contains a quote");
}

static void test_provider_spec_parse_partly_quoted_value_fails(void **state)
{
	(void)state;
	expect_error(
		"Foo:1:5:a=x\"y\"",
		"provider 1 \"Foo:1:5:a=x\"y\"\": argument 1 \"a=x\"y\"\": a quote must enclose the whole value");
	expect_error(
		"Foo:1:5:a=\"x\"y",
		"provider 1 \"Foo:1:5:a=\"x\"y\": argument 1 \"a=\"x\"y\": a quote must enclose the whole value");
	expect_error(
		"Foo:1:5:a=\"x\"\"y\"",
		"provider 1 \"Foo:1:5:a=\"x\"\"y\"\": argument 1 \"a=\"x\"\"y\"\": a quote must enclose the whole value");
}

static void test_provider_spec_parse_repeated_key_fails(void **state)
{
	(void)state;
	expect_error(
		"Foo:1:5:a=1;b=2;a=3",
		"provider 1 \"Foo:1:5:a=1;b=2;a=3\": argument 3 \"a=3\": key \"a\" already given in argument 1");
}

static void test_provider_spec_parse_repeated_provider_fails(void **state)
{
	(void)state;
	expect_error("Foo,Bar,Foo", "provider 3 \"Foo\": listed twice (first as provider 1)");
	expect_error("Foo:1,Foo:2:3", "provider 2 \"Foo:2:3\": listed twice (first as provider 1)");
	expect_error("*,A,*", "provider 3 \"*\": listed twice (first as provider 1)");
}

static void test_provider_spec_parse_repeated_provider_in_long_list_fails(void **state)
{
	enum { N = 300 };
	char *text, *p;

	(void)state;
	text = malloc(N * 8 + 16);
	assert_non_null(text);
	p = text;
	for (int i = 0; i < N; i++)
		p += sprintf(p, "%sP%d", i ? "," : "", i);
	strcpy(p, ",P150,P7");
	expect_error(text, "provider 301 \"P150\": listed twice (first as provider 151)");
	free(text);
}

static void test_provider_spec_parse_reports_first_bad_provider(void **state)
{
	(void)state;
	expect_error("A:zz,B:1:9",
		     "provider 1 \"A:zz\": keywords \"zz\" is not a hexadecimal number");
	expect_error("A,A,B:1:9", "provider 2 \"A\": listed twice (first as provider 1)");
}

static void test_provider_spec_parse_truncates_long_error(void **state)
{
	struct evr_provider_spec_list *l = &sentinel_list;
	char err[12];

	(void)state;
	memset(err, 'x', sizeof(err));
	assert_int_equal(evr_provider_spec_parse("Foo:1:9", &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "provider 1 ");
	assert_ptr_equal(l, &sentinel_list);
}

/* ---- evr_provider_spec_arg ---- */

static void test_provider_spec_arg_absent_returns_null(void **state)
{
	struct evr_provider_spec_list *l;

	(void)state;
	l = parse_ok("A:1:1:k=v,B");
	assert_string_equal(evr_provider_spec_arg(&l->v[0], "k"), "v");
	assert_null(evr_provider_spec_arg(&l->v[0], "K"));
	assert_null(evr_provider_spec_arg(&l->v[0], "missing"));
	assert_null(evr_provider_spec_arg(&l->v[1], "k"));
	assert_null(evr_provider_spec_arg(&l->v[0], NULL));
	assert_null(evr_provider_spec_arg(NULL, "k"));
	evr_provider_spec_list_free(l);
}

/* ---- evr_provider_spec_list_find ---- */

static void test_provider_spec_list_find_exact_wins_over_star(void **state)
{
	struct evr_provider_spec_list *l;

	(void)state;
	/* Order in the list must not matter. */
	l = parse_ok("*:0x1:1,Foo:0x2:2");
	assert_ptr_equal(evr_provider_spec_list_find(l, "Foo"), &l->v[1]);
	assert_ptr_equal(evr_provider_spec_list_find(l, "Bar"), &l->v[0]);
	assert_ptr_equal(evr_provider_spec_list_find(l, "foo"), &l->v[0]);
	evr_provider_spec_list_free(l);

	l = parse_ok("Foo:0x2:2,*:0x1:1");
	assert_ptr_equal(evr_provider_spec_list_find(l, "Foo"), &l->v[0]);
	assert_ptr_equal(evr_provider_spec_list_find(l, "Bar"), &l->v[1]);
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_list_find_without_star_returns_null(void **state)
{
	struct evr_provider_spec_list *l;

	(void)state;
	l = parse_ok("Foo,Bar");
	assert_ptr_equal(evr_provider_spec_list_find(l, "Bar"), &l->v[1]);
	assert_null(evr_provider_spec_list_find(l, "foo"));
	assert_null(evr_provider_spec_list_find(l, "Baz"));
	assert_null(evr_provider_spec_list_find(l, ""));
	assert_null(evr_provider_spec_list_find(l, NULL));
	assert_null(evr_provider_spec_list_find(NULL, "Foo"));
	evr_provider_spec_list_free(l);
}

/* ---- evr_provider_spec_list_format ---- */

static void test_provider_spec_list_format_is_canonical(void **state)
{
	struct evr_provider_spec_list *l;
	char buf[256];
	const char *want = "Foo:0xffffffffffffffff:5,Bar:0x1f:4:b=2;a=\"x;y\","
			   "*:0x0:0:e=;s=\"a b\";c=\"a,b\";k=\"c:d\";q=\"k=v\"";

	(void)state;
	l = parse_ok(
		" Foo , Bar:0X1F:info:b=2;a=\"x;y\",*:0:LogAlways:e=\"\";s=\"a b\";c=\"a,b\";k=c:d;q=\"k=v\"");
	assert_int_equal(evr_provider_spec_list_format(l, buf, sizeof(buf)), strlen(want));
	assert_string_equal(buf, want);
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_list_format_round_trips(void **state)
{
	static const char *const texts[] = {
		"A",
		"A:0:0",
		"A:ffffffffffffffff:verbose,B::1,C:0x8000000000000000:2:x=1",
		"System.Runtime:0:1:EventCounterIntervalSec=1",
		"Microsoft-Diagnostics-DiagnosticSource:0x3:5:FilterAndPayloadSpecs=\"P/E:-A;B\"",
		"A::5:f=\"x,y\",B,C::1:g=\"1,2,3\";h=\" lead and trail \";i=;j=\"=\"",
		"*:0x10:warning:url=http://h:80/?a=b",
	};
	struct evr_provider_spec_list *a, *b;
	char *t1, *t2;

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		a = parse_ok(texts[i]);
		t1 = format_alloc(a);
		b = parse_ok(t1);
		assert_list_equal(a, b);
		t2 = format_alloc(b);
		assert_string_equal(t1, t2);
		free(t2);
		free(t1);
		evr_provider_spec_list_free(b);
		evr_provider_spec_list_free(a);
	}
}

static void test_provider_spec_list_format_hand_built_list_round_trips(void **state)
{
	struct evr_provider_arg args[] = {
		{.key = "tabs", .value = "\tx\t"},
		{.key = "plain", .value = "abc"},
		{.key = "semi", .value = ";"},
	};
	struct evr_provider_spec specs[] = {
		{.name = "Hand", .keywords = 0x42, .level = 3, .nargs = 3, .args = args},
	};
	struct evr_provider_spec_list l = {.n = 1, .v = specs};
	struct evr_provider_spec_list *back;
	char *text;

	(void)state;
	text = format_alloc(&l);
	assert_string_equal(text, "Hand:0x42:3:tabs=\"\tx\t\";plain=abc;semi=\";\"");
	back = parse_ok(text);
	assert_list_equal(&l, back);
	evr_provider_spec_list_free(back);
	free(text);
}

static void test_provider_spec_list_format_truncates_like_snprintf(void **state)
{
	struct evr_provider_spec_list *l;
	char buf[8];
	int n;

	(void)state;
	l = parse_ok("Foo:1:2");
	n = evr_provider_spec_list_format(l, NULL, 0);
	assert_int_equal(n, strlen("Foo:0x1:2"));

	memset(buf, 'x', sizeof(buf));
	assert_int_equal(evr_provider_spec_list_format(l, buf, sizeof(buf)), n);
	assert_string_equal(buf, "Foo:0x1");

	memset(buf, 'x', sizeof(buf));
	assert_int_equal(evr_provider_spec_list_format(l, buf, 1), n);
	assert_int_equal(buf[0], '\0');
	assert_int_equal(buf[1], 'x');
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_list_format_unparseable_list_fails(void **state)
{
	struct evr_provider_arg good_arg = {.key = "k", .value = "v"};
	struct evr_provider_arg bad_args[][2] = {
		{{.key = "", .value = "v"}},
		{{.key = "a=b", .value = "v"}},
		{{.key = "a;b", .value = "v"}},
		{{.key = "a,b", .value = "v"}},
		{{.key = "a b", .value = "v"}},
		{{.key = "a\"", .value = "v"}},
		{{.key = NULL, .value = "v"}},
		{{.key = "k", .value = NULL}},
		{{.key = "k", .value = "say \"hi\""}},
		{{.key = "k", .value = "1"}, {.key = "k", .value = "2"}},
	};
	static const char *const bad_names[] = {"", "a b", "a:b", "a,b", "a\"b"};
	struct evr_provider_spec s[2] = {
		{.name = "A", .keywords = 1, .level = 5},
		{.name = "B", .keywords = 1, .level = 5},
	};
	struct evr_provider_spec_list l = {.n = 2, .v = s};
	char buf[64];

	(void)state;
	/* The baseline is valid, so each failure below is due to the one change. */
	assert_int_equal(evr_provider_spec_list_format(&l, buf, sizeof(buf)),
			 strlen("A:0x1:5,B:0x1:5"));

	strcpy(buf, "untouched");
	assert_int_equal(evr_provider_spec_list_format(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(evr_provider_spec_list_format(&l, NULL, 4), -EINVAL);

	l.n = 0;
	assert_int_equal(evr_provider_spec_list_format(&l, buf, sizeof(buf)), -EINVAL);
	l.n = 2;

	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		s[1].name = (char *)bad_names[i];
		assert_int_equal(evr_provider_spec_list_format(&l, buf, sizeof(buf)), -EINVAL);
	}
	s[1].name = NULL;
	assert_int_equal(evr_provider_spec_list_format(&l, buf, sizeof(buf)), -EINVAL);
	s[1].name = "A";
	assert_int_equal(evr_provider_spec_list_format(&l, buf, sizeof(buf)), -EINVAL);
	s[1].name = "B";

	s[1].level = 6;
	assert_int_equal(evr_provider_spec_list_format(&l, buf, sizeof(buf)), -EINVAL);
	s[1].level = 5;

	s[1].nargs = 1;
	assert_int_equal(evr_provider_spec_list_format(&l, buf, sizeof(buf)), -EINVAL);
	s[1].args = &good_arg;
	assert_int_equal(evr_provider_spec_list_format(&l, buf, sizeof(buf)),
			 strlen("A:0x1:5,B:0x1:5:k=v"));
	for (size_t i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++) {
		s[1].args = bad_args[i];
		s[1].nargs = bad_args[i][1].key ? 2 : 1;
		strcpy(buf, "untouched");
		assert_int_equal(evr_provider_spec_list_format(&l, buf, sizeof(buf)), -EINVAL);
		assert_string_equal(buf, "untouched");
	}
}

/* ---- evr_level_parse / evr_level_name ---- */

static void test_level_parse_rejects_garbage(void **state)
{
	static const char *const bad[] = {
		"",   "6",   "10",    "-1",	  "+1",	   " 1",  "1 ",
		"1x", "inf", "infos", "verbose ", "debug", "0x1",
	};
	uint8_t level = 77;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(evr_level_parse(bad[i], &level), -EINVAL);
		assert_int_equal(level, 77);
	}
	assert_int_equal(evr_level_parse(NULL, &level), -EINVAL);
	assert_int_equal(evr_level_parse("1", NULL), -EINVAL);
}

static void test_level_name_round_trips(void **state)
{
	static const char *const names[] = {
		"logalways", "critical", "error", "warning", "informational", "verbose",
	};
	uint8_t level;
	char digit[2] = "0";

	(void)state;
	for (uint8_t i = 0; i <= EVR_LEVEL_VERBOSE; i++) {
		assert_string_equal(evr_level_name(i), names[i]);
		level = 99;
		assert_int_equal(evr_level_parse(evr_level_name(i), &level), 0);
		assert_int_equal(level, i);
		digit[0] = (char)('0' + i);
		level = 99;
		assert_int_equal(evr_level_parse(digit, &level), 0);
		assert_int_equal(level, i);
	}
	assert_null(evr_level_name(6));
	assert_null(evr_level_name(255));
}

static void test_provider_spec_list_free_accepts_null(void **state)
{
	(void)state;
	evr_provider_spec_list_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_provider_spec_parse_name_only_uses_defaults),
		cmocka_unit_test(test_provider_spec_parse_empty_fields_use_defaults),
		cmocka_unit_test(test_provider_spec_parse_keywords_are_hex),
		cmocka_unit_test(test_provider_spec_parse_level_numbers_and_names),
		cmocka_unit_test(test_provider_spec_parse_trims_space_around_entries),
		cmocka_unit_test(test_provider_spec_parse_args_keep_order),
		cmocka_unit_test(test_provider_spec_parse_empty_args_field_means_none),
		cmocka_unit_test(test_provider_spec_parse_quoted_values_lose_quotes),
		cmocka_unit_test(test_provider_spec_parse_comma_in_quotes_does_not_split),
		cmocka_unit_test(test_provider_spec_parse_bare_colon_and_equals_stay_in_value),
		cmocka_unit_test(test_provider_spec_parse_names_are_case_sensitive),
		cmocka_unit_test(test_provider_spec_parse_many_providers),
		cmocka_unit_test(test_provider_spec_parse_clears_errbuf_on_success),
		cmocka_unit_test(test_provider_spec_parse_null_arguments_fail),
		cmocka_unit_test(test_provider_spec_parse_empty_list_fails),
		cmocka_unit_test(test_provider_spec_parse_empty_entry_fails),
		cmocka_unit_test(test_provider_spec_parse_unterminated_quote_fails),
		cmocka_unit_test(test_provider_spec_parse_empty_name_fails),
		cmocka_unit_test(test_provider_spec_parse_name_with_whitespace_fails),
		cmocka_unit_test(test_provider_spec_parse_name_with_quote_fails),
		cmocka_unit_test(test_provider_spec_parse_bad_keywords_fails),
		cmocka_unit_test(test_provider_spec_parse_keywords_over_64_bits_fails),
		cmocka_unit_test(test_provider_spec_parse_bad_level_fails),
		cmocka_unit_test(test_provider_spec_parse_empty_argument_fails),
		cmocka_unit_test(test_provider_spec_parse_argument_without_equals_fails),
		cmocka_unit_test(test_provider_spec_parse_empty_key_fails),
		cmocka_unit_test(test_provider_spec_parse_key_with_whitespace_fails),
		cmocka_unit_test(test_provider_spec_parse_key_with_quote_fails),
		cmocka_unit_test(test_provider_spec_parse_partly_quoted_value_fails),
		cmocka_unit_test(test_provider_spec_parse_repeated_key_fails),
		cmocka_unit_test(test_provider_spec_parse_repeated_provider_fails),
		cmocka_unit_test(test_provider_spec_parse_repeated_provider_in_long_list_fails),
		cmocka_unit_test(test_provider_spec_parse_reports_first_bad_provider),
		cmocka_unit_test(test_provider_spec_parse_truncates_long_error),
		cmocka_unit_test(test_provider_spec_arg_absent_returns_null),
		cmocka_unit_test(test_provider_spec_list_find_exact_wins_over_star),
		cmocka_unit_test(test_provider_spec_list_find_without_star_returns_null),
		cmocka_unit_test(test_provider_spec_list_format_is_canonical),
		cmocka_unit_test(test_provider_spec_list_format_round_trips),
		cmocka_unit_test(test_provider_spec_list_format_hand_built_list_round_trips),
		cmocka_unit_test(test_provider_spec_list_format_truncates_like_snprintf),
		cmocka_unit_test(test_provider_spec_list_format_unparseable_list_fails),
		cmocka_unit_test(test_level_parse_rejects_garbage),
		cmocka_unit_test(test_level_name_round_trips),
		cmocka_unit_test(test_provider_spec_list_free_accepts_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
