// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring stacks: the current call stack of every thread of a running process,
 * symbolized (libevring-symbols: ptrace + libdw, as eu-stack), as text close to
 * eu-stack's or as one JSON document (docs/stacks.md gives its shape; the
 * monitor serves the same).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/schema.h>
#include <evring/symbols.h>

#include "cli.h"

#define CMD "stacks"

struct stacks_opts {
	struct evr_cli_flags flags;	/* --json */
	pid_t pid;
	uint32_t depth;
	bool lines;
	bool verbose;
};

enum { OPT_DEPTH = EVR_OPT_FIRST_OWN, OPT_LINES };

static const struct evr_cli_option longopts[] = {
	EVR_CLI_OPTIONS_PID("the process (yours; any process when root)"),
	{ "name", required_argument, 'n', "NAME",
	  "the one process named NAME that runs libevring's agent" },
	{ "json", no_argument, 'j', NULL, "one JSON document instead of text" },
	{ "depth", required_argument, OPT_DEPTH, "N",
	  "at most N frames per thread (1-1024, default 64)" },
	{ "lines", no_argument, OPT_LINES, NULL,
	  "add source file:line where debug information has it" },
	{ "verbose", no_argument, 'v', NULL, "say on stderr how long each thread was stopped" },
	EVR_CLI_OPTION_HELP,
	{ 0 },
};

static void usage(FILE *f)
{
	evr_cli_usage(f,
		"Usage: evring stacks -p PID|-n NAME [--json] [--depth N] [--lines] [--verbose]\n"
		"Print the current call stack of every thread of process PID, symbolized.\n",
		longopts,
		"Each thread is stopped with ptrace while it is unwound (well under a\n"
		"millisecond each); a process that a debugger traces cannot be snapshotted.\n");
}

static int parse_argv(int argc, char **argv, struct stacks_opts *o)
{
	struct evr_cli_getopt g;
	int c, r;

	o->depth = 64;
	evr_cli_getopt_init(&g, "+:", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case 'p':
			if (evr_cli_parse_pid(CMD, "--pid", optarg, &o->pid) < 0)
				return -EINVAL;
			break;
		case 'n':
			/* The one process of that name (an error says why not: exit 1). */
			r = evr_cli_pid_of_name(CMD, optarg, &o->pid);
			if (r < 0)
				return r;
			break;
		case OPT_DEPTH:
			if (evr_cli_parse_uint(CMD, "--depth", optarg, 1, 1024, &o->depth) < 0)
				return -EINVAL;
			break;
		case OPT_LINES:
			o->lines = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		default:
			r = evr_cli_common_opt(CMD, c, argv, usage, &o->flags);
			if (r <= 0)
				return r;
		}
	}
	if (evr_cli_no_operands(CMD, argc, argv) < 0)
		return -EINVAL;
	if (!o->pid) {
		evr_cli_error(CMD, "-p PID is required, or -n NAME (try --help)");
		return -EINVAL;
	}
	return 1;
}

static void print_text(const struct evr_stacks *st, const struct stacks_opts *o)
{
	char buf[1024];

	for (uint32_t i = 0; i < st->nthreads; i++) {
		const struct evr_thread_stack *t = &st->threads[i];

		printf("%sTID %u \"%s\" (%c):\n", i ? "\n" : "", t->tid, t->name, t->state);
		if (t->err) {
			printf("    (%s)\n", t->errmsg ? t->errmsg : strerror(-t->err));
			continue;
		}
		for (uint32_t f = 0; f < t->nframes; f++) {
			struct evr_sym sym;

			evr_symbolizer_lookup(st->sym, t->pcs[f], !t->activation[f], &sym);
			/* Functions inlined at the address first, innermost first, each
			 * under the frame's number: the frame's own line stays last. */
			for (uint32_t k = 0; k < sym.ninlined; k++)
				printf("#%-2u 0x%016" PRIx64 " %s\n", f, t->pcs[f],
				       evr_sym_format_inlined(&sym, k, o->lines, buf, sizeof(buf)));
			printf("#%-2u 0x%016" PRIx64 " %s\n", f, t->pcs[f],
			       evr_sym_format(&sym, t->pcs[f], o->lines, buf, sizeof(buf)));
		}
		if (t->nframes == o->depth)
			printf("    (more frames: --depth %u shows at most that many)\n", o->depth);
	}
}

/* The document docs/stacks.md describes, written by libevring-symbols (as the monitor serves it). */
static int print_json(const struct evr_stacks *st)
{
	struct evr_strbuf sb = { 0 };
	int ret = evr_stacks_json(st, &sb);

	if (ret == 0 && (fwrite(sb.buf, 1, sb.len, stdout) != sb.len || putchar('\n') == EOF))
		ret = -EIO;
	free(sb.buf);
	return ret;
}

/* The work, as evr_cli_main()'s run step. */
static int run(void *arg)
{
	const struct stacks_opts *o = arg;
	struct evr_stacks *st = NULL;
	char err[512] = "";
	int ret;

	ret = evr_stacks_snapshot(o->pid, o->depth, &st, err, sizeof(err));
	if (ret < 0) {
		evr_cli_error(CMD, "%s", err[0] ? err : strerror(-ret));
		return ret;
	}
	if (o->flags.json) {
		ret = print_json(st);
		if (ret < 0) {
			evr_cli_error(CMD, "cannot write the JSON document: %s", strerror(-ret));
			evr_stacks_free(st);
			return ret;
		}
	} else {
		print_text(st, o);
	}
	if (o->verbose) {
		uint64_t max = 0, sum = 0;

		for (uint32_t i = 0; i < st->nthreads; i++) {
			sum += st->threads[i].pause_ns;
			if (st->threads[i].pause_ns > max)
				max = st->threads[i].pause_ns;
		}
		fprintf(stderr,
			"evring stacks: %u threads in %.2f ms; each stopped %.3f ms on average, "
			"%.3f ms at most\n",
			st->nthreads, st->total_ns / 1e6,
			st->nthreads ? (double)sum / st->nthreads / 1e6 : 0.0, max / 1e6);
	}
	if (!o->flags.json && *evr_symbolizer_warnings(st->sym))
		fprintf(stderr, "%s", evr_symbolizer_warnings(st->sym));
	ret = fflush(stdout) == 0 ? 0 : -EIO;
	evr_stacks_free(st);
	return ret;
}

int evr_cmd_stacks(int argc, char **argv)
{
	static const struct evr_cli_steps steps = { .run = run };
	struct stacks_opts o = { 0 };

	return evr_cli_main(parse_argv(argc, argv, &o), &steps, &o);
}
