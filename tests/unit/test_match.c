// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for EventPipe keyword/level matching. The expected results are
 * written out as literal tables rather than recomputed, so a wrong formula
 * in the header cannot agree with itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "evring/provider-spec.h"

#define NLEVELS (EVR_LEVEL_VERBOSE + 1)

/* level_table[session][event]: LogAlways events always pass, others need session >= event. */
/* clang-format off */
static const bool level_table[NLEVELS][NLEVELS] = {
	/*            event: 0     1      2      3      4      5 */
	/* session 0 */ { true, false, false, false, false, false },
	/* session 1 */ { true, true,  false, false, false, false },
	/* session 2 */ { true, true,  true,  false, false, false },
	/* session 3 */ { true, true,  true,  true,  false, false },
	/* session 4 */ { true, true,  true,  true,  true,  false },
	/* session 5 */ { true, true,  true,  true,  true,  true  },
};
/* clang-format on */

#define KW_EVENT 0x00f0ull /* the event's keywords */
#define KW_DISJOINT 0x0f00ull /* shares no bit with KW_EVENT */
#define KW_OVERLAP 0x0030ull /* shares bits 4-5 with KW_EVENT */

static const struct {
	uint64_t session;
	uint64_t event;
	bool match;
} keyword_table[] = {
	/* An event without keywords is wanted by every session. */
	{0, 0, true},
	{KW_DISJOINT, 0, true},
	{KW_OVERLAP, 0, true},
	{EVR_KEYWORDS_ALL, 0, true},
	/* Otherwise at least one bit must be shared. */
	{0, KW_EVENT, false},
	{KW_DISJOINT, KW_EVENT, false},
	{KW_OVERLAP, KW_EVENT, true},
	{EVR_KEYWORDS_ALL, KW_EVENT, true},
	{0, EVR_KEYWORDS_ALL, false},
	{KW_DISJOINT, EVR_KEYWORDS_ALL, true},
	{KW_OVERLAP, EVR_KEYWORDS_ALL, true},
	{EVR_KEYWORDS_ALL, EVR_KEYWORDS_ALL, true},
	/* The top bit counts like any other. */
	{1ull << 63, 1ull << 63, true},
	{1ull << 63, 1, false},
	{1, 1ull << 63, false},
	{1ull << 63, EVR_KEYWORDS_ALL, true},
};

#define NKEYWORD_CASES (sizeof(keyword_table) / sizeof(keyword_table[0]))

static void test_level_match_table(void **state)
{
	(void)state;
	for (unsigned int s = 0; s < NLEVELS; s++) {
		for (unsigned int e = 0; e < NLEVELS; e++) {
			if (evr_level_match((uint8_t)s, (uint8_t)e) != level_table[s][e])
				print_error("session level %u, event level %u\n", s, e);
			assert_true(evr_level_match((uint8_t)s, (uint8_t)e) == level_table[s][e]);
		}
	}
}

static void test_level_match_event_above_verbose(void **state)
{
	(void)state;
	/* Levels past Verbose are not valid for events, but must not wrap to "always". */
	assert_false(evr_level_match(EVR_LEVEL_VERBOSE, 6));
	assert_false(evr_level_match(EVR_LEVEL_VERBOSE, 255));
	assert_true(evr_level_match(255, 255));
	assert_true(evr_level_match(255, EVR_LEVEL_VERBOSE));
}

static void test_keywords_match_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < NKEYWORD_CASES; i++) {
		bool got = evr_keywords_match(keyword_table[i].session, keyword_table[i].event);

		if (got != keyword_table[i].match)
			print_error("row %zu: session 0x%llx event 0x%llx\n", i,
				    (unsigned long long)keyword_table[i].session,
				    (unsigned long long)keyword_table[i].event);
		assert_true(got == keyword_table[i].match);
	}
}

static void test_keywords_match_single_bits(void **state)
{
	(void)state;
	/* Every pair of single bits: a match exactly when they are the same bit. */
	for (unsigned int a = 0; a < 64; a++) {
		for (unsigned int b = 0; b < 64; b++)
			assert_true(evr_keywords_match(1ull << a, 1ull << b) == (a == b));
	}
}

/*
 * Every combination of session level, event level and keyword row, for a
 * spec naming the provider exactly, a spec for "*" and a spec for another
 * provider: the result is the conjunction of the name and the two tables.
 */
static void test_provider_spec_match_all_combinations(void **state)
{
	static const struct {
		const char *spec_name;
		bool name_matches;
	} names[] = {
		{"Foo", true},	{"*", true},   {"Bar", false},
		{"foo", false}, {"Fo", false}, {"Foo2", false},
	};
	struct evr_provider_spec spec = {0};

	(void)state;
	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		spec.name = (char *)names[n].spec_name;
		for (size_t k = 0; k < NKEYWORD_CASES; k++) {
			spec.keywords = keyword_table[k].session;
			for (unsigned int s = 0; s < NLEVELS; s++) {
				spec.level = (uint8_t)s;
				for (unsigned int e = 0; e < NLEVELS; e++) {
					bool want = names[n].name_matches &&
						    keyword_table[k].match && level_table[s][e];
					bool got = evr_provider_spec_match(
						&spec, "Foo", keyword_table[k].event, (uint8_t)e);

					if (got != want)
						print_error("spec %s row %zu levels %u/%u\n",
							    names[n].spec_name, k, s, e);
					assert_true(got == want);
				}
			}
		}
	}
}

