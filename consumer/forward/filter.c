// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sink specs and per-sink filters.
 *
 *   KIND[:ARG][,KEY=VALUE...]
 *
 * ARG runs to the first comma (so a jsonl path cannot hold one). Filter keys:
 *   level=N|NAME       events of this level or more severe (LogAlways always passes)
 *   provider=GLOB      repeatable: the provider matches one of them (fnmatch)
 *   event=GLOB         repeatable: "Event" or "Provider/Event" matches one of them
 *   keywords=0xMASK    the event's keywords intersect MASK (events without keywords pass)
 *   what=events|counters|all
 *   max-rate=N         at most N events per second (a token bucket of one second)
 * Every other key belongs to the sink; a key nobody reads is an error.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


#include "forward.h"

static int fail(char *err, size_t errlen, const char *spec, const char *what)
{
	snprintf(err, errlen, "--to %s: %s", spec, what);
	return -EINVAL;
}

int evr_fwd_spec_parse(const char *text, struct evr_fwd_spec *ret, char *err, size_t errlen)
{
	struct evr_fwd_spec s = { 0 };
	char *p, *save = NULL, *tok;
	char msg[256];

	if (!text || !*text)
		return fail(err, errlen, "''", "empty sink (jsonl:PATH, lttng, journald, "
			    "graphite:HOST:PORT)");
	/* kind owns the copy that arg and the pairs point into. */
	s.text = strdup(text);
	s.kind = strdup(text);
	if (!s.text || !s.kind)
		goto fail_oom;
	p = strchr(s.kind, ',');
	if (p)
		*p++ = 0;
	s.arg = strchr(s.kind, ':');
	if (s.arg)
		*s.arg++ = 0;
	if (!*s.kind) {
		evr_fwd_spec_fini(&s);
		return fail(err, errlen, text, "no sink kind before ':'");
	}
	for (tok = p ? strtok_r(p, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		struct evr_fwd_kv *kv;

		if (!eq || eq == tok) {
			snprintf(msg, sizeof(msg), "'%s' is not KEY=VALUE", tok);
			evr_fwd_spec_fini(&s);
			return fail(err, errlen, text, msg);
		}
		kv = realloc(s.kv, (s.nkv + 1) * sizeof(*kv));
		if (!kv)
			goto fail_oom;
		s.kv = kv;
		*eq = 0;
		s.kv[s.nkv++] = (struct evr_fwd_kv){ .key = tok, .value = eq + 1 };
	}
	*ret = s;
	return 0;
fail_oom:
	evr_fwd_spec_fini(&s);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

void evr_fwd_spec_fini(struct evr_fwd_spec *s)
{
	free(s->text);
	free(s->kind);
	free(s->kv);
	memset(s, 0, sizeof(*s));
}

const char *evr_fwd_spec_get(struct evr_fwd_spec *s, const char *key)
{
	const char *v = NULL;

	/* The last one wins, as with repeated options. */
	for (uint32_t i = 0; i < s->nkv; i++)
		if (!strcmp(s->kv[i].key, key))
			v = s->kv[i].value;
	return v;
}

static int parse_level(const char *v, int *ret)
{
	static const char *const names[] = { "logalways", "critical", "error", "warning",
					     "info", "verbose" };
	char *end;
	long n;

	for (int i = 0; i < 6; i++)
		if (!strcasecmp(v, names[i])) {
			*ret = i;
			return 0;
		}
	if (!strcasecmp(v, "informational")) {
		*ret = 4;
		return 0;
	}
	n = strtol(v, &end, 10);
	if (!*v || *end || n < 0 || n > 255)
		return -EINVAL;
	*ret = (int)n;
	return 0;
}

static bool is_own(const char *const *own, const char *key)
{
	for (; own && *own; own++)
		if (!strcmp(*own, key))
			return true;
	return false;
}

int evr_fwd_filter_init(struct evr_fwd_filter *f, struct evr_fwd_spec *s, uint32_t what,
			int default_level, const char *const *own, char *err, size_t errlen)
{
	char msg[256];

	memset(f, 0, sizeof(*f));
	f->level = default_level;
	f->what = what;
	for (uint32_t i = 0; i < s->nkv; i++) {
		const char *k = s->kv[i].key, *v = s->kv[i].value;
		char *end;

		if (!strcmp(k, "level")) {
			if (parse_level(v, &f->level) < 0) {
				snprintf(msg, sizeof(msg), "level=%s is not a level (0-5, or critical, "
					 "error, warning, info, verbose)", v);
				goto bad;
			}
		} else if (!strcmp(k, "provider") || !strcmp(k, "event")) {
			bool prov = k[0] == 'p';
			uint32_t *n = prov ? &f->nproviders : &f->nevents;

			if (!*v || *n == EVR_FWD_FILTER_MAX_GLOBS) {
				snprintf(msg, sizeof(msg), "%s=%s: %s", k, v,
					 *v ? "too many (16 at most)" : "empty pattern");
				goto bad;
			}
			(prov ? f->providers : f->events)[(*n)++] = strdup(v);
			if (!(prov ? f->providers : f->events)[*n - 1]) {
				snprintf(msg, sizeof(msg), "out of memory");
				goto bad;
			}
		} else if (!strcmp(k, "keywords")) {
			f->keywords = strtoull(v, &end, 0);
			if (!*v || *end) {
				snprintf(msg, sizeof(msg), "keywords=%s is not a number (0x...)", v);
				goto bad;
			}
		} else if (!strcmp(k, "what")) {
			if (!strcmp(v, "events"))
				f->what = EVR_FWD_EVENTS;
			else if (!strcmp(v, "counters"))
				f->what = EVR_FWD_COUNTERS;
			else if (!strcmp(v, "all"))
				f->what = EVR_FWD_ALL;
			else {
				snprintf(msg, sizeof(msg), "what=%s: events, counters or all", v);
				goto bad;
			}
		} else if (!strcmp(k, "max-rate")) {
			f->max_rate = strtod(v, &end);
			if (!*v || *end || !(f->max_rate > 0) || f->max_rate > 1e9) {
				snprintf(msg, sizeof(msg), "max-rate=%s is not a rate in events per "
					 "second", v);
				goto bad;
			}
			f->tokens = f->max_rate;
		} else if (!is_own(own, k)) {
			snprintf(msg, sizeof(msg), "%s has no option '%s'", s->kind, k);
			goto bad;
		}
	}
	return 0;
bad:
	evr_fwd_filter_fini(f);
	return fail(err, errlen, s->text, msg);
}

void evr_fwd_filter_fini(struct evr_fwd_filter *f)
{
	for (uint32_t i = 0; i < f->nproviders; i++)
		free(f->providers[i]);
	for (uint32_t i = 0; i < f->nevents; i++)
		free(f->events[i]);
	f->nproviders = f->nevents = 0;
}

static bool event_matches(const struct evr_fwd_filter *f, const struct evr_schema_event *ev)
{
	char full[512];

	snprintf(full, sizeof(full), "%s/%s", ev->provider, ev->name);
	for (uint32_t i = 0; i < f->nevents; i++)
		if (!fnmatch(f->events[i], ev->name, 0) || !fnmatch(f->events[i], full, 0))
			return true;
	return false;
}

/* The token bucket: max_rate tokens a second, at most max_rate in store. */
static bool take_token(struct evr_fwd_filter *f)
{
	uint64_t now = evr_mono_ns();

	if (f->tokens_ns) {
		f->tokens += (double)(now - f->tokens_ns) / 1e9 * f->max_rate;
		if (f->tokens > f->max_rate)
			f->tokens = f->max_rate;
	}
	f->tokens_ns = now;
	if (f->tokens < 1)
		return false;
	f->tokens -= 1;
	return true;
}

bool evr_fwd_filter_pass(struct evr_fwd_filter *f, const struct evr_fwd_event *e, bool counter,
			 bool *ret_rate_limited)
{
	const struct evr_schema_event *ev = e->v->schema;
	bool ok = false;

	*ret_rate_limited = false;
	if (!(f->what & (counter ? EVR_FWD_COUNTERS : EVR_FWD_EVENTS)))
		return false;
	if (!ev)
		/* Without a description only an unfiltered sink takes it. */
		return !f->nproviders && !f->nevents && f->level < 0 && !f->keywords;
	if (f->level >= 0 && ev->level != 0 && ev->level > f->level)
		return false;
	if (f->keywords && ev->keywords && !(f->keywords & ev->keywords))
		return false;
	if (f->nproviders) {
		for (uint32_t i = 0; i < f->nproviders && !ok; i++)
			ok = !fnmatch(f->providers[i], ev->provider, 0);
		if (!ok)
			return false;
	}
	if (f->nevents && !event_matches(f, ev))
		return false;
	if (f->max_rate > 0 && !take_token(f)) {
		*ret_rate_limited = true;
		return false;
	}
	return true;
}
