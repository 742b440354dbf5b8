// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * clrtop's curses screens. Every frame is drawn in full into curses' virtual
 * screen (erase, then write) and curses sends the terminal only the cells that
 * differ, so a refresh never flickers. Every write is clipped to the window, so
 * any terminal size, down to one cell, draws without overrunning.
 */
#include <curses.h>
#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "detail.h"
#include "view.h"

enum {
	PAIR_TITLE = 1,
	PAIR_HEADER,
	PAIR_UP,
	PAIR_DOWN,
	PAIR_GONE,
	PAIR_PROVIDER,
	PAIR_ERROR,
	PAIR_STATUS,
};

static bool have_colors;

int evr_top_view_open(char *err, size_t errlen)
{
	SCREEN *s;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		snprintf(err, errlen, "the screen needs a terminal; use -b for plain text");
		return -ENOTTY;
	}
	setlocale(LC_ALL, "");
	/* Esc goes back: do not wait a second to see whether it starts a sequence. */
	if (!getenv("ESCDELAY"))
		set_escdelay(25);
	s = newterm(NULL, stdout, stdin);
	if (!s) {
		snprintf(err, errlen, "cannot use terminal type '%s'",
			 getenv("TERM") ? getenv("TERM") : "(unset)");
		return -ENOTTY;
	}
	set_term(s);
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	if (has_colors()) {
		have_colors = true;
		start_color();
		use_default_colors();
		init_pair(PAIR_TITLE, COLOR_CYAN, -1);
		init_pair(PAIR_HEADER, COLOR_BLACK, COLOR_CYAN);
		init_pair(PAIR_UP, COLOR_GREEN, -1);
		init_pair(PAIR_DOWN, COLOR_RED, -1);
		init_pair(PAIR_GONE, COLOR_YELLOW, -1);
		init_pair(PAIR_PROVIDER, COLOR_CYAN, -1);
		init_pair(PAIR_ERROR, COLOR_RED, -1);
		init_pair(PAIR_STATUS, COLOR_BLACK, COLOR_WHITE);
	}
	return 0;
}

void evr_top_view_close(void)
{
	if (!isendwin())
		endwin();
}

static attr_t pair(int p)
{
	return have_colors ? COLOR_PAIR(p) : 0;
}

/* Write @s at (@y, @x), at most @w cells and never past the right edge. */
static void put(int y, int x, int w, attr_t a, const char *s)
{
	int room = COLS - x;

	if (y < 0 || y >= LINES || x < 0 || room <= 0)
		return;
	if (w < 0 || w > room)
		w = room;
	attron(a);
	mvaddnstr(y, x, s, w);
	attroff(a);
}

__attribute__((format(printf, 5, 6)))
static void putf(int y, int x, int w, attr_t a, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	put(y, x, w, a, buf);
}

/* A whole line in attribute @a: the text, then spaces to the right edge. */
static void bar(int y, attr_t a, const char *s)
{
	if (y < 0 || y >= LINES)
		return;
	attron(a);
	mvhline(y, 0, ' ', COLS);
	attroff(a);
	put(y, 0, COLS, a, s);
}

static attr_t change_attr(const struct evr_top_counter *c)
{
	if (c && c->stale)
		return pair(PAIR_GONE);
	if (!c || c->nsamples < 2 || c->value == c->prev)
		return 0;
	return pair(c->value > c->prev ? PAIR_UP : PAIR_DOWN);
}

static void title(const struct evr_top_ui *ui, const char *what)
{
	char clock[16], buf[256];
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	snprintf(buf, sizeof(buf), "clrtop %s  %s  refresh %.3gs", clock, what,
		 ui->interval_ms / 1000.0);
	put(0, 0, COLS, pair(PAIR_TITLE) | A_BOLD, buf);
	if (ui->paused)
		put(0, COLS - 8 > 0 ? COLS - 8 : 0, 8, A_REVERSE | A_BOLD, "[PAUSED]");
}

