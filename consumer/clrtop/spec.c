// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The --counters filter ("Provider[c1,c2],Provider2", as dotnet-counters takes
 * it) and the provider list clrtop's sessions ask for.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clrtop.h"

void evr_top_filter_fini(struct evr_top_filter *f)
{
	if (!f)
		return;
	for (uint32_t i = 0; i < f->n; i++) {
		for (uint32_t j = 0; j < f->v[i].ncounters; j++)
			free(f->v[i].counters[j]);
		free(f->v[i].counters);
		free(f->v[i].name);
	}
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

__attribute__((format(printf, 3, 4)))
static int failf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Characters a provider or counter name may not hold: the list syntax, the
 * provider-spec separators, and white space (always a typo here). */
static bool bad_name_char(char c)
{
	return c == ',' || c == '[' || c == ']' || c == ':' || c == ';' || c == '=' ||
	       c == '"' || c == ' ' || c == '\t' || c == '\n' || (unsigned char)c < 0x20;
}

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

int evr_top_filter_parse(const char *text, struct evr_top_filter *ret, char *err, size_t errlen)
{
	struct evr_top_filter f = { 0 };
	const char *p = text;
	int r = -EINVAL;

	if (!text || !ret)
		return -EINVAL;
	if (!*text) {
		failf(err, errlen, "--counters: empty list");
		goto fail;
	}
	while (*p) {
		struct evr_top_filter_provider *np, *fp;
		const char *start = p;
		size_t n;

		while (*p && !bad_name_char(*p))
			p++;
		n = (size_t)(p - start);
		if (n == 0) {
			if (*p == ',' || *p == '[')
				failf(err, errlen, "--counters: a provider name is missing");
			else
				failf(err, errlen, "--counters: unexpected '%.1s' in a provider name", p);
			goto fail;
		}
		np = realloc(f.v, (f.n + 1) * sizeof(*f.v));
		if (!np) {
			r = -ENOMEM;
			goto fail;
		}
		f.v = np;
		fp = &f.v[f.n++];
		*fp = (struct evr_top_filter_provider){ .name = dup_n(start, n) };
		if (!fp->name) {
			r = -ENOMEM;
			goto fail;
		}
		if (*p == '[') {
			p++;
			for (;;) {
				char **nc;

				start = p;
				while (*p && !bad_name_char(*p))
					p++;
				n = (size_t)(p - start);
				if (!*p) {
					failf(err, errlen, "--counters: '[' after %s is never closed",
					      fp->name);
					goto fail;
				}
				if (n == 0) {
					if (*p == ',' || *p == ']')
						failf(err, errlen,
						      "--counters: empty counter name in %s[...]",
						      fp->name);
					else
						failf(err, errlen,
						      "--counters: unexpected '%c' in %s[...]", *p,
						      fp->name);
					goto fail;
				}
				if (*p != ',' && *p != ']') {
					failf(err, errlen, "--counters: unexpected '%c' in %s[...]",
					      *p, fp->name);
					goto fail;
				}
				nc = realloc(fp->counters, (fp->ncounters + 1) * sizeof(*nc));
				if (!nc) {
					r = -ENOMEM;
					goto fail;
				}
				fp->counters = nc;
				nc[fp->ncounters] = dup_n(start, n);
				if (!nc[fp->ncounters]) {
					r = -ENOMEM;
					goto fail;
				}
				fp->ncounters++;
				if (*p++ == ']')
					break;
			}
		}
		if (*p == ',') {
			p++;
			if (!*p) {
				failf(err, errlen, "--counters: trailing ','");
				goto fail;
			}
		} else if (*p) {
			failf(err, errlen, "--counters: unexpected '%.1s' after a provider", p);
			goto fail;
		}
	}
	*ret = f;
	return 0;
fail:
	if (r == -ENOMEM && err && errlen)
		snprintf(err, errlen, "--counters: out of memory");
	evr_top_filter_fini(&f);
	return r;
}

bool evr_top_filter_wants(const struct evr_top_filter *f, const char *provider, const char *name,
		     size_t name_len)
{
	if (!f || !f->n)
		return true;
	for (uint32_t i = 0; i < f->n; i++) {
		const struct evr_top_filter_provider *fp = &f->v[i];

		if (strcmp(fp->name, provider))
			continue;
		if (!fp->ncounters)
			return true;
		for (uint32_t j = 0; j < fp->ncounters; j++)
			if (strlen(fp->counters[j]) == name_len &&
			    !memcmp(fp->counters[j], name, name_len))
				return true;
	}
	return false;
}

char *evr_top_provider_spec(const char *const *names, uint32_t n)
{
	struct evr_strbuf sb = { 0 };

	for (uint32_t i = 0; i < n; i++)
		if (evr_strbuf_printf(&sb, "%s%s:0x0:0", i ? "," : "", names[i]) < 0) {
			free(sb.buf);
			return NULL;
		}
	if (!sb.buf)
		return strdup("");
	return sb.buf;
}
