/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Event schemas on the consumer side, and decoding of event payloads.
 *
 * A schema set maps registry ids (what records carry) to event descriptions. It
 * is filled from packed protobuf evr.EventDesc messages (proto/evring.proto),
 * which is how descriptions arrive everywhere: in a live session's metadata area
 * (<evring/abi.h>, EVR_META_EVENT), in ListEvents replies, and in trace files.
 * Everything handed to this module is untrusted input: a description or payload
 * that does not decode gives -EBADMSG, never a crash.
 *
 * Payload encoding (see <evring/evring.h>): fields packed in order, little
 * endian, no padding; bool 1 byte; ptr 8 bytes; str, json, bytes: u32 length
 * then that many bytes.
 */
#ifndef EVR_SCHEMA_H
#define EVR_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Field types: the same codes as enum evr_type in <evring/evring.h>. */
enum evr_field_type {
	EVR_FT_U8 = 1, EVR_FT_U16, EVR_FT_U32, EVR_FT_U64,
	EVR_FT_I8, EVR_FT_I16, EVR_FT_I32, EVR_FT_I64,
	EVR_FT_F32, EVR_FT_F64, EVR_FT_BOOL, EVR_FT_PTR,
	EVR_FT_STR, EVR_FT_JSON, EVR_FT_BYTES,
	EVR_FT_MAX_,
};

#define EVR_SCHEMA_MAX_FIELDS 64

struct evr_schema_field {
	const char *name;
	uint32_t type;			/* enum evr_field_type */
};

/* One event's description; owned by its set, valid until the set is freed. */
struct evr_schema_event {
	uint32_t rid;
	uint32_t id;			/* provider-local id */
	const char *provider;
	const char *name;
	uint8_t level;
	uint8_t opcode;			/* 0 info, 1 start, 2 stop */
	uint64_t keywords;
	uint32_t nfields;
	const struct evr_schema_field *fields;
};

struct evr_schema_set;

/* Return: 0 or -ENOMEM. Free with evr_schema_set_free(). */
int evr_schema_set_new(struct evr_schema_set **ret);
/* Accepts NULL. */
void evr_schema_set_free(struct evr_schema_set *s);

/**
 * evr_schema_set_add_pb() - add one packed evr.EventDesc.
 * A later description of the same rid replaces the earlier one (previously
 * returned pointers stay valid until the set is freed).
 * Return: 0, -EBADMSG (does not unpack, unknown field type, too many fields,
 * empty names), -ENOMEM.
 */
int evr_schema_set_add_pb(struct evr_schema_set *s, const void *data, size_t len);

/* The description of @rid, or NULL. */
const struct evr_schema_event *evr_schema_set_lookup(const struct evr_schema_set *s, uint32_t rid);

/* Number of distinct rids, and the i-th in order of first addition. */
uint32_t evr_schema_set_count(const struct evr_schema_set *s);
const struct evr_schema_event *evr_schema_set_at(const struct evr_schema_set *s, uint32_t i);

/**
 * evr_schema_event_pack() - the packed evr.EventDesc of @ev (for writing a
 * description that did not come as protobuf, e.g. tests).
 * @ret_data: malloc'ed, the caller frees it.
 * Return: 0 or -ENOMEM.
 */
int evr_schema_event_pack(const struct evr_schema_event *ev, void **ret_data, size_t *ret_len);

/* Payload bytes of a field of @type: 1, 2, 4 or 8; 0 for str, json and bytes
 * (a u32 length, then the data); -1 for an unknown type. */
int evr_field_type_size(uint32_t type);

/* "u32", "str"... or NULL for an unknown code. */
const char *evr_field_type_name(uint32_t type);

/* A variable-size field's bytes, in the payload (not NUL-terminated). */
struct evr_field_bytes {
	const void *data;
	uint32_t len;
};

/*
 * One decoded field. Variable-size values point into the payload. (The bytes' struct is
 * declared outside the union: C++ allows no type declared in an anonymous union.)
 */
