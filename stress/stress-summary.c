// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The checks that need every side's figures, and the summary.
 *
 * Stable sessions (attached before the producer's first event, stopped and
 * drained after its last): for the session's filter, received + lost must equal
 * what the producer emitted, exactly, and no sequence number may exceed what
 * was emitted for its (thread, kind). The consumers themselves already checked
 * checksums, duplicates, order and the filter, record by record.
 *
 * Churn sessions that ended normally: no sequence number beyond what was
 * emitted, and, for those that stopped and drained their session, the interior
 * gaps of every (thread, kind) sequence are covered by the losses they were told
 * about (missing <= lost). Killed ones only had to leave the producer clean.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "stress-orch.h"

static const char *mode_name(uint32_t mode)
{
	return mode == EVR_MODE_OVERWRITE ? "overwrite" : "discard";
}

static uint64_t emitted_for(const struct stress_orch *o, uint32_t p, unsigned filter)
{
	const uint64_t *e = o->prod[p].emitted;
	uint64_t n = 0;

	for (uint32_t t = 0; t < o->o.threads; t++)
		for (unsigned k = 0; k < STRESS_NKINDS; k++)
			if (stress_filters[filter].kinds & (1u << k))
				n += e[t * STRESS_NKINDS + k];
	return n;
}

/* No (thread, kind) of @c's report beyond what its producer emitted. */
static void check_range(struct stress_orch *o, struct stress_child *c)
{
	const uint64_t *e = o->prod[c->producer].emitted;

	for (uint32_t t = 0; t < o->o.threads; t++)
		for (unsigned k = 0; k < STRESS_NKINDS; k++) {
			size_t i = t * STRESS_NKINDS + k;

			if (c->rep.max[i] <= e[i])
				continue;
			c->nbad++;
			stress_violation(o, "%s: thread %u %s seq %" PRIu64 " received, only %" PRIu64
					 " emitted", c->name, t, stress_kinds[k].name, c->rep.max[i],
					 e[i]);
		}
}

static bool finished_normally(const struct stress_child *c)
{
	return c->exited && WIFEXITED(c->wstatus) && c->rep.ended;
}

void stress_check(struct stress_orch *o)
{
	bool all_halted = o->prod != NULL;

	for (uint32_t p = 0; o->prod && p < o->o.producers; p++) {
		struct stress_producer *pr = &o->prod[p];
		uint64_t sum = 0;

		if (!pr->halted) {
			all_halted = false;
			continue;
		}
		for (size_t i = 0; i < (size_t)o->o.threads * STRESS_NKINDS; i++)
			sum += pr->emitted[i];
		if (sum != pr->total)
			stress_violation(o, "producer %u: per-(thread, kind) counts add up to %" PRIu64
					 ", total %" PRIu64, p, sum, pr->total);
		if (pr->errors)
			stress_violation(o, "producer %u: %" PRIu64 " writes returned an error", p,
					 pr->errors);
		if (pr->released && pr->rss_after > pr->rss_base + STRESS_RSS_SLACK)
			stress_violation(o, "producer %u: RSS %.2f MiB after the run, %.2f MiB at "
					 "start-up (slack %.2f MiB)", p, pr->rss_after / 1048576.0,
					 pr->rss_base / 1048576.0, STRESS_RSS_SLACK / 1048576.0);
	}
	if (!all_halted)
		return;	/* without the emitted counts nothing more can be checked */
	for (size_t i = 0; i < o->nkids; i++) {
		struct stress_child *c = o->kids[i];
		uint64_t want;

		if (c->role == ROLE_PRODUCER || !finished_normally(c))
			continue;
		check_range(o, c);
		if (c->role == ROLE_CHURN) {
			if (c->rep.gapcheck && c->rep.missing > c->rep.lost) {
				c->nbad++;
				stress_violation(o, "%s (%s, filter \"%s\"): %" PRIu64 " events missing "
						 "inside its sequences, only %" PRIu64 " reported lost",
						 c->name, mode_name(c->mode),
						 stress_filters[c->filter].spec, c->rep.missing,
						 c->rep.lost);
			}
			continue;
		}
		want = emitted_for(o, c->producer, c->filter);
		if (c->rep.received + c->rep.lost != want) {
			c->nbad++;
			stress_violation(o, "%s (%s, filter \"%s\"): received %" PRIu64 " + lost %"
					 PRIu64 " = %" PRIu64 ", but %" PRIu64 " were emitted (%+" PRId64
					 ")", c->name, mode_name(c->mode),
					 stress_filters[c->filter].spec, c->rep.received, c->rep.lost,
					 c->rep.received + c->rep.lost, want,
					 (int64_t)(c->rep.received + c->rep.lost - want));
		}
		if (c->paused && !c->rep.lost && want > 0) {
			c->nbad++;
			stress_violation(o, "%s: paused with SIGSTOP for most of the run yet lost "
					 "nothing (%" PRIu64 " events)", c->name, want);
		}
	}
}

