// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring report --html: one self-contained page. Inline CSS, plots as inline
 * SVG drawn here (no script needed to see them, nothing fetched from the
 * network), and a few lines of inline script that only add hover read-outs and
 * record script errors into the page (#evr-status), so a headless browser's
 * --dump-dom shows whether the page ran cleanly. Every string from the trace
 * goes through evr_rpt_html_str().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export-internal.h"

#define CHART_W 1100
#define SMALL_W 540
#define CHART_H 220
#define PAD_L 70
#define PAD_R 16
#define PAD_T 28
#define PAD_B 36

static const char *const colors[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
	"#7f7f7f", "#bcbd22",
};
#define NCOLORS (sizeof(colors) / sizeof(colors[0]))

struct series {
	const char *name;
	uint32_t n;
	const double *x, *y;
};

/*
 * Without libm (the evring binary does not link it): rounding for axis ticks
 * only, so values beyond the 64-bit integer range are simply left as they are.
 */
static double round_down(double v)
{
	double t;

	if (v > 9e18 || v < -9e18)
		return v;
	t = (double)(long long)v;
	return t > v ? t - 1 : t;
}

static double round_up(double v)
{
	double t;

	if (v > 9e18 || v < -9e18)
		return v;
	t = (double)(long long)v;
	return t < v ? t + 1 : t;
}

static double absd(double v)
{
	return v < 0 ? -v : v;
}

/* NaN and huge values (a counter may report them) are left out of a plot. */
static bool finite_y(double v)
{
	return v == v && v < 1e300 && v > -1e300;
}

/*
 * 1, 2, 5 times a power of ten, at least @x. Below 1e-300 (a counter's values
 * may differ by a subnormal amount) the powers of ten would underflow to 0 and
 * the second loop never end: such a range is drawn as if it were flat.
 */
static double nice_step(double x)
{
	double p = 1, f;

	if (!(x >= 1e-300) || x > 1e300)
		return 1;
	while (p > x)
		p /= 10;
	while (p * 10 <= x)
		p *= 10;
	f = x / p;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* A short axis label: 1.5k, 20M, 0.25. */
static void fmt_num(double v, char *buf, size_t len)
{
	double a = absd(v);

	if (a >= 1e9)
		snprintf(buf, len, "%.3gG", v / 1e9);
	else if (a >= 1e6)
		snprintf(buf, len, "%.3gM", v / 1e6);
	else if (a >= 1e4)
		snprintf(buf, len, "%.3gk", v / 1e3);
	else
		snprintf(buf, len, "%.4g", v);
}

/*
 * A line chart of @ns series: x in seconds since the trace's first event, y in
 * @unit. Axes with ticks and labels; a legend below when there is more than one series.
 */
static int chart(struct evr_strbuf *sb, const char *title, const char *unit,
		 const struct series *s, uint32_t ns, double xmax, int w)
{
	double ymin = 0, ymax = 0, ystep, xstep;
	int pw = w - PAD_L - PAD_R, ph = CHART_H - PAD_T - PAD_B;
	char a[32];
	int err;

	for (uint32_t k = 0; k < ns; k++)
		for (uint32_t i = 0; i < s[k].n; i++) {
			if (!finite_y(s[k].y[i]))
				continue;
			if (s[k].y[i] < ymin)
				ymin = s[k].y[i];
			if (s[k].y[i] > ymax)
				ymax = s[k].y[i];
		}
	if (ymax <= ymin)
		ymax = ymin + 1;
	ystep = nice_step((ymax - ymin) / 4);
	ymin = round_down(ymin / ystep) * ystep;
	ymax = round_up(ymax / ystep) * ystep;
	if (!(xmax > 0))
		xmax = 1;
	xstep = nice_step(xmax / 8);

#define X(v) (PAD_L + (v) / xmax * pw)
#define Y(v) (PAD_T + ph - ((v) - ymin) / (ymax - ymin) * ph)
	err = evr_strbuf_printf(sb, "<figure class=\"chart\"><svg width=\"%d\" height=\"%d\" "
				"viewBox=\"0 0 %d %d\" role=\"img\"><text class=\"t\" x=\"%d\" "
				"y=\"16\">", w, CHART_H, w, CHART_H, PAD_L);
	if (!err)
		err = evr_rpt_html_cstr(sb, title);
	if (!err && unit && *unit) {
		err = evr_strbuf_append(sb, " (", 2);
		if (!err)
			err = evr_rpt_html_cstr(sb, unit);
		if (!err)
			err = evr_strbuf_append(sb, ")", 1);
	}
	if (!err)
		err = evr_strbuf_append(sb, "</text>", 7);
	/* y grid and labels */
	for (double y = ymin; !err && y <= ymax + ystep / 2; y += ystep) {
		fmt_num(absd(y) < ystep / 1e6 ? 0 : y, a, sizeof(a));
		err = evr_strbuf_printf(sb, "<line class=\"g\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" "
					"y2=\"%.1f\"/><text class=\"yl\" x=\"%d\" y=\"%.1f\">%s</text>",
					PAD_L, PAD_L + pw, Y(y), Y(y), PAD_L - 6, Y(y) + 4, a);
	}
	/* x ticks and labels */
	for (double x = 0; !err && x <= xmax + xstep / 1e6; x += xstep) {
		fmt_num(x, a, sizeof(a));
		err = evr_strbuf_printf(sb, "<line class=\"a\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" "
					"y2=\"%d\"/><text class=\"xl\" x=\"%.1f\" y=\"%d\">%s</text>",
					X(x), X(x), PAD_T + ph, PAD_T + ph + 5, X(x), PAD_T + ph + 18, a);
	}
	if (!err)
		err = evr_strbuf_printf(sb, "<line class=\"a\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>"
					"<line class=\"a\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>"
					"<text class=\"xl\" x=\"%d\" y=\"%d\">time since the first "
					"event (s)</text>", PAD_L, PAD_L + pw, PAD_T + ph, PAD_T + ph,
					PAD_L, PAD_L, PAD_T, PAD_T + ph, PAD_L + pw / 2,
					CHART_H - 4);
	for (uint32_t k = 0; k < ns && !err; k++) {
		const char *col = colors[k % NCOLORS];

		err = evr_strbuf_printf(sb, "<polyline fill=\"none\" stroke=\"%s\" "
					"stroke-width=\"1.5\" data-name=\"", col);
		if (!err)
			err = evr_rpt_html_cstr(sb, s[k].name);
		if (!err)
			err = evr_strbuf_append(sb, "\" points=\"", 10);
		for (uint32_t i = 0; i < s[k].n && !err; i++)
			if (finite_y(s[k].y[i]))
				err = evr_strbuf_printf(sb, "%s%.1f,%.1f", i ? " " : "", X(s[k].x[i]),
							Y(s[k].y[i]));
		if (!err)
			err = evr_strbuf_append(sb, "\"/>", 3);
		/* One sample: a dot, a line needs two. */
		if (!err && s[k].n == 1 && finite_y(s[k].y[0]))
			err = evr_strbuf_printf(sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
						"fill=\"%s\"/>", X(s[k].x[0]), Y(s[k].y[0]), col);
	}
#undef X
#undef Y
	if (!err)
		err = evr_strbuf_append(sb, "</svg>", 6);
	if (!err && ns > 1) {
		err = evr_strbuf_append(sb, "<figcaption>", 12);
		for (uint32_t k = 0; k < ns && !err; k++) {
			err = evr_strbuf_printf(sb, "<span class=\"key\"><i style=\"background:%s\"></i>",
						colors[k % NCOLORS]);
			if (!err)
				err = evr_rpt_html_cstr(sb, s[k].name);
			if (!err)
				err = evr_strbuf_append(sb, "</span> ", 8);
		}
		if (!err)
			err = evr_strbuf_append(sb, "</figcaption>", 13);
	}
	if (!err)
		err = evr_strbuf_append(sb, "</figure>\n", 10);
	return err;
}

static const char style[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:1140px;color:#222}"
	"h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 8px;"
	"border-bottom:1px solid #ccc}"
	"table{border-collapse:collapse;margin:4px 0}td,th{padding:2px 10px;text-align:right;"
	"white-space:nowrap}th{background:#eee}td.l,th.l{text-align:left}"
	"tr:nth-child(even) td{background:#f7f7f7}"
	"dl{display:grid;grid-template-columns:9em 1fr;gap:2px 12px;margin:0}dt{color:#666}"
	"dd{margin:0}.warn{color:#a40}"
	".chart{margin:8px 0;display:inline-block}.chart svg{background:#fff;"
	"border:1px solid #ddd}.t{font-weight:600;font-size:13px}"
	".g{stroke:#e4e4e4}.a{stroke:#444}.yl{text-anchor:end;font-size:11px}"
	".xl{text-anchor:middle;font-size:11px}.lg{font-size:11px}"
	"figcaption{font-size:12px;max-width:1100px}.key{margin-right:10px}"
	".key i{display:inline-block;width:10px;height:10px;margin-right:4px}"
	"#evr-status{color:#888;font-size:11px;float:right}"
	"#evr-tip{position:fixed;pointer-events:none;background:#fffbe6;border:1px solid #aaa;"
	"padding:2px 6px;font-size:12px;display:none}";

/*
 * Script errors land in #evr-status (data-errors counts them); the status says
 * "ok" once the page has loaded without one. Hover over a line shows its name.
 */
static const char script[] =
	"(function(){var st=document.getElementById('evr-status'),n=0;"
	"function bad(m){n++;st.setAttribute('data-errors',String(n));"
	"var d=document.createElement('div');d.className='evr-error';d.textContent=m;"
	"st.appendChild(d);}"
	"window.addEventListener('error',function(e){bad('error: '+e.message);});"
	"window.addEventListener('unhandledrejection',function(e){bad('rejection: '+e.reason);});"
	"window.addEventListener('load',function(){"
	"var tip=document.getElementById('evr-tip');"
	"document.querySelectorAll('polyline[data-name]').forEach(function(p){"
	"p.addEventListener('mousemove',function(e){tip.textContent=p.getAttribute('data-name');"
	"tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';"
	"tip.style.display='block';});"
	"p.addEventListener('mouseleave',function(){tip.style.display='none';});});"
	"if(!n){st.setAttribute('data-status','ok');"
	"st.firstChild.textContent='';}});})();";

static int td(struct evr_strbuf *sb, const char *cls, const char *s)
{
	int err = evr_strbuf_printf(sb, "<td%s>", cls ? " class=\"l\"" : "");

	if (!err)
		err = evr_rpt_html_cstr(sb, s);
	return err ? err : evr_strbuf_append(sb, "</td>", 5);
}

static int head_section(struct evr_strbuf *sb, const struct evr_rpt *m, const char *path)
{
	uint64_t span = evr_rpt_span(m);
	struct evr_strbuf cmd = { 0 };
	char b[64];
	int err;

	err = evr_strbuf_append(sb, "<h1>evring report: ", 19);
	if (!err)
		err = evr_rpt_html_cstr(sb, path);
	if (!err)
		err = evr_strbuf_append(sb, "</h1>\n<dl>", 10);
	if (!err && m->proc) {
		err = evr_rpt_command(m, &cmd);
		if (!err)
			err = evr_strbuf_printf(sb, "<dt>process</dt><dd>pid %" PRIu32 ", <code>",
						m->proc->pid);
		if (!err)
			err = evr_rpt_html_str(sb, cmd.buf ? cmd.buf : "", cmd.len);
		if (!err)
			err = evr_strbuf_append(sb, "</code></dd><dt>host</dt><dd>", 29);
		if (!err)
			err = evr_rpt_html_cstr(sb, m->proc->hostname ? m->proc->hostname : "?");
		if (!err)
			err = evr_strbuf_append(sb, "</dd>", 5);
	}
	free(cmd.buf);
	if (!err && m->sess) {
		err = evr_strbuf_append(sb, "<dt>providers</dt><dd><code>", 28);
		if (!err)
			err = evr_rpt_html_cstr(sb, m->sess->providers && *m->sess->providers
							    ? m->sess->providers : "*");
		if (!err)
			err = evr_strbuf_append(sb, "</code></dd>", 12);
	}
	if (!err)
		err = evr_strbuf_printf(sb, "<dt>time span</dt><dd>%.3f s from first to last event"
					"</dd><dt>events</dt><dd>%" PRIu64 " (%s/s)</dd><dt>lost</dt>"
					"<dd>%" PRIu64 " (%.2f%% of events)</dd>",
					(double)(m->last_ts - m->first_ts) / 1e9, m->events,
					evr_fmt_count((double)m->events * 1e9 / (double)span, b,
						      sizeof(b)), m->lost,
					m->events + m->lost ? 100.0 * (double)m->lost /
						(double)(m->events + m->lost) : 0.0);
	if (!err && m->damaged)
		err = evr_strbuf_printf(sb, "<dt>damaged</dt><dd class=\"warn\">%" PRIu64 " events the "
					"recording stored are missing from the file (damage, not "
					"loss)</dd>", m->damaged);
	if (!err && m->st.truncated) {
		err = evr_strbuf_printf(sb, "<dt>file</dt><dd class=\"warn\">truncated after byte %"
					PRIu64 " (", m->st.bytes);
		if (!err)
			err = evr_rpt_html_cstr(sb, m->st.truncated_why);
		if (!err)
			err = evr_strbuf_append(sb, "): reported up to its last complete chunk</dd>", 46);
	}
	return err ? err : evr_strbuf_append(sb, "</dl>\n", 6);
}

static int count_row(struct evr_strbuf *sb, const char *name, uint64_t n, uint64_t span,
		     uint64_t total)
{
	int err = evr_strbuf_append(sb, "<tr>", 4);

	if (!err)
		err = td(sb, "l", name);
	if (!err)
		err = evr_strbuf_printf(sb, "<td>%" PRIu64 "</td><td>%.1f</td><td>%.2f%%</td></tr>\n",
					n, (double)n * 1e9 / (double)span,
					total ? 100.0 * (double)n / (double)total : 0.0);
	return err;
}

static int tables(struct evr_strbuf *sb, const struct evr_rpt *m, const struct evr_trace_reader *r)
{
	uint64_t span = evr_rpt_span(m);
	char buf[512], a[4][32];
	int err;

	err = evr_strbuf_append(sb, "<h2>Events per provider</h2><table><tr><th class=\"l\">"
				"provider</th><th>events</th><th>per second</th><th>share</th></tr>\n",
				-1 + sizeof("<h2>Events per provider</h2><table><tr><th class=\"l\">"
					    "provider</th><th>events</th><th>per second</th>"
					    "<th>share</th></tr>\n"));
	for (uint32_t i = 0; i < m->nproviders && !err; i++)
		err = count_row(sb, m->providers[i].name, m->providers[i].count, span, m->events);
	if (!err)
		err = evr_strbuf_printf(sb, "%s", "</table><h2>Events per type</h2><table><tr>"
					"<th class=\"l\">provider/event</th><th>events</th>"
					"<th>per second</th><th>share</th></tr>\n");
	for (uint32_t i = 0; i < m->nevents && !err; i++) {
		const struct evr_rpt_event *e = m->events_v[i];

		if (e->schema)
			snprintf(buf, sizeof(buf), "%s/%s", e->schema->provider, e->schema->name);
		else
			snprintf(buf, sizeof(buf), "?/rid %" PRIu32, e->rid);
		err = count_row(sb, buf, e->count, span, m->events);
	}
	if (!err)
		err = evr_strbuf_printf(sb, "%s", "</table><h2>Lost events per CPU (ring)</h2><table>"
					"<tr><th class=\"l\">cpu</th><th>events</th><th>lost</th>"
					"<th>lost %</th></tr>\n");
	for (uint32_t i = 0; i < m->nr_rings && !err; i++) {
		uint64_t e = m->ring_events[i], l = m->ring_lost[i];

		if (e || l)
			err = evr_strbuf_printf(sb, "<tr><td class=\"l\">%" PRIu32 "</td><td>%" PRIu64
						"</td><td>%" PRIu64 "</td><td>%.2f%%</td></tr>\n", i, e,
						l, e + l ? 100.0 * (double)l / (double)(e + l) : 0.0);
	}
	if (!err)
		err = evr_strbuf_printf(sb, "<tr><th class=\"l\">total</th><th>%" PRIu64 "</th><th>%"
					PRIu64 "</th><th>%.2f%%</th></tr></table>\n", m->events,
					m->lost + m->damaged, m->events + m->lost + m->damaged ?
					100.0 * (double)(m->lost + m->damaged) /
						(double)(m->events + m->lost + m->damaged) : 0.0);
	if (!err && m->ncounters)
		err = evr_strbuf_printf(sb, "%s", "<h2>Counters</h2><table><tr><th class=\"l\">"
					"provider</th><th class=\"l\">counter</th><th class=\"l\">kind"
					"</th><th class=\"l\">unit</th><th>samples</th><th>min</th>"
					"<th>mean</th><th>max</th><th>last</th></tr>\n");
	for (uint32_t i = 0; i < m->ncounters && !err; i++) {
		const struct evr_rpt_counter *c = &m->counters[i];

		snprintf(a[0], sizeof(a[0]), "%.6g", c->min);
		snprintf(a[1], sizeof(a[1]), "%.6g", c->sum / (double)c->samples);
		snprintf(a[2], sizeof(a[2]), "%.6g", c->max);
		snprintf(a[3], sizeof(a[3]), "%.6g", c->last);
		err = evr_strbuf_append(sb, "<tr>", 4);
		if (!err)
			err = td(sb, "l", c->provider);
		if (!err)
			err = td(sb, "l", c->display);
		if (!err)
			err = td(sb, "l", evr_sample_kind_name(c->kind));
		if (!err)
			err = td(sb, "l", c->unit);
		if (!err)
			err = evr_strbuf_printf(sb, "<td>%" PRIu64 "</td><td>%s</td><td>%s</td>"
						"<td>%s</td><td>%s</td></tr>\n", c->samples, a[0], a[1],
						a[2], a[3]);
	}
	if (!err && m->ncounters)
		err = evr_strbuf_append(sb, "</table>\n", 9);
	if (!err)
		err = evr_strbuf_printf(sb, "<h2>Busiest threads</h2><table><tr><th>tid</th>"
					"<th class=\"l\">name</th><th>events</th><th>share</th></tr>\n");
	for (uint32_t i = 0; i < m->nthreads && i < 20 && !err; i++) {
		const struct evr_rpt_thread *t = m->threads_v[i];
		const char *name = evr_trace_reader_thread_name(r, t->tid);

		err = evr_strbuf_printf(sb, "<tr><td>%" PRIu32 "</td>", t->tid);
		if (!err)
			err = td(sb, "l", name ? name : "");
		if (!err)
			err = evr_strbuf_printf(sb, "<td>%" PRIu64 "</td><td>%.2f%%</td></tr>\n",
						t->count, m->events ? 100.0 * (double)t->count /
							(double)m->events : 0.0);
	}
	return err ? err : evr_strbuf_append(sb, "</table>\n", 9);
}

#define RATE_POINTS 64		/* buckets shown: coarser than the model's, less noisy */

/* Event rates per provider over time, from the model's buckets. */
static int rate_chart(struct evr_strbuf *sb, const struct evr_rpt *m)
{
	uint64_t span = evr_rpt_span(m), bns = m->bucket_ns ? m->bucket_ns : 1;
	uint32_t nb = (uint32_t)((m->last_ts - m->first_ts) / bns) + 1;
	uint32_t ns = m->nproviders + (m->lost ? 1 : 0), merge, np;
	struct series *s = calloc(ns ? ns : 1, sizeof(*s));
	double *x = malloc(RATE_POINTS * sizeof(*x));
	double *y = malloc((size_t)RATE_POINTS * (ns ? ns : 1) * sizeof(*y));
	double bs;
	char title[128];
	int err = -ENOMEM;

	if (nb > EVR_RPT_BUCKETS)
		nb = EVR_RPT_BUCKETS;
	merge = (nb + RATE_POINTS - 1) / RATE_POINTS;
	np = (nb + merge - 1) / merge;
	bs = (double)bns * merge / 1e9;
	if (!s || !x || !y)
		goto out;
	for (uint32_t i = 0; i < np; i++)
		x[i] = ((double)i + 0.5) * bs;	/* the middle of the bucket */
	for (uint32_t k = 0; k < ns; k++) {
		const uint64_t *b = k < m->nproviders ? m->providers[k].buckets : m->lost_buckets;
		double *yk = y + (size_t)k * RATE_POINTS;

		s[k].name = k < m->nproviders ? m->providers[k].name : "lost events";
		s[k].n = np;
		s[k].x = x;
		s[k].y = yk;
		for (uint32_t i = 0; i < np; i++) {
			uint64_t sum = 0;

			for (uint32_t j = i * merge; j < (i + 1) * merge && j < nb; j++)
				sum += b[j];
			yk[i] = (double)sum / bs;
		}
	}
	snprintf(title, sizeof(title), "Events per second, per provider (buckets of %.3g s)", bs);
	err = chart(sb, title, "events/s", s, ns, (double)span / 1e9, CHART_W);
out:
	free(s);
	free(x);
	free(y);
	return err;
}

static int counter_charts(struct evr_strbuf *sb, const struct evr_rpt *m)
{
	double *x = malloc(EVR_RPT_POINTS * sizeof(*x)), *y = malloc(EVR_RPT_POINTS * sizeof(*y));
	struct evr_strbuf title = { 0 };
	int err = x && y ? 0 : -ENOMEM;

	for (uint32_t i = 0; i < m->ncounters && !err; i++) {
		const struct evr_rpt_counter *c = &m->counters[i];
		struct series s = { .name = c->display, .n = c->npoints, .x = x, .y = y };

		for (uint32_t k = 0; k < c->npoints; k++) {
			x[k] = (double)(c->points[k].ts_ns - m->first_ts) / 1e9;
			y[k] = c->points[k].value;
		}
		title.len = 0;
		err = evr_strbuf_printf(&title, "%s: %s [%s]", c->provider, c->display,
					evr_sample_kind_name(c->kind));
		if (!err)
			err = chart(sb, title.buf, c->unit, &s, 1, (double)evr_rpt_span(m) / 1e9,
				    SMALL_W);
	}
	free(title.buf);
	free(x);
	free(y);
	return err;
}

int evr_rpt_html(const struct evr_rpt *m, const struct evr_trace_reader *r, const char *path,
		 struct evr_strbuf *out)
{
	int err;

	err = evr_strbuf_append(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
				"<meta name=\"viewport\" content=\"width=device-width\">"
				"<title>evring report: ", -1 + sizeof("<!DOCTYPE html>\n<html lang=\"en\">"
				"<head><meta charset=\"utf-8\"><meta name=\"viewport\" "
				"content=\"width=device-width\"><title>evring report: "));
	if (!err)
		err = evr_rpt_html_cstr(out, path);
	if (!err)
		err = evr_strbuf_printf(out, "</title><style>%s</style></head><body>\n"
					"<div id=\"evr-tip\"></div>\n<div id=\"evr-status\" "
					"data-errors=\"0\"><span>page script did not run</span></div>\n",
					style);
	/* The error recorder first, so that it sees errors of everything after it. */
	if (!err)
		err = evr_strbuf_printf(out, "<script>%s</script>\n", script);
	if (!err)
		err = head_section(out, m, path);
	if (!err)
		err = evr_strbuf_append(out, "<h2>Event rates</h2>\n", 21);
	if (!err && m->events + m->lost)
		err = rate_chart(out, m);
	if (!err && m->ncounters)
		err = evr_strbuf_append(out, "<h2>Counters over time</h2>\n", 28);
	if (!err)
		err = counter_charts(out, m);
	if (!err)
		err = tables(out, m, r);
	if (!err)
		err = evr_strbuf_printf(out, "%s", "</body></html>\n");
	return err;
}