static void status(const struct evr_top_ui *ui, const char *keys)
{
	if (ui->msg[0])
		bar(LINES - 1, ui->msg_error ? (pair(PAIR_ERROR) | A_REVERSE) : A_REVERSE, ui->msg);
	else
		bar(LINES - 1, have_colors ? pair(PAIR_STATUS) : A_REVERSE, keys);
}

/* ---- overview ---------------------------------------------------------------------------- */

static void draw_cells(int y, const struct evr_top_row *r, bool header, const struct evr_top_ui *ui,
		       attr_t base)
{
	int x = 0;

	for (size_t i = 0; i < EVR_TOP_NCOLS; i++) {
		const struct evr_top_col_fmt *f = &evr_top_overview_cols[i];
		char text[64], cell[80];
		attr_t a = base;

		if (header) {
			/* The sort column carries its direction: v largest first, ^ smallest. */
			bool desc = (f->col == EVR_TOP_COL_PID || f->col == EVR_TOP_COL_NAME) == ui->sort_reverse;

			snprintf(text, sizeof(text), "%s%s", evr_top_col_title(f->col),
				 f->col == ui->sort_col ? (desc ? "v" : "^") : "");
			if (f->col == ui->sort_col)
				a |= A_BOLD | A_UNDERLINE;
		} else {
			evr_top_row_cell(r, f->col, text, sizeof(text));
			if (!(base & A_REVERSE))
				a |= change_attr(evr_top_proc_col_counter(r->ctx, f->col));
		}
		if (f->left)
			snprintf(cell, sizeof(cell), "%-*.*s", f->width, f->width, text);
		else
			snprintf(cell, sizeof(cell), "%*.*s", f->width, f->width, text);
		put(y, x, f->width, a, cell);
		x += f->width + 1;
	}
	if (header) {
		put(y, x, -1, base, "STATE");
		return;
	}
	{
		const struct evr_top_proc *p = r->ctx;
		attr_t a = base;

		if (p->state == EVR_WATCH_EXITED)
			a |= pair(PAIR_GONE) | A_BOLD;
		else if (p->state == EVR_WATCH_FAILED)
			a |= pair(PAIR_ERROR);
		if (p->state == EVR_WATCH_FAILED)
			putf(y, x, -1, a, "failed: %s", p->err);
		else if (p->state == EVR_WATCH_LIVE && !p->ticks)
			put(y, x, -1, a, "waiting for samples");
		else if (p->stale)
			putf(y, x, -1, a | pair(PAIR_GONE), "stale: no samples for %.0f s",
			     p->stale_ms / 1000.0);
		else
			put(y, x, -1, a, evr_watch_state_name(p->state));
	}
}

static struct evr_top_row *sorted_rows(struct evr_top_ui *ui, struct evr_top_model *m)
{
	struct evr_top_row *rows = calloc(m->w.n ? m->w.n : 1, sizeof(*rows));

	if (!rows)
		return NULL;
	for (uint32_t i = 0; i < m->w.n; i++)
		evr_top_proc_row(evr_top_model_proc(m, i), &rows[i]);
	evr_top_rows_sort(rows, m->w.n, ui->sort_col, ui->sort_reverse);
	/* Keep the selection on the same process when the order changes. */
	for (uint32_t i = 0; i < m->w.n; i++)
		if (rows[i].pid == ui->sel_pid)
			ui->sel = (int)i;
	if (ui->sel >= (int)m->w.n)
		ui->sel = (int)m->w.n - 1;
	if (ui->sel < 0)
		ui->sel = 0;
	ui->sel_pid = m->w.n ? rows[ui->sel].pid : 0;
	return rows;
}

