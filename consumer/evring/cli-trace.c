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

void evr_cli_trace_warnings(const char *cmd, const char *path, const struct evr_trace_stats *st,
			    const char *done)
{
	if (st->truncated)
		evr_cli_warn(cmd, "%s is truncated after byte %" PRIu64 " (%s): %s up to its last "
			     "complete chunk", path, st->bytes,
			     *st->truncated_why ? st->truncated_why : "cut short", done);
	if (st->clock_segments > 1)
		evr_cli_warn(cmd, "%s: the TSC jumped %u times during the recording (a VM restored "
			     "from a snapshot or migrated?): times are converted per segment, %" PRIu64
			     " records written near a jump carry approximate times", path,
			     st->clock_segments - 1, st->approx_ts);
	if (st->corrupt_chunks || st->corrupt_packets)
		evr_cli_warn(cmd, "%s: %" PRIu64 " corrupt chunks and %" PRIu64 " corrupt packets "
			     "were skipped", path, st->corrupt_chunks, st->corrupt_packets);
}
