// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Helpers of the report and the Chrome converter: every string comes
 * from the traced process (names, field values), so everything written to JSON
 * or HTML is escaped here and invalid UTF-8 is replaced, whatever it holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/abi.h>

#include "export-internal.h"

int evr_rpt_json_cstr(struct evr_strbuf *sb, const char *s)
{
	return evr_strbuf_json_string(sb, s, strlen(s));
}

#define EXACT_MAX (UINT64_C(1) << 53)	/* the largest integer range a double holds exactly */

static const uint64_t pow10u[] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
	100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
	10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
	100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
};

/*
 * round(|v| x 10^@s) for |v| = @m x 2^@e (@e < 0), exactly, ties to even (as
 * printf rounds the exact binary value). The product fits 128 bits: @m < 2^53,
 * 10^@s < 2^64 (@s <= 19, the table's last entry), and the shift is under 128.
 */
static uint64_t scaled(uint64_t m, int e, int s)
{
	unsigned __int128 n = (unsigned __int128)m * pow10u[s], q, r, half;
	int sh = -e;

	q = n >> sh;
	r = n - (q << sh);
	half = (unsigned __int128)1 << (sh - 1);
	if (r > half || (r == half && (q & 1)))
		q++;
	return (uint64_t)q;
}

int evr_rpt_fmt_double(char *buf, double v)
{
	uint64_t bits, m, d;
	int e, x, s, n = 0;
	char dig[17];

	memcpy(&bits, &v, sizeof(bits));
	e = (int)((bits >> 52) & 0x7ff);
	m = bits & ((1ull << 52) - 1);
	/* Normal numbers from 1e-4 to below 1e16 print in %.17g's fixed notation;
	 * the rest (and zero, subnormals, huge values) take snprintf. */
	if (e == 0 || e == 0x7ff || !(fabs(v) >= 1e-4 && fabs(v) < 1e16))
		return snprintf(buf, 32, "%.17g", v);
	m |= 1ull << 52;
	e -= 1075;				/* |v| = m x 2^e */
	if (bits >> 63)
		buf[n++] = '-';
	if (e >= 0) {
		/* A whole number below 1e16: its digits, no point. */
		d = m << e;
		n += snprintf(buf + n, 24, "%" PRIu64, d);
		return n;
	}
	/* 17 significant digits: d = round(|v| x 10^(16 - x)), x the decimal exponent. */
	x = (int)floor(log10(fabs(v)));
	for (;;) {
		s = 16 - x;
		if (s >= (int)(sizeof(pow10u) / sizeof(pow10u[0])))
			return snprintf(buf, 32, "%.17g", v);
		d = scaled(m, e, s);
		if (d >= pow10u[17]) {
			x++;		/* log10 was low, or rounding carried into a new digit */
			continue;
		}
		if (d < pow10u[16]) {
			x--;
			continue;
		}
		break;
	}
	for (int i = 16; i >= 0; i--) {
		dig[i] = (char)('0' + d % 10);
		d /= 10;
	}
	/* %g drops trailing zeros, and the point when nothing follows it. */
	int last = 16;

	while (last > 0 && dig[last] == '0' && last > x)
		last--;
	if (x >= 0) {
		for (int i = 0; i <= x; i++)
			buf[n++] = dig[i];
		if (last > x) {
			buf[n++] = '.';
			for (int i = x + 1; i <= last; i++)
				buf[n++] = dig[i];
		}
	} else {
		buf[n++] = '0';
		buf[n++] = '.';
		for (int i = 0; i < -x - 1; i++)
			buf[n++] = '0';
		for (int i = 0; i <= last; i++)
			buf[n++] = dig[i];
	}
	buf[n] = '\0';
	return n;
}

int evr_rpt_json_double(struct evr_strbuf *sb, double v)
{
	char num[32];

	if (!isfinite(v))
		return evr_strbuf_append(sb, "null", 4);	/* JSON has no NaN */
	return evr_strbuf_append(sb, num, (size_t)evr_rpt_fmt_double(num, v));
}

int evr_rpt_json_value(struct evr_strbuf *sb, const struct evr_field_value *v)
{
	char num[48];

	switch (v->type) {
	case EVR_FT_U8: case EVR_FT_U16: case EVR_FT_U32: case EVR_FT_U64:
		snprintf(num, sizeof(num), v->u > EXACT_MAX ? "\"%" PRIu64 "\"" : "%" PRIu64, v->u);
		break;
	case EVR_FT_I8: case EVR_FT_I16: case EVR_FT_I32: case EVR_FT_I64:
		snprintf(num, sizeof(num),
			 v->i > (int64_t)EXACT_MAX || v->i < -(int64_t)EXACT_MAX ? "\"%" PRId64 "\""
										 : "%" PRId64,
			 v->i);
		break;
	case EVR_FT_F32: case EVR_FT_F64:
		if (!isfinite(v->f))
			return evr_strbuf_append(sb, "null", 4);	/* JSON has no NaN */
		evr_rpt_fmt_double(num, v->f);
		break;
	case EVR_FT_BOOL:
		strcpy(num, v->u ? "true" : "false");
		break;
	case EVR_FT_PTR:
		snprintf(num, sizeof(num), "\"0x%" PRIx64 "\"", v->u);
		break;
	case EVR_FT_STR: case EVR_FT_JSON:
		return evr_strbuf_json_string(sb, v->b.data, v->b.len);
	case EVR_FT_BYTES:
		return evr_strbuf_json_hex(sb, v->b.data, v->b.len);
	default:
		strcpy(num, "null");
		break;
	}
	return evr_strbuf_append(sb, num, strlen(num));
}