struct evr_field_value {
	uint32_t type;
	union {
		uint64_t u;		/* U8..U64, BOOL, PTR */
		int64_t i;		/* I8..I64 */
		double f;		/* F32, F64 */
		struct evr_field_bytes b; /* STR, JSON, BYTES */
	};
};

/**
 * evr_decode_fields() - decode @payload by @ev's schema.
 * @vals: room for @ev->nfields values.
 * Return: the number of fields, or -EBADMSG if the payload is shorter than the
 * schema needs or has bytes left over.
 */
int evr_decode_fields(const struct evr_schema_event *ev, const void *payload, uint32_t len,
		      struct evr_field_value *vals);

/* ---- one event as every consumer sees it -------------------------------- */

/* A record read from a live session or a trace file. */
struct evr_event_view {
	uint32_t type;			/* EVR_REC_EVENT or EVR_REC_LOST (<evring/abi.h>) */
	uint32_t rid;
	const struct evr_schema_event *schema;	/* NULL: no description for rid */
	uint32_t ring;			/* ring index: the CPU it was written on */
	uint32_t tid;
	uint64_t ts_ns;			/* CLOCK_MONOTONIC nanoseconds */
	uint64_t lost;			/* LOST: number of events lost */
	const void *payload;		/* EVENT: borrowed until the next read call */
	uint32_t len;
	/* EVENT recorded with the writer's stack (EVR_REC_F_STACK): nframes return
	 * addresses, innermost first, as little-endian u64 at frames (8-byte aligned,
	 * borrowed like payload); stack_flags: EVR_STACK_F_* (<evring/abi.h>). */
	uint32_t nframes;
	uint32_t stack_flags;
	const void *frames;
};

/* A growable string buffer; zero-initialize, free buf with free(). */
struct evr_strbuf {
	char *buf;
	size_t len, cap;
};

int evr_strbuf_append(struct evr_strbuf *sb, const char *s, size_t n);
__attribute__((format(printf, 2, 3)))
int evr_strbuf_printf(struct evr_strbuf *sb, const char *fmt, ...);

/**
 * evr_strbuf_json_string() - append @n bytes as a JSON string: quoted, with
 * '"', '\\' and control bytes escaped and each invalid UTF-8 sequence replaced by
 * U+FFFD (how evr_event_to_json() writes str fields).
 * Return: 0 or -ENOMEM.
 */
int evr_strbuf_json_string(struct evr_strbuf *sb, const void *data, size_t n);

/* @n bytes as a quoted lowercase hex JSON string (how bytes fields are written). */
int evr_strbuf_json_hex(struct evr_strbuf *sb, const void *data, size_t n);

/**
 * evr_utf8_seq() - how much of @s (n >= 1 bytes) is one UTF-8 character.
 * Return: the length (1-4) of the valid sequence at @s, or minus the length of
 * the invalid prefix to replace with one U+FFFD (Unicode's "maximal subpart"
 * rule). Overlong forms, surrogates and code points above U+10FFFF are invalid.
 */
int evr_utf8_seq(const void *s, size_t n);

/**
 * evr_event_to_json() - append @v as one JSON object (no newline) to @out.
 *
 * Event: {"type":"event","ts":NS,"provider":P,"event":E,"id":ID,"cpu":RING,
 *         "tid":TID,"fields":{NAME:VALUE,...}}
 * Lost:  {"type":"lost","ts":NS,"cpu":RING,"count":N}
 * Unknown schema: "provider":null,"event":null,"rid":RID,"payload":HEX, no fields.
 * A payload that does not decode: "fields":null,"payload":HEX,"error":"...".
 * Values: integers as JSON numbers; bool true/false; f32/f64 with 17 significant
 * digits (null for NaN and infinities); ptr as "0x..." string; str and json as
 * JSON strings (escaped, invalid UTF-8 replaced by U+FFFD); bytes as lowercase hex
 * string. This is the format of `evring dump --json` and `convert --format jsonl`.
 * Return: 0 or -ENOMEM.
 */
int evr_event_to_json(const struct evr_event_view *v, struct evr_strbuf *out);

#ifdef __cplusplus
}
#endif

#endif /* EVR_SCHEMA_H */
