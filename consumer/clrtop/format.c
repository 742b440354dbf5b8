// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * clrtop's numbers: values with units for people, option values, and the
 * overview's sort order. Pure functions; see clrtop.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/consumer.h>

#include "clrtop.h"

/* Whole part with a comma every three digits; @v >= 0 and < 1e15. */
static void fmt_grouped(char *buf, size_t len, double v, int decimals)
{
	char digits[32], frac[16] = "";
	unsigned long long whole;
	double scale = decimals == 2 ? 100.0 : decimals == 1 ? 10.0 : 1.0;
	double r = round(v * scale) / scale;
	size_t nd, o = 0;

	whole = (unsigned long long)floor(r);
	if (decimals > 0)
		snprintf(frac, sizeof(frac), ".%0*llu", decimals,
			 (unsigned long long)llround((r - (double)whole) * scale));
	nd = (size_t)snprintf(digits, sizeof(digits), "%llu", whole);
	for (size_t i = 0; i < nd && o + 2 < len; i++) {
		if (i && (nd - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	if (o < len)
		snprintf(buf + o, len - o, "%s", frac);
}

void evr_top_fmt_number(char *buf, size_t len, double v)
{
	double a = fabs(v);
	const char *sign = v < 0 ? "-" : "";
	char body[48];
	int decimals;

	if (!len)
		return;
	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return;
	}
	if (a >= 1e15) {
		snprintf(buf, len, "%.3g", v);
		return;
	}
	if (fabs(a - round(a)) < 1e-9 * (a > 1 ? a : 1))
		decimals = 0;
	else if (a < 10)
		decimals = 2;
	else if (a < 1e6)
		decimals = 1;
	else
		decimals = 0;
	fmt_grouped(body, sizeof(body), a, decimals);
	/* "-0" and "-0.00" read as noise: a value that rounds to zero is zero. */
	if (!strcmp(body, "0") || !strcmp(body, "0.00") || !strcmp(body, "0.0"))
		sign = "";
	snprintf(buf, len, "%s%s", sign, body);
}

/* Binary multiple of a byte unit, 0 when @unit is not one. */
static double byte_scale(const char *unit)
{
	static const struct { const char *u; double s; } t[] = {
		{ "B", 1.0 }, { "KB", 1024.0 }, { "KiB", 1024.0 }, { "MB", 1048576.0 },
		{ "MiB", 1048576.0 }, { "GB", 1073741824.0 }, { "GiB", 1073741824.0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(unit, t[i].u))
			return t[i].s;
	return 0;
}

/* Nanoseconds in one @unit, 0 when it is not a time unit. */
static double time_scale(const char *unit)
{
	if (!strcmp(unit, "ns"))
		return 1.0;
	if (!strcmp(unit, "us") || !strcmp(unit, "\xc2\xb5s"))
		return 1e3;
	if (!strcmp(unit, "ms"))
		return 1e6;
	if (!strcmp(unit, "s"))
		return 1e9;
	return 0;
}

/* @a >= 0: three significant digits at most, no thousands past 999.5. */
static void fmt_short(char *buf, size_t len, double a)
{
	if (a == 0 || a >= 100)
		snprintf(buf, len, "%.0f", a);
	else if (a >= 10)
		snprintf(buf, len, "%.1f", a);
	else
		snprintf(buf, len, "%.2f", a);
}

void evr_top_fmt_value(char *buf, size_t len, double v, const char *unit, uint32_t kind, bool signed_)
{
	static const char *const bunits[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	static const char *const tunits[] = { "ns", "us", "ms", "s" };
	const char *per = kind == EVR_SAMPLE_RATE ? "/s" : "";
	const char *sign = v < 0 ? "-" : (signed_ && v > 0 ? "+" : "");
	double a = fabs(v), s;
	char num[48];

	if (!len)
		return;
	if (!unit)
		unit = "";
	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return;
	}
	/* "1/s" (a count per second) is how some providers spell a plain rate:
	 * the kind already says per second. */
	if (!strcmp(unit, "1/s") || !strcmp(unit, "/s")) {
		unit = "";
		per = "/s";
	}
	if ((s = byte_scale(unit)) > 0) {
		size_t i = 0;

		a *= s;
		while (a >= 1023.5 && i + 1 < sizeof(bunits) / sizeof(bunits[0])) {
			a /= 1024.0;
			i++;
		}
		if (i == 0) {
			evr_top_fmt_number(num, sizeof(num), round(a));
		} else {
			fmt_short(num, sizeof(num), a);
		}
		if (!strcmp(num, "0") || !strcmp(num, "0.00"))
			sign = "";
		snprintf(buf, len, "%s%s %s%s", sign, num, bunits[i], per);
		return;
	}
	if ((s = time_scale(unit)) > 0) {
		size_t i = 0;

		a *= s;
		while (a >= 999.5 && i + 1 < sizeof(tunits) / sizeof(tunits[0])) {
			a /= 1000.0;
			i++;
		}
		if (i + 1 == sizeof(tunits) / sizeof(tunits[0]))
			evr_top_fmt_number(num, sizeof(num), a);
		else
			fmt_short(num, sizeof(num), a);
		if (!strcmp(num, "0") || !strcmp(num, "0.00"))
			sign = "";
		snprintf(buf, len, "%s%s %s%s", sign, num, tunits[i], per);
		return;
	}
	evr_top_fmt_number(num, sizeof(num), a);
	if (!strcmp(num, "0") || !strcmp(num, "0.00"))
		sign = "";
	if (!strcmp(unit, "%"))
		snprintf(buf, len, "%s%s%%", sign, num);
	else if (*unit)
		snprintf(buf, len, "%s%s %s%s", sign, num, unit, per);
	else
		snprintf(buf, len, "%s%s%s", sign, num, per);
}

int evr_top_parse_seconds(const char *s, uint32_t min_ms, uint32_t max_ms, uint32_t *ret_ms)
{
	uint64_t ns;
	int ret;

	if (!s || !ret_ms)
		return -EINVAL;
	/* The forms every evring tool takes: 0.5, 2s, 250ms, 00:00:01 (as dotnet's). */
	ret = evr_duration_parse(s, &ns);
	if (ret < 0)
		return ret;
	if (ns < (uint64_t)min_ms * 1000000u || ns > (uint64_t)max_ms * 1000000u)
		return -ERANGE;
	*ret_ms = (uint32_t)((ns + 500000u) / 1000000u);
	return 0;
}

/* ---- overview rows ---------------------------------------------------------------------- */

const char *evr_top_col_title(enum evr_top_col col)
{
	static const char *const t[EVR_TOP_COL_MAX_] = {
		[EVR_TOP_COL_PID] = "PID", [EVR_TOP_COL_NAME] = "NAME", [EVR_TOP_COL_CPU] = "CPU%",
		[EVR_TOP_COL_WS] = "MEM", [EVR_TOP_COL_THREADS] = "THR", [EVR_TOP_COL_GCHEAP] = "GC HEAP",
		[EVR_TOP_COL_GEN0] = "GEN0/s", [EVR_TOP_COL_TPQUEUE] = "TP QUEUE", [EVR_TOP_COL_EXC] = "EXC/s",
	};

	return (unsigned int)col < EVR_TOP_COL_MAX_ ? t[col] : "?";
}

/* qsort has no context argument: the order is passed in a small struct per call
 * by sorting an array of these instead. */
struct sort_item {
	struct evr_top_row row;
	enum evr_top_col col;
	bool reverse;
};

static int cmp_items(const void *pa, const void *pb)
{
	const struct sort_item *a = pa, *b = pb;
	enum evr_top_col col = a->col;
	int r = 0;

	if (col == EVR_TOP_COL_PID) {
		r = (a->row.pid > b->row.pid) - (a->row.pid < b->row.pid);
		return a->reverse ? -r : r;
	}
	if (col == EVR_TOP_COL_NAME) {
		r = strcmp(a->row.name, b->row.name);
		r = a->reverse ? -r : r;
	} else if (a->row.has[col] != b->row.has[col]) {
		return a->row.has[col] ? -1 : 1;	/* missing values last, either way */
	} else if (a->row.has[col]) {
		double x = a->row.val[col], y = b->row.val[col];

		r = (x < y) - (x > y);	/* largest first */
		r = a->reverse ? -r : r;
	}
	if (r)
		return r;
	return (a->row.pid > b->row.pid) - (a->row.pid < b->row.pid);
}

void evr_top_rows_sort(struct evr_top_row *rows, size_t n, enum evr_top_col col, bool reverse)
{
	struct sort_item *items;

	if (n < 2 || (unsigned int)col >= EVR_TOP_COL_MAX_)
		return;
	items = malloc(n * sizeof(*items));
	if (!items) {
		/* Out of memory: the rows stay as they were, which a viewer survives. */
		return;
	}
	for (size_t i = 0; i < n; i++)
		items[i] = (struct sort_item){ .row = rows[i], .col = col, .reverse = reverse };
	qsort(items, n, sizeof(*items), cmp_items);
	for (size_t i = 0; i < n; i++)
		rows[i] = items[i].row;
	free(items);
}
