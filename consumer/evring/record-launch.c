// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record -- PROGRAM: trace a program from its first event. The
 * launching itself (reverse connection, watching the program while it
 * connects) is libevring-consumer's evr_client_launch(); here it is tied to
 * the recorder's state and messages.
 */
#include <errno.h>
#include <stdio.h>

#include <evring/consumer.h>
#include <evring/recorder.h>

#include "cli.h"
#include "record.h"

#define CMD "record"

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

	ret = evr_client_launch(r->o->program, EVR_RECORD_CLIENT_NAME, &l, &r->c, err,
				sizeof(err));
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
	char st[128];

	/* We started it to trace it; do not leave it running untraced behind us. */
	if (evr_launch_kill(&l) == 1) {
		set_launch(r, &l);
		evr_launch_describe(&l, st, sizeof(st));
		evr_cli_error(CMD, "%s (pid %d) was stopped because recording failed (%s)",
			      r->o->program[0], (int)r->child, st);
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
