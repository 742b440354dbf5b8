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
 * whose value is the sum of the increments since the monitor attached (a rate
 * in percent, such as CPU usage, is a ratio `gauge` instead); a gauge is a
 * `gauge` (a name ending in a suffix Prometheus reserves gets "_current"); a
 * mean counter is a `summary` with _sum (sum of count x mean) and _count; a
 * histogram is a `summary` with the latest interval's quantiles 0.5, 0.9 and
 * 0.99 plus _sum and _count since attached.
 *
 * Labels: pid, process (the short name) and provider. No timestamps and one
 * sample per series (duplicate timestamped samples are what broke
 * dotnet-monitor's /metrics in Prometheus); two counters whose names map to
 * one family keep the first one seen.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

void evr_mon_metric_init(struct evr_mon_counter *c)
{
	const char *suffix = NULL;
	bool rate = c->kind == EVR_SAMPLE_RATE;
	char name[sizeof(c->metric)] = "evring";
	size_t base;

	c->scale = 1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(c->unit, units[i].unit)) {
			suffix = units[i].suffix;
			c->scale = units[i].scale;
			break;
		}
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

static int put_family(struct evr_strbuf *sb, const struct entry *e)
{
	static const char *const tname[] = { "untyped", "counter", "gauge", "summary" };
	const struct evr_mon_counter *c = e->c;
	int err = evr_strbuf_printf(sb, "# HELP %s ", c->metric);

	if (!err)
		err = put_escaped(sb, c->display[0] ? c->display : c->name, false);
	if (!err)
		err = evr_strbuf_append(sb, " (", 2);
	if (!err)
		err = put_escaped(sb, c->provider, false);
	if (!err)
		err = evr_strbuf_append(sb, "/", 1);
	if (!err)
		err = put_escaped(sb, c->name, false);
	if (!err && c->unit[0]) {
		err = evr_strbuf_append(sb, ", ", 2);
		if (!err)
			err = put_escaped(sb, c->unit, false);
	}
	if (!err)
		err = evr_strbuf_printf(sb, ")\n# TYPE %s %s\n", c->metric, tname[c->mtype]);
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
static int put_self(struct evr_mon_hub *h, struct evr_strbuf *sb)
{
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
		err = evr_strbuf_printf(sb, "# HELP evring_monitor_attaches_total Counter sessions "
					"started.\n# TYPE evring_monitor_attaches_total counter\n"
					"evring_monitor_attaches_total %" PRIu64 "\n"
					"# HELP evring_monitor_attach_failures_total Attaches that "
					"failed.\n# TYPE evring_monitor_attach_failures_total counter\n"
					"evring_monitor_attach_failures_total %" PRIu64 "\n",
					h->attaches, h->attach_failures);
	if (!err)
		err = evr_strbuf_printf(sb, "# HELP evring_session_lost_events_total Events the "
					"monitor's counter session of a process lost (rings full)."
					"\n# TYPE evring_session_lost_events_total counter\n");
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

int evr_mon_metrics(struct evr_mon_hub *h, struct evr_strbuf *sb)
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
			err = put_family(sb, &v[i]);
		} else if (v[i].c->mtype != ftype || v[i].p == v[i - 1].p) {
			continue;
		}
		if (!err)
			err = put_entry(sb, &v[i]);
	}
	if (!err)
		err = put_self(h, sb);
	pthread_mutex_unlock(&h->lock);
	free(v);
	return err;
}
