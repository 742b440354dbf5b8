// SPDX-License-Identifier: LGPL-2.1-or-later
/* The TSDL side of evring convert --format ctf: names, string literals, metadata text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convert-ctf-internal.h"

static char *ident(const char *name)
{
	struct evr_strbuf sb = { 0 };

	assert_int_equal(evr_ctf_ident(&sb, name), 0);
	return sb.buf;
}

static void test_evr_ctf_ident_prefixes_and_replaces(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "count", "_count" },		/* babeltrace2 shows "count" */
		{ "event", "_event" },		/* TSDL keywords */
		{ "struct", "_struct" },
		{ "string", "_string" },
		{ "1st", "_1st" },		/* leading digit */
		{ "_x", "__x" },		/* babeltrace2 shows "_x" */
		{ "a-b.c d", "_a_b_c_d" },	/* invalid bytes */
		{ "caf\xc3\xa9", "_caf__" },
		{ "", "_" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = ident(cases[i].in);

		assert_string_equal(s, cases[i].out);
		free(s);
	}
}

static void test_evr_ctf_string_literal_escapes(void **state)
{
	struct evr_strbuf sb = { 0 };

	(void)state;
	assert_int_equal(evr_ctf_string_literal(&sb, "a\"b\\c\nd\te\x01\x7f\xc3\xa9"), 0);
	assert_string_equal(sb.buf, "\"a\\\"b\\\\c\\nd\\te??\xc3\xa9\"");
	free(sb.buf);
}

static void test_evr_ctf_field_names_unique(void **state)
{
	static const struct evr_schema_field fields[] = {
		{ "a-b", EVR_FT_U32 },
		{ "a_b", EVR_FT_U32 },		/* same TSDL name as "a-b" */
		{ "data", EVR_FT_BYTES },
		{ "data_len", EVR_FT_U8 },	/* the name the length of "data" wants */
		{ "data", EVR_FT_STR },		/* a duplicate */
	};
	const struct evr_schema_event ev = {
		.rid = 1, .provider = "P", .name = "E", .nfields = 5, .fields = fields,
	};
	char **names, **lens;

	(void)state;
	assert_int_equal(evr_ctf_field_names(&ev, &names, &lens), 0);
	assert_string_equal(names[0], "_a_b");
	assert_string_equal(names[1], "_a_b_2");
	assert_string_equal(names[2], "_data");
	assert_string_equal(names[3], "_data_len");
	assert_string_equal(names[4], "_data_2");
	assert_null(lens[0]);
	assert_string_equal(lens[2], "_data_len_2");
	assert_null(lens[4]);
	evr_ctf_names_free(names, 5);
	evr_ctf_names_free(lens, 5);
}

static void test_evr_ctf_loglevel_map(void **state)
{
	(void)state;
	assert_int_equal(evr_ctf_loglevel(0), -1);
	assert_int_equal(evr_ctf_loglevel(1), 2);
	assert_int_equal(evr_ctf_loglevel(2), 3);
	assert_int_equal(evr_ctf_loglevel(3), 4);
	assert_int_equal(evr_ctf_loglevel(4), 6);
	assert_int_equal(evr_ctf_loglevel(5), 14);
	assert_int_equal(evr_ctf_loglevel(200), -1);
}

static void test_evr_ctf_metadata_describes_classes(void **state)
{
	static const struct evr_schema_field fields[] = {
		{ "type", EVR_FT_U32 }, { "ok", EVR_FT_BOOL }, { "p", EVR_FT_PTR },
		{ "f", EVR_FT_F32 }, { "d", EVR_FT_F64 }, { "s", EVR_FT_STR },
		{ "j", EVR_FT_JSON }, { "b", EVR_FT_BYTES }, { "i", EVR_FT_I16 },
	};
	const struct evr_schema_event ev = {
		.rid = 7, .provider = "My\"Prov", .name = "Ev", .level = 4, .nfields = 9,
		.fields = fields,
	};
	const struct evr_ctf_class cls = { .rid = 7, .id = 1, .ev = &ev, .rewrite = true };
	const struct evr_trace_session sess = { .nr_rings = 2, .providers = "My\"Prov" };
	struct evr_ctf_meta_in in = {
		.sess = &sess, .classes = &cls, .nclasses = 1, .clock_offset_ns = -1500000000,
	};
	struct evr_strbuf sb = { 0 };

	(void)state;
	memset(in.uuid, 0xab, sizeof(in.uuid));
	assert_int_equal(evr_ctf_metadata(&sb, &in), 0);
	assert_true(!strncmp(sb.buf, "/* CTF 1.8 */\n", 14));
	/* -1.5 s: floor division keeps the nanoseconds part positive. */
	assert_non_null(strstr(sb.buf, "offset_s = -2;\n\toffset = 500000000;\n"));
	assert_non_null(strstr(sb.buf, "freq = 1000000000;"));
	assert_non_null(strstr(sb.buf, "uuid = \"abababab-abab-abab-abab-abababababab\";"));
	assert_non_null(strstr(sb.buf, "name = \"My\\\"Prov:Ev\";\n\tid = 1;"));
	assert_non_null(strstr(sb.buf, "loglevel = 6;"));
	assert_non_null(strstr(sb.buf, "\t\tuint32_t _type;\n\t\tevr_bool_t _ok;\n"
				       "\t\tevr_ptr_t _p;\n\t\tevr_f32_t _f;\n\t\tevr_f64_t _d;\n"
				       "\t\tstring _s;\n\t\tstring _j;\n\t\tuint32_t _b_len;\n"
				       "\t\tuint8_t _b[_b_len];\n\t\tint16_t _i;\n"));
	assert_non_null(strstr(sb.buf, "name = \"" EVR_CTF_UNKNOWN_NAME "\";\n\tid = 0;"));
	assert_non_null(strstr(sb.buf, "uint64_t events_discarded;"));
	assert_non_null(strstr(sb.buf, "tracer_name = \"evring\";"));
	free(sb.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evr_ctf_ident_prefixes_and_replaces),
		cmocka_unit_test(test_evr_ctf_string_literal_escapes),
		cmocka_unit_test(test_evr_ctf_field_names_unique),
		cmocka_unit_test(test_evr_ctf_loglevel_map),
		cmocka_unit_test(test_evr_ctf_metadata_describes_classes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
