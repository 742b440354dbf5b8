// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The browsable pages: the processes (/), one process (/ui/processes/PID: its
 * sessions, threads, links to traces and streams), its counters with their
 * history plotted (/ui/processes/PID/counters), and its thread stacks
 * (/ui/processes/PID/stacks: a snapshot, as `evring stacks` shows it).
 *
 * Each page is complete as the server renders it (values, tables, the SVG
 * plots of the history the hub keeps), so it reads right with scripts off.
 * One script of our own (/ui/app.js, no CDN, no inline script: the pages'
 * Content-Security-Policy allows only 'self') refreshes the counters page from
 * /processes/PID/counters every interval and redraws the plots; it reports
 * its state in #evr-status (data-status, data-errors, data-updates), which the
 * browser test reads back. Everything from a process goes through
 * evr_rpt_html_cstr() (escaped, invalid UTF-8 replaced).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <evring/export.h>

#include "http.h"

#define PLOT_W 320
#define PLOT_H 90
#define PLOT_POINTS 120			/* history points plotted */
#define AXIS_H 14			/* below the plot: its time scale */

static const char style_css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}\n"
	"h1{font-size:1.4em;margin:0 0 .3em}h2{font-size:1.1em;margin:1.2em 0 .4em}\n"
	"nav a{margin-right:1em}a{color:#0b57d0}\n"
	"table{border-collapse:collapse;background:#fff}\n"
	"td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\n"
	"td.l,th.l{text-align:left}th{background:#f0f0f0}\n"
	".muted{color:#777}.warn{color:#b00}\n"
	".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:10px}\n"
	"figure{margin:0;background:#fff;border:1px solid #ddd;padding:6px}\n"
	"figcaption{font-size:12px;display:flex;justify-content:space-between}\n"
	"figcaption b{font-weight:600}svg{display:block}\n"
	"svg .grid{stroke:#eee}svg .line{fill:none;stroke:#1a73e8;stroke-width:1.5}\n"
	"svg .area{fill:#1a73e8;fill-opacity:.08;stroke:none}\n"
	"svg .axis{font-size:10px;fill:#666}svg .tick{stroke:#ccc}\n"
	"#evr-status{font-size:12px;color:#777;margin-top:1em}\n"
	"pre{background:#fff;border:1px solid #ddd;padding:8px}\n";

/*
 * The counters page's refresher: fetch the counters with their history every
 * interval and redraw table values and plots in place. Errors are counted into
 * #evr-status rather than thrown, so a headless browser's DOM dump tells.
 */