static void draw_overview(struct evr_top_ui *ui, struct evr_top_model *m)
{
	int avail = LINES - 3;
	struct evr_top_row *rows;
	char what[64];

	snprintf(what, sizeof(what), "%u process%s", m->w.n, m->w.n == 1 ? "" : "es");
	title(ui, what);
	attron(A_REVERSE);
	mvhline(1, 0, ' ', COLS);
	attroff(A_REVERSE);
	draw_cells(1, NULL, true, ui, A_REVERSE);
	rows = sorted_rows(ui, m);
	if (!rows) {
		put(2, 0, -1, pair(PAIR_ERROR), "out of memory");
		return;
	}
	if (m->w.n == 0)
		put(2, 0, -1, 0, "No process running libevring's agent that you may attach to.");
	if (avail < 1)
		avail = 1;
	if (ui->sel < ui->top)
		ui->top = ui->sel;
	if (ui->sel >= ui->top + avail)
		ui->top = ui->sel - avail + 1;
	for (int i = ui->top; i < (int)m->w.n && i - ui->top < avail; i++) {
		int y = 2 + i - ui->top;
		attr_t a = i == ui->sel ? A_REVERSE : 0;

		if (a) {
			attron(a);
			mvhline(y, 0, ' ', COLS);
			attroff(a);
		}
		draw_cells(y, &rows[i], false, ui, a);
	}
	free(rows);
	status(ui, " q quit  space pause  Up/Down select  Enter details  </> sort  r reverse"
		   "  P cpu M mem N pid T threads H heap  h help");
}

/* ---- per-process screen -------------------------------------------------------------------- */

/* The processes the per-process screen shows: one (drilled in) or all (-p). */
static uint32_t detail_procs(struct evr_top_ui *ui, struct evr_top_model *m, struct evr_top_proc **v)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->w.n; i++)
		if (!ui->in_detail || evr_top_model_proc(m, i)->pid == ui->detail_pid)
			v[n++] = evr_top_model_proc(m, i);
	return n;
}

static void draw_line(int y, const struct evr_top_line *l)
{
	char label[160], value[48], change[48], stats[128], hdr[400];

	switch (l->kind) {
	case EVR_TOP_LINE_BLANK:
		return;
	case EVR_TOP_LINE_PROC:
		evr_top_proc_header(l->p, hdr, sizeof(hdr));
		put(y, 0, -1,
		    A_BOLD | (l->p->state == EVR_WATCH_EXITED ? pair(PAIR_GONE)
			      : l->p->state == EVR_WATCH_FAILED ? pair(PAIR_ERROR) : 0),
		    hdr);
		if (l->p->state == EVR_WATCH_LIVE && !l->p->nctr)
			put(y + 1, 2, -1, 0, "waiting for the first samples...");
		return;
	case EVR_TOP_LINE_PROVIDER:
		put(y, 2, -1, pair(PAIR_PROVIDER) | A_BOLD, l->provider);
		return;
	case EVR_TOP_LINE_COUNTER:
		break;
	}
	evr_top_counter_label(l->c, label, sizeof(label));
	evr_top_counter_texts(l->c, value, sizeof(value), change, sizeof(change), stats, sizeof(stats));
	putf(y, 4, EVR_TOP_W_LABEL, 0, "%-*.*s", EVR_TOP_W_LABEL, EVR_TOP_W_LABEL, label);
	putf(y, 4 + EVR_TOP_W_LABEL + 1, EVR_TOP_W_VALUE, A_BOLD, "%*s", EVR_TOP_W_VALUE, value);
	putf(y, 4 + EVR_TOP_W_LABEL + EVR_TOP_W_VALUE + 2, EVR_TOP_W_CHANGE, change_attr(l->c), "%*s",
	     EVR_TOP_W_CHANGE, change);
	put(y, 4 + EVR_TOP_W_LABEL + EVR_TOP_W_VALUE + EVR_TOP_W_CHANGE + 4, -1, A_DIM, stats);
}

