// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The matcher of a route table (http.h): a request's method and path
 * segments against patterns such as "/processes/{pid}/counters/{provider}/{name}".
 *
 * A pattern is read at each match, segment by segment, instead of being
 * compiled at start-up: the table is a couple of dozen short lines, and a
 * table that is only data can be checked (evr_mon_routes_check()) and tested
 * without a server. Pure: no MHD call, no allocation, no lock.
 *
 * The answer for a path is decided by the whole table, not by the first line
 * that fits: a route of another method does not hide a later one of this
 * method, and a 405's Allow names every method that some line of the path
 * has, so that a client learns what it may send.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "http.h"

enum cap_type { CAP_STR, CAP_PID };

/* The captures a pattern may name: each fills the field of evr_mon_args it is named for. */
static const struct {
	const char *name;
	enum cap_type type;
	size_t off;		/* CAP_STR: the const char * in struct evr_mon_args */
} caps[] = {
	{ "pid", CAP_PID, 0 },
	{ "id", CAP_STR, offsetof(struct evr_mon_args, id) },
	{ "provider", CAP_STR, offsetof(struct evr_mon_args, provider) },
	{ "name", CAP_STR, offsetof(struct evr_mon_args, name) },
	{ "asset", CAP_STR, offsetof(struct evr_mon_args, asset) },
};

/* The methods a line may have; GET serves HEAD too. */
static const char *const methods[] = { "GET", "POST", "PUT", "PATCH", "DELETE" };

/* The segment of @pat at *@p into @seg/@len, advancing; false at the pattern's end. */
static bool next_seg(const char **p, const char **seg, size_t *len)
{
	const char *s = *p;

	while (*s == '/')
		s++;
	if (!*s)
		return false;
	*seg = s;
	s += strcspn(s, "/");
	*len = (size_t)(s - *seg);
	*p = s;
	return true;
}

/* The capture that @seg (@len bytes, "{name}") names: its index in caps[], or -1. */
static int cap_of(const char *seg, size_t len)
{
	if (len < 3 || seg[0] != '{' || seg[len - 1] != '}')
		return -1;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		if (strlen(caps[i].name) == len - 2 && !memcmp(caps[i].name, seg + 1, len - 2))
			return (int)i;
	return -1;
}

static bool is_capture(const char *seg, size_t len)
{
	return len >= 2 && seg[0] == '{' && seg[len - 1] == '}';
}

/* Does @pat fit @segs? Then its captures into @a (when @a is not NULL). */
static bool fits(const char *pat, char *const *segs, unsigned nsegs, struct evr_mon_args *a)
{
	const char *seg;
	size_t len;
	unsigned i = 0;

	for (; next_seg(&pat, &seg, &len); i++) {
		int c;

		if (i >= nsegs)
			return false;
		if (!is_capture(seg, len)) {
			if (strlen(segs[i]) != len || memcmp(segs[i], seg, len))
				return false;
			continue;
		}
		c = cap_of(seg, len);
		if (c < 0)
			return false;	/* evr_mon_routes_check() refuses such a table */
		if (!a)
			continue;
		if (caps[c].type == CAP_PID) {
			/* A number is the pid; anything else a name, resolved by the caller. */
			if (evr_mon_parse_pid(segs[i], &a->pid) < 0) {
				a->pid = 0;
				a->pid_name = segs[i];
			}
		} else {
			*(const char **)((char *)a + caps[c].off) = segs[i];
		}
	}
	return i == nsegs;
}

static bool method_fits(const char *route_method, const char *method)
{
	return !strcmp(route_method, method) ||
	       (!strcmp(route_method, "GET") && !strcmp(method, "HEAD"));
}

/* Add @method (GET as "GET, HEAD") to @allow unless there already. */
static void allow_add(char *allow, const char *method)
{
	const char *what = strcmp(method, "GET") ? method : "GET, HEAD";
	size_t n = strlen(allow), ml = strlen(method);

	for (const char *p = allow; (p = strstr(p, method)); p += ml)
		if ((p == allow || p[-1] == ' ') && (p[ml] == ',' || !p[ml]))
			return;
	snprintf(allow + n, EVR_MON_ALLOW_MAX - n, "%s%s", n ? ", " : "", what);
}

unsigned evr_mon_route_match(const struct evr_mon_route *tab, size_t n, const char *method,
			     char *const *segs, unsigned nsegs, struct evr_mon_match *ret)
{
	*ret = (struct evr_mon_match){ 0 };
	for (size_t i = 0; i < n; i++) {
		if (!fits(tab[i].pattern, segs, nsegs, NULL))
			continue;
		if (method_fits(tab[i].method, method)) {
			/* Lines of the path before it had other methods: no Allow to say. */
			ret->allow[0] = '\0';
			ret->route = &tab[i];
			fits(tab[i].pattern, segs, nsegs, &ret->args);
			return 0;
		}
		allow_add(ret->allow, tab[i].method);
	}
	return ret->allow[0] ? 405 : 404;
}

int evr_mon_routes_check(const struct evr_mon_route *tab, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		const struct evr_mon_route *r = &tab[i];
		const char *p = r->pattern ? r->pattern : "", *seg, *why = NULL;
		bool known = false;
		unsigned nseg = 0;
		size_t len;

		for (size_t k = 0; r->method && k < sizeof(methods) / sizeof(methods[0]); k++)
			known |= !strcmp(r->method, methods[k]);
		if (!known)
			why = "an unknown method";
		else if (p[0] != '/')
			why = "a pattern that does not start with '/'";
		else if (!r->handler || !r->params)
			why = "no handler or no parameter list";
		while (!why && next_seg(&p, &seg, &len)) {
			if (++nseg > EVR_MON_MAX_SEGS)
				why = "more segments than EVR_MON_MAX_SEGS";
			else if (is_capture(seg, len) && cap_of(seg, len) < 0)
				why = "a capture that struct evr_mon_args has no field for";
			else if (!is_capture(seg, len) && memchr(seg, '{', len))
				why = "a '{' inside a literal segment";
		}
		if (why) {
			snprintf(err, errlen, "route %zu (%s %s): %s", i, r->method ? r->method : "?",
				 r->pattern ? r->pattern : "?", why);
			return -EINVAL;
		}
	}
	return 0;
}
