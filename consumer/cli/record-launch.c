// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record -- PROGRAM: trace a program from its first event. The
 * launching itself (reverse connection, watching the program while it
 * connects) is libevring-consumer's evr_client_launch_timeout(); here it is
 * tied to the recorder's state and messages.
 *
 * A program that cannot be traced (it did not connect within --connect-timeout,
 * or its recording could not start) is the user's own: we say so, ask it to
 * stop with SIGTERM, never SIGKILL, and report what became of it; one that does
 * not stop within STOP_GRACE_MS runs on, and the user is told its pid.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <evring/consumer.h>
#include <evring/recorder.h>

#include "cli.h"
#include "record.h"

#define CMD "record"
/* How long a program we ask to stop has to exit. */
#define STOP_GRACE_MS 5000

static struct evr_launch launch_of(const struct recorder *r)
{
	return (struct evr_launch){ .pid = r->child, .pidfd = r->child_pidfd,
				    .reaped = r->child_reaped, .status = r->child_status };
}

static void set_launch(struct recorder *r, const struct evr_launch *l)
{
	r->child = l->pid;
	r->child_pidfd = l->pidfd;
	r->child_reaped = l->reaped;
	r->child_status = l->status;
}

int evr_record_launch(struct recorder *r)
{
	struct evr_launch l;
	char err[512];
	int ret;

	ret = evr_client_launch_timeout(r->o->program, EVR_RECORD_CLIENT_NAME,
					(int)r->o->connect_timeout_ms, &l, &r->c, err, sizeof(err));
	set_launch(r, &l);
	if (ret < 0)
		evr_cli_error(CMD, "%s", ret == -ENOMEM ? "out of memory" : err);
	return ret;
}

static void reap(struct recorder *r, int timeout_ms)
{
	struct evr_launch l = launch_of(r);

	evr_launch_reap(&l, timeout_ms);
	set_launch(r, &l);
}

void evr_record_child_wait(struct recorder *r)
{
	struct evr_recorder_stats st;

	/* Ended or gone: the program is exiting (libevring ends its sessions from a
	 * destructor), give it a moment to become reapable. A
	 * Ctrl-C reached it too (same process group). After --duration it runs on. */
	evr_recorder_stats(r->rec, &st);
	if (st.stop == EVR_RECORDER_STOP_ENDED || st.stop == EVR_RECORDER_STOP_GONE)
		reap(r, 5000);
	else if (st.stop == EVR_RECORDER_STOP_REQUESTED)
		reap(r, 2000);
	else
		reap(r, 0);
}

void evr_record_child_abandon(struct recorder *r)
{
	struct evr_launch l = launch_of(r);
	const char *prog = r->o->program[0];
	char st[128];
	int ret;

	if (r->child <= 0 || r->child_reaped)
		return;
	/* We started it to trace it: neither leave it running untraced without a
	 * word, nor kill it without one. */
	evr_cli_error(CMD, "stopping %s (pid %d) with SIGTERM: it cannot be traced", prog,
		      (int)r->child);
	ret = evr_launch_stop(&l, STOP_GRACE_MS);
	set_launch(r, &l);
	if (ret == 1) {
		evr_launch_describe(&l, st, sizeof(st));
		evr_cli_error(CMD, "%s (pid %d) %s", prog, (int)r->child, st);
	} else if (ret == -ETIMEDOUT) {
		evr_cli_error(CMD, "%s (pid %d) did not stop within %d s of SIGTERM; it runs on, "
			      "untraced", prog, (int)r->child, STOP_GRACE_MS / 1000);
	} else if (ret < 0) {
		evr_cli_error(CMD, "cannot stop %s (pid %d): %s; it runs on, untraced", prog,
			      (int)r->child, strerror(-ret));
	}
}

void evr_record_child_summary(const struct recorder *r, const char *why)
{
	struct evr_launch l = launch_of(r);
	char st[128];

	if (r->child_reaped) {
		evr_launch_describe(&l, st, sizeof(st));
		fprintf(stderr, "evring record: %s; %s %s\n", why, r->o->program[0], st);
	} else {
		fprintf(stderr, "evring record: %s; %s (pid %d) is still running, no longer "
			"traced\n", why, r->o->program[0], (int)r->child);
	}
}
