// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Durations as people type them (evr_duration_parse(), <evring/consumer.h>):
 * evring's own "500ms", "30s", "5m", "1h", "2d" or a bare number of seconds,
 * and the TimeSpan forms the dotnet tools take ("dd:hh:mm:ss" for dotnet-trace
 * --duration, "hh:mm:ss", "d.hh:mm:ss", seconds with a fraction). Every tool of
 * evring parses durations here, so they all accept the same forms.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <evring/consumer.h>

#define NS_PER_S 1000000000ull
/* The most any form may say: about 31 years, far from overflowing u64 nanoseconds. */
#define DURATION_MAX_NS (1000000000ull * NS_PER_S)

/*
 * Digits at *@p into @ret (at most 18 of them), and after an optional '.', a
 * fraction of at most 9 digits into @ret_frac_ns (as nanoseconds of a unit of
 * 10^9 ns), when @frac is true. Return: the number of integer digits read.
 */
static int digits(const char **p, uint64_t *ret, bool frac, uint64_t *ret_frac_ns)
{
	const char *s = *p;
	uint64_t v = 0, f = 0, scale = 100000000ull;
	int n = 0;

	while (*s >= '0' && *s <= '9') {
		if (++n > 18)
			return -1;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	if (frac && *s == '.' && s[1] >= '0' && s[1] <= '9') {
		s++;
		while (*s >= '0' && *s <= '9') {
			f += scale * (uint64_t)(*s++ - '0');
			scale /= 10;	/* digits past nanoseconds are dropped */
		}
	}
	*p = s;
	*ret = v;
	if (ret_frac_ns)
		*ret_frac_ns = f;
	return n;
}

/* Exactly the digits of [@s, @end) into @ret (1 to 18 of them). */
static bool whole_number(const char *s, const char *end, uint64_t *ret)
{
	const char *p = s;

	if (end - s < 1 || end - s > 18 || digits(&p, ret, false, NULL) != end - s)
		return false;
	return true;
}

/* "hh:mm", "hh:mm:ss[.f]", "dd:hh:mm:ss[.f]" or "d.hh:mm:ss[.f]". */
static int parse_clock(const char *s, uint64_t *ret_ns)
{
	const char *field[4], *p = s;
	uint64_t v[4], days = 0, frac = 0, ns;
	size_t n = 0;
	const char *dot;

	for (;;) {
		if (n == 4)
			return -EINVAL;
		field[n++] = p;
		p = strchr(p, ':');
		if (!p)
			break;
		p++;
	}
	for (size_t i = 0; i < n; i++) {
		const char *end = i + 1 < n ? field[i + 1] - 1 : field[i] + strlen(field[i]);

		dot = memchr(field[i], '.', (size_t)(end - field[i]));
		if (dot && i == 0 && n == 3) {
			/* d.hh:mm:ss */
			if (!whole_number(field[i], dot, &days) || !whole_number(dot + 1, end, &v[i]))
				return -EINVAL;
			if (v[i] > 23)
				return -EINVAL;
			continue;
		}
		if (dot && i == n - 1 && n >= 3) {
			/* the seconds' fraction */
			const char *q = dot;
			uint64_t unused;

			if (end - dot < 2 || digits(&q, &unused, true, &frac) != 0 || q != end)
				return -EINVAL;
			end = dot;
		}
		if (!whole_number(field[i], end, &v[i]))
			return -EINVAL;
	}
	if (n < 2)
		return -EINVAL;
	if (n == 4) {
		days = v[0];
		memmove(v, v + 1, 3 * sizeof(v[0]));
		if (v[0] > 23)
			return -EINVAL;
		n = 3;
	}
	if (n == 2)
		v[2] = 0;
	/* As TimeSpan: minutes and seconds below 60 (hours below 24 after days, above). */
	if (v[1] > 59 || v[2] > 59)
		return -EINVAL;
	if (days > DURATION_MAX_NS / (86400 * NS_PER_S) || v[0] > DURATION_MAX_NS / (3600 * NS_PER_S))
		return -ERANGE;
	ns = days * 86400 * NS_PER_S + v[0] * 3600 * NS_PER_S + v[1] * 60 * NS_PER_S +
	     v[2] * NS_PER_S + frac;
	if (ns > DURATION_MAX_NS)
		return -ERANGE;
	*ret_ns = ns;
	return 0;
}

/* "1.5s", "250ms", "2d", "30" (seconds). */
static int parse_unit(const char *s, uint64_t *ret_ns)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = {
		{ "", NS_PER_S }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", NS_PER_S },
		{ "m", 60 * NS_PER_S }, { "min", 60 * NS_PER_S }, { "h", 3600 * NS_PER_S },
		{ "d", 86400 * NS_PER_S },
	};
	uint64_t whole, frac;
	const char *p = s;
	int k = digits(&p, &whole, true, &frac);

	/* At least one digit, before or after the point (".5" is half a second). */
	if (k < 0 || p == s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t u = units[i].ns, ns;

		if (strcmp(p, units[i].suffix) != 0)
			continue;
		if (whole > DURATION_MAX_NS / u)
			return -ERANGE;
		/* frac is in 10^-9 of the unit: exact for units up to days in 128 bits. */
		ns = whole * u + (uint64_t)((unsigned __int128)frac * u / NS_PER_S);
		if (ns > DURATION_MAX_NS)
			return -ERANGE;
		*ret_ns = ns;
		return 0;
	}
	return -EINVAL;
}

int evr_duration_parse(const char *s, uint64_t *ret_ns)
{
	uint64_t ns;
	int ret;

	if (!s || !ret_ns || !*s)
		return -EINVAL;
	ret = strchr(s, ':') ? parse_clock(s, &ns) : parse_unit(s, &ns);
	if (ret < 0)
		return ret;
	*ret_ns = ns;
	return 0;
}
