// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Event payload decoding (the encoding is described in <evring/schema.h>).
 * Payloads come from other processes and from files: every read is bounds
 * checked against the payload length, and the payload must be used up exactly,
 * so a payload written by another version of an event never decodes as if it
 * matched.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "decode-internal.h"

int evr_field_type_size(uint32_t type)
{
	switch (type) {
	case EVR_FT_U8: case EVR_FT_I8: case EVR_FT_BOOL:
		return 1;
	case EVR_FT_U16: case EVR_FT_I16:
		return 2;
	case EVR_FT_U32: case EVR_FT_I32: case EVR_FT_F32:
		return 4;
	case EVR_FT_U64: case EVR_FT_I64: case EVR_FT_F64: case EVR_FT_PTR:
		return 8;
	case EVR_FT_STR: case EVR_FT_JSON: case EVR_FT_BYTES:
		return 0;
	default:
		return -1;
	}
}

/* Little-endian unsigned value of @n bytes. */
static uint64_t load_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void decode_fixed(struct evr_field_value *v, uint32_t type, const uint8_t *p, int n)
{
	uint64_t u = load_le(p, n);

	switch (type) {
	case EVR_FT_I8:
		v->i = (int8_t)u;
		break;
	case EVR_FT_I16:
		v->i = (int16_t)u;
		break;
	case EVR_FT_I32:
		v->i = (int32_t)u;
		break;
	case EVR_FT_I64:
		v->i = (int64_t)u;
		break;
	case EVR_FT_F32: {
		uint32_t bits = (uint32_t)u;
		float f;

		memcpy(&f, &bits, sizeof(f));
		v->f = f;
		break;
	}
	case EVR_FT_F64:
		memcpy(&v->f, &u, sizeof(v->f));
		break;
	default:
		v->u = u;
		break;
	}
}

#define WHY(...) do { if (why && whylen) snprintf(why, whylen, __VA_ARGS__); } while (0)

int evr_decode_fields_why(const struct evr_schema_event *ev, const void *payload, uint32_t len,
			  struct evr_field_value *vals, char *why, size_t whylen)
{
	const uint8_t *p = payload;
	uint32_t pos = 0;

	if (!ev || (ev->nfields && (!ev->fields || !vals)) || (len && !payload))
		return -EINVAL;
	for (uint32_t i = 0; i < ev->nfields; i++) {
		const struct evr_schema_field *f = &ev->fields[i];
		const char *name = f->name ? f->name : "?";
		int n = evr_field_type_size(f->type);

		if (n < 0) {
			WHY("field '%s' has unknown type %u", name, f->type);
			return -EBADMSG;
		}
		vals[i].type = f->type;
		if (n > 0) {
			if (len - pos < (uint32_t)n) {
				WHY("payload ends inside field '%s' (%s)", name,
				    evr_field_type_name(f->type));
				return -EBADMSG;
			}
			decode_fixed(&vals[i], f->type, p + pos, n);
			pos += (uint32_t)n;
		} else {
			uint32_t blen;

			if (len - pos < 4) {
				WHY("payload ends inside the length of field '%s' (%s)", name,
				    evr_field_type_name(f->type));
				return -EBADMSG;
			}
			blen = (uint32_t)load_le(p + pos, 4);
			pos += 4;
			if (len - pos < blen) {
				WHY("field '%s' (%s) says %u bytes, %u left", name,
				    evr_field_type_name(f->type), blen, len - pos);
				return -EBADMSG;
			}
			vals[i].b.data = p + pos;
			vals[i].b.len = blen;
			pos += blen;
		}
	}
	if (pos != len) {
		WHY("%u bytes left over after the last field", len - pos);
		return -EBADMSG;
	}
	return (int)ev->nfields;
}

int evr_decode_fields(const struct evr_schema_event *ev, const void *payload, uint32_t len,
		      struct evr_field_value *vals)
{
	return evr_decode_fields_why(ev, payload, len, vals, NULL, 0);
}
