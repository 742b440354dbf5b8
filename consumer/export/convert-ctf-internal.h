/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CTF 1.8 writer's private parts: the layout of what convert-ctf.c writes
 * into the data streams, and the TSDL metadata that describes it
 * (convert-ctf-tsdl.c). docs/ctf.md explains the mapping for users.
 *
 * Everything is little endian and byte aligned (align = 8 bits everywhere), so
 * the stream writer lays fields out with memcpy and no padding:
 *
 *   packet header   magic u32, uuid u8[16], stream_id u32              24 bytes
 *   packet context  timestamp_begin u64, timestamp_end u64,
 *                   content_size u64, packet_size u64 (bits),
 *                   packet_seq_num u64, events_discarded u64, cpu_id u32  52 bytes
 *   event header    id u32, timestamp u64                              12 bytes
 *   event context   vtid u32                                            4 bytes
 *   payload         the event class's fields
 */
#ifndef EVR_CONVERT_CTF_INTERNAL_H
#define EVR_CONVERT_CTF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <evring/schema.h>
#include <evring/trace.h>

#define EVR_CTF_MAGIC		0xC1FC1FC1u
#define EVR_CTF_PKT_HDR_SIZE	24u
#define EVR_CTF_PKT_CTX_SIZE	52u
#define EVR_CTF_PKT_START	(EVR_CTF_PKT_HDR_SIZE + EVR_CTF_PKT_CTX_SIZE)
#define EVR_CTF_EV_HDR_SIZE	16u	/* event header + event context */
/* Packets are cut at this size so that readers never load huge packets. */
#define EVR_CTF_PACKET_MAX	(64u * 1024u)
/* The event class of events without a (decodable) description. */
#define EVR_CTF_UNKNOWN_ID	0u
#define EVR_CTF_UNKNOWN_NAME	"evring:unknown"

/* One event class: a schema (id >= 1) of the trace. */
struct evr_ctf_class {
	uint32_t rid;
	uint32_t id;				/* CTF event id */
	const struct evr_schema_event *ev;
	bool rewrite;				/* has str/json/bool fields: not a verbatim copy */
};

/* What the metadata describes; every pointer is borrowed for the call. */
struct evr_ctf_meta_in {
	const struct evr_process_info *proc;	/* NULL: unknown process */
	const struct evr_trace_session *sess;	/* NULL: the file has no session */
	const struct evr_ctf_class *classes;
	uint32_t nclasses;
	uint8_t uuid[16];
	int64_t clock_offset_ns;		/* CLOCK_REALTIME - CLOCK_MONOTONIC */
};

/**
 * evr_ctf_ident() - append the TSDL identifier for field name @name to @sb.
 *
 * Always '_' followed by @name, with every byte that is not [A-Za-z0-9_]
 * replaced by '_': the prefix makes keywords (`event`, `string`...) and names
 * starting with a digit valid, and babeltrace2 (like LTTng tools) removes one
 * leading underscore when it shows a field, so users see the original name.
 * Return: 0 or -ENOMEM.
 * Context: any thread.
 */
int evr_ctf_ident(struct evr_strbuf *sb, const char *name);

/**
 * evr_ctf_string_literal() - append @s as a TSDL string literal ("..."):
 * backslash, double quote, newline and tab escaped; other control bytes
 * become '?' (see docs/ctf.md); other bytes are copied.
 * Return: 0 or -ENOMEM.
 * Context: any thread.
 */
int evr_ctf_string_literal(struct evr_strbuf *sb, const char *s);

/**
 * evr_ctf_field_names() - the TSDL names of @ev's fields, unique in the event:
 * @ret_names[i] for field i, and for each bytes field the name of its length
 * field in @ret_len_names[i] (NULL for other fields). A name that collides
 * with an earlier one gets "_2", "_3"... appended.
 * @ret_names, @ret_len_names: arrays of @ev->nfields malloc'ed strings; free
 *	with evr_ctf_names_free().
 * Return: 0 or -ENOMEM (nothing to free then).
 * Context: any thread.
 */
int evr_ctf_field_names(const struct evr_schema_event *ev, char ***ret_names,
			char ***ret_len_names);
void evr_ctf_names_free(char **names, uint32_t n);

/**
 * evr_ctf_metadata() - the whole TSDL metadata of the trace into @sb.
 * Return: 0 or -ENOMEM.
 * Context: any thread.
 */
int evr_ctf_metadata(struct evr_strbuf *sb, const struct evr_ctf_meta_in *in);

/* The CTF loglevel (0 EMERG .. 14 DEBUG) of an evring level, or -1 for none. */
int evr_ctf_loglevel(uint8_t level);

#endif /* EVR_CONVERT_CTF_INTERNAL_H */
