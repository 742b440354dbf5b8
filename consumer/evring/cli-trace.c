// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Opening a trace file and saying what was wrong with it, the same way in
 * every subcommand that reads one (dump, convert, report).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <evring/trace.h>

#include "cli.h"

int evr_cli_trace_open(const char *cmd, const char *path, struct evr_trace_reader **ret)
{
	char err[512];
	int r = evr_trace_reader_open(path, ret, err, sizeof(err));

	if (r == 0)
		return 0;
	/* The reader's message names the file when it could not open it. */
	if (strstr(err, path))
		evr_cli_error(cmd, "%s", err);
	else
		evr_cli_error(cmd, "%s: %s", path, err);
	return r == -EINVAL ? -EBADMSG : r;
}

struct warn_ctx {
	const char *cmd;
	const char *path;
};

static void warn_line(void *arg, const char *line)
{
	const struct warn_ctx *w = arg;

	evr_cli_warn(w->cmd, "%s: %s", w->path, line);
}

void evr_cli_trace_warnings(const char *cmd, const char *path, const struct evr_trace_reader *r)
{
	struct warn_ctx w = { .cmd = cmd, .path = path };
	struct evr_trace_stats st;

	evr_trace_reader_stats(r, &st);
	/* Cut, damaged (repaired, salvaged, skipped, missing): the reader's words. */
	(void)evr_trace_reader_problems(r, warn_line, &w);
	if (st.clock_segments > 1)
		evr_cli_warn(cmd, "%s: the TSC jumped %u times during the recording (a VM restored "
			     "from a snapshot or migrated?): times are converted per segment, %" PRIu64
			     " records written near a jump carry approximate times", path,
			     st.clock_segments - 1, st.approx_ts);
	if (st.cpu_skew_ns > 1000)
		evr_cli_warn(cmd, "%s: the TSC of ring %u's CPU ran %" PRIu64 " ns ahead of the "
			     "recorder's: events of different CPUs may be out of order by that much",
			     path, st.cpu_skew_ring, st.cpu_skew_ns);
}