int evr_rpt_json_fields(struct evr_strbuf *sb, const struct evr_event_view *v, bool *ret_bad)
{
	struct evr_field_value vals[EVR_SCHEMA_MAX_FIELDS];
	const struct evr_schema_event *s = v->schema;
	const void *payload = v->payload ? v->payload : "";
	int n = -EBADMSG, err;

	if (!s) {
		*ret_bad = true;
		if ((err = evr_strbuf_printf(sb, "\"rid\":%" PRIu32 ",\"payload\":", v->rid)))
			return err;
		return evr_strbuf_json_hex(sb, payload, v->payload ? v->len : 0);
	}
	if (s->nfields <= EVR_SCHEMA_MAX_FIELDS && (v->payload || !v->len))
		n = evr_decode_fields(s, payload, v->len, vals);
	if (n < 0) {
		*ret_bad = true;
		if ((err = evr_strbuf_append(sb, "\"payload\":", 10)) ||
		    (err = evr_strbuf_json_hex(sb, payload, v->payload ? v->len : 0)))
			return err;
		return evr_strbuf_printf(sb, ",\"error\":\"payload does not match the schema\"");
	}
	for (int i = 0; i < n; i++) {
		if ((i && (err = evr_strbuf_append(sb, ",", 1))) ||
		    (err = evr_rpt_json_cstr(sb, s->fields[i].name ? s->fields[i].name : "")) ||
		    (err = evr_strbuf_append(sb, ":", 1)) ||
		    (err = evr_rpt_json_value(sb, &vals[i])))
			return err;
	}
	return 0;
}

int evr_rpt_html_str(struct evr_strbuf *sb, const void *data, size_t n)
{
	const uint8_t *s = data;
	size_t i = 0, run = 0;
	int err;

	while (i < n) {
		uint8_t c = s[i];
		const char *esc = NULL;

		if (c >= 0x20 && c < 0x7f && c != '<' && c != '>' && c != '&' && c != '"' &&
		    c != '\'') {
			i++;
			run++;
			continue;
		}
		if (run && (err = evr_strbuf_append(sb, (const char *)s + i - run, run)))
			return err;
		run = 0;
		if (c >= 0x80) {
			int len = evr_utf8_seq(s + i, n - i);

			if (len > 0) {
				err = evr_strbuf_append(sb, (const char *)s + i, (size_t)len);
				i += (size_t)len;
			} else {
				err = evr_strbuf_append(sb, "\xef\xbf\xbd", 3);
				i += (size_t)-len;
			}
			if (err)
				return err;
			continue;
		}
		switch (c) {
		case '<': esc = "&lt;"; break;
		case '>': esc = "&gt;"; break;
		case '&': esc = "&amp;"; break;
		case '"': esc = "&quot;"; break;
		case '\'': esc = "&#39;"; break;
		default: esc = "\xef\xbf\xbd"; break;	/* controls: not text */
		}
		if ((err = evr_strbuf_append(sb, esc, strlen(esc))))
			return err;
		i++;
	}
	if (run && (err = evr_strbuf_append(sb, (const char *)s + i - run, run)))
		return err;
	return 0;
}

int evr_rpt_html_cstr(struct evr_strbuf *sb, const char *s)
{
	return evr_rpt_html_str(sb, s, strlen(s));
}

/* ---- hash ------------------------------------------------------------------ */

static uint32_t slot_of(uint32_t key, uint32_t cap)
{
	/* Fibonacci hashing: tids and rids are small and dense, spread them. */
	return (uint32_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (cap - 1);
}

void *evr_rpt_map_get(const struct evr_rpt_map *m, uint32_t key)
{
	if (!m->cap)
		return NULL;
	for (uint32_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->vals[i])
			return NULL;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

static int map_grow(struct evr_rpt_map *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 64;
	uint32_t *keys = calloc(cap, sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals || cap < m->cap) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (uint32_t j = 0; j < m->cap; j++) {
		uint32_t i;

		if (!m->vals[j])
			continue;
		for (i = slot_of(m->keys[j], cap); vals[i]; i = (i + 1) & (cap - 1))
			;
		keys[i] = m->keys[j];
		vals[i] = m->vals[j];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int evr_rpt_map_put(struct evr_rpt_map *m, uint32_t key, void *val)
{
	uint32_t i;

	if (!val)
		return -EINVAL;
	/* Keep the load under 1/2: probes stay short. */
	if ((m->n + 1) * 2 > m->cap && map_grow(m) < 0)
		return -ENOMEM;
	for (i = slot_of(key, m->cap); m->vals[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			break;
	if (!m->vals[i])
		m->n++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

void evr_rpt_map_fini(struct evr_rpt_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

int evr_export_fail(char *buf, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (buf && len) {
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

const char *evr_fmt_count(double n, char *buf, size_t len)
{
	if (n >= 1e9)
		snprintf(buf, len, "%.2f G", n / 1e9);
	else if (n >= 1e6)
		snprintf(buf, len, "%.2f M", n / 1e6);
	else if (n >= 1e4)
		snprintf(buf, len, "%.1f k", n / 1e3);
	else
		snprintf(buf, len, "%.0f", n);
	return buf;
}
