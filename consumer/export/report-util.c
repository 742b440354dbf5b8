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
		snprintf(num, sizeof(num), "%.17g", v->f);
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

const char *evr_export_fmt_count(double n, char *buf, size_t len)
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
