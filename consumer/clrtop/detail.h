/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The lines of the per-process screen (clrtop -p, or Enter in the overview),
 * shared by the curses view and the batch snapshots so both show the same:
 * one header per process, its providers in the order their first counter
 * arrived, then the counters with value, change and the kind's statistics.
 */
#ifndef EVR_CLRTOP_DETAIL_H
#define EVR_CLRTOP_DETAIL_H

#include <stdbool.h>

#include "model.h"

enum evr_top_line_kind { EVR_TOP_LINE_PROC, EVR_TOP_LINE_PROVIDER, EVR_TOP_LINE_COUNTER, EVR_TOP_LINE_BLANK };

struct evr_top_line {
	enum evr_top_line_kind kind;
	const struct evr_top_proc *p;
	const struct evr_top_counter *c;	/* EVR_TOP_LINE_COUNTER */
	const char *provider;		/* EVR_TOP_LINE_PROVIDER */
};

/**
 * evr_top_detail_lines() - the lines for @procs (@n of them).
 * @by_name: counters by name within a provider, else in arrival order.
 * @ret: malloc'ed array of @ret_n lines, borrowing from the procs: free() it
 * before the model changes.
 * Return: 0 or -ENOMEM.
 */
int evr_top_detail_lines(struct evr_top_proc *const *procs, uint32_t n, bool by_name, struct evr_top_line **ret,
		    uint32_t *ret_n);

/* Column texts of a counter line: value, change since the previous sample
 * ("stale" when the counter is marked so: its value is not new), and the kind's
 * statistics ("min 1.2 max 3.4", "p90 ... p99 ..."). */
void evr_top_counter_texts(const struct evr_top_counter *c, char *value, size_t vlen, char *change,
		      size_t clen, char *stats, size_t slen);

/* The header text of a process line: "PID 1234  minirt  live  23 counters", and
 * "no new samples for 3.2 s" when the process is marked stale. */
void evr_top_proc_header(const struct evr_top_proc *p, char *buf, size_t len);

/* The display name of @c with its unit, as a label: "GC Heap Size (MB)". */
void evr_top_counter_label(const struct evr_top_counter *c, char *buf, size_t len);

/* The overview's columns, in order, with their widths. */
struct evr_top_col_fmt {
	enum evr_top_col col;
	int width;
	bool left;
};

extern const struct evr_top_col_fmt evr_top_overview_cols[];
#define EVR_TOP_NCOLS 9

/* The text of column @col of @r: "-" when the process has no such counter. */
void evr_top_row_cell(const struct evr_top_row *r, enum evr_top_col col, char *buf, size_t len);

#define EVR_TOP_W_LABEL 40
#define EVR_TOP_W_VALUE 14
#define EVR_TOP_W_CHANGE 14

#endif /* EVR_CLRTOP_DETAIL_H */
