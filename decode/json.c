// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One event as one JSON object: the format of `evring dump --json` and
 * `convert --format jsonl`, documented with evr_event_to_json() in
 * <evring/schema.h>. Names and strings come from the traced process, so
 * everything is escaped and invalid UTF-8 is replaced: the output is always
 * valid JSON in valid UTF-8, whatever the payload holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <evring/abi.h>

#include "decode-internal.h"

static const char hexdig[] = "0123456789abcdef";

static int put(struct evr_strbuf *sb, const char *s)
{
	return evr_strbuf_append(sb, s, strlen(s));
}

int evr_utf8_seq(const void *data, size_t n)
{
	const uint8_t *s = data;
	uint8_t b = s[0];
	uint8_t lo = 0x80, hi = 0xbf;
	int need;

	if (b < 0x80)
		return 1;
	if (b >= 0xc2 && b <= 0xdf) {
		need = 1;
	} else if (b >= 0xe0 && b <= 0xef) {
		need = 2;
		if (b == 0xe0)
			lo = 0xa0;	/* no overlong forms */
		else if (b == 0xed)
			hi = 0x9f;	/* no surrogates */
	} else if (b >= 0xf0 && b <= 0xf4) {
		need = 3;
		if (b == 0xf0)
			lo = 0x90;
		else if (b == 0xf4)
			hi = 0x8f;	/* nothing above U+10FFFF */
	} else {
		return -1;
	}
	for (int k = 1; k <= need; k++) {
		if ((size_t)k >= n || s[k] < lo || s[k] > hi)
			return -k;
		lo = 0x80;
		hi = 0xbf;
	}
	return need + 1;
}

int evr_strbuf_json_string(struct evr_strbuf *sb, const void *data, size_t n)
{
	const uint8_t *s = data;
	size_t i = 0, run = 0;
	int err;

	if ((err = evr_strbuf_append(sb, "\"", 1)))
		return err;
	while (i < n) {
		uint8_t c = s[i];
		char esc[8];
		int len;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			run++;
			continue;
		}
		if (run && (err = evr_strbuf_append(sb, (const char *)s + i - run, run)))
			return err;
		run = 0;
		if (c >= 0x80) {
			len = evr_utf8_seq(s + i, n - i);
			if (len > 0) {
				err = evr_strbuf_append(sb, (const char *)s + i, (size_t)len);
				i += (size_t)len;
			} else {
				err = evr_strbuf_append(sb, "\xef\xbf\xbd", 3);	/* U+FFFD */
				i += (size_t)-len;
			}
			if (err)
				return err;
			continue;
		}
		switch (c) {
		case '"': strcpy(esc, "\\\""); break;
		case '\\': strcpy(esc, "\\\\"); break;
		case '\b': strcpy(esc, "\\b"); break;
		case '\f': strcpy(esc, "\\f"); break;
		case '\n': strcpy(esc, "\\n"); break;
		case '\r': strcpy(esc, "\\r"); break;
		case '\t': strcpy(esc, "\\t"); break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			break;
		}
		if ((err = put(sb, esc)))
			return err;
		i++;
	}
	if (run && (err = evr_strbuf_append(sb, (const char *)s + i - run, run)))
		return err;
	return evr_strbuf_append(sb, "\"", 1);
}

static int put_cstr(struct evr_strbuf *sb, const char *s)
{
	return evr_strbuf_json_string(sb, s, strlen(s));
}

int evr_strbuf_json_hex(struct evr_strbuf *sb, const void *data, size_t n)
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

static int put_value(struct evr_strbuf *sb, const struct evr_field_value *v)
{
	char num[40];

	switch (v->type) {
	case EVR_FT_U8: case EVR_FT_U16: case EVR_FT_U32: case EVR_FT_U64:
		snprintf(num, sizeof(num), "%" PRIu64, v->u);
		return put(sb, num);
	case EVR_FT_I8: case EVR_FT_I16: case EVR_FT_I32: case EVR_FT_I64:
		snprintf(num, sizeof(num), "%" PRId64, v->i);
		return put(sb, num);
	case EVR_FT_F32: case EVR_FT_F64:
		if (!isfinite(v->f))
			return put(sb, "null");	/* JSON has no NaN or infinity */
		snprintf(num, sizeof(num), "%.17g", v->f);
		return put(sb, num);
	case EVR_FT_BOOL:
		return put(sb, v->u ? "true" : "false");
	case EVR_FT_PTR:
		snprintf(num, sizeof(num), "\"0x%" PRIx64 "\"", v->u);
		return put(sb, num);
	case EVR_FT_STR: case EVR_FT_JSON:
		return evr_strbuf_json_string(sb, v->b.data, v->b.len);
	case EVR_FT_BYTES:
		return evr_strbuf_json_hex(sb, v->b.data, v->b.len);
	default:
		return put(sb, "null");
	}
}

