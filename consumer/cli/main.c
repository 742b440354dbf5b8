// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring: the command-line front end. `evring SUBCOMMAND [OPTIONS]`; each
 * subcommand is in its own file (ps.c, record.c, dump.c, convert.c, report.c;
 * forward in consumer/forward/).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef EVR_VERSION
#define EVR_VERSION "unknown"
#endif

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "ps", evr_cmd_ps, "list the processes you can attach to" },
	{ "providers", evr_cmd_providers, "list a process's providers, events and counters" },
	{ "record", evr_cmd_record, "record a process's events into a trace file" },
	{ "profiles", evr_cmd_profiles, "list record --profile's named profiles" },
	{ "dump", evr_cmd_dump, "print the events of a trace file" },
	{ "convert", evr_cmd_convert, "convert a trace file to another tool's format (below)" },
	{ "report", evr_cmd_report, "summarize a trace file: tables, --json, --html page" },
	{ "stacks", evr_cmd_stacks, "print the call stack of every thread of a process" },
	{ "forward", evr_cmd_forward, "send live events and counters to JSON lines, LTTng, journald, Graphite" },
	{ "monitor", evr_cmd_monitor, "serve traces, counters and pages over HTTP" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: evring COMMAND [OPTIONS]   (evring COMMAND --help for its options)\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "Formats of convert --format and record --format (aliases in parentheses):\n");
	evr_cli_print_formats(f, "  ");
	fprintf(f, "evring --version, evring COMMAND --version: the version of evring\n");
}

/*
 * --version among a subcommand's options (before a "--" that starts a program
 * to run): the version, whatever else the command line says, as the dotnet
 * tools do. Every subcommand gets it here rather than in each parser.
 */
static bool wants_version(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		if (!strcmp(argv[i], "--version"))
			return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EVR_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EVR_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("evring %s\n", EVR_VERSION);
		return EVR_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		if (wants_version(argc - 1, argv + 1)) {
			printf("evring %s %s\n", commands[i].name, EVR_VERSION);
			return EVR_EXIT_OK;
		}
		return commands[i].fn(argc - 1, argv + 1);
	}
	{
		const char *names[sizeof(commands) / sizeof(commands[0])], *near;

		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			names[i] = commands[i].name;
		near = evr_cli_closest(argv[1], names, sizeof(names) / sizeof(names[0]));
		if (near)
			fprintf(stderr, "evring: unknown command '%s'; did you mean %s? (try evring "
				"--help)\n", argv[1], near);
		else
			fprintf(stderr, "evring: unknown command '%s' (try evring --help)\n",
				argv[1]);
	}
	return EVR_EXIT_USAGE;
}
