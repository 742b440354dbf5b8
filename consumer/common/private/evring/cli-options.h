/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One option table per tool (evring's subcommands, evring-monitor, clrtop):
 * each row says a long option's name, whether it takes a value, its short
 * letter, the value's name and its help text, and both getopt_long()'s
 * tables and the option list of --help are made from it. Before, each tool
 * spelled its options twice, in a `struct option[]` and again in a usage()
 * text, and the two drifted apart (issue 28 found options the help did not
 * name); the tools also repeated each other's getopt tables (issue 27).
 *
 * The parsing itself stays the tool's own: evr_cli_getopt() (getopt_long()
 * over the tables built here), then a switch on each row's @val.
 */
#ifndef EVR_CLI_OPTIONS_H
#define EVR_CLI_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

/* @val of an option without a short letter starts here (above every char). */
#define EVR_CLI_LONG_ONLY 0x100

/*
 * struct evr_cli_option - one option of a tool's table.
 * @name: the long option, without "--"; NULL ends the table.
 * @has_arg: no_argument, required_argument or optional_argument (<getopt.h>).
 * @val: what getopt_long() returns for it: a letter, which is then also the
 *       short option -@val, or a value from EVR_CLI_LONG_ONLY up for a
 *       long-only option.
 * @metavar: the value as --help shows it: "PID" (after a space) for a
 *           required value, "[=DEPTH]" (right after the name) for an optional
 *           one; NULL for none.
 * @help: what it does, in lines separated by '\n'. NULL: not listed on a line
 *        of its own, either as another name of the row above (the same @val:
 *        "-p, --pid, --process-id PID") or, if its @val is its own, as a hidden
 *        option (--debug-sandbox-probe).
 */
struct evr_cli_option {
	const char *name;
	int has_arg;
	int val;
	const char *metavar;
	const char *help;
};

/* The rows of -h, --help and of --version (returning @val) every tool takes. */
#define EVR_CLI_OPTION_HELP { "help", no_argument, 'h', NULL, "this help" }
#define EVR_CLI_OPTION_VERSION(val) \
	{ "version", no_argument, (val), NULL, "print the version of evring and exit" }

/*
 * The rows of the options every confined tool takes (<evring/sandbox.h>):
 * --no-sandbox, saying @help, and the hidden --debug-sandbox-probe, returning
 * @no_sandbox and @probe.
 */
#define EVR_CLI_OPTIONS_SANDBOX(no_sandbox, probe, help)			\
	{ "no-sandbox", no_argument, (no_sandbox), NULL, (help) },		\
	{ "debug-sandbox-probe", no_argument, (probe), NULL, NULL }

/*
 * -p, --pid PID saying @help, and the same option under dotnet-trace's and
 * dotnet-counters' name, --process-id (listed with it by --help), for every
 * tool that attaches to a process by its pid.
 */
#define EVR_CLI_OPTIONS_PID(help)					\
	{ "pid", required_argument, 'p', "PID", (help) },			\
	{ "process-id", required_argument, 'p', NULL, NULL }

/* The most rows of one table (evring record has the most, 26). */
#define EVR_CLI_MAX_OPTIONS 48

/*
 * getopt_long()'s two tables for one evr_cli_option table, and what the last
 * evr_cli_getopt() read.
 * @longopts: the table's rows, row for row.
 * @shortopts: the mode prefix, then every letter once, each with ':' or '::'.
 * @longindex: the table's row of the long option just read; -1 for a short one.
 * @opt: that option as it was typed, for messages: "--process-id" or "-p".
 */
struct evr_cli_getopt {
	struct option longopts[EVR_CLI_MAX_OPTIONS + 1];
	char shortopts[8 + 3 * EVR_CLI_MAX_OPTIONS];
	int longindex;
	char opt[40];
};

/**
 * evr_cli_getopt_init() - build getopt_long()'s tables from @opts, and turn
 * getopt's own messages off (opterr): every tool says what is wrong itself.
 * @g: filled, for evr_cli_getopt().
 * @mode: what @shortopts starts with: ":" (report a missing value as ':'),
 *        "+:" (and stop at the first operand), "" (neither).
 * @opts: the tool's table, NULL-name terminated, at most EVR_CLI_MAX_OPTIONS
 *        rows (more is a bug: assert(); without assertions the rest is left out).
 */
void evr_cli_getopt_init(struct evr_cli_getopt *g, const char *mode,
			 const struct evr_cli_option *opts);

/**
 * evr_cli_getopt() - getopt_long() over @g's tables: the next option of @argv.
 * Return: the option's @val (optarg set as getopt_long() sets it; @g's
 * longindex and opt say how it was typed), '?' unknown, ':' missing value (with
 * a ':' mode), -1 at the end.
 */
int evr_cli_getopt(struct evr_cli_getopt *g, int argc, char **argv);

/**
 * evr_cli_options_print() - the option list of --help: one entry per listed
 * row, "  -p, --pid, --process-id PID  help", the help's lines in one column
 * (on the next line when the names are too wide for it).
 * @f: where to; @opts: the tool's table.
 */
void evr_cli_options_print(FILE *f, const struct evr_cli_option *opts);

/**
 * evr_cli_usage() - a tool's whole --help: @head, the option list of @opts
 * (evr_cli_options_print()), @tail.
 * @head: the usage line and what the tool does, ending in '\n'.
 * @tail: what follows the options ("" for nothing), ending in '\n'.
 */
void evr_cli_usage(FILE *f, const char *head, const struct evr_cli_option *opts,
		   const char *tail);

#endif /* EVR_CLI_OPTIONS_H */
