// SPDX-License-Identifier: LGPL-2.1-or-later
/* A growable string buffer for renderers (JSON lines, tables, reports). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/schema.h>

static int strbuf_reserve(struct evr_strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;
	size_t cap;
	char *n;

	if (need <= sb->cap)
		return 0;
	if (need < sb->len)
		return -ENOMEM;
	cap = sb->cap ? sb->cap : 256;
	while (cap < need)
		cap *= 2;
	n = realloc(sb->buf, cap);
	if (!n)
		return -ENOMEM;
	sb->buf = n;
	sb->cap = cap;
	return 0;
}

int evr_strbuf_append(struct evr_strbuf *sb, const char *s, size_t n)
{
	if (!sb || (n && !s))
		return -EINVAL;
	if (strbuf_reserve(sb, n) < 0)
		return -ENOMEM;
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
	return 0;
}

int evr_strbuf_printf(struct evr_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!sb || !fmt)
		return -EINVAL;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (strbuf_reserve(sb, (size_t)n) < 0)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}