static const char app_js[] =
	"'use strict';\n"
	"(function () {\n"
	"  var st = document.getElementById('evr-status');\n"
	"  var errors = 0, updates = 0;\n"
	"  function status(s, msg) {\n"
	"    if (!st) return;\n"
	"    st.setAttribute('data-status', s); st.setAttribute('data-errors', errors);\n"
	"    st.setAttribute('data-updates', updates); st.textContent = msg;\n"
	"  }\n"
	"  window.addEventListener('error', function (e) { errors++; status('error', 'script "
	"error: ' + e.message); });\n"
	"  function fmt(v) {\n"
	"    if (v === null || v === undefined) return '-';\n"
	"    var a = Math.abs(v);\n"
	"    if (a >= 1e9) return (v / 1e9).toPrecision(4) + 'G';\n"
	"    if (a >= 1e6) return (v / 1e6).toPrecision(4) + 'M';\n"
	"    if (a >= 1e4) return (v / 1e3).toPrecision(4) + 'k';\n"
	"    return String(Number.isInteger(v) ? v : parseFloat(v.toPrecision(4)));\n"
	"  }\n"
	"  function span(sec) {\n"
	"    return sec >= 120 ? (sec / 60).toFixed(sec >= 600 ? 0 : 1) + ' min' : "
	"sec.toFixed(sec >= 10 ? 0 : 1) + ' s';\n"
	"  }\n"
	"  function plot(svg, pts) {\n"
	"    var w = +svg.getAttribute('width'), h = +svg.getAttribute('data-h');\n"
	"    var line = svg.querySelector('.line'), area = svg.querySelector('.area');\n"
	"    if (!line || pts.length === 0) return;\n"
	"    var lo = Infinity, hi = -Infinity, t0 = pts[0][0], t1 = pts[pts.length - 1][0];\n"
	"    pts.forEach(function (p) { if (p[1] !== null) { lo = Math.min(lo, p[1]); "
	"hi = Math.max(hi, p[1]); } });\n"
	"    if (!isFinite(lo)) return;\n"
	"    if (hi === lo) { hi = lo + 1; lo = lo - 1; }\n"
	"    var s = pts.map(function (p) {\n"
	"      var x = t1 > t0 ? (p[0] - t0) / (t1 - t0) * (w - 4) + 2 : w / 2;\n"
	"      var y = h - 2 - ((p[1] === null ? lo : p[1]) - lo) / (hi - lo) * (h - 4);\n"
	"      return x.toFixed(1) + ',' + y.toFixed(1);\n"
	"    }).join(' ');\n"
	"    line.setAttribute('points', s);\n"
	"    function label(c, text) { var e = svg.querySelector('.' + c); "
	"if (e) e.textContent = text; }\n"
	"    label('ymax', fmt(hi)); label('ymin', fmt(lo));\n"
	"    label('t0', '\\u2212' + span((t1 - t0) / 1e9));\n"
	"    if (area) area.setAttribute('points', '2,' + (h - 2) + ' ' + s + ' ' + (w - 2) + ',' + "
	"(h - 2));\n"
	"  }\n"
	"  var root = document.getElementById('evr-counters');\n"
	"  if (!root) { status('ok', ''); return; }\n"
	"  var pid = root.getAttribute('data-pid');\n"
	"  var ms = Math.max(500, +root.getAttribute('data-interval') || 1000);\n"
	"  function refresh() {\n"
	"    fetch('/processes/' + pid + '/counters?history=" "120', {cache: 'no-store'})\n"
	"      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); "
	"return r.json(); })\n"
	"      .then(function (d) {\n"
	"        d.counters.forEach(function (c) {\n"
	"          var id = c.provider + '/' + c.name;\n"
	"          var cell = document.querySelector('[data-value=\"' + CSS.escape(id) + '\"]');\n"
	"          if (cell) cell.textContent = fmt(c.value);\n"
	"          var svg = document.querySelector('svg[data-counter=\"' + CSS.escape(id) + "
	"'\"]');\n"
	"          if (svg && c.history) plot(svg, c.history);\n"
	"        });\n"
	"        updates++;\n"
	"        status('ok', 'updated ' + new Date().toLocaleTimeString() + ' (' + updates + "
	"')');\n"
	"      })\n"
	"      .catch(function (e) { errors++; status('error', String(e)); })\n"
	"      .then(function () { setTimeout(refresh, ms); });\n"
	"  }\n"
	"  status('ok', 'live');\n"
	"  setTimeout(refresh, ms);\n"
	"})();\n";

enum MHD_Result evr_mon_page_asset(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	const char *name = args->asset;

	if (!strcmp(name, "app.js"))
		return evr_mon_send_buf(q, 200, "text/javascript; charset=utf-8", app_js,
					sizeof(app_js) - 1);
	if (!strcmp(name, "style.css"))
		return evr_mon_send_buf(q, 200, "text/css; charset=utf-8", style_css,
					sizeof(style_css) - 1);
	return evr_mon_send_problem(q, 404, "Not Found", 0, "no page asset '%s'", name);
}

/* ---- building pages ------------------------------------------------------------------ */

static int head(struct evr_strbuf *sb, const char *title)
{
	int err = evr_strbuf_printf(sb, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
				    "charset=\"utf-8\"><title>");

	if (!err)
		err = evr_rpt_html_cstr(sb, title);
	if (!err)
		err = evr_strbuf_printf(sb, " - evring monitor</title>"
					"<link rel=\"stylesheet\" href=\"/ui/style.css\"></head>\n"
					"<body><nav><a href=\"/\">processes</a></nav>\n");
	return err;
}

