// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Small pieces every part of the monitor uses: clocks, names, the parsers of
 * request parameters, and JSON values from untrusted strings. Kept apart so
 * that the unit tests link them without the server.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <evring/consumer.h>

#include "monitor.h"

uint64_t evr_mon_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The watch's (consumer/watch/), under the names the routes use. */
const char *evr_mon_proc_state_name(enum evr_mon_proc_state s)
{
	return evr_watch_state_name(s);
}

void evr_mon_proc_short_name(const struct evr_process_info *pi, char *buf, size_t len)
{
	evr_watch_short_name(pi, buf, len);
}

/* ---- parameters ------------------------------------------------------------- */

int evr_mon_parse_duration(const char *s, uint64_t *ret_ns)
{
	/* The forms every evring tool takes, dotnet's hh:mm:ss and dd:hh:mm:ss included. */
	return evr_duration_parse(s, ret_ns) < 0 ? -EINVAL : 0;
}

int evr_mon_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (!strcmp(end, "K") || !strcmp(end, "KiB") || !strcmp(end, "k"))
		mul = 1024;
	else if (!strcmp(end, "M") || !strcmp(end, "MiB"))
		mul = 1024 * 1024;
	else if (!strcmp(end, "G") || !strcmp(end, "GiB"))
		mul = 1024 * 1024 * 1024;
	else if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*ret = v * mul;
	return 0;
}

int evr_mon_parse_pid(const char *s, pid_t *ret)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT32_MAX)
		return -EINVAL;
	*ret = (pid_t)v;
	return 0;
}

/* ---- JSON helpers ------------------------------------------------------------------ */

json_t *evr_mon_jstrn(const char *s, size_t n)
{
	struct evr_strbuf sb = { 0 };
	json_t *j;

	if (!s)
		return json_null();
	/* evr_strbuf_json_string() writes a valid quoted JSON string: parse it back. */
	if (evr_strbuf_json_string(&sb, s, n) < 0)
		return NULL;
	j = json_loadb(sb.buf, sb.len, JSON_DECODE_ANY, NULL);
	free(sb.buf);
	return j;
}

json_t *evr_mon_jstr(const char *s)
{
	json_t *j;

	if (!s)
		return json_null();
	/* The common case, valid UTF-8 without NUL: jansson takes it as is. */
	j = json_string(s);
	return j ? j : evr_mon_jstrn(s, strlen(s));
}

json_t *evr_mon_jreal(double v)
{
	if (!isfinite(v))
		return json_null();
	/* Whole numbers print as integers: 3 rather than 3.0. */
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		return json_integer((json_int_t)v);
	return json_real(v);
}

int evr_mon_split_path(const char *url, char *segs[EVR_MON_MAX_SEGS], unsigned *ret_n)
{
	const char *p = url;
	unsigned n = 0;

	while (*p) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len)
			break;
		if (n == EVR_MON_MAX_SEGS) {
			evr_mon_segs_free(segs, n);
			return -E2BIG;
		}
		segs[n] = strndup(p, len);
		if (!segs[n]) {
			evr_mon_segs_free(segs, n);
			return -ENOMEM;
		}
		n++;
		p += len;
	}
	*ret_n = n;
	return 0;
}

void evr_mon_segs_free(char *segs[EVR_MON_MAX_SEGS], unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(segs[i]);
		segs[i] = NULL;
	}
}
