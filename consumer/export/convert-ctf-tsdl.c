// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The TSDL metadata of `evring convert --format ctf`: one trace, one clock, one
 * stream class, one event class per schema. The byte layout it describes is in
 * convert-ctf-internal.h; the user-facing mapping is in docs/ctf.md.
 *
 * This file only builds text (no I/O), so the unit test links it alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "convert-ctf-internal.h"

static bool ident_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

int evr_ctf_ident(struct evr_strbuf *sb, const char *name)
{
	size_t start;

	if (evr_strbuf_append(sb, "_", 1) < 0)
		return -ENOMEM;
	start = sb->len;
	if (evr_strbuf_append(sb, name, strlen(name)) < 0)
		return -ENOMEM;
	for (size_t i = start; i < sb->len; i++)
		if (!ident_char((unsigned char)sb->buf[i]))
			sb->buf[i] = '_';
	return 0;
}

int evr_ctf_string_literal(struct evr_strbuf *sb, const char *s)
{
	if (evr_strbuf_append(sb, "\"", 1) < 0)
		return -ENOMEM;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		const char *esc = NULL;
		char one = (char)c;

		if (c == '"')
			esc = "\\\"";
		else if (c == '\\')
			esc = "\\\\";
		else if (c == '\n')
			esc = "\\n";
		else if (c == '\t')
			esc = "\\t";
		else if (c < 0x20 || c == 0x7f)
			one = '?';	/* other control bytes have no escape every reader knows */
		if (esc ? evr_strbuf_append(sb, esc, strlen(esc)) : evr_strbuf_append(sb, &one, 1))
			return -ENOMEM;
	}
	return evr_strbuf_append(sb, "\"", 1) < 0 ? -ENOMEM : 0;
}

