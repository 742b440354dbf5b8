/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* clrtop's curses screens: the overview, the per-process screen, help. */
#ifndef EVR_CLRTOP_VIEW_H
#define EVR_CLRTOP_VIEW_H

#include <stdbool.h>

#include "model.h"

struct evr_top_ui {
	bool overview;			/* started without -p: the overview is home */
	bool in_detail;			/* the overview drilled into detail_pid */
	pid_t detail_pid;
	enum evr_top_col sort_col;
	bool sort_reverse;
	pid_t sel_pid;			/* the selected row, kept across re-sorts */
	int sel;
	int top;			/* first row shown (overview) */
	int scroll;			/* first line shown (per-process screen) */
	bool by_arrival;		/* per-process screen: counters in arrival order, not by name */
	bool paused, help;
	uint32_t interval_ms;
	char msg[256];			/* shown in the status bar until the next key */
	bool msg_error;
};

/* Start curses on the terminal. Return: 0, or -ENOTTY with a reason in @err. */
int evr_top_view_open(char *err, size_t errlen);
void evr_top_view_close(void);

/* Draw the current screen (curses sends only what changed). */
void evr_top_view_draw(struct evr_top_ui *ui, struct evr_top_model *m);

/* Handle one key from getch(). Return: true to quit. */
bool evr_top_view_key(struct evr_top_ui *ui, struct evr_top_model *m, int key);

#endif /* EVR_CLRTOP_VIEW_H */
