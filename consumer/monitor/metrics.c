// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * /metrics: every attached process's counters in the Prometheus text format
 * 0.0.4, what `promtool check metrics` (Prometheus 2.42) parses and lints.
 *
 * Names: evring_<provider>_<counter>[_<base unit>][_total], lower case, every
 * other byte '_', runs of '_' collapsed; name parts promtool's lint rejects
 * (abbreviated units such as "ms", type words such as "counter") are left out.
 * Units become base units (us/ms/ns -> seconds, KB/MB/GB -> bytes, % -> ratio)
 * with the values scaled to match.
 *
 * Kinds: an incrementing or polling-rate counter is a `counter` (..._total)
 * whose value is the sum of the increments since the monitor attached, never
 * going down (evr_mon_counter_fold() leaves out negative and non-finite ones; a
 * rate in percent, such as CPU usage, is a ratio `gauge` instead); a gauge is a
 * `gauge` (a name ending in a suffix Prometheus reserves gets "_current"); a
 * mean counter is a `summary` with _sum (sum of count x mean) and _count; a
 * histogram is a `summary` with the latest interval's quantiles 0.5, 0.9 and
 * 0.99 plus _sum and _count since attached.
 *
 * Labels: pid, process (the short name) and provider. No timestamps and one
 * sample per series (duplicate timestamped samples are what broke
 * dotnet-monitor's /metrics in Prometheus); two counters whose names map to
 * one family keep the first one seen.
 *
 * OpenMetrics 1.0.0, for a scraper that asks for it (Accept:
 * application/openmetrics-text): the same families and samples, but a
 * counter's family is named without its _total (the sample keeps it), a
 * family whose name ends in its base unit says so in a UNIT line, HELP escapes
 * '"' as label values do, and the exposition ends with "# EOF".
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "monitor.h"

static const struct {
	const char *unit;
	const char *suffix;
	double scale;
} units[] = {
	{ "s", "seconds", 1 }, { "sec", "seconds", 1 }, { "seconds", "seconds", 1 },
	{ "ms", "seconds", 1e-3 }, { "us", "seconds", 1e-6 }, { "\xc2\xb5s", "seconds", 1e-6 },
	{ "ns", "seconds", 1e-9 },
	{ "B", "bytes", 1 }, { "bytes", "bytes", 1 },
	{ "KB", "bytes", 1024 }, { "kB", "bytes", 1024 }, { "KiB", "bytes", 1024 },
	{ "MB", "bytes", 1048576 }, { "MiB", "bytes", 1048576 },
	{ "GB", "bytes", 1073741824 }, { "GiB", "bytes", 1073741824 },
	{ "%", "ratio", 0.01 },
};

/* Name parts promtool 2.42's lint rejects: abbreviated units, non-base units, types. */
static const char *const banned[] = {
	"s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h", "d",
	"milliseconds", "microseconds", "nanoseconds", "minutes", "hours", "days", "kilobytes",
	"megabytes", "gigabytes", "bits", "counter", "gauge", "histogram", "summary",
};

/* Suffixes the exposition format gives a meaning: a gauge must not end in them. */
static const char *const reserved[] = { "_total", "_count", "_sum", "_bucket", "_created",
					"_info" };

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* Append the parts of @s to @out (of @cap bytes) as name parts, dropping banned ones. */
static void add_parts(char *out, size_t cap, const char *s)
{
	size_t len = strlen(out);
	char part[128];
	size_t n = 0;

	for (const char *p = s;; p++) {
		char ch = *p;
		bool word = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
			    (ch >= 'A' && ch <= 'Z');

		if (word && n + 1 < sizeof(part)) {
			part[n++] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
			continue;
		}
		if (word)
			continue;	/* an overlong part is cut */
		if (n) {
			bool skip = false;

			part[n] = '\0';
			for (size_t i = 0; i < sizeof(banned) / sizeof(banned[0]) && !skip; i++)
				skip = !strcmp(part, banned[i]);
			if (!skip && len + n + 2 < cap) {
				out[len++] = '_';
				memcpy(out + len, part, n);
				len += n;
				out[len] = '\0';
			}
			n = 0;
		}
		if (!ch)
			break;
	}
}

/* The base unit ("seconds", "bytes", "ratio") of @unit, and the factor into it; NULL: none. */
static const char *base_unit(const char *unit, double *ret_scale)
{
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(unit, units[i].unit)) {
			if (ret_scale)
				*ret_scale = units[i].scale;
			return units[i].suffix;
		}
	return NULL;
}