void evr_ctf_names_free(char **names, uint32_t n)
{
	if (!names)
		return;
	for (uint32_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static bool name_used(char *const *a, uint32_t na, char *const *b, uint32_t nb, const char *s)
{
	for (uint32_t i = 0; i < na; i++)
		if (a[i] && !strcmp(a[i], s))
			return true;
	for (uint32_t i = 0; i < nb; i++)
		if (b[i] && !strcmp(b[i], s))
			return true;
	return false;
}

/* @base, or @base_2, @base_3... whichever is not yet in @names or @lens. */
static char *unique_name(char *const *names, char *const *lens, uint32_t n, const char *base)
{
	struct evr_strbuf sb = { 0 };

	if (evr_strbuf_printf(&sb, "%s", base) < 0)
		return NULL;
	for (uint32_t k = 2; name_used(names, n, lens, n, sb.buf); k++) {
		sb.len = 0;
		if (evr_strbuf_printf(&sb, "%s_%" PRIu32, base, k) < 0) {
			free(sb.buf);
			return NULL;
		}
	}
	return sb.buf;
}

int evr_ctf_field_names(const struct evr_schema_event *ev, char ***ret_names,
			char ***ret_len_names)
{
	uint32_t n = ev->nfields;
	char **names = calloc(n ? n : 1, sizeof(*names));
	char **lens = calloc(n ? n : 1, sizeof(*lens));
	struct evr_strbuf sb = { 0 };
	int err = -ENOMEM;

	if (!names || !lens)
		goto fail;
	/* The fields first, so that a length field never takes a field's own name. */
	for (uint32_t i = 0; i < n; i++) {
		sb.len = 0;
		if (evr_ctf_ident(&sb, ev->fields[i].name) < 0)
			goto fail;
		names[i] = unique_name(names, lens, n, sb.buf);
		if (!names[i])
			goto fail;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (ev->fields[i].type != EVR_FT_BYTES)
			continue;
		sb.len = 0;
		if (evr_strbuf_printf(&sb, "%s_len", names[i]) < 0)
			goto fail;
		lens[i] = unique_name(names, lens, n, sb.buf);
		if (!lens[i])
			goto fail;
	}
	free(sb.buf);
	*ret_names = names;
	*ret_len_names = lens;
	return 0;
fail:
	free(sb.buf);
	evr_ctf_names_free(names, n);
	evr_ctf_names_free(lens, n);
	return err;
}

int evr_ctf_loglevel(uint8_t level)
{
	/* evring (EventPipe) levels to CTF/syslog-like ones: babeltrace2 shows these names. */
	switch (level) {
	case 1:
		return 2;	/* critical: CRIT */
	case 2:
		return 3;	/* error: ERR */
	case 3:
		return 4;	/* warning: WARNING */
	case 4:
		return 6;	/* info: INFO */
	case 5:
		return 14;	/* verbose: DEBUG */
	default:
		return -1;	/* 0 "log always" and unknown levels: none */
	}
}

/* The TSDL type name of a field type; bytes are handled by the caller. */
static const char *type_alias(uint32_t type)
{
	static const char *const names[EVR_FT_MAX_] = {
		[EVR_FT_U8] = "uint8_t", [EVR_FT_U16] = "uint16_t",
		[EVR_FT_U32] = "uint32_t", [EVR_FT_U64] = "uint64_t",
		[EVR_FT_I8] = "int8_t", [EVR_FT_I16] = "int16_t",
		[EVR_FT_I32] = "int32_t", [EVR_FT_I64] = "int64_t",
		[EVR_FT_F32] = "evr_f32_t", [EVR_FT_F64] = "evr_f64_t",
		[EVR_FT_BOOL] = "evr_bool_t", [EVR_FT_PTR] = "evr_ptr_t",
		[EVR_FT_STR] = "string", [EVR_FT_JSON] = "string",
	};

	return type < EVR_FT_MAX_ ? names[type] : NULL;
}

static int uuid_str(struct evr_strbuf *sb, const uint8_t u[16])
{
	return evr_strbuf_printf(sb,
				 "\"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
				 "%02x%02x%02x%02x%02x%02x\"",
				 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
				 u[11], u[12], u[13], u[14], u[15]);
}

static int env_str(struct evr_strbuf *sb, const char *key, const char *val)
{
	if (evr_strbuf_printf(sb, "\t%s = ", key) < 0 ||
	    evr_ctf_string_literal(sb, val ? val : "") < 0 || evr_strbuf_append(sb, ";\n", 2) < 0)
		return -ENOMEM;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static int env_block(struct evr_strbuf *sb, const struct evr_ctf_meta_in *in)
{
	const struct evr_process_info *p = in->proc;
	const struct evr_trace_session *s = in->sess;
	struct evr_strbuf argv = { 0 };
	int err = -ENOMEM;

	if (evr_strbuf_printf(sb, "env {\n\tdomain = \"ust\";\n\ttracer_name = \"evring\";\n") < 0)
		goto out;
	if (p) {
		for (uint32_t i = 0; i < p->argc; i++)
			if ((i && evr_strbuf_append(&argv, " ", 1) < 0) ||
			    evr_strbuf_printf(&argv, "%s", p->argv[i] ? p->argv[i] : "") < 0)
				goto out;
		/* vpid and procname: the names babeltrace2's -f trace:vpid,trace:procname read. */
		if (env_str(sb, "hostname", p->hostname) < 0 ||
		    evr_strbuf_printf(sb, "\tvpid = %" PRIu32 ";\n\tpid = %" PRIu32 ";\n"
				      "\tppid = %" PRIu32 ";\n\tuid = %" PRIu32 ";\n",
				      p->pid, p->pid, p->ppid, p->uid) < 0 ||
		    env_str(sb, "procname", base_name(p->exe ? p->exe : (p->argc ? p->argv[0] : "")))
			    < 0 ||
		    env_str(sb, "exe", p->exe) < 0 || env_str(sb, "argv", argv.len ? argv.buf : "") < 0 ||
		    env_str(sb, "evring_version", p->evring_version) < 0 ||
		    evr_strbuf_printf(sb, "\tnr_cpus = %" PRIu32 ";\n", p->nr_cpus) < 0)
			goto out;
	}
	if (s) {
		if (env_str(sb, "providers", s->providers) < 0 ||
		    env_str(sb, "recorder", s->client) < 0 ||
		    evr_strbuf_printf(sb, "\tsession_mode = \"%s\";\n"
				      "\tsession_start_realtime_ns = %" PRIu64 ";\n",
				      s->mode ? "overwrite" : "discard", s->start_realtime_ns) < 0)
			goto out;
	}
	err = evr_strbuf_append(sb, "};\n\n", 4) < 0 ? -ENOMEM : 0;
out:
	free(argv.buf);
	return err;
}

static int event_class(struct evr_strbuf *sb, const struct evr_ctf_class *c)
{
	const struct evr_schema_event *ev = c->ev;
	char **names = NULL, **lens = NULL;
	struct evr_strbuf full = { 0 };
	int lvl = evr_ctf_loglevel(ev->level);
	int err;

	err = evr_ctf_field_names(ev, &names, &lens);
	if (err < 0)
		return err;
	err = -ENOMEM;
	if (evr_strbuf_printf(&full, "%s:%s", ev->provider, ev->name) < 0 ||
	    evr_strbuf_printf(sb, "event {\n\tname = ") < 0 ||
	    evr_ctf_string_literal(sb, full.buf) < 0 ||
	    evr_strbuf_printf(sb, ";\n\tid = %" PRIu32 ";\n\tstream_id = 0;\n", c->id) < 0)
		goto out;
	if (lvl >= 0 && evr_strbuf_printf(sb, "\tloglevel = %d;\n", lvl) < 0)
		goto out;
	if (evr_strbuf_printf(sb, "\tfields := struct {\n") < 0)
		goto out;
	for (uint32_t i = 0; i < ev->nfields; i++) {
		uint32_t t = ev->fields[i].type;

		if (t == EVR_FT_BYTES) {
			if (evr_strbuf_printf(sb, "\t\tuint32_t %s;\n\t\tuint8_t %s[%s];\n", lens[i],
					      names[i], lens[i]) < 0)
				goto out;
		} else if (!type_alias(t)) {
			err = -EINVAL;	/* the schema set only holds known types */
			goto out;
		} else if (evr_strbuf_printf(sb, "\t\t%s %s;\n", type_alias(t), names[i]) < 0) {
			goto out;
		}
	}
	err = evr_strbuf_printf(sb, "\t};\n};\n\n") < 0 ? -ENOMEM : 0;
out:
	free(full.buf);
	evr_ctf_names_free(names, ev->nfields);
	evr_ctf_names_free(lens, ev->nfields);
	return err;
}

/* Floor division, so that a negative offset still gives 0 <= offset < 1e9. */
static void split_offset(int64_t ns, int64_t *ret_s, int64_t *ret_ns)
{
	int64_t s = ns / 1000000000, r = ns % 1000000000;

	if (r < 0) {
		r += 1000000000;
		s--;
	}
	*ret_s = s;
	*ret_ns = r;
}

static const char tsdl_types[] =
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 8; align = 8; signed = true; } := int8_t;\n"
	"typealias integer { size = 16; align = 8; signed = true; } := int16_t;\n"
	"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
	"typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; base = hex; } := evr_ptr_t;\n"
	"typealias floating_point { exp_dig = 8; mant_dig = 24; align = 8; } := evr_f32_t;\n"
	"typealias floating_point { exp_dig = 11; mant_dig = 53; align = 8; } := evr_f64_t;\n"
	"typealias enum : uint8_t { \"false\" = 0, \"true\" = 1 } := evr_bool_t;\n\n";

static const char tsdl_stream[] =
	"typealias integer { size = 64; align = 8; signed = false;"
	" map = clock.monotonic.value; } := uint64_clock_monotonic_t;\n\n"
	"stream {\n"
	"\tid = 0;\n"
	"\tpacket.context := struct {\n"
	"\t\tuint64_clock_monotonic_t timestamp_begin;\n"
	"\t\tuint64_clock_monotonic_t timestamp_end;\n"
	"\t\tuint64_t content_size;\n"
	"\t\tuint64_t packet_size;\n"
	"\t\tuint64_t packet_seq_num;\n"
	"\t\tuint64_t events_discarded;\n"
	"\t\tuint32_t cpu_id;\n"
	"\t};\n"
	"\tevent.header := struct {\n"
	"\t\tuint32_t id;\n"
	"\t\tuint64_clock_monotonic_t timestamp;\n"
	"\t};\n"
	"\tevent.context := struct {\n"
	"\t\tuint32_t _vtid;\n"
	"\t};\n"
	"};\n\n"
	"event {\n"
	"\tname = \"" EVR_CTF_UNKNOWN_NAME "\";\n"
	"\tid = 0;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint32_t _rid;\n"
	"\t\tuint32_t _payload_len;\n"
	"\t\tuint8_t _payload[_payload_len];\n"
	"\t};\n"
	"};\n\n";

int evr_ctf_metadata(struct evr_strbuf *sb, const struct evr_ctf_meta_in *in)
{
	int64_t off_s, off_ns;
	int err;

	split_offset(in->clock_offset_ns, &off_s, &off_ns);
	if (evr_strbuf_printf(sb, "/* CTF 1.8 */\n\n") < 0 ||
	    evr_strbuf_append(sb, tsdl_types, sizeof(tsdl_types) - 1) < 0 ||
	    evr_strbuf_printf(sb, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = ") < 0 ||
	    uuid_str(sb, in->uuid) < 0 ||
	    evr_strbuf_printf(sb, ";\n\tbyte_order = le;\n"
			      "\tpacket.header := struct {\n"
			      "\t\tuint32_t magic;\n"
			      "\t\tuint8_t uuid[16];\n"
			      "\t\tuint32_t stream_id;\n"
			      "\t};\n};\n\n") < 0)
		return -ENOMEM;
	err = env_block(sb, in);
	if (err < 0)
		return err;
	/*
	 * The clock counts CLOCK_MONOTONIC nanoseconds (what evring's ts_ns is), so
	 * cycles are evring's timestamps exactly; the offset moves its origin to the
	 * Unix epoch: offset + cycles is the event's CLOCK_REALTIME, as calibrated
	 * by the producer when the session started.
	 */
	if (evr_strbuf_printf(sb, "clock {\n\tname = \"monotonic\";\n\tuuid = ") < 0 ||
	    uuid_str(sb, in->uuid) < 0 ||
	    evr_strbuf_printf(sb, ";\n\tdescription = \"CLOCK_MONOTONIC ns; offset: CLOCK_REALTIME"
			      " - CLOCK_MONOTONIC at the session start\";\n"
			      "\tfreq = 1000000000;\n\tprecision = 1;\n"
			      "\toffset_s = %" PRId64 ";\n\toffset = %" PRId64 ";\n"
			      "\tabsolute = TRUE;\n};\n\n", off_s, off_ns) < 0 ||
	    evr_strbuf_append(sb, tsdl_stream, sizeof(tsdl_stream) - 1) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < in->nclasses; i++) {
		err = event_class(sb, &in->classes[i]);
		if (err < 0)
			return err;
	}
	return 0;
}
