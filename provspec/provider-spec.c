// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Provider-spec parsing, formatting and matching.
 *
 * The text comes from users (command lines, the wire protocol), so every
 * rejection names the provider by position and quotes the offending part:
 * "provider 2 "Foo:0xZZ": keywords "0xZZ" is not a hexadecimal number".
 *
 * Parsing works on a private copy of each provider's text, split in place.
 * Quotes are honoured when splitting the list on ',' and the arguments on
 * ';', but not when splitting a provider on ':': only the first three
 * colons separate fields, so a ':' inside the arguments never needs quoting,
 * and a quote before the arguments is always an error anyway.
 *
 * Only standard C is used (no strdup/strndup/strcasecmp) so that the file
 * builds without feature-test macros and is independent of the locale.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evring/provider-spec.h"

#define LEVEL_CHOICES "logalways, critical, error, warning, informational, verbose"

/* One level per line: clang-format would pack these into a grid. */
/* clang-format off */
static const char *const level_names[] = {
	[EVR_LEVEL_LOGALWAYS] = "logalways",
	[EVR_LEVEL_CRITICAL] = "critical",
	[EVR_LEVEL_ERROR] = "error",
	[EVR_LEVEL_WARNING] = "warning",
	[EVR_LEVEL_INFO] = "informational",
	[EVR_LEVEL_VERBOSE] = "verbose",
};
/* clang-format on */

/* Where a message is going and what it is about. */
struct parse_ctx {
	size_t index; /* 1-based provider number, 0 for list-wide errors */
	const char *entry; /* trimmed provider text */
	char *errbuf;
	size_t errlen;
};

/* Open-addressing set of borrowed strings, remembering who came first. */
struct str_slot {
	const char *s;
	size_t idx;
};