void evr_mon_metric_init(struct evr_mon_counter *c)
{
	const char *suffix;
	bool rate = c->kind == EVR_SAMPLE_RATE;
	char name[sizeof(c->metric)] = "evring";
	size_t base;

	c->scale = 1;
	suffix = base_unit(c->unit, &c->scale);
	add_parts(name, sizeof(name), c->provider);
	base = strlen(name);
	add_parts(name, sizeof(name), c->name);
	if (strlen(name) == base) {
		/* Nothing usable in the counter's name: no family for it. */
		c->metric[0] = '\0';
		c->mtype = EVR_MON_M_NONE;
		return;
	}
	if (suffix) {
		char tail[32];

		snprintf(tail, sizeof(tail), "_%s", suffix);
		if (!ends_with(name, tail) && strlen(name) + strlen(tail) < sizeof(name))
			strcat(name, tail);
	}
	switch (c->kind) {
	case EVR_SAMPLE_RATE:
		if (suffix && !strcmp(suffix, "ratio")) {
			c->mtype = EVR_MON_M_GAUGE;	/* a percentage per interval */
			rate = false;
		} else {
			c->mtype = EVR_MON_M_COUNTER;
		}
		break;
	case EVR_SAMPLE_GAUGE:
		c->mtype = EVR_MON_M_GAUGE;
		break;
	case EVR_SAMPLE_MEAN:
	case EVR_SAMPLE_HISTOGRAM:
		c->mtype = EVR_MON_M_SUMMARY;
		break;
	default:
		c->mtype = EVR_MON_M_NONE;
		return;
	}
	if (rate) {
		if (!ends_with(name, "_total") && strlen(name) + 6 < sizeof(name))
			strcat(name, "_total");
	} else {
		for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
			if (ends_with(name, reserved[i]) && strlen(name) + 8 < sizeof(name)) {
				strcat(name, "_current");
				break;
			}
	}
	snprintf(c->metric, sizeof(c->metric), "%s", name);
}

/* ---- the exposition ------------------------------------------------------------------ */

struct entry {
	const struct evr_mon_proc *p;
	const struct evr_mon_counter *c;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int r = strcmp(x->c->metric, y->c->metric);

	if (r)
		return r;
	if (x->p->pid != y->p->pid)
		return x->p->pid < y->p->pid ? -1 : 1;
	return 0;
}

/* A label value or HELP text: backslash and newline escaped, and '"' for labels. */
static int put_escaped(struct evr_strbuf *sb, const char *s, bool label)
{
	const char *run = s;
	int err = 0;

	for (const char *p = s; *p && !err; p++) {
		const char *rep = *p == '\\' ? "\\\\" : *p == '\n' ? "\\n" :
				  (*p == '"' && label) ? "\\\"" : NULL;

		if (!rep)
			continue;
		err = evr_strbuf_append(sb, run, (size_t)(p - run));
		if (!err)
			err = evr_strbuf_append(sb, rep, strlen(rep));
		run = p + 1;
	}
	if (!err)
		err = evr_strbuf_append(sb, run, strlen(run));
	return err;
}

static int put_num(struct evr_strbuf *sb, double v)
{
	if (isnan(v))
		return evr_strbuf_append(sb, " NaN\n", 5);
	if (isinf(v))
		return evr_strbuf_printf(sb, " %sInf\n", v < 0 ? "-" : "+");
	return evr_strbuf_printf(sb, " %.17g\n", v);
}

/* NAME{pid="..",process="..",provider=".."[,quantile=".."]} VALUE */
static int put_sample(struct evr_strbuf *sb, const char *name, const char *suffix,
		      const struct entry *e, const char *quantile, double v)
{
	int err = evr_strbuf_printf(sb, "%s%s{pid=\"%d\",process=\"", name, suffix, (int)e->p->pid);

	if (!err)
		err = put_escaped(sb, e->p->name, true);
	if (!err)
		err = evr_strbuf_append(sb, "\",provider=\"", 12);
	if (!err)
		err = put_escaped(sb, e->c->provider, true);
	if (!err && quantile)
		err = evr_strbuf_printf(sb, "\",quantile=\"%s", quantile);
	if (!err)
		err = evr_strbuf_append(sb, "\"}", 2);
	if (!err)
		err = put_num(sb, v);
	return err;
}

/*
 * The family's name: the metric's, less _total for an OpenMetrics counter
 * (whose samples are FAMILY_total). Into @buf.
 */
static const char *family_name(const struct evr_mon_counter *c, bool om, char *buf, size_t len)
{
	size_t n = strlen(c->metric);

	if (!om || c->mtype != EVR_MON_M_COUNTER || !ends_with(c->metric, "_total"))
		return c->metric;
	snprintf(buf, len, "%.*s", (int)(n - 6), c->metric);
	return buf;
}