static int foot(struct evr_strbuf *sb)
{
	/* The nav is pages only; what programs read (JSON, Prometheus text) is said as such. */
	return evr_strbuf_printf(sb, "<p class=\"muted\">For programs: <a href=\"/info\">/info"
				 "</a> (JSON: the routes), <a href=\"/metrics\">/metrics</a> "
				 "(Prometheus text).</p>\n"
				 "<div id=\"evr-status\" data-status=\"ok\" data-errors=\"0\" "
				 "data-updates=\"0\"></div>\n<script src=\"/ui/app.js\"></script>"
				 "</body></html>\n");
}

static enum MHD_Result send_page(struct evr_mon_req *q, unsigned status, struct evr_strbuf *sb,
				 int err)
{
	enum MHD_Result ret;

	if (err) {
		free(sb->buf);
		return evr_mon_send_problem(q, 500, "Internal Server Error", -ENOMEM, "out of memory");
	}
	ret = evr_mon_send_buf(q, status, "text/html; charset=utf-8", sb->buf, sb->len);
	free(sb->buf);
	return ret;
}

static void fmt_num(double v, char *buf, size_t len)
{
	double a = fabs(v);

	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (a >= 1e9)
		snprintf(buf, len, "%.4gG", v / 1e9);
	else if (a >= 1e6)
		snprintf(buf, len, "%.4gM", v / 1e6);
	else if (a >= 1e4)
		snprintf(buf, len, "%.4gk", v / 1e3);
	else if (v == floor(v))
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.4g", v);
}

/* ---- the index ---------------------------------------------------------------------- */

enum MHD_Result evr_mon_page_index(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	struct evr_mon_hub *h = &q->m->hub;
	struct evr_strbuf sb = { 0 };
	uint32_t shown = 0;
	int err;

	err = head(&sb, "Processes");
	if (!err)
		err = evr_strbuf_printf(&sb, "<h1>Processes</h1><p class=\"muted\">Every process this "
					"monitor can attach to (libevring processes of uid %u%s). "
					"The list refreshes every 5 seconds.</p>\n<table><tr>"
					"<th>PID</th><th class=\"l\">name</th><th class=\"l\">state"
					"</th><th>counters</th><th class=\"l\">command</th>"
					"<th class=\"l\">views</th></tr>\n", (unsigned)geteuid(),
					geteuid() == 0 ? ", root: every user's" : "");
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->n && !err; i++) {
		const struct evr_mon_proc *p = h->procs[i];

		if (!p->listed && p->state != EVR_MON_LIVE)
			continue;
		shown++;
		err = p->ns_pid ? evr_strbuf_printf(&sb, "<tr><td>%d (ns %d)</td><td class=\"l\">",
						    (int)p->pid, (int)p->ns_pid)
				: evr_strbuf_printf(&sb, "<tr><td>%d</td><td class=\"l\">", (int)p->pid);
		if (!err)
			err = evr_rpt_html_cstr(&sb, p->name);
		if (!err)
			err = evr_strbuf_printf(&sb, "</td><td class=\"l%s\">%s", p->state ==
						EVR_MON_FAILED ? " warn" : "",
						evr_mon_proc_state_name(p->state));
		if (!err && p->state == EVR_MON_FAILED) {
			err = evr_strbuf_append(&sb, ": ", 2);
			if (!err)
				err = evr_rpt_html_cstr(&sb, p->err);
		}
		if (!err)
			err = evr_strbuf_printf(&sb, "</td><td>%" PRIu32 "</td><td class=\"l\">",
						p->nctr);
		if (!err)
			err = evr_rpt_html_cstr(&sb, p->command ? p->command : "");
		if (!err)
			err = evr_strbuf_printf(&sb, "</td><td class=\"l\"><a href=\"/ui/processes/%d/"
						"counters\">counters</a> <a href=\"/ui/processes/%d\">"
						"process</a> <a href=\"/ui/processes/%d/stacks?token=%s\">"
						"stacks</a></td></tr>\n", (int)p->pid, (int)p->pid,
						(int)p->pid, q->m->token);
	}
	pthread_mutex_unlock(&h->lock);
	if (!err)
		err = evr_strbuf_printf(&sb, "</table>\n%s<meta http-equiv=\"refresh\" content=\"5\">\n",
					shown ? "" : "<p>No process to attach to yet: start a "
					"program that links libevring.</p>\n");
	if (!err)
		err = foot(&sb);
	return send_page(q, 200, &sb, err);
}

