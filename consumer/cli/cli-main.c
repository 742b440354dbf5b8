// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The tail every subcommand shares (cli.h, evr_cli_main()): parse_argv()'s
 * result, then prepare() and run(), and one mapping to the exit status. Before
 * it each evr_cmd_*() wrote the mapping again, and they drifted apart: record
 * with -n NAME answered 1 for a bad option, where every other command line
 * answers 2, and ps mapped a -EINVAL from run() to 2.
 */
#include "cli.h"

int evr_cli_main(int parsed, const struct evr_cli_steps *steps, void *opts)
{
	int r = parsed, status;

	if (r > 0 && steps->prepare)
		r = steps->prepare(opts) ?: 1;
	if (r <= 0)
		status = evr_cli_exit_status(r);
	else
		status = evr_cli_run_status(steps->run(opts));
	if (steps->fini)
		steps->fini(opts);
	return status;
}
