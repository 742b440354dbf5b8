/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clrtop's model: the watched processes, one session each (counters only), and
 * the latest two samples of every counter. Only the main thread touches it; an
 * attach to a process of the overview runs on a short-lived thread of its own
 * (connecting and starting a session can take seconds when the process is
 * busy) and hands its client over through a job struct (see model.c).
 */
#ifndef EVR_CLRTOP_MODEL_H
#define EVR_CLRTOP_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <evring/consumer.h>

#include "clrtop.h"

struct evr_top_counter {
	char provider[64];
	char name[96];
	char display[128];
	char unit[24];
	uint32_t kind;			/* enum evr_sample_kind */
	uint32_t order;			/* first-seen order within its process */
	uint64_t nsamples;
	double value, prev;		/* the latest sample's value and the one before */
	struct evr_counter_sample last;	/* numbers only: its strings are not kept */
	uint64_t changed_at;		/* model generation when value last changed */
};

enum evr_top_proc_state {
	EVR_TOP_PROC_ATTACHING,
	EVR_TOP_PROC_LIVE,
	EVR_TOP_PROC_EXITED,			/* the process ended or stopped serving */
	EVR_TOP_PROC_FAILED,			/* could not attach: err says why */
};

struct evr_top_job;

struct evr_top_proc {
	pid_t pid;
	char name[64];
	enum evr_top_proc_state state;
	char err[256];
	struct evr_client *client;
	struct evr_top_job *job;		/* an attach in progress */
	struct evr_top_counter *ctr;
	uint32_t nctr, cap;
	uint64_t ticks;			/* sampling intervals seen */
	uint64_t last_tick_ns;
	uint64_t lost;			/* events the session lost (ring full) */
	uint64_t gone_at_ns;		/* monotonic time it was seen exited or failed */
	bool listed;			/* in the last process list (overview) */
	bool pinned;			/* shown on its own: never forgotten */
};

struct evr_top_model_opts {
	uint32_t interval_ms;
	uint64_t ring_size;
	const struct evr_top_filter *filter;	/* borrowed for the model's lifetime */
	enum evr_top_export_format export_fmt;
	FILE *export;			/* borrowed; NULL: no recording */
};

struct evr_top_model {
	struct evr_top_model_opts o;
	struct evr_top_proc **procs;
	uint32_t n, cap;
	uint64_t gen;			/* bumped by every evr_top_model_poll() */
	int64_t realtime_offset_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC */
	int export_err;			/* first failure writing the recording */
};

/* Return: 0 or -ENOMEM. Free with evr_top_model_fini(). */
int evr_top_model_init(struct evr_top_model *m, const struct evr_top_model_opts *o);
void evr_top_model_fini(struct evr_top_model *m);

/**
 * evr_top_model_add() - watch @pid. @sync: attach now (for -p: the error is the
 * user's), else on a thread (for the overview: a slow process must not stall
 * the screen).
 * Return: 0, or with @sync the attach error (-errno, reason in @err).
 */
int evr_top_model_add(struct evr_top_model *m, pid_t pid, bool sync, char *err, size_t errlen);

/* Overview: list the attachable processes, watch new ones, forget the ones that
 * have been gone for @keep_ms. Return: 0 or -errno from the listing. */
int evr_top_model_rescan(struct evr_top_model *m, uint32_t keep_ms);

/* Take finished attaches, read every session, note exits. Return: true when
 * anything visible changed. */
bool evr_top_model_poll(struct evr_top_model *m);

/* The counter @name of @provider in @p, or NULL. */
const struct evr_top_counter *evr_top_proc_counter(const struct evr_top_proc *p, const char *provider,
					 const char *name);

/* The counter shown in overview column @col of @p, or NULL. */
const struct evr_top_counter *evr_top_proc_col_counter(const struct evr_top_proc *p, enum evr_top_col col);

/* The overview row of @p. */
void evr_top_proc_row(const struct evr_top_proc *p, struct evr_top_row *ret);

/* "attaching", "live", "exited", "failed". */
const char *evr_top_proc_state_name(enum evr_top_proc_state s);

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t evr_top_now_ns(void);

#endif /* EVR_CLRTOP_MODEL_H */