/* ---- one process ---------------------------------------------------------------------- */

static enum MHD_Result page_error(struct evr_mon_req *q, int e, const char *msg)
{
	struct evr_strbuf sb = { 0 };
	int err = head(&sb, "Error");

	if (!err)
		err = evr_strbuf_printf(&sb, "<h1>Cannot show this process</h1><p class=\"warn\">");
	if (!err)
		err = evr_rpt_html_cstr(&sb, msg && *msg ? msg : strerror(-e));
	if (!err)
		err = evr_strbuf_printf(&sb, "</p>\n");
	if (!err)
		err = foot(&sb);
	return send_page(q, evr_mon_status_of(e), &sb, err);
}

/*
 * The links that start something (a trace, a stacks snapshot) carry the page
 * token: from a browser those GETs need it (evr_mon_side_effect_ok()), and a
 * page elsewhere cannot read it from ours.
 */
static int links(struct evr_strbuf *sb, pid_t pid, const char *token)
{
	return evr_strbuf_printf(sb, "<p><a href=\"/ui/processes/%d\">process</a> · "
				 "<a href=\"/ui/processes/%d/counters\">counters</a> · "
				 "<a href=\"/ui/processes/%d/stacks?token=%s\">stacks</a> · "
				 "<a href=\"/processes/%d/trace?duration=5s&amp;token=%s\">5 s "
				 "trace</a> (<a href=\"/processes/%d/trace?duration=5s&amp;"
				 "format=chrome&amp;token=%s\">Chrome JSON</a>) · "
				 "<a href=\"/processes/%d/stream?duration=10s\">"
				 "10 s of live events</a> (JSON lines)</p>\n", (int)pid, (int)pid,
				 (int)pid, token, (int)pid, token, (int)pid, token, (int)pid);
}