static void test_provider_spec_match_star_matches_any_name(void **state)
{
	struct evr_provider_spec spec = {
		.name = "*",
		.keywords = EVR_KEYWORDS_ALL,
		.level = EVR_LEVEL_VERBOSE,
	};

	(void)state;
	assert_true(evr_provider_spec_match(&spec, "Foo", 1, EVR_LEVEL_INFO));
	assert_true(evr_provider_spec_match(&spec, "", 1, EVR_LEVEL_INFO));
	assert_true(evr_provider_spec_match(&spec, "*", 1, EVR_LEVEL_INFO));
	/* The wildcard lives in the spec: a provider that calls itself "*" is no wildcard. */
	spec.name = "Foo";
	assert_false(evr_provider_spec_match(&spec, "*", 1, EVR_LEVEL_INFO));
}

static void test_provider_spec_match_null_is_false(void **state)
{
	struct evr_provider_spec spec = {
		.name = "*",
		.keywords = EVR_KEYWORDS_ALL,
		.level = EVR_LEVEL_VERBOSE,
	};

	(void)state;
	assert_false(evr_provider_spec_match(NULL, "Foo", 0, 0));
	assert_false(evr_provider_spec_match(&spec, NULL, 0, 0));
	spec.name = NULL;
	assert_false(evr_provider_spec_match(&spec, "Foo", 0, 0));
}

/*
 * The way a session uses a list: find the entry for the provider, then match
 * against that entry only. The exact entry's narrower keywords and level must
 * win even where the "*" entry would have let the event through.
 */
static void test_provider_spec_match_through_parsed_list(void **state)
{
	struct evr_provider_spec_list *l = NULL;
	const struct evr_provider_spec *s;

	(void)state;
	assert_int_equal(evr_provider_spec_parse("*:0x1:error,Foo:0x2:5,Quiet:0:0", &l, NULL, 0),
			 0);

	s = evr_provider_spec_list_find(l, "Foo");
	assert_ptr_equal(s, &l->v[1]);
	assert_true(evr_provider_spec_match(s, "Foo", 0x2, EVR_LEVEL_VERBOSE));
	assert_false(evr_provider_spec_match(s, "Foo", 0x1, EVR_LEVEL_CRITICAL));
	assert_true(evr_provider_spec_match(s, "Foo", 0, EVR_LEVEL_VERBOSE));

	s = evr_provider_spec_list_find(l, "Bar");
	assert_ptr_equal(s, &l->v[0]);
	assert_true(evr_provider_spec_match(s, "Bar", 0x1, EVR_LEVEL_ERROR));
	assert_true(evr_provider_spec_match(s, "Bar", 0x3, EVR_LEVEL_CRITICAL));
	assert_false(evr_provider_spec_match(s, "Bar", 0x1, EVR_LEVEL_WARNING));
	assert_false(evr_provider_spec_match(s, "Bar", 0x2, EVR_LEVEL_ERROR));
	assert_true(evr_provider_spec_match(s, "Bar", 0x2, EVR_LEVEL_ERROR) ==
		    evr_keywords_match(0x1, 0x2));

	/* Keywords 0 and LogAlways: only keyword-less LogAlways events get through. */
	s = evr_provider_spec_list_find(l, "Quiet");
	assert_ptr_equal(s, &l->v[2]);
	assert_true(evr_provider_spec_match(s, "Quiet", 0, EVR_LEVEL_LOGALWAYS));
	assert_false(evr_provider_spec_match(s, "Quiet", 0x1, EVR_LEVEL_LOGALWAYS));
	assert_false(evr_provider_spec_match(s, "Quiet", 0, EVR_LEVEL_CRITICAL));

	/* Case matters: "foo" is not Foo, so the "*" entry applies. */
	assert_ptr_equal(evr_provider_spec_list_find(l, "foo"), &l->v[0]);
	evr_provider_spec_list_free(l);
}

static void test_provider_spec_match_defaults_take_everything(void **state)
{
	struct evr_provider_spec_list *l = NULL;

	(void)state;
	assert_int_equal(evr_provider_spec_parse("Foo", &l, NULL, 0), 0);
	for (unsigned int e = 0; e < NLEVELS; e++) {
		for (size_t k = 0; k < NKEYWORD_CASES; k++) {
			/* Session keywords ALL match every non-zero event; 0 matches anyway. */
			assert_true(evr_provider_spec_match(&l->v[0], "Foo", keyword_table[k].event,
							    (uint8_t)e));
		}
	}
	evr_provider_spec_list_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_match_table),
		cmocka_unit_test(test_level_match_event_above_verbose),
		cmocka_unit_test(test_keywords_match_table),
		cmocka_unit_test(test_keywords_match_single_bits),
		cmocka_unit_test(test_provider_spec_match_all_combinations),
		cmocka_unit_test(test_provider_spec_match_star_matches_any_name),
		cmocka_unit_test(test_provider_spec_match_null_is_false),
		cmocka_unit_test(test_provider_spec_match_through_parsed_list),
		cmocka_unit_test(test_provider_spec_match_defaults_take_everything),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
