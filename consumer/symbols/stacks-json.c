// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A thread-stack snapshot as JSON (docs/stacks.md, "JSON"): the one writer
 * behind `evring stacks --json` and the monitor's /processes/{pid}/stacks, so
 * that the two cannot drift apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <evring/schema.h>
#include <evring/symbols.h>

/* @s as a JSON string, or null. */
static int str_or_null(struct evr_strbuf *sb, const char *s)
{
	return s ? evr_strbuf_json_string(sb, s, strlen(s)) : evr_strbuf_append(sb, "null", 4);
}

static int frame_json(struct evr_strbuf *sb, const struct evr_stacks *st,
		      const struct evr_thread_stack *t, uint32_t f)
{
	struct evr_sym sym;
	int err;

	evr_symbolizer_lookup(st->sym, t->pcs[f], !t->activation[f], &sym);
	err = evr_strbuf_printf(sb, "%s{\"pc\":\"0x%" PRIx64 "\",\"func\":", f ? "," : "",
				t->pcs[f]);
	if (!err)
		err = str_or_null(sb, sym.func);
	if (!err)
		err = evr_strbuf_printf(sb, ",\"offset\":%" PRIu64 ",\"module\":",
					sym.func ? sym.offset : 0);
	if (!err)
		err = str_or_null(sb, sym.module);
	if (!err)
		err = evr_strbuf_printf(sb, ",\"module_offset\":\"0x%" PRIx64 "\",\"file\":",
					sym.module_offset);
	if (!err)
		err = str_or_null(sb, sym.file);
	if (!err)
		err = evr_strbuf_printf(sb, ",\"line\":%u,\"jit\":%s,\"inlined\":[", sym.line,
					sym.jit ? "true" : "false");
	/* What debug info says is inlined at the address, innermost first, each
	 * with where the address is in it. */
	for (uint32_t k = 0; k < sym.ninlined && !err; k++) {
		err = evr_strbuf_printf(sb, "%s{\"func\":", k ? "," : "");
		if (!err)
			err = str_or_null(sb, sym.inlined[k].func);
		if (!err)
			err = evr_strbuf_append(sb, ",\"file\":", 8);
		if (!err)
			err = str_or_null(sb, sym.inlined[k].file);
		if (!err)
			err = evr_strbuf_printf(sb, ",\"line\":%u}", sym.inlined[k].line);
	}
	if (!err)
		err = evr_strbuf_append(sb, "]}", 2);
	return err;
}

static int thread_json(struct evr_strbuf *sb, const struct evr_stacks *st, uint32_t i)
{
	const struct evr_thread_stack *t = &st->threads[i];
	char state = t->state;
	int err;

	err = evr_strbuf_printf(sb, "%s{\"tid\":%" PRIu32 ",\"name\":", i ? "," : "", t->tid);
	/* comm is at most 15 bytes and NUL-terminated; never read past the array. */
	if (!err)
		err = evr_strbuf_json_string(sb, t->name, strnlen(t->name, sizeof(t->name)));
	if (!err)
		err = evr_strbuf_append(sb, ",\"state\":", 9);
	if (!err)
		err = evr_strbuf_json_string(sb, &state, 1);
	if (!err)
		err = evr_strbuf_printf(sb, ",\"pause_us\":%.1f,\"error\":", (double)t->pause_ns / 1e3);
	if (!err)
		err = str_or_null(sb, !t->err ? NULL : t->errmsg ? t->errmsg : strerror(-t->err));
	if (!err)
		err = evr_strbuf_append(sb, ",\"frames\":[", 11);
	for (uint32_t f = 0; f < t->nframes && !err; f++)
		err = frame_json(sb, st, t, f);
	if (!err)
		err = evr_strbuf_append(sb, "]}", 2);
	return err;
}

int evr_stacks_json(const struct evr_stacks *st, struct evr_strbuf *sb)
{
	const char *w;
	int err;

	if (!st || !sb)
		return -EINVAL;
	err = evr_strbuf_printf(sb, "{\"pid\":%d,\"total_us\":%.1f,\"threads\":[", (int)st->pid,
				(double)st->total_ns / 1e3);
	for (uint32_t i = 0; i < st->nthreads && !err; i++)
		err = thread_json(sb, st, i);
	if (!err)
		err = evr_strbuf_append(sb, "],\"warnings\":[", 14);
	/* One string per line of the symbolizer's warnings. */
	w = evr_symbolizer_warnings(st->sym);
	for (bool first = true; *w && !err; first = false) {
		size_t l = strcspn(w, "\n");

		if (!first)
			err = evr_strbuf_append(sb, ",", 1);
		if (!err)
			err = evr_strbuf_json_string(sb, w, l);
		w += l + (w[l] == '\n');
	}
	if (!err)
		err = evr_strbuf_append(sb, "]}", 2);
	return err;
}