static int put_family(struct evr_strbuf *sb, const struct entry *e, bool om)
{
	static const char *const tname[] = { "untyped", "counter", "gauge", "summary" };
	const struct evr_mon_counter *c = e->c;
	char fbuf[sizeof(c->metric)], tail[32];
	const char *family = family_name(c, om, fbuf, sizeof(fbuf));
	const char *unit = base_unit(c->unit, NULL);
	int err = evr_strbuf_printf(sb, "# HELP %s ", family);

	/* OpenMetrics escapes '"' in HELP too (its escaped-string). */
	if (!err)
		err = put_escaped(sb, c->display[0] ? c->display : c->name, om);
	if (!err)
		err = evr_strbuf_append(sb, " (", 2);
	if (!err)
		err = put_escaped(sb, c->provider, om);
	if (!err)
		err = evr_strbuf_append(sb, "/", 1);
	if (!err)
		err = put_escaped(sb, c->name, om);
	if (!err && c->unit[0]) {
		err = evr_strbuf_append(sb, ", ", 2);
		if (!err)
			err = put_escaped(sb, c->unit, om);
	}
	if (!err)
		err = evr_strbuf_printf(sb, ")\n# TYPE %s %s\n", family,
					om && c->mtype == EVR_MON_M_NONE ? "unknown" : tname[c->mtype]);
	/* UNIT only where the name ends in it, as OpenMetrics requires (not "..._bytes_current"). */
	if (unit)
		snprintf(tail, sizeof(tail), "_%s", unit);
	if (!err && om && unit && ends_with(family, tail))
		err = evr_strbuf_printf(sb, "# UNIT %s %s\n", family, unit);
	return err;
}

static int put_entry(struct evr_strbuf *sb, const struct entry *e)
{
	const struct evr_mon_counter *c = e->c;
	const struct evr_counter_sample *s = &c->last;
	double k = c->scale;
	int err = 0;

	switch (c->mtype) {
	case EVR_MON_M_COUNTER:
		return put_sample(sb, c->metric, "", e, NULL, c->total * k);
	case EVR_MON_M_GAUGE:
		return put_sample(sb, c->metric, "", e, NULL, s->value * k);
	case EVR_MON_M_SUMMARY:
		if (c->kind == EVR_SAMPLE_HISTOGRAM) {
			/* The latest interval's quantiles; NaN when it recorded nothing. */
			bool none = s->count == 0;

			err = put_sample(sb, c->metric, "", e, "0.5", none ? NAN : s->p50 * k);
			if (!err)
				err = put_sample(sb, c->metric, "", e, "0.9", none ? NAN : s->p90 * k);
			if (!err)
				err = put_sample(sb, c->metric, "", e, "0.99",
						 none ? NAN : s->p99 * k);
		}
		if (!err)
			err = put_sample(sb, c->metric, "_sum", e, NULL, c->sum * k);
		if (!err)
			err = put_sample(sb, c->metric, "_count", e, NULL, c->count);
		return err;
	default:
		return 0;
	}
}

/* The monitor's own numbers and one loss counter per watched process. */
static int put_self(struct evr_mon_hub *h, struct evr_strbuf *sb, bool om)
{
	/* An OpenMetrics counter family is named without _total. */
	const char *t = om ? "" : "_total";
	uint32_t by_state[4] = { 0 };
	int err;

	for (uint32_t i = 0; i < h->n; i++)
		by_state[h->procs[i]->state]++;
	err = evr_strbuf_printf(sb, "# HELP evring_monitor_processes Processes the monitor "
				"watches, by state.\n# TYPE evring_monitor_processes gauge\n");
	for (int s = 0; s < 4 && !err; s++)
		err = evr_strbuf_printf(sb, "evring_monitor_processes{state=\"%s\"} %" PRIu32 "\n",
					evr_mon_proc_state_name((enum evr_mon_proc_state)s),
					by_state[s]);
	if (!err)
		err = evr_strbuf_printf(sb, "# HELP evring_monitor_attaches%s Counter sessions "
					"started.\n# TYPE evring_monitor_attaches%s counter\n"
					"evring_monitor_attaches_total %" PRIu64 "\n"
					"# HELP evring_monitor_attach_failures%s Attaches that "
					"failed.\n# TYPE evring_monitor_attach_failures%s counter\n"
					"evring_monitor_attach_failures_total %" PRIu64 "\n",
					t, t, h->attaches, t, t, h->attach_failures);
	if (!err)
		err = evr_strbuf_printf(sb, "# HELP evring_session_lost_events%s Events the "
					"monitor's counter session of a process lost (rings full)."
					"\n# TYPE evring_session_lost_events%s counter\n", t, t);
	for (uint32_t i = 0; i < h->n && !err; i++) {
		const struct evr_mon_proc *p = h->procs[i];

		if (p->state != EVR_MON_LIVE)
			continue;
		err = evr_strbuf_printf(sb, "evring_session_lost_events_total{pid=\"%d\","
					"process=\"", (int)p->pid);
		if (!err)
			err = put_escaped(sb, p->name, true);
		if (!err)
			err = evr_strbuf_printf(sb, "\"} %" PRIu64 "\n", p->lost);
	}
	return err;
}

