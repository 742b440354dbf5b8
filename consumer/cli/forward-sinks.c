// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring forward's sinks as the command sees them: every --to parsed and
 * checked before anything is attached (a bad one is a usage error), opened,
 * closed within the flush deadline, and summed up at the end (forward-cli.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "forward-cli.h"
#include "forward.h"

#define CMD "forward"

static const struct evr_fwd_sink_ops *find_kind(const char *kind)
{
	for (uint32_t i = 0; evr_fwd_sink_kinds[i]; i++)
		if (!strcmp(evr_fwd_sink_kinds[i]->kind, kind))
			return evr_fwd_sink_kinds[i];
	return NULL;
}

int evr_fwd_sinks_parse(struct evr_fwd_sink *sinks, uint32_t *n, const char *const *to,
			uint32_t nto, bool many)
{
	char err[512];

	for (uint32_t i = 0; i < nto; i++) {
		struct evr_fwd_sink *s = &sinks[*n];
		int r = evr_fwd_spec_parse(to[i], &s->spec, err, sizeof(err));

		if (r < 0) {
			evr_cli_error(CMD, "%s", err);
			return r;
		}
		(*n)++;
		s->many = many;
		s->ops = find_kind(s->spec.kind);
		if (!s->ops) {
			evr_cli_error(CMD, "--to %s: unknown sink '%s' (jsonl, graphite, journald, lttng)", s->spec.text,
				      s->spec.kind);
			return -EINVAL;
		}
		r = evr_fwd_filter_init(&s->filter, &s->spec, s->ops->what, s->ops->default_level,
					s->ops->keys, err, sizeof(err));
		if (r == 0 && s->ops->check)
			r = s->ops->check(s, err, sizeof(err));
		if (r < 0) {
			evr_cli_error(CMD, "%s", err);
			return r;
		}
	}
	return 0;
}

int evr_fwd_sinks_open(struct evr_fwd_sink *sinks, uint32_t n)
{
	char err[512];

	for (uint32_t i = 0; i < n; i++) {
		struct evr_fwd_sink *s = &sinks[i];
		int r = s->ops->open(s, err, sizeof(err));

		if (r < 0) {
			evr_cli_error(CMD, "%s", r == -ENOMEM ? "out of memory" : err);
			/* Options were checked before: a file or receiver that fails is no
			 * usage error. */
			return r == -EINVAL ? -EIO : r;
		}
	}
	return 0;
}

void evr_fwd_sinks_close(struct evr_fwd_sink *sinks, uint32_t n, uint64_t deadline_ns)
{
	for (uint32_t i = 0; i < n; i++)
		if (sinks[i].priv)
			sinks[i].ops->close(&sinks[i], deadline_ns);
}

bool evr_fwd_sinks_failed(struct evr_fwd_sink *sinks, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!atomic_load_explicit(&sinks[i].error, memory_order_relaxed))
			return false;
	return true;
}

void evr_fwd_sink_summary(struct evr_fwd_sink *s)
{
	struct evr_fwd_outbox_stats os = { 0 };
	uint64_t sent = s->st.sent, dropped = s->st.dropped;
	char why[400] = "", extra[256] = "";
	size_t n = 0;
	int err;

	if (s->outbox) {
		evr_fwd_outbox_stats(s->outbox, &os);
		sent = os.delivered - s->st.sent_adjust - s->st.unconfirmed;
		dropped = os.dropped_full + os.dropped_close + os.dropped_failed +
			  s->st.unconfirmed;
	}
	dropped += s->st.too_large + s->st.rate_limited;
#define WHY(cnt, text)                                                                         \
	if ((cnt) && n < sizeof(why))                                                          \
		n += (size_t)snprintf(why + n, sizeof(why) - n, "%s%" PRIu64 " " text,         \
				      n ? ", " : " (", (uint64_t)(cnt))
	WHY(os.dropped_full, "the sink fell behind");
	WHY(os.dropped_close, "undelivered at exit");
	WHY(os.dropped_failed, "after the sink failed");
	WHY(s->st.unconfirmed, "unconfirmed: the connection died under them");
	WHY(s->st.too_large, "too large");
	WHY(s->st.rate_limited, "over max-rate");
	if (s->outbox == NULL && s->st.dropped && n < sizeof(why))
		n += (size_t)snprintf(why + n, sizeof(why) - n, "%s%" PRIu64 " %s", n ? ", " : " (",
				      s->st.dropped, s->st.dropped_why ? s->st.dropped_why :
				      "refused by the receiver");
#undef WHY
	if (n && n < sizeof(why))
		snprintf(why + n, sizeof(why) - n, ")");
	if (s->st.connects > 1 || s->st.connect_failures)
		snprintf(extra, sizeof(extra), "%" PRIu64 " connection%s, %" PRIu64
			 " failed attempt%s", s->st.connects, s->st.connects == 1 ? "" : "s",
			 s->st.connect_failures, s->st.connect_failures == 1 ? "" : "s");
	fprintf(stderr, "evring forward: %s: %" PRIu64 " sent, %" PRIu64 " dropped%s, %" PRIu64
		" filtered%s%s\n", s->spec.text, sent, dropped, why, s->st.filtered,
		*extra ? ", " : "", extra);
	/* Pairs with the release store in evr_fwd_sink_fail(): why is written. */
	err = atomic_load_explicit(&s->error, memory_order_acquire);
	if (err)
		evr_cli_error(CMD, "%s: %s", s->spec.text, s->why);
}