static int event_to_json(const struct evr_event_view *v, struct evr_strbuf *out)
{
	const struct evr_schema_event *ev = v->schema;
	struct evr_field_value vals[EVR_SCHEMA_MAX_FIELDS];
	char why[160] = "";
	int n = -EBADMSG, err;

	err = evr_strbuf_printf(out, "{\"type\":\"event\",\"ts\":%" PRIu64 ",\"provider\":", v->ts_ns);
	if (err)
		return err;
	if (!ev) {
		err = evr_strbuf_printf(out, "null,\"event\":null,\"rid\":%" PRIu32 ",\"cpu\":%" PRIu32
					",\"tid\":%" PRIu32 ",\"payload\":", v->rid, v->ring, v->tid);
		if (!err)
			err = evr_strbuf_json_hex(out, v->payload, v->payload ? v->len : 0);
		if (!err)
			err = evr_strbuf_append(out, "}", 1);
		return err;
	}
	if ((err = put_cstr(out, ev->provider ? ev->provider : "")) ||
	    (err = put(out, ",\"event\":")) || (err = put_cstr(out, ev->name ? ev->name : "")))
		return err;
	err = evr_strbuf_printf(out, ",\"id\":%" PRIu32 ",\"cpu\":%" PRIu32 ",\"tid\":%" PRIu32
				",\"fields\":", ev->id, v->ring, v->tid);
	if (err)
		return err;
	if (ev->nfields > EVR_SCHEMA_MAX_FIELDS)
		snprintf(why, sizeof(why), "the schema has %u fields, more than %u", ev->nfields,
			 EVR_SCHEMA_MAX_FIELDS);
	else if (v->len && !v->payload)
		snprintf(why, sizeof(why), "no payload");
	else
		n = evr_decode_fields_why(ev, v->payload, v->len, vals, why, sizeof(why));
	if (n < 0) {
		if (!why[0])
			snprintf(why, sizeof(why), "payload does not match the schema");
		if ((err = put(out, "null,\"payload\":")) ||
		    (err = evr_strbuf_json_hex(out, v->payload, v->payload ? v->len : 0)) ||
		    (err = put(out, ",\"error\":")) || (err = put_cstr(out, why)))
			return err;
		return evr_strbuf_append(out, "}", 1);
	}
	if ((err = evr_strbuf_append(out, "{", 1)))
		return err;
	for (int i = 0; i < n; i++) {
		const char *name = ev->fields[i].name ? ev->fields[i].name : "";

		if ((i && (err = evr_strbuf_append(out, ",", 1))) || (err = put_cstr(out, name)) ||
		    (err = evr_strbuf_append(out, ":", 1)) || (err = put_value(out, &vals[i])))
			return err;
	}
	return evr_strbuf_append(out, "}}", 2);
}

int evr_event_to_json(const struct evr_event_view *v, struct evr_strbuf *out)
{
	size_t start;
	int err;

	if (!v || !out)
		return -EINVAL;
	start = out->len;
	if (v->type == EVR_REC_LOST)
		err = evr_strbuf_printf(out, "{\"type\":\"lost\",\"ts\":%" PRIu64 ",\"cpu\":%" PRIu32
					",\"count\":%" PRIu64 "}", v->ts_ns, v->ring, v->lost);
	else if (v->type == EVR_REC_EVENT)
		err = event_to_json(v, out);
	else
		return -EINVAL;
	if (err && out->buf) {
		/* Nothing half-written stays behind. */
		out->len = start;
		out->buf[start] = '\0';
	}
	return err;
}
