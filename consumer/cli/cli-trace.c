// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Opening a trace file and saying what was wrong with it, the same way in
 * every subcommand that reads one (dump, convert, report). "-" is standard
 * input: a pipe is read as a stream (front to back, bounded memory), except
 * by the subcommands that need the whole file (EVR_CLI_TRACE_FILE), for which
 * it is first copied into an unnamed temporary file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/trace.h>

#include "cli.h"

/* The copy of a trace read from a pipe, for the subcommands that need a file. */
static int spool_fd = -1;

const char *evr_cli_trace_name(const char *path)
{
	return strcmp(path, "-") == 0 ? "stdin" : path;
}

/*
 * Copy standard input into an unnamed file in $TMPDIR (or /tmp): the trace as
 * a file, for readers that need one. Return: the fd, or -errno (reported).
 */
static int spool_stdin(const char *cmd)
{
	const char *dir = getenv("TMPDIR");
	char buf[1u << 16];
	int fd, err;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		evr_cli_error(cmd, "cannot create a temporary file in %s to hold the trace from "
			      "stdin: %s", dir, strerror(-err));
		return err;
	}
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			evr_cli_error(cmd, "cannot read stdin: %s", strerror(-err));
			goto fail;
		}
		if (n == 0)
			return fd;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(fd, buf + done, (size_t)(n - done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				err = -errno;
				evr_cli_error(cmd, "cannot copy the trace from stdin to %s: %s", dir,
					      strerror(-err));
				goto fail;
			}
			done += w;
		}
	}
fail:
	close(fd);
	return err;
}

static int open_error(const char *cmd, const char *path, int r, const char *err)
{
	/* The reader's message names the file when it could not open it. */
	if (strstr(err, path))
		evr_cli_error(cmd, "%s", err);
	else
		evr_cli_error(cmd, "%s: %s", evr_cli_trace_name(path), err);
	return r == -EINVAL ? -EBADMSG : r;
}

int evr_cli_trace_open(const char *cmd, const char *path, uint32_t flags,
		       struct evr_trace_reader **ret)
{
	return evr_cli_trace_open_stream(cmd, path, 0, flags, ret);
}

int evr_cli_trace_open_stream(const char *cmd, const char *path, uint32_t stream, uint32_t flags,
			      struct evr_trace_reader **ret)
{
	char err[512];
	int r, fd = STDIN_FILENO;

	if (strcmp(path, "-") != 0) {
		r = evr_trace_reader_open_stream(path, stream, ret, err, sizeof(err));
		return r == 0 ? 0 : open_error(cmd, path, r, err);
	}
	if (spool_fd >= 0) {
		fd = spool_fd;
	} else if (flags & EVR_CLI_TRACE_FILE) {
		struct stat st;

		/* Redirected from a file, stdin is one already; a pipe is copied. */
		if (fstat(STDIN_FILENO, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (spool_fd < 0)
				spool_fd = spool_stdin(cmd);
			if (spool_fd < 0)
				return spool_fd;
			fd = spool_fd;
		}
	}
	/* A file of several processes from a pipe that is read as a stream: the
	 * reader says to save it first (the subcommands that copy a pipe read it). */
	r = evr_trace_reader_open_fd_stream(fd, stream, ret, err, sizeof(err));
	return r == 0 ? 0 : open_error(cmd, path, r, err);
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
	struct warn_ctx w = { .cmd = cmd, .path = evr_cli_trace_name(path) };
	struct evr_trace_stats st;

	evr_trace_reader_stats(r, &st);
	/* Cut, damaged (repaired, salvaged, skipped, missing): the reader's words. */
	(void)evr_trace_reader_problems(r, warn_line, &w);
	if (st.clock_segments > 1)
		evr_cli_warn(cmd, "%s: the TSC jumped %u times during the recording (a VM restored "
			     "from a snapshot or migrated?): times are converted per segment, %" PRIu64
			     " records written near a jump carry approximate times",
			     evr_cli_trace_name(path),
			     st.clock_segments - 1, st.approx_ts);
	if (st.cpu_skew_ns > 1000)
		evr_cli_warn(cmd, "%s: the TSC of ring %u's CPU ran %" PRIu64 " ns ahead of the "
			     "recorder's: events of different CPUs may be out of order by that much",
			     path, st.cpu_skew_ring, st.cpu_skew_ns);
}

void evr_cli_trace_unchecked(const char *cmd, const char *path, const struct evr_trace_reader *r)
{
	struct evr_trace_stats st;

	evr_trace_reader_stats(r, &st);
	if (st.unchecked_chunks)
		fprintf(stderr, "evring %s: %s: %" PRIu64 " chunks of events carry no checksum (written "
			"while the recorder was behind, or with record --checksum never): damage "
			"in them would go unseen\n", cmd, evr_cli_trace_name(path),
			st.unchecked_chunks);
}

uint32_t evr_cli_trace_pid(const struct evr_trace_reader *r)
{
	const struct evr_process_info *pi = evr_trace_reader_process(r);
	const struct evr_trace_proc *procs;
	uint32_t n, s = evr_trace_reader_stream(r);

	if (pi)
		return pi->pid;
	/* No PROCESS chunk (cut before it): the table may know. */
	(void)evr_trace_reader_procs(r, &procs, &n);
	for (uint32_t i = 0; i < n; i++)
		if (procs[i].stream == s)
			return procs[i].pid;
	return 0;
}

void evr_cli_trace_procs_free(struct evr_trace_reader **rs, uint32_t n,
			      struct evr_trace_reader *r0)
{
	for (uint32_t i = 0; i < n; i++)
		if (rs[i] != r0)
			evr_trace_reader_free(rs[i]);
	free(rs);
}

int evr_cli_trace_procs(const char *cmd, const char *path, struct evr_trace_reader *r0,
			uint32_t flags, pid_t pid, struct evr_trace_reader ***ret, uint32_t *ret_n)
{
	const struct evr_trace_proc *procs;
	struct evr_trace_reader **v;
	uint32_t n, k = 0;
	int err;

	if (!evr_trace_reader_procs(r0, &procs, &n)) {
		if (pid && evr_cli_trace_pid(r0) != (uint32_t)pid) {
			evr_cli_error(cmd, "%s: no process %d: the trace is of process %u",
				      evr_cli_trace_name(path), (int)pid, evr_cli_trace_pid(r0));
			return -ESRCH;
		}
		procs = NULL;
		n = 1;
	}
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t stream = procs ? procs[i].stream : 0;

		if (procs && pid && procs[i].pid != (uint32_t)pid)
			continue;
		if (procs && procs[i].end == EVR_TRACE_PROC_FAILED && !procs[i].attach_ns)
			continue;	/* never recorded: nothing to read */
		if (!procs || stream == evr_trace_reader_stream(r0)) {
			v[k++] = r0;
			continue;
		}
		err = evr_cli_trace_open_stream(cmd, path, stream, flags, &v[k]);
		if (err < 0) {
			evr_cli_trace_procs_free(v, k, r0);
			return err;
		}
		k++;
	}
	if (!k && pid) {
		char list[256] = "";
		size_t used = 0;

		for (uint32_t i = 0; i < n && used < sizeof(list) - 16; i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%u",
						 i ? ", " : "", procs[i].pid);
		evr_cli_error(cmd, "%s: no process %d in the trace (its processes: %s)",
			      evr_cli_trace_name(path), (int)pid, list);
		free(v);
		return -ESRCH;
	}
	*ret = v;
	*ret_n = k;
	return 0;
}