static void draw_detail(struct evr_top_ui *ui, struct evr_top_model *m)
{
	struct evr_top_proc **procs = calloc(m->w.n ? m->w.n : 1, sizeof(*procs));
	struct evr_top_line *lines = NULL;
	uint32_t np, nl = 0;
	int avail = LINES - 3;
	char what[96];

	if (!procs)
		return;
	np = detail_procs(ui, m, procs);
	if (np == 1 && procs[0]->ns_pid)
		snprintf(what, sizeof(what), "PID %d (ns %d) %s", (int)procs[0]->pid,
			 (int)procs[0]->ns_pid, procs[0]->name);
	else if (np == 1)
		snprintf(what, sizeof(what), "PID %d %s", (int)procs[0]->pid, procs[0]->name);
	else
		snprintf(what, sizeof(what), "%u processes", np);
	title(ui, what);
	attron(A_REVERSE);
	mvhline(1, 0, ' ', COLS);
	attroff(A_REVERSE);
	putf(1, 4, -1, A_REVERSE, "%-*s %*s %*s   %s", EVR_TOP_W_LABEL,
	     ui->by_arrival ? "COUNTER (as sent)" : "COUNTER", EVR_TOP_W_VALUE, "VALUE", EVR_TOP_W_CHANGE,
	     "CHANGE", "STATISTICS");
	if (evr_top_detail_lines(procs, np, !ui->by_arrival, &lines, &nl) < 0) {
		put(2, 0, -1, pair(PAIR_ERROR), "out of memory");
		free(procs);
		return;
	}
	if (avail < 1)
		avail = 1;
	if (ui->scroll > (int)nl - avail)
		ui->scroll = (int)nl - avail;
	if (ui->scroll < 0)
		ui->scroll = 0;
	for (int i = ui->scroll; i < (int)nl && i - ui->scroll < avail; i++)
		draw_line(2 + i - ui->scroll, &lines[i]);
	free(lines);
	free(procs);
	status(ui, ui->in_detail
			   ? " q quit  Esc back  space pause  Up/Down scroll  s sort  h help"
			   : " q quit  space pause  Up/Down scroll  s name/arrival order  h help");
}

static void draw_help(void)
{
	static const char *const text[] = {
		"clrtop keys",
		"",
		"  q           quit",
		"  space, p    pause / resume the display (samples are still recorded)",
		"  h, ?        this help (any key closes it)",
		"",
		"Overview:",
		"  Up/Down, j/k, PgUp/PgDn, Home/End   select a process",
		"  Enter       show all counters of the selected process",
		"  < >         sort by the previous / next column",
		"  r           reverse the order",
		"  P M N T H   sort by CPU, memory, pid, threads, GC heap",
		"",
		"Counters of a process:",
		"  Esc, Backspace   back to the overview",
		"  Up/Down, PgUp/PgDn   scroll",
		"  s           counters by name / in the order the process sends them",
		"",
		"Colors: green went up, red went down since the previous sample;",
		"yellow: the process exited.",
	};
	int n = (int)(sizeof(text) / sizeof(text[0]));
	int w = 74, y0 = (LINES - n - 2) / 2, x0 = (COLS - w) / 2;

	if (y0 < 0)
		y0 = 0;
	if (x0 < 0)
		x0 = 0;
	for (int i = -1; i <= n; i++) {
		attron(A_REVERSE);
		if (y0 + i + 1 < LINES)
			mvhline(y0 + i + 1, x0, ' ', w < COLS - x0 ? w : COLS - x0);
		attroff(A_REVERSE);
		if (i >= 0 && i < n)
			put(y0 + i + 1, x0 + 2, w - 4, A_REVERSE | (i == 0 ? A_BOLD : 0), text[i]);
	}
}

void evr_top_view_draw(struct evr_top_ui *ui, struct evr_top_model *m)
{
	erase();
	if (LINES < 3 || COLS < 20) {
		put(0, 0, -1, A_BOLD, "clrtop: window too small");
	} else if (ui->help) {
		draw_help();
	} else if (ui->overview && !ui->in_detail) {
		draw_overview(ui, m);
	} else {
		draw_detail(ui, m);
	}
	refresh();
}

/* ---- keys -------------------------------------------------------------------------------- */

static void sort_by(struct evr_top_ui *ui, enum evr_top_col col)
{
	if (ui->sort_col == col)
		ui->sort_reverse = !ui->sort_reverse;
	else
		ui->sort_reverse = false;
	ui->sort_col = col;
}

