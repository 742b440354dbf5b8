// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The evring command's confinement: each subcommand's allow-list, built from
 * libevring-sandbox (<evring/sandbox.h>, where the lists and the reasons for
 * them are), entered once its files, sockets and mappings are open.
 *
 *   dump, report, convert   the base only: read the trace file, write the output
 *   record                  + waiting, the agent socket, its program's status and
 *                           SIGTERM to it (-- PROGRAM)
 *   ps, providers           + waiting, the agent sockets (connected by the
 *                           broker, or before confinement)
 *
 * docs/cli.md ("The sandbox") says the same for users.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/sandbox.h>

#include "cli.h"

static uint32_t profile_allow(enum evr_sandbox_profile profile)
{
	switch (profile) {
	case EVR_SANDBOX_RECORD:
		/* FDFLAGS: direct I/O turned off while the disk falls behind;
		 * URING: the writes in flight (docs/recorder.md "I/O engine");
		 * THREADS: the page cache's write-behind worker (write-behind.c). */
		return EVR_SANDBOX_WAIT | EVR_SANDBOX_SOCKETS | EVR_SANDBOX_CHILD |
		       EVR_SANDBOX_FDFLAGS | EVR_SANDBOX_URING | EVR_SANDBOX_THREADS;
	case EVR_SANDBOX_ATTACHED:
		/* CHILD: reaping the broker at the end. */
		return EVR_SANDBOX_WAIT | EVR_SANDBOX_SOCKETS | EVR_SANDBOX_CHILD;
	case EVR_SANDBOX_DUMP:
	default:
		return 0;
	}
}

int evr_cli_sandbox_enter_child(const char *cmd, enum evr_sandbox_profile profile,
				const struct evr_cli_flags *flags, pid_t child)
{
	struct evr_sandbox_opts o = { .allow = profile_allow(profile), .child = child };
	char err[512];
	int ret;

	if (flags->no_sandbox)
		return 0;
	ret = evr_sandbox_enter(&o, err, sizeof(err));
	if (ret < 0)
		evr_cli_error(cmd, "%s", err);
	return ret;
}

int evr_cli_sandbox_enter(const char *cmd, enum evr_sandbox_profile profile,
			  const struct evr_cli_flags *flags)
{
	return evr_cli_sandbox_enter_child(cmd, profile, flags, 0);
}

int evr_cli_sandbox_probe(const char *cmd)
{
	char what[256];
	int ret = evr_sandbox_probe(what, sizeof(what));

	evr_cli_error(cmd, "sandbox probe: %s", what);
	return ret == 0 ? 0 : -EACCES;
}

/* ---- tools that attach: the broker, then the sandbox ------------------------------ */

int evr_cli_attach_confine(const char *cmd, const struct evr_cli_flags *flags,
			   struct evr_broker **ret)
{
	char err[512];
	int ret_err;

	*ret = NULL;
	/* Decided now: stdio would ask the terminal (fstat, ioctl) at the first write. */
	setvbuf(stdout, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, 1u << 16);
	if (flags->no_sandbox) {
		if (flags->sandbox_probe)
			evr_cli_sandbox_probe(cmd);
		return 0;
	}
	ret_err = evr_broker_new(NULL, ret, err, sizeof(err));
	if (ret_err < 0) {
		evr_cli_error(cmd, "%s", err);
		return ret_err;
	}
	ret_err = evr_cli_sandbox_enter(cmd, EVR_SANDBOX_ATTACHED, flags);
	if (ret_err < 0) {
		evr_broker_free(*ret);
		*ret = NULL;
		return ret_err;
	}
	if (flags->sandbox_probe)
		evr_cli_sandbox_probe(cmd);
	return 0;
}

int evr_cli_connect(struct evr_broker *b, pid_t pid, const char *client_name,
		    struct evr_client **ret, char *errbuf, size_t errlen)
{
	if (b)
		return evr_broker_attach(b, pid, client_name, ret, errbuf, errlen);
	return evr_client_connect(pid, client_name, ret, errbuf, errlen);
}

int evr_cli_process_list(struct evr_broker *b, pid_t **ret, uint32_t *ret_n, char *errbuf,
			 size_t errlen)
{
	if (b)
		return evr_broker_process_list(b, ret, ret_n, errbuf, errlen);
	return evr_process_list_checked(ret, ret_n, errbuf, errlen);
}