int evr_mon_metrics(struct evr_mon_hub *h, struct evr_strbuf *sb, bool openmetrics)
{
	struct entry *v = NULL;
	uint32_t n = 0, cap = 0;
	const char *family = NULL;
	enum evr_mon_mtype ftype = EVR_MON_M_NONE;
	int err = 0;

	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->n && !err; i++) {
		const struct evr_mon_proc *p = h->procs[i];

		if (p->state != EVR_MON_LIVE)
			continue;
		for (uint32_t j = 0; j < p->nctr; j++) {
			if (!p->ctr[j].metric[0] || !p->ctr[j].nsamples)
				continue;
			if (n == cap) {
				uint32_t nc = cap ? cap * 2 : 256;
				struct entry *nv = realloc(v, nc * sizeof(*nv));

				if (!nv) {
					err = -ENOMEM;
					break;
				}
				v = nv;
				cap = nc;
			}
			v[n++] = (struct entry){ .p = p, .c = &p->ctr[j] };
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), entry_cmp);
	for (uint32_t i = 0; i < n && !err; i++) {
		/* One family, one type; a second series of one pid in it is a name clash. */
		if (!family || strcmp(family, v[i].c->metric)) {
			family = v[i].c->metric;
			ftype = v[i].c->mtype;
			err = put_family(sb, &v[i], openmetrics);
		} else if (v[i].c->mtype != ftype || v[i].p == v[i - 1].p) {
			continue;
		}
		if (!err)
			err = put_entry(sb, &v[i]);
	}
	if (!err)
		err = put_self(h, sb, openmetrics);
	pthread_mutex_unlock(&h->lock);
	if (!err && openmetrics)
		err = evr_strbuf_append(sb, "# EOF\n", 6);
	free(v);
	return err;
}

/* @s without leading and trailing blanks (in place). */
static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

bool evr_mon_accepts_openmetrics(const char *accept)
{
	char *copy, *range, *save = NULL;
	double om = 0, text = 0;

	if (!accept || !(copy = strdup(accept)))
		return false;
	for (range = strtok_r(copy, ",", &save); range; range = strtok_r(NULL, ",", &save)) {
		char *psave = NULL, *type = strtok_r(range, ";", &psave);
		const char *version = NULL;
		double q = 1;

		if (!type)
			continue;
		type = trim(type);

		/* Parameters: q (RFC 9110: 0 to 1, default 1) and version; others ignored. */
		for (char *par = strtok_r(NULL, ";", &psave); par; par = strtok_r(NULL, ";", &psave)) {
			char *eq = strchr(par, '='), *end;

			if (!eq)
				continue;
			*eq = '\0';
			par = trim(par);
			if (!strcasecmp(par, "q")) {
				q = strtod(trim(eq + 1), &end);
				if (*end || q < 0 || q > 1)
					q = 0;	/* malformed: not accepted */
			} else if (!strcasecmp(par, "version")) {
				version = trim(eq + 1);
			}
		}
		if (q <= 0)
			continue;
		if (!strcasecmp(type, "application/openmetrics-text") &&
		    (!version || !strcmp(version, "1.0.0")))
			om = q > om ? q : om;
		else if ((!strcasecmp(type, "text/plain") && (!version || !strcmp(version, "0.0.4"))) ||
			 !strcmp(type, "text/*") || !strcmp(type, "*/*"))
			text = q > text ? q : text;
	}
	free(copy);
	/* Equal preference: OpenMetrics, the richer of the two. */
	return om > 0 && om >= text;
}

void evr_mon_counter_fold(struct evr_mon_counter *c, const struct evr_counter_sample *s)
{
	c->kind = s->kind;
	c->last = *s;
	c->last.provider = c->last.name = c->last.display_name = c->last.unit = NULL;
	c->nsamples++;
	switch (s->kind) {
	case EVR_SAMPLE_RATE:
		if (isfinite(s->increment) && s->increment >= 0)
			c->total += s->increment;
		else
			c->skipped++;
		break;
	case EVR_SAMPLE_MEAN:
		if (isfinite(s->mean)) {
			c->sum += s->mean * (double)s->count;
			c->count += (double)s->count;
		} else {
			c->skipped++;
		}
		break;
	case EVR_SAMPLE_HISTOGRAM:
		if (isfinite(s->sum)) {
			c->sum += s->sum;
			c->count += (double)s->count;
		} else {
			c->skipped++;
		}
		break;
	}
}