/* ---- the summary ---- */

/* Emission rate of producer @p while the paused consumer was stopped and outside. */
static void rates(const struct stress_producer *pr, double *ret_paused, double *ret_unpaused)
{
	const uint64_t *c = pr->count, *t = pr->ns;

	*ret_paused = *ret_unpaused = 0;
	for (int i = 0; i < STRESS_NSAMPLES; i++)
		if (!pr->have[i])
			return;
	if (t[2] > t[1])
		*ret_paused = (double)(c[2] - c[1]) * 1e9 / (double)(t[2] - t[1]);
	if (t[1] - t[0] + t[3] - t[2] > 0)
		*ret_unpaused = (double)(c[1] - c[0] + c[3] - c[2]) * 1e9 /
				(double)(t[1] - t[0] + t[3] - t[2]);
}

static void size_str(uint64_t v, char *buf, size_t len)
{
	if (v >= (1u << 20) && v % (1u << 20) == 0)
		snprintf(buf, len, "%" PRIu64 "M", v >> 20);
	else
		snprintf(buf, len, "%" PRIu64 "K", v >> 10);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

struct totals {
	uint64_t emitted, received, lost;
	double seconds;
	double attach_median_ms, attach_max_ms;	/* connect + start, every consumer */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void totals(const struct stress_orch *o, struct totals *t)
{
	uint64_t *lat;
	size_t n = 0;

	memset(t, 0, sizeof(*t));
	for (uint32_t p = 0; o->prod && p < o->o.producers; p++)
		t->emitted += o->prod[p].total;
	for (size_t i = 0; i < o->nkids; i++) {
		const struct stress_child *c = o->kids[i];

		if (c->role == ROLE_PRODUCER || !c->rep.ended)
			continue;
		t->received += c->rep.received;
		t->lost += c->rep.lost;
	}
	if (o->t_halt > o->t_go)
		t->seconds = (double)(o->t_halt - o->t_go) / 1e9;
	lat = calloc(o->nkids ? o->nkids : 1, sizeof(*lat));
	for (size_t i = 0; lat && i < o->nkids; i++)
		if (o->kids[i]->role != ROLE_PRODUCER && o->kids[i]->started)
			lat[n++] = o->kids[i]->attach_ns;
	if (n) {
		qsort(lat, n, sizeof(*lat), cmp_u64);
		t->attach_median_ms = (double)lat[n / 2] / 1e6;
		t->attach_max_ms = (double)lat[n - 1] / 1e6;
	}
	free(lat);
}

static void summary_text(struct stress_orch *o, const struct totals *tt)
{
	FILE *f = stdout;

	fprintf(f, "%-8s %8s  %-20s %-9s %5s %12s %12s %12s  %s\n", "session", "pid", "filter",
		"mode", "ring", "emitted", "received", "lost", "result");
	for (uint32_t i = 0; o->stable && i < o->o.producers * o->o.sessions; i++) {
		const struct stress_child *c = o->stable[i];
		char ring[24], name[40];

		if (!c)
			continue;
		size_str(c->ring_size, ring, sizeof(ring));
		snprintf(name, sizeof(name), "%s%s", c->name, c->paused ? "*" : "");
		fprintf(f, "%-8s %8d  %-20s %-9s %5s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "  %s\n",
			name, (int)c->pid, stress_filters[c->filter].spec, mode_name(c->mode), ring,
			o->prod[c->producer].halted ? emitted_for(o, c->producer, c->filter) : 0,
			c->rep.received, c->rep.lost,
			!c->rep.ended ? "INCOMPLETE" : c->nbad || c->rep.nviol ? "FAIL" : "ok");
	}
	if (o->paused)
		fprintf(f, "(* SIGSTOPped from 10%% to 90%% of the emission time)\n");
	fprintf(f, "churn: %" PRIu64 " consumers: %" PRIu64 " finished (%" PRIu64 " stopped and "
		"drained, %" PRIu64 " just closed), %" PRIu64 " SIGKILLed; received %" PRIu64
		", lost %" PRIu64 "\n", o->churn_spawned, o->churn_finished,
		o->churn_finished - o->churn_closed, o->churn_closed, o->churn_killed,
		o->churn_received, o->churn_lost);
	for (uint32_t p = 0; o->prod && p < o->o.producers; p++) {
		const struct stress_producer *pr = &o->prod[p];
		double rp, ru;

		rates(pr, &rp, &ru);
		fprintf(f, "producer %u (pid %d): emitted %" PRIu64 "; %.3f M events/s while the "
			"paused consumer was stopped, %.3f M events/s otherwise; fds %ld -> %ld; "
			"RSS %.2f -> %.2f MiB\n", p, pr->child ? (int)pr->child->pid : 0, pr->total,
			rp / 1e6, ru / 1e6, pr->fds_base, pr->fds_after, pr->rss_base / 1048576.0,
			pr->rss_after / 1048576.0);
	}
	fprintf(f, "total: emitted %" PRIu64 " (%.3f M events/s), received %" PRIu64
		" (%.3f M events/s), lost %" PRIu64 "\n", tt->emitted,
		tt->seconds > 0 ? tt->emitted / tt->seconds / 1e6 : 0.0, tt->received,
		tt->seconds > 0 ? tt->received / tt->seconds / 1e6 : 0.0, tt->lost);
	fprintf(f, "attach (connect + start session): median %.2f ms, max %.2f ms\n",
		tt->attach_median_ms, tt->attach_max_ms);
	fprintf(f, "violations: %zu\n", o->nviol);
	for (size_t i = 0; i < o->nviol; i++)
		fprintf(f, "  %s\n", o->viols[i]);
}

static void summary_json(struct stress_orch *o, const struct totals *tt)
{
	FILE *f = stdout;
	bool first = true;

	fprintf(f, "{\"producers\":%u,\"threads\":%u,\"sessions\":%u,\"seconds\":%u,\"churn\":%u,"
		"\"seed\":%" PRIu64 ",\"fault\":", o->o.producers, o->o.threads, o->o.sessions,
		o->o.seconds, o->o.churn, o->o.seed);
	if (o->o.fault)
		json_str(f, o->o.fault);
	else
		fputs("null", f);
	fputs(",\"stable\":[", f);
	for (uint32_t i = 0; o->stable && i < o->o.producers * o->o.sessions; i++) {
		const struct stress_child *c = o->stable[i];

		if (!c)
			continue;
		fprintf(f, "%s{\"name\":\"%s\",\"producer\":%u,\"pid\":%d,\"filter\":", first ? "" : ",",
			c->name, c->producer, (int)c->pid);
		json_str(f, stress_filters[c->filter].spec);
		fprintf(f, ",\"mode\":\"%s\",\"ring_size\":%" PRIu64 ",\"packet_size\":%u,"
			"\"paused\":%s,\"emitted\":%" PRIu64 ",\"received\":%" PRIu64 ",\"lost\":%"
			PRIu64 ",\"complete\":%s,\"ok\":%s}", mode_name(c->mode), c->ring_size,
			c->packet_size, c->paused ? "true" : "false",
			o->prod[c->producer].halted ? emitted_for(o, c->producer, c->filter) : 0,
			c->rep.received, c->rep.lost, c->rep.ended ? "true" : "false",
			c->rep.ended && !c->nbad && !c->rep.nviol ? "true" : "false");
		first = false;
	}
	fprintf(f, "],\"churn_consumers\":{\"started\":%" PRIu64 ",\"finished\":%" PRIu64
		",\"closed\":%" PRIu64 ",\"killed\":%" PRIu64 ",\"received\":%" PRIu64
		",\"lost\":%" PRIu64 "},\"producer_stats\":[", o->churn_spawned, o->churn_finished,
		o->churn_closed, o->churn_killed, o->churn_received, o->churn_lost);
	for (uint32_t p = 0; o->prod && p < o->o.producers; p++) {
		const struct stress_producer *pr = &o->prod[p];
		double rp, ru;

		rates(pr, &rp, &ru);
		fprintf(f, "%s{\"index\":%u,\"pid\":%d,\"emitted\":%" PRIu64 ",\"rate_paused\":%.0f,"
			"\"rate_unpaused\":%.0f,\"fds_baseline\":%ld,\"fds_after\":%ld,"
			"\"rss_baseline\":%" PRIu64 ",\"rss_after\":%" PRIu64 ",\"released\":%s}",
			p ? "," : "", p, pr->child ? (int)pr->child->pid : 0, pr->total, rp, ru,
			pr->fds_base, pr->fds_after, pr->rss_base, pr->rss_after,
			pr->released ? "true" : "false");
	}
	fprintf(f, "],\"totals\":{\"emitted\":%" PRIu64 ",\"received\":%" PRIu64 ",\"lost\":%"
		PRIu64 ",\"seconds\":%.3f,\"emitted_per_s\":%.0f,\"received_per_s\":%.0f,"
		"\"attach_median_ms\":%.3f,\"attach_max_ms\":%.3f},\"violations\":[",
		tt->emitted, tt->received, tt->lost, tt->seconds,
		tt->seconds > 0 ? tt->emitted / tt->seconds : 0.0,
		tt->seconds > 0 ? tt->received / tt->seconds : 0.0, tt->attach_median_ms,
		tt->attach_max_ms);
	for (size_t i = 0; i < o->nviol; i++) {
		if (i)
			fputc(',', f);
		json_str(f, o->viols[i]);
	}
	fprintf(f, "],\"ok\":%s}\n", o->nviol ? "false" : "true");
}

void stress_summary(struct stress_orch *o)
{
	struct totals t;

	totals(o, &t);
	if (o->o.json)
		summary_json(o, &t);
	else
		summary_text(o, &t);
	fflush(stdout);
}