enum MHD_Result evr_mon_page_process(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	const struct evr_process_info *pi;
	struct evr_session_info *sv = NULL;
	struct evr_thread_info *tv = NULL;
	struct evr_client *c = NULL;
	struct evr_strbuf sb = { 0 };
	uint32_t ns = 0, nt = 0;
	char msg[512], name[64], title[96];
	int err, r;

	r = evr_client_connect(pid, EVR_MON_NAME, &c, msg, sizeof(msg));
	if (r < 0)
		return page_error(q, r, msg);
	pi = evr_client_process(c);
	evr_mon_proc_short_name(pi, name, sizeof(name));
	snprintf(title, sizeof(title), "%s (%d)", name, (int)pid);
	if (evr_client_list_sessions(c, &sv, &ns, msg, sizeof(msg)) < 0)
		ns = 0;
	if (evr_client_list_threads(c, &tv, &nt, msg, sizeof(msg)) < 0)
		nt = 0;
	err = head(&sb, title);
	if (!err)
		err = evr_strbuf_append(&sb, "<h1>", 4);
	if (!err)
		err = evr_rpt_html_cstr(&sb, title);
	if (!err)
		err = evr_strbuf_append(&sb, "</h1>\n<p><code>", 15);
	for (uint32_t i = 0; i < pi->argc && !err; i++) {
		err = evr_rpt_html_cstr(&sb, pi->argv[i] ? pi->argv[i] : "");
		if (!err)
			err = evr_strbuf_append(&sb, " ", 1);
	}
	if (!err)
		err = evr_strbuf_printf(&sb, "</code></p><p class=\"muted\">uid %u, %u CPUs, evring ",
					pi->uid, pi->nr_cpus);
	if (!err)
		err = evr_rpt_html_cstr(&sb, pi->evring_version ? pi->evring_version : "?");
	if (!err)
		err = evr_strbuf_append(&sb, "</p>\n", 5);
	if (!err)
		err = links(&sb, pid, q->m->token);
	if (!err)
		err = evr_strbuf_printf(&sb, "<h2>Sessions (%" PRIu32 ")</h2><table><tr><th>id</th>"
					"<th class=\"l\">client</th><th>client pid</th><th class=\"l\">"
					"providers</th><th class=\"l\">mode</th><th>ring size</th>"
					"</tr>\n", ns);
	for (uint32_t i = 0; i < ns && !err; i++) {
		err = evr_strbuf_printf(&sb, "<tr><td>%u</td><td class=\"l\">", sv[i].session_id);
		if (!err)
			err = evr_rpt_html_cstr(&sb, sv[i].client ? sv[i].client : "");
		if (!err)
			err = evr_strbuf_printf(&sb, "</td><td>%u</td><td class=\"l\">",
						sv[i].client_pid);
		if (!err)
			err = evr_rpt_html_cstr(&sb, sv[i].providers ? sv[i].providers : "");
		if (!err)
			err = evr_strbuf_printf(&sb, "</td><td class=\"l\">%s</td><td>%" PRIu64
						"</td></tr>\n", sv[i].mode ? "overwrite" : "discard",
						sv[i].ring_size);
	}
	if (!err)
		err = evr_strbuf_printf(&sb, "</table>\n<h2>Threads (%" PRIu32 ")</h2><table><tr>"
					"<th>tid</th><th class=\"l\">name</th></tr>\n", nt);
	for (uint32_t i = 0; i < nt && !err; i++) {
		err = evr_strbuf_printf(&sb, "<tr><td>%u</td><td class=\"l\">", tv[i].tid);
		if (!err)
			err = evr_rpt_html_str(&sb, tv[i].name, strnlen(tv[i].name,
									sizeof(tv[i].name)));
		if (!err)
			err = evr_strbuf_append(&sb, "</td></tr>\n", 11);
	}
	if (!err)
		err = evr_strbuf_append(&sb, "</table>\n", 9);
	if (!err)
		err = foot(&sb);
	evr_session_info_free(sv, ns);
	free(tv);
	evr_client_free(c);
	return send_page(q, 200, &sb, err);
}

/* ---- counters ---------------------------------------------------------------------------- */

/* "12 s", "2.5 min": how far back the plot's left edge is. */
static void fmt_span(uint64_t ns, char *buf, size_t len)
{
	double sec = (double)ns / 1e9;

	if (sec >= 120)
		snprintf(buf, len, sec >= 600 ? "%.0f min" : "%.1f min", sec / 60);
	else
		snprintf(buf, len, sec >= 10 ? "%.0f s" : "%.1f s", sec);
}

/*
 * The plot's axes: the value range at its top and bottom left (the plot spans
 * exactly min to max), and below it the time scale, from how long ago its left
 * edge is to "now". app.js keeps the labels current (classes ymax, ymin, t0).
 */
static int axes(struct evr_strbuf *sb, double lo, double hi, uint64_t span_ns)
{
	char a[32], b[32], t[32];

	fmt_num(isfinite(hi) ? hi : NAN, a, sizeof(a));
	fmt_num(isfinite(lo) ? lo : NAN, b, sizeof(b));
	fmt_span(span_ns, t, sizeof(t));
	return evr_strbuf_printf(sb, "<text class=\"axis ymax\" x=\"4\" y=\"12\">%s</text>"
				 "<text class=\"axis ymin\" x=\"4\" y=\"%d\">%s</text>"
				 "<line class=\"tick\" x1=\"2\" x2=\"2\" y1=\"%d\" y2=\"%d\"/>"
				 "<line class=\"tick\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>"
				 "<text class=\"axis t0\" x=\"2\" y=\"%d\">\xe2\x88\x92%s</text>"
				 "<text class=\"axis t1\" x=\"%d\" y=\"%d\" text-anchor=\"end\">now"
				 "</text>", a, PLOT_H - 5, b, PLOT_H - 2, PLOT_H + 2, PLOT_W - 2,
				 PLOT_W - 2, PLOT_H - 2, PLOT_H + 2, PLOT_H + AXIS_H - 2, t,
				 PLOT_W - 2, PLOT_H + AXIS_H - 2);
}

