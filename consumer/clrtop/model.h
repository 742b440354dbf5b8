/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clrtop's model: the watched processes, one session each (counters only), and
 * the latest two samples of every counter. A view of the watch
 * (consumer/watch/), which attaches (on threads of its own: connecting and
 * starting a session can take seconds when the process is busy) and keeps the
 * tables; only the main thread touches the model and calls into the watch.
 */
#ifndef EVR_CLRTOP_MODEL_H
#define EVR_CLRTOP_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <evring/consumer.h>
#include <evring/mono-time.h>
#include <evring/sandbox.h>
#include <evring/watch.h>

#include "clrtop.h"

/* A counter: the watch's fields (name, latest sample), then clrtop's. */
struct evr_top_counter {
	union {
		struct evr_watch_counter w;
		struct { EVR_WATCH_COUNTER_FIELDS };
	};
	uint32_t order;			/* first-seen order within its process */
	double value, prev;		/* the latest sample's value and the one before */
	uint64_t changed_at;		/* watch generation when value last changed */
	uint64_t tick;			/* the process's sampling interval it was last updated in */
	uint64_t arrived_ns;		/* CLOCK_MONOTONIC when its last sample was read */
	bool stale;			/* evr_top_model_mark_stale(): not updated since shown */
};

/* A process: the watch's fields (pid, name, state, session, counters), then clrtop's. */
struct evr_top_proc {
	union {
		struct evr_watch_proc w;
		struct { EVR_WATCH_PROC_FIELDS(struct evr_top_counter) };
	};
	uint64_t ticks;			/* sampling intervals seen (batches of samples) */
	uint64_t last_tick_ns;		/* timestamp of the latest batch's first sample */
	uint64_t batch_arrived_ns;	/* CLOCK_MONOTONIC when that sample was read */
	uint64_t shown_tick;		/* ticks when the last snapshot was printed */
	bool stale;			/* evr_top_model_mark_stale(): nothing new since shown */
	uint64_t stale_ms;		/* then: how long since the latest batch arrived */
	/* --counters names the process does not have: said once (evr_top_model_warnings). */
	char warn[2048];
	bool warn_checked;		/* the counter names were checked */
	bool warn_pending;		/* warn holds a warning not yet taken */
	/* Every counter name seen, filtered out or not, as "provider\0name\0" pairs:
	 * what the warnings list. */
	char *seen;
	size_t seen_len, seen_cap;
};

struct evr_top_model_opts {
	uint32_t interval_ms;
	uint64_t ring_size;
	const struct evr_top_filter *filter;	/* borrowed for the model's lifetime */
	enum evr_top_export_format export_fmt;
	FILE *export;			/* borrowed; NULL: no recording */
	/* Borrowed: finds and connects to processes for a confined clrtop
	 * (<evring/sandbox.h>); NULL: clrtop does it itself. */
	struct evr_broker *broker;
};

struct evr_top_model {
	struct evr_top_model_opts o;
	struct evr_watch w;		/* the processes (w.n), their sessions and counters */
	int64_t realtime_offset_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC */
	int export_err;			/* first failure writing the recording */
};

/* Process @i (of m->w.n, in the order they were found). */
static inline struct evr_top_proc *evr_top_model_proc(const struct evr_top_model *m, uint32_t i)
{
	/* The watch allocated it as clrtop's: the watch's fields come first. */
	return (struct evr_top_proc *)m->w.procs[i];
}

/* Return: 0 or -EINVAL (see evr_watch_init()). Free with evr_top_model_fini(). */
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

/**
 * evr_top_proc_complete() - has @p delivered its latest sampling interval whole?
 * The producer writes an interval's samples one at a time, and under load a
 * read can come between two of them: the first sample of an interval starts a
 * new tick, the others then still hold the previous interval. Complete when
 * every counter updated in the previous interval was updated in this one (a
 * counter missing from two intervals in a row is taken as gone).
 */
bool evr_top_proc_complete(const struct evr_top_proc *p);

/**
 * evr_top_model_mark_stale() - set the stale flags before showing the model:
 * never show old values as new. @snapshot (batch mode): a counter is stale when
 * it was not updated since the last snapshot (evr_top_model_shown()), a process
 * when it delivered nothing since. Otherwise (the screen): a counter missing
 * from its process's latest interval, or updated more than two intervals and a
 * second ago, and a process with no interval for that long.
 */
void evr_top_model_mark_stale(struct evr_top_model *m, bool snapshot, uint64_t now_ns);

/* A snapshot of the model was printed: what it showed is no longer new. */
void evr_top_model_shown(struct evr_top_model *m);

/**
 * evr_top_model_warning() - a warning about @p not yet taken (the process has no
 * counters of a provider --counters names, or a provider has no counter of a
 * name it gives, with what it has instead), or NULL. Taking it clears it.
 */
const char *evr_top_model_warning(struct evr_top_proc *p);

/* The counter @name of @provider in @p, or NULL. */
const struct evr_top_counter *evr_top_proc_counter(const struct evr_top_proc *p, const char *provider,
					 const char *name);

/* The counter shown in overview column @col of @p, or NULL. */
const struct evr_top_counter *evr_top_proc_col_counter(const struct evr_top_proc *p, enum evr_top_col col);

/* The overview row of @p. */
void evr_top_proc_row(const struct evr_top_proc *p, struct evr_top_row *ret);

#endif /* EVR_CLRTOP_MODEL_H */