struct str_set {
	struct str_slot *slot;
	size_t cap; /* 0 or a power of two */
	size_t count;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static char ascii_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool ascii_case_equal(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		if (ascii_lower(*a) != ascii_lower(*b))
			return false;
	}
	return *a == *b;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static char *str_dup_n(const char *s, size_t n)
{
	char *d;

	if (n == SIZE_MAX)
		return NULL;
	d = malloc(n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

static char *str_dup(const char *s)
{
	return str_dup_n(s, strlen(s));
}

/* Returns the grown array, or NULL with @v left intact and owned by the caller. */
static void *array_grow(void *v, size_t *cap, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 4;
	void *nv;

	if (ncap < *cap || ncap > SIZE_MAX / elem)
		return NULL;
	nv = realloc(v, ncap * elem);
	if (nv)
		*cap = ncap;
	return nv;
}

/*
 * Write "provider N "TEXT": MESSAGE" (or just MESSAGE without a provider)
 * into errbuf. Control characters become '?' so that the caller always gets
 * exactly one line, whatever the user typed.
 */
static int parse_error(const struct parse_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int parse_error(const struct parse_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	size_t off = 0;
	int n;

	if (!ctx->errbuf || ctx->errlen == 0)
		return -EINVAL;
	if (ctx->index) {
		n = snprintf(ctx->errbuf, ctx->errlen, "provider %zu \"%s\": ", ctx->index,
			     ctx->entry);
		if (n < 0)
			n = 0;
		off = (size_t)n;
	}
	if (off < ctx->errlen) {
		va_start(ap, fmt);
		(void)vsnprintf(ctx->errbuf + off, ctx->errlen - off, fmt, ap);
		va_end(ap);
	}
	for (char *p = ctx->errbuf; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
	return -EINVAL;
}

static int nomem_error(const struct parse_ctx *ctx)
{
	if (ctx->errbuf && ctx->errlen)
		(void)snprintf(ctx->errbuf, ctx->errlen, "out of memory");
	return -ENOMEM;
}

/* FNV-1a: simple, and good enough for provider names and argument keys. */
static size_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return (size_t)h;
}

static int str_set_grow(struct str_set *set)
{
	size_t ncap = set->cap ? set->cap * 2 : 16;
	struct str_slot *n;

	if (ncap < set->cap)
		return -ENOMEM;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < set->cap; i++) {
		size_t h;

		if (!set->slot[i].s)
			continue;
		for (h = str_hash(set->slot[i].s) & (ncap - 1); n[h].s; h = (h + 1) & (ncap - 1))
			;
		n[h] = set->slot[i];
	}
	free(set->slot);
	set->slot = n;
	set->cap = ncap;
	return 0;
}

/*
 * Add @s (borrowed; must outlive the set) under @idx unless an equal string
 * is already there. Returns 0 when added, 1 when present with its index in
 * *ret_idx, -ENOMEM.
 */
static int str_set_add(struct str_set *set, const char *s, size_t idx, size_t *ret_idx)
{
	size_t h;
	int r;

	/* Keep the load at most one half so probe sequences stay short. */
	if (set->count >= set->cap / 2) {
		r = str_set_grow(set);
		if (r < 0)
			return r;
	}
	for (h = str_hash(s) & (set->cap - 1); set->slot[h].s; h = (h + 1) & (set->cap - 1)) {
		if (strcmp(set->slot[h].s, s) == 0) {
			*ret_idx = set->slot[h].idx;
			return 1;
		}
	}
	set->slot[h].s = s;
	set->slot[h].idx = idx;
	set->count++;
	return 0;
}

static void str_set_fini(struct str_set *set)
{
	free(set->slot);
	set->slot = NULL;
	set->cap = 0;
	set->count = 0;
}

/*
 * Hexadecimal with an optional 0x/0X prefix. Every character is checked
 * before the width, so "0xZZ..." long enough to overflow is still reported
 * as not hexadecimal. Returns -EINVAL or -ERANGE.
 */
static int parse_hex64(const char *s, uint64_t *ret)
{
	const char *p = s;
	uint64_t v = 0;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	if (*p == '\0')
		return -EINVAL;
	for (const char *q = p; *q; q++) {
		if (hex_digit(*q) < 0)
			return -EINVAL;
	}
	for (; *p; p++) {
		if (v > UINT64_MAX >> 4)
			return -ERANGE;
		v = v << 4 | (uint64_t)hex_digit(*p);
	}
	*ret = v;
	return 0;
}

int evr_level_parse(const char *s, uint8_t *ret)
{
	static const struct {
		const char *name;
		uint8_t level;
	} aliases[] = {
		{"info", EVR_LEVEL_INFO},
	};
	unsigned int v = 0;

	if (!s || !ret || *s == '\0')
		return -EINVAL;
	if (*s >= '0' && *s <= '9') {
		for (const char *p = s; *p; p++) {
			if (*p < '0' || *p > '9')
				return -EINVAL;
			v = v * 10 + (unsigned int)(*p - '0');
			/* Checked every digit, so a long number cannot wrap. */
			if (v > EVR_LEVEL_VERBOSE)
				return -EINVAL;
		}
		*ret = (uint8_t)v;
		return 0;
	}
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (ascii_case_equal(s, level_names[i])) {
			*ret = (uint8_t)i;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		if (ascii_case_equal(s, aliases[i].name)) {
			*ret = aliases[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

const char *evr_level_name(uint8_t level)
{
	if (level >= sizeof(level_names) / sizeof(level_names[0]))
		return NULL;
	return level_names[level];
}

static void spec_fini(struct evr_provider_spec *spec)
{
	if (spec->args) {
		for (size_t i = 0; i < spec->nargs; i++) {
			free(spec->args[i].key);
			free(spec->args[i].value);
		}
	}
	free(spec->args);
	free(spec->name);
}

void evr_provider_spec_list_free(struct evr_provider_spec_list *l)
{
	if (!l)
		return;
	if (l->v) {
		for (size_t i = 0; i < l->n; i++)
			spec_fini(&l->v[i]);
	}
	free(l->v);
	free(l);
}

/*
 * Parse one key=value pair, NUL-terminated in place, and append it to
 * @spec. @keys detects repeated keys; @argno is 1-based.
 */
static int parse_arg(const struct parse_ctx *ctx, struct str_set *keys, size_t *cap,
		     const char *pair, size_t argno, struct evr_provider_spec *spec)
{
	const char *eq, *value, *vstart;
	struct evr_provider_arg *a;
	size_t klen, vlen, prev;
	void *nv;
	int r;

	if (*pair == '\0')
		return parse_error(ctx, "argument %zu is empty", argno);
	eq = strchr(pair, '=');
	if (!eq)
		return parse_error(ctx, "argument %zu \"%s\": no '=' between key and value", argno,
				   pair);
	klen = (size_t)(eq - pair);
	if (klen == 0)
		return parse_error(ctx, "argument %zu \"%s\": key is empty", argno, pair);
	for (const char *q = pair; q < eq; q++) {
		if (is_space(*q))
			return parse_error(ctx,
					   "argument %zu \"%s\": key \"%.*s\" contains whitespace",
					   argno, pair, (int)klen, pair);
		if (*q == '"')
			return parse_error(ctx,
					   "argument %zu \"%s\": key \"%.*s\" contains a quote",
					   argno, pair, (int)klen, pair);
	}

	/*
	 * Only a value that is quoted as a whole is accepted: with no escape
	 * for '"', allowing quotes mid-value would give text that cannot be
	 * formatted back unambiguously.
	 */
	value = eq + 1;
	if (*value == '"') {
		const char *close = strchr(value + 1, '"');

		/*
		 * Quotes in the pair are balanced (see parse_args()) and the key
		 * has none, so an opening quote here always has a partner.
		 */
		assert(close);
		if (close[1] != '\0')
			return parse_error(
				ctx, "argument %zu \"%s\": a quote must enclose the whole value",
				argno, pair);
		vstart = value + 1;
		vlen = (size_t)(close - vstart);
	} else {
		if (strchr(value, '"'))
			return parse_error(
				ctx, "argument %zu \"%s\": a quote must enclose the whole value",
				argno, pair);
		vstart = value;
		vlen = strlen(value);
	}

	if (spec->nargs == *cap) {
		nv = array_grow(spec->args, cap, sizeof(*spec->args));
		if (!nv)
			return nomem_error(ctx);
		spec->args = nv;
	}
	a = &spec->args[spec->nargs];
	a->key = str_dup_n(pair, klen);
	a->value = NULL;
	if (!a->key)
		return nomem_error(ctx);
	/* Counted now so that spec_fini() frees the key on any later failure. */
	spec->nargs++;

	r = str_set_add(keys, a->key, argno, &prev);
	if (r < 0)
		return nomem_error(ctx);
	if (r > 0)
		return parse_error(ctx,
				   "argument %zu \"%s\": key \"%s\" already given in argument %zu",
				   argno, pair, a->key, prev);

	a->value = str_dup_n(vstart, vlen);
	if (!a->value)
		return nomem_error(ctx);
	return 0;
}

/* Split the ARGS field (mutable, NUL-terminated) on ';' outside quotes. */
static int parse_args(const struct parse_ctx *ctx, char *text, struct evr_provider_spec *spec)
{
	struct str_set keys = {0};
	size_t cap = 0, argno = 0;
	char *p = text;
	int r = 0;

	/* "Name:kw:level:" is how one writes "no arguments" explicitly. */
	if (*text == '\0')
		return 0;
	for (;;) {
		char *pair = p;
		bool quoted = false, last;

		for (; *p && (quoted || *p != ';'); p++) {
			if (*p == '"')
				quoted = !quoted;
		}
		/*
		 * parse_entry() rejected a provider whose quotes do not balance,
		 * and any quote in the name, keywords or level is an error found
		 * before we get here, so the arguments balance on their own.
		 */
		assert(!quoted);
		last = *p == '\0';
		*p = '\0';
		argno++;
		r = parse_arg(ctx, &keys, &cap, pair, argno, spec);
		if (r < 0 || last)
			goto out;
		p++;
	}
out:
	str_set_fini(&keys);
	return r;
}

/*
 * Parse the provider text [start, end) and append it to @l. @unterminated
 * says the list splitter reached the end of the text inside quotes.
 */
static int parse_entry(struct evr_provider_spec_list *l, size_t *cap, struct str_set *names,
		       size_t index, const char *start, const char *end, bool unterminated,
		       char *errbuf, size_t errlen)
{
	struct evr_provider_spec spec = {
		.keywords = EVR_KEYWORDS_ALL,
		.level = EVR_LEVEL_VERBOSE,
	};
	struct parse_ctx ctx = {
		.index = index,
		.entry = "",
		.errbuf = errbuf,
		.errlen = errlen,
	};
	char *entry = NULL, *work = NULL, *field[4] = {NULL};
	size_t nfields = 0, prev;
	char *p;
	void *nv;
	int r;

	while (start < end && is_space(*start))
		start++;
	while (end > start && is_space(end[-1]))
		end--;
	entry = str_dup_n(start, (size_t)(end - start));
	work = str_dup_n(start, (size_t)(end - start));
	if (!entry || !work) {
		r = nomem_error(&ctx);
		goto out;
	}
	ctx.entry = entry;

	if (*entry == '\0') {
		r = parse_error(&ctx, "empty entry");
		goto out;
	}
	/* Checked first: the quote also decided where this provider ends. */
	if (unterminated) {
		r = parse_error(&ctx, "unterminated quote");
		goto out;
	}

	field[nfields++] = work;
	for (p = work; nfields < 4 && (p = strchr(p, ':'));) {
		*p++ = '\0';
		field[nfields++] = p;
	}

	if (*field[0] == '\0') {
		r = parse_error(&ctx, "name is empty");
		goto out;
	}
	for (p = field[0]; *p; p++) {
		if (is_space(*p)) {
			r = parse_error(&ctx, "name \"%s\" contains whitespace", field[0]);
			goto out;
		}
		if (*p == '"') {
			r = parse_error(&ctx, "name \"%s\" contains a quote", field[0]);
			goto out;
		}
	}

	if (field[1] && *field[1]) {
		r = parse_hex64(field[1], &spec.keywords);
		if (r == -ERANGE) {
			r = parse_error(&ctx, "keywords \"%s\" does not fit in 64 bits", field[1]);
			goto out;
		}
		if (r < 0) {
			r = parse_error(&ctx, "keywords \"%s\" is not a hexadecimal number",
					field[1]);
			goto out;
		}
	}

	if (field[2] && *field[2] && evr_level_parse(field[2], &spec.level) < 0) {
		r = parse_error(&ctx, "level \"%s\" is not 0-5 or a level name (" LEVEL_CHOICES ")",
				field[2]);
		goto out;
	}

	if (field[3]) {
		r = parse_args(&ctx, field[3], &spec);
		if (r < 0)
			goto out;
	}

	spec.name = str_dup(field[0]);
	if (!spec.name) {
		r = nomem_error(&ctx);
		goto out;
	}
	if (l->n == *cap) {
		nv = array_grow(l->v, cap, sizeof(*l->v));
		if (!nv) {
			r = nomem_error(&ctx);
			goto out;
		}
		l->v = nv;
	}
	r = str_set_add(names, spec.name, l->n, &prev);
	if (r < 0) {
		r = nomem_error(&ctx);
		goto out;
	}
	if (r > 0) {
		r = parse_error(&ctx, "listed twice (first as provider %zu)", prev + 1);
		goto out;
	}
	/* The list owns the strings from here on; the set keeps borrowing the name. */
	l->v[l->n++] = spec;
	spec = (struct evr_provider_spec){0};
	r = 0;
out:
	spec_fini(&spec);
	free(work);
	free(entry);
	return r;
}

int evr_provider_spec_parse(const char *text, struct evr_provider_spec_list **ret, char *errbuf,
			    size_t errlen)
{
	struct parse_ctx ctx = {.errbuf = errbuf, .errlen = errlen};
	struct evr_provider_spec_list *l;
	struct str_set names = {0};
	size_t cap = 0, index = 0;
	const char *p;
	int r;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!text || !ret)
		return parse_error(&ctx, "no provider list or result pointer given");
	for (p = text; is_space(*p); p++)
		;
	if (*p == '\0')
		return parse_error(&ctx, "provider list is empty");

	l = calloc(1, sizeof(*l));
	if (!l)
		return nomem_error(&ctx);
	for (p = text;; p++) {
		const char *start = p;
		bool quoted = false;

		for (; *p && (quoted || *p != ','); p++) {
			if (*p == '"')
				quoted = !quoted;
		}
		r = parse_entry(l, &cap, &names, ++index, start, p, quoted, errbuf, errlen);
		if (r < 0)
			goto err;
		if (*p == '\0')
			break;
	}
	str_set_fini(&names);
	*ret = l;
	return 0;
err:
	str_set_fini(&names);
	evr_provider_spec_list_free(l);
	return r;
}

const char *evr_provider_spec_arg(const struct evr_provider_spec *spec, const char *key)
{
	if (!spec || !key || !spec->args)
		return NULL;
	for (size_t i = 0; i < spec->nargs; i++) {
		if (spec->args[i].key && strcmp(spec->args[i].key, key) == 0)
			return spec->args[i].value;
	}
	return NULL;
}

const struct evr_provider_spec *evr_provider_spec_list_find(const struct evr_provider_spec_list *l,
							    const char *provider_name)
{
	const struct evr_provider_spec *star = NULL;

	if (!l || !l->v || !provider_name)
		return NULL;
	for (size_t i = 0; i < l->n; i++) {
		const char *name = l->v[i].name;

		if (!name)
			continue;
		if (strcmp(name, provider_name) == 0)
			return &l->v[i];
		if (!star && strcmp(name, "*") == 0)
			star = &l->v[i];
	}
	return star;
}

bool evr_provider_spec_match(const struct evr_provider_spec *spec, const char *provider_name,
			     uint64_t event_keywords, uint8_t event_level)
{
	if (!spec || !spec->name || !provider_name)
		return false;
	if (strcmp(spec->name, "*") != 0 && strcmp(spec->name, provider_name) != 0)
		return false;
	return evr_keywords_match(spec->keywords, event_keywords) &&
	       evr_level_match(spec->level, event_level);
}

/* True when no character of @s is whitespace or appears in @reject. */
static bool str_clean(const char *s, const char *reject)
{
	for (; *s; s++) {
		if (is_space(*s) || strchr(reject, *s))
			return false;
	}
	return true;
}

/* Reject what evr_provider_spec_parse() would not give back unchanged. */
static int format_check(const struct evr_provider_spec_list *l)
{
	struct str_set names = {0}, keys = {0};
	size_t prev;
	int r = 0;

	if (l->n == 0 || !l->v)
		return -EINVAL;
	for (size_t i = 0; i < l->n; i++) {
		const struct evr_provider_spec *s = &l->v[i];

		if (!s->name || !*s->name || !str_clean(s->name, ":,\"") ||
		    s->level > EVR_LEVEL_VERBOSE || (s->nargs && !s->args)) {
			r = -EINVAL;
			goto out;
		}
		r = str_set_add(&names, s->name, i, &prev);
		if (r != 0)
			goto dup;
		for (size_t j = 0; j < s->nargs; j++) {
			const struct evr_provider_arg *a = &s->args[j];

			if (!a->key || !*a->key || !str_clean(a->key, "\"=;,") || !a->value ||
			    strchr(a->value, '"')) {
				r = -EINVAL;
				goto out;
			}
			r = str_set_add(&keys, a->key, j, &prev);
			if (r != 0)
				goto dup;
		}
		str_set_fini(&keys);
	}
	goto out;
dup:
	if (r > 0)
		r = -EINVAL;
out:
	str_set_fini(&keys);
	str_set_fini(&names);
	return r;
}

/* snprintf-style sink: counts everything, stores what fits. */
struct out {
	char *buf;
	size_t len;
	size_t pos;
};

static void out_putn(struct out *o, const char *s, size_t n)
{
	if (o->len && o->pos < o->len - 1) {
		size_t room = o->len - 1 - o->pos;

		memcpy(o->buf + o->pos, s, n < room ? n : room);
	}
	/* Saturate; the caller turns anything past INT_MAX into -EOVERFLOW. */
	o->pos = n > SIZE_MAX - o->pos ? SIZE_MAX : o->pos + n;
}

static void out_puts(struct out *o, const char *s)
{
	out_putn(o, s, strlen(s));
}

int evr_provider_spec_list_format(const struct evr_provider_spec_list *l, char *buf, size_t len)
{
	struct out o = {.buf = buf, .len = len};
	char num[32];
	int r;

	if (!l || (!buf && len))
		return -EINVAL;
	r = format_check(l);
	if (r < 0)
		return r;

	for (size_t i = 0; i < l->n; i++) {
		const struct evr_provider_spec *s = &l->v[i];

		if (i)
			out_puts(&o, ",");
		out_puts(&o, s->name);
		(void)snprintf(num, sizeof(num), ":0x%" PRIx64 ":%u", s->keywords,
			       (unsigned int)s->level);
		out_puts(&o, num);
		for (size_t j = 0; j < s->nargs; j++) {
			const struct evr_provider_arg *a = &s->args[j];
			/* ':' and '=' are safe bare, but quoting them reads less ambiguously. */
			bool quote = !str_clean(a->value, ";,:=");

			out_puts(&o, j ? ";" : ":");
			out_puts(&o, a->key);
			out_puts(&o, quote ? "=\"" : "=");
			out_puts(&o, a->value);
			if (quote)
				out_puts(&o, "\"");
		}
	}
	if (len)
		buf[o.pos < len ? o.pos : len - 1] = '\0';
	if (o.pos > INT_MAX)
		return -EOVERFLOW;
	return (int)o.pos;
}
