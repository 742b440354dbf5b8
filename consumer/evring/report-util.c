// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Helpers of `evring report` and `convert --format chrome`: every string comes
 * from the traced process (names, field values), so everything written to JSON
 * or HTML is escaped here and invalid UTF-8 is replaced, whatever it holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <evring/abi.h>

#include "report.h"

static const char hexdig[] = "0123456789abcdef";

/*
 * Length of the valid UTF-8 sequence at @s (1..4), or 0 when it is not one
 * (overlong forms, surrogates and code points above U+10FFFF are invalid).
 */
static size_t utf8_len(const uint8_t *s, size_t n)
{
	uint8_t lo = 0x80, hi = 0xbf;
	size_t need;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		need = 1;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 2;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80;
		hi = s[0] == 0xed ? 0x9f : 0xbf;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 3;
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 0;
	}
	for (size_t k = 1; k <= need; k++) {
		if (k >= n || s[k] < lo || s[k] > hi)
			return 0;
		lo = 0x80;
		hi = 0xbf;
	}
	return need + 1;
}

int evr_rpt_json_str(struct evr_strbuf *sb, const void *data, size_t n)
{
	const uint8_t *s = data;
	size_t i = 0, run = 0;
	int err;

	if ((err = evr_strbuf_append(sb, "\"", 1)))
		return err;
	while (i < n) {
		uint8_t c = s[i];
		char esc[8];
		size_t len;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x7f) {
			i++;
			run++;
			continue;
		}
		if (run && (err = evr_strbuf_append(sb, (const char *)s + i - run, run)))
			return err;
		run = 0;
		if (c >= 0x80) {
			len = utf8_len(s + i, n - i);
			if (len) {
				err = evr_strbuf_append(sb, (const char *)s + i, len);
				i += len;
			} else {
				err = evr_strbuf_append(sb, "\xef\xbf\xbd", 3);	/* U+FFFD */
				i++;
			}
			if (err)
				return err;
			continue;
		}
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			esc[2] = 0;
		} else if (c == '\n') {
			strcpy(esc, "\\n");
		} else if (c == '\t') {
			strcpy(esc, "\\t");
		} else {
			/* Other controls and DEL: \u form, which every reader takes. */
			esc[0] = '\\';
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hexdig[c >> 4];
			esc[5] = hexdig[c & 15];
			esc[6] = 0;
		}
		if ((err = evr_strbuf_append(sb, esc, strlen(esc))))
			return err;
		i++;
	}
	if (run && (err = evr_strbuf_append(sb, (const char *)s + i - run, run)))
		return err;
	return evr_strbuf_append(sb, "\"", 1);
}

int evr_rpt_json_cstr(struct evr_strbuf *sb, const char *s)
{
	return evr_rpt_json_str(sb, s, strlen(s));
}

static int put_hex(struct evr_strbuf *sb, const void *data, size_t n)
{
	const uint8_t *p = data;
	char buf[128];
	size_t k = 0;
	int err;

	if ((err = evr_strbuf_append(sb, "\"", 1)))
		return err;
	for (size_t i = 0; i < n; i++) {
		buf[k++] = hexdig[p[i] >> 4];
		buf[k++] = hexdig[p[i] & 15];
		if (k == sizeof(buf)) {
			if ((err = evr_strbuf_append(sb, buf, k)))
				return err;
			k = 0;
		}
	}
	if (k && (err = evr_strbuf_append(sb, buf, k)))
		return err;
	return evr_strbuf_append(sb, "\"", 1);
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
		return evr_rpt_json_str(sb, v->b.data, v->b.len);
	case EVR_FT_BYTES:
		return put_hex(sb, v->b.data, v->b.len);
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
		return put_hex(sb, payload, v->payload ? v->len : 0);
	}
	if (s->nfields <= EVR_SCHEMA_MAX_FIELDS && (v->payload || !v->len))
		n = evr_decode_fields(s, payload, v->len, vals);
	if (n < 0) {
		*ret_bad = true;
		if ((err = evr_strbuf_append(sb, "\"payload\":", 10)) ||
		    (err = put_hex(sb, payload, v->payload ? v->len : 0)))
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
		size_t len;

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
			len = utf8_len(s + i, n - i);
			if (len) {
				err = evr_strbuf_append(sb, (const char *)s + i, len);
				i += len;
			} else {
				err = evr_strbuf_append(sb, "\xef\xbf\xbd", 3);
				i++;
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