static void overview_key(struct evr_top_ui *ui, struct evr_top_model *m, int key)
{
	int page = LINES - 3 > 1 ? LINES - 3 : 1;

	switch (key) {
	case KEY_UP: case 'k': ui->sel--; break;
	case KEY_DOWN: case 'j': ui->sel++; break;
	case KEY_PPAGE: ui->sel -= page; break;
	case KEY_NPAGE: ui->sel += page; break;
	case KEY_HOME: case 'g': ui->sel = 0; break;
	case KEY_END: case 'G': ui->sel = (int)m->w.n - 1; break;
	case '<': ui->sort_col = ui->sort_col ? ui->sort_col - 1 : EVR_TOP_COL_MAX_ - 1; break;
	case '>': ui->sort_col = (ui->sort_col + 1) % EVR_TOP_COL_MAX_; break;
	case 'r': case 'R': ui->sort_reverse = !ui->sort_reverse; break;
	case 'P': sort_by(ui, EVR_TOP_COL_CPU); break;
	case 'M': sort_by(ui, EVR_TOP_COL_WS); break;
	case 'N': sort_by(ui, EVR_TOP_COL_PID); break;
	case 'T': sort_by(ui, EVR_TOP_COL_THREADS); break;
	case 'H': sort_by(ui, EVR_TOP_COL_GCHEAP); break;
	case KEY_ENTER: case '\n': case '\r': {
		struct evr_top_row *rows = sorted_rows(ui, m);

		if (rows && m->w.n) {
			ui->in_detail = true;
			ui->detail_pid = rows[ui->sel].pid;
			ui->scroll = 0;
			for (uint32_t i = 0; i < m->w.n; i++)
				if (evr_top_model_proc(m, i)->pid == ui->detail_pid)
					evr_top_model_proc(m, i)->pinned = true;
		}
		free(rows);
		break;
	}
	default:
		return;
	}
	if (ui->sel >= (int)m->w.n)
		ui->sel = (int)m->w.n - 1;
	if (ui->sel < 0)
		ui->sel = 0;
	/* Selection by index moved: follow it by pid from here on. */
	if (key != '<' && key != '>' && key != 'r' && key != 'R' && m->w.n) {
		struct evr_top_row *rows = sorted_rows(ui, m);
		int sel = ui->sel;

		if (rows) {
			ui->sel_pid = rows[sel < (int)m->w.n ? sel : 0].pid;
			ui->sel = sel;
			free(rows);
		}
	}
}

static void detail_key(struct evr_top_ui *ui, struct evr_top_model *m, int key)
{
	int page = LINES - 3 > 1 ? LINES - 3 : 1;

	switch (key) {
	case KEY_UP: case 'k': ui->scroll--; break;
	case KEY_DOWN: case 'j': ui->scroll++; break;
	case KEY_PPAGE: ui->scroll -= page; break;
	case KEY_NPAGE: ui->scroll += page; break;
	case KEY_HOME: case 'g': ui->scroll = 0; break;
	case KEY_END: case 'G': ui->scroll = 1 << 20; break;
	case 's': case 'S': ui->by_arrival = !ui->by_arrival; break;
	case 27: case KEY_BACKSPACE: case 127: case '\b': case KEY_LEFT:
		if (ui->in_detail) {
			for (uint32_t i = 0; i < m->w.n; i++)
				if (evr_top_model_proc(m, i)->pid == ui->detail_pid)
					evr_top_model_proc(m, i)->pinned = false;
			ui->in_detail = false;
		}
		break;
	default:
		break;
	}
}

bool evr_top_view_key(struct evr_top_ui *ui, struct evr_top_model *m, int key)
{
	if (key == KEY_RESIZE)
		return false;
	ui->msg[0] = '\0';
	if (ui->help) {
		ui->help = false;
		return false;
	}
	switch (key) {
	case 'q': case 'Q':
		return true;
	case ' ': case 'p':
		ui->paused = !ui->paused;
		return false;
	case 'h': case '?': case KEY_F(1):
		ui->help = true;
		return false;
	default:
		break;
	}
	if (ui->overview && !ui->in_detail)
		overview_key(ui, m, key);
	else
		detail_key(ui, m, key);
	return false;
}