/* One counter's plot: the last PLOT_POINTS points of its history as an SVG polyline. */
static int plot(struct evr_strbuf *sb, const struct evr_mon_counter *c)
{
	uint32_t n = c->hist_n < PLOT_POINTS ? c->hist_n : PLOT_POINTS;
	uint32_t oldest = c->hist_n < c->hist_cap ? 0 : c->hist_next;
	double lo = INFINITY, hi = -INFINITY;
	uint64_t t0 = 0, t1 = 0;
	struct evr_strbuf pts = { 0 };
	int err;

	for (uint32_t k = 0; k < n; k++) {
		const struct evr_mon_point *p = &c->hist[(oldest + c->hist_n - n + k) % c->hist_cap];

		if (k == 0)
			t0 = p->ts_ns;
		t1 = p->ts_ns;
		if (isfinite(p->value)) {
			lo = fmin(lo, p->value);
			hi = fmax(hi, p->value);
		}
	}
	if (hi == lo) {
		hi = lo + 1;
		lo = lo - 1;
	}
	for (uint32_t k = 0; k < n && isfinite(lo); k++) {
		const struct evr_mon_point *p = &c->hist[(oldest + c->hist_n - n + k) % c->hist_cap];
		double x = t1 > t0 ? (double)(p->ts_ns - t0) / (double)(t1 - t0) * (PLOT_W - 4) + 2
				   : PLOT_W / 2.0;
		double v = isfinite(p->value) ? p->value : lo;
		double y = PLOT_H - 2 - (v - lo) / (hi - lo) * (PLOT_H - 4);

		if (evr_strbuf_printf(&pts, "%s%.1f,%.1f", k ? " " : "", x, y) < 0)
			break;
	}
	err = evr_strbuf_printf(sb, "<svg width=\"%d\" height=\"%d\" data-h=\"%d\" "
				"data-counter=\"", PLOT_W, PLOT_H + AXIS_H, PLOT_H);
	if (!err)
		err = evr_rpt_html_cstr(sb, c->provider);
	if (!err)
		err = evr_strbuf_append(sb, "/", 1);
	if (!err)
		err = evr_rpt_html_cstr(sb, c->name);
	if (!err)
		err = evr_strbuf_printf(sb, "\" role=\"img\"><line class=\"grid\" x1=\"0\" x2=\"%d\" "
					"y1=\"%d\" y2=\"%d\"/><line class=\"grid\" x1=\"0\" x2=\"%d\" "
					"y1=\"2\" y2=\"2\"/><polygon class=\"area\" points=\"",
					PLOT_W, PLOT_H - 2, PLOT_H - 2, PLOT_W);
	if (!err && pts.len)
		err = evr_strbuf_printf(sb, "2,%d %s %d,%d", PLOT_H - 2, pts.buf, PLOT_W - 2,
					PLOT_H - 2);
	if (!err)
		err = evr_strbuf_printf(sb, "\"/><polyline class=\"line\" points=\"%s\"/>",
					pts.buf ? pts.buf : "");
	if (!err)
		err = axes(sb, lo, hi, t1 - t0);
	if (!err)
		err = evr_strbuf_append(sb, "</svg>", 6);
	free(pts.buf);
	return err;
}

