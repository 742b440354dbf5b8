// SPDX-License-Identifier: LGPL-2.1-or-later
/* The tools' option tables (consumer/common/cli-options.c): getopt's tables and --help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <evring/cli-options.h>

enum { OPT_ALL = EVR_CLI_LONG_ONLY, OPT_STACKS, OPT_PROBE };

static const struct evr_cli_option table[] = {
	{ "pid", required_argument, 'p', "PID", "attach to PID" },
	{ "process-id", required_argument, 'p', NULL, NULL },
	{ "all", no_argument, OPT_ALL, NULL, "every process,\nlate ones too" },
	{ "stacks", optional_argument, OPT_STACKS, "[=DEPTH]", "with stacks" },
	{ "json", no_argument, 'j', NULL, "JSON" },
	{ "debug-probe", no_argument, OPT_PROBE, NULL, NULL },
	{ "a-very-long-option-name", required_argument, 'x', "VALUE", "wide" },
	EVR_CLI_OPTION_HELP,
	{ 0 },
};

static void test_evr_cli_getopt_init_tables(void **state)
{
	struct evr_cli_getopt g;
	size_t n = 0;

	(void)state;
	evr_cli_getopt_init(&g, "+:", table);
	/* Each letter once (the alias adds none), with its ':'. */
	assert_string_equal(g.shortopts, "+:p:jx:h");
	for (; table[n].name; n++) {
		assert_string_equal(g.longopts[n].name, table[n].name);
		assert_int_equal(g.longopts[n].has_arg, table[n].has_arg);
		assert_int_equal(g.longopts[n].val, table[n].val);
		assert_null(g.longopts[n].flag);
	}
	assert_null(g.longopts[n].name);
}

static void test_evr_cli_getopt_parses(void **state)
{
	char *argv[] = { "t", "--process-id", "7", "-j", "--stacks=3", "--all", "rest", NULL };
	struct evr_cli_getopt g;
	int c, seen = 0;

	(void)state;
	evr_cli_getopt_init(&g, "+:", table);
	assert_int_equal(opterr, 0);
	optind = 0;
	while ((c = evr_cli_getopt(&g, 7, argv)) != -1) {
		switch (c) {
		case 'p':
			/* As typed, and the row of the table it was. */
			assert_string_equal(optarg, "7");
			assert_string_equal(g.opt, "--process-id");
			assert_int_equal(g.longindex, 1);
			seen |= 1;
			break;
		case 'j':
			assert_string_equal(g.opt, "-j");
			assert_int_equal(g.longindex, -1);
			seen |= 2;
			break;
		case OPT_STACKS:
			assert_string_equal(optarg, "3");
			assert_string_equal(g.opt, "--stacks");
			seen |= 4;
			break;
		case OPT_ALL:
			seen |= 8;
			break;
		default:
			fail_msg("unexpected option %d", c);
		}
	}
	assert_int_equal(seen, 15);
	assert_string_equal(argv[optind], "rest");
}

static void test_evr_cli_options_print_lists_every_option(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	evr_cli_usage(f, "Usage: t\n", table, "end\n");
	assert_int_equal(fclose(f), 0);
	/* Aliases on their row's line, optional values glued on, help lines in one column,
	 * names wider than the column (27) with their help below, hidden rows left out. */
	assert_string_equal(text,
			    "Usage: t\n"
			    "  -p, --pid, --process-id PID\n"
			    "                        attach to PID\n"
			    "      --all             every process,\n"
			    "                        late ones too\n"
			    "      --stacks[=DEPTH]  with stacks\n"
			    "  -j, --json            JSON\n"
			    "  -x, --a-very-long-option-name VALUE\n"
			    "                        wide\n"
			    "  -h, --help            this help\n"
			    "end\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evr_cli_getopt_init_tables),
		cmocka_unit_test(test_evr_cli_getopt_parses),
		cmocka_unit_test(test_evr_cli_options_print_lists_every_option),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
