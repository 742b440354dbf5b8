/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the cmocka tests share: skips that ctest reports as skips, and a way
 * to run part of a binary as its own ctest test.
 *
 * cmocka's skip() only marks the case: the binary still exits 0, and ctest
 * says "Passed" for a suite of which nothing ran. EVR_SKIP() says why on one
 * line ("SKIP: <reason> (in <function>)", which scripts/test lists at the end),
 * counts the skip, then calls skip(); evr_unit_run() exits 77 (ctest's
 * SKIP_RETURN_CODE) when a case skipped and none failed. A binary where one
 * case may skip on some hosts would then report its other cases as skipped
 * too: run that case as a ctest test of its own instead (EVR_TEST_ONLY), and
 * the others without it (EVR_TEST_EXCEPT), both comma-separated case names.
 *
 * tests/CMakeLists.txt refuses a unit test that calls skip() without this
 * header. Include it after <cmocka.h>'s prerequisites (setjmp.h, stdarg.h,
 * stddef.h, stdint.h), as cmocka wants them.
 */
#ifndef EVR_UNIT_H
#define EVR_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Cases that skipped in this process (cmocka runs them all in it, one by one). */
static unsigned int evr_unit_skipped;

__attribute__((format(printf, 2, 3)))
static inline void evr_unit_skip_note(const char *func, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "SKIP: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (in %s)\n", func);
	evr_unit_skipped++;
}

/* Skip the running case, saying why (printf format). Does not return. */
#define EVR_SKIP(...)							\
	do {								\
		evr_unit_skip_note(__func__, __VA_ARGS__);		\
		skip();							\
	} while (0)

/* Is @name in the comma-separated @list? */
static inline int evr_unit_listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

/*
 * Run the cases of @tests that EVR_TEST_ONLY / EVR_TEST_EXCEPT select.
 * Return: the exit status: 1 if any failed (or a name in EVR_TEST_ONLY is not a
 * case: a typo must not pass with nothing run), 77 if any skipped, else 0.
 */
static inline int evr_unit_run_(const char *group, const struct CMUnitTest *tests, size_t n)
{
	const char *only = getenv("EVR_TEST_ONLY"), *except = getenv("EVR_TEST_EXCEPT");
	struct CMUnitTest *sel = calloc(n ? n : 1, sizeof(*sel));
	size_t k = 0, listed = 0;
	int failed;

	if (!sel)
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (only && *only && !evr_unit_listed(only, tests[i].name))
			continue;
		if (except && *except && evr_unit_listed(except, tests[i].name))
			continue;
		sel[k++] = tests[i];
	}
	if (only && *only) {
		for (const char *p = only; *p; p += *p == ',') {
			p += strcspn(p, ",");
			listed++;
		}
		if (listed != k) {
			fprintf(stderr, "EVR_TEST_ONLY=%s names %zu cases, %zu found in %s\n", only,
				listed, k, group);
			free(sel);
			return 1;
		}
	}
	failed = _cmocka_run_group_tests(group, sel, k, NULL, NULL);
	free(sel);
	if (failed)
		return 1;
	if (evr_unit_skipped) {
		fprintf(stderr, "%u of %zu cases of %s skipped (reasons above): exit 77\n",
			evr_unit_skipped, k, group);
		return 77;
	}
	return 0;
}

#define evr_unit_run(tests) evr_unit_run_(#tests, tests, sizeof(tests) / sizeof((tests)[0]))

#endif /* EVR_UNIT_H */