static int counter_figure(struct evr_strbuf *sb, const struct evr_mon_counter *c)
{
	char v[32];
	int err = evr_strbuf_append(sb, "<figure><figcaption><b>", 23);

	fmt_num(c->last.value, v, sizeof(v));
	if (!err)
		err = evr_rpt_html_cstr(sb, c->display[0] ? c->display : c->name);
	if (!err)
		err = evr_strbuf_append(sb, "</b><span data-value=\"", 22);
	if (!err)
		err = evr_rpt_html_cstr(sb, c->provider);
	if (!err)
		err = evr_strbuf_append(sb, "/", 1);
	if (!err)
		err = evr_rpt_html_cstr(sb, c->name);
	if (!err)
		err = evr_strbuf_printf(sb, "\">%s</span></figcaption>", v);
	if (!err)
		err = plot(sb, c);
	if (!err)
		err = evr_strbuf_printf(sb, "<figcaption class=\"muted\"><span>%s</span><span>",
					evr_sample_kind_name(c->kind));
	if (!err)
		err = evr_rpt_html_cstr(sb, c->unit);
	/* A rate's value is per second, unless its unit says so already or is a share. */
	if (!err && c->kind == EVR_SAMPLE_RATE && !strstr(c->unit, "/s") && strcmp(c->unit, "%"))
		err = evr_strbuf_append(sb, "/s", 2);
	if (!err)
		err = evr_strbuf_append(sb, "</span></figcaption></figure>\n", 30);
	return err;
}

enum MHD_Result evr_mon_page_counters(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	struct evr_mon_hub *h = &q->m->hub;
	struct evr_strbuf sb = { 0 };
	struct evr_mon_proc *p;
	char title[96];
	int err = 0;

	pthread_mutex_lock(&h->lock);
	p = evr_mon_hub_get_locked(h, pid, true, (int)(2 * q->m->o.counter_interval_ms) + 3000);
	if (!p || p->state != EVR_MON_LIVE) {
		char msg[sizeof(p->err) + 64];
		int e = -ESRCH;

		if (p && p->state == EVR_MON_FAILED) {
			e = -p->errnum;
			snprintf(msg, sizeof(msg), "%s", p->err);
		} else {
			snprintf(msg, sizeof(msg), "no process %d is attached to this monitor "
				 "(it exited, or does not run libevring)", (int)pid);
		}
		pthread_mutex_unlock(&h->lock);
		return page_error(q, e, msg);
	}
	snprintf(title, sizeof(title), "%s (%d): counters", p->name, (int)pid);
	err = head(&sb, title);
	if (!err)
		err = evr_strbuf_append(&sb, "<h1>", 4);
	if (!err)
		err = evr_rpt_html_cstr(&sb, title);
	if (!err)
		err = evr_strbuf_printf(&sb, "</h1>\n<p class=\"muted\">Sampled every %u ms; the "
					"plots show the last %u samples.</p>\n",
					q->m->o.counter_interval_ms, PLOT_POINTS);
	if (!err)
		err = links(&sb, pid, q->m->token);
	if (!err)
		err = evr_strbuf_printf(&sb, "<div id=\"evr-counters\" class=\"charts\" "
					"data-pid=\"%d\" data-interval=\"%u\">\n", (int)pid,
					q->m->o.counter_interval_ms);
	for (uint32_t i = 0; i < p->nctr && !err; i++)
		err = counter_figure(&sb, &p->ctr[i]);
	if (!err && !p->nctr)
		err = evr_strbuf_printf(&sb, "<p>No counter samples yet.</p>\n");
	pthread_mutex_unlock(&h->lock);
	if (!err)
		err = evr_strbuf_append(&sb, "</div>\n", 7);
	if (!err)
		err = foot(&sb);
	return send_page(q, 200, &sb, err);
}

enum MHD_Result evr_mon_page_stacks(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	enum MHD_Result ret = MHD_NO;
	struct evr_strbuf body = { 0 }, sb = { 0 };
	char title[64];
	int err;

	/* The snapshot first: its error is the answer (a page saying why). */
	if (evr_mon_stacks_html(q, pid, &body, &ret) < 0) {
		free(body.buf);
		return ret;
	}
	snprintf(title, sizeof(title), "Process %d: thread stacks", (int)pid);
	err = head(&sb, title);
	if (!err)
		err = evr_strbuf_printf(&sb, "<h1>Process %d: thread stacks</h1>\n", (int)pid);
	if (!err)
		err = links(&sb, pid, q->m->token);
	if (!err && body.len)
		err = evr_strbuf_append(&sb, body.buf, body.len);
	free(body.buf);
	if (!err)
		err = foot(&sb);
	return send_page(q, 200, &sb, err);
}
