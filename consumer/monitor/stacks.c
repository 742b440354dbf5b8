// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Thread stacks: a snapshot of every thread of a process (libevring-symbols:
 * ptrace + libdw, as `evring stacks` takes it), as the JSON document
 * `evring stacks --json` prints (docs/stacks.md has its shape), and as the
 * stacks page. Each thread is stopped only while it is unwound; a snapshot
 * holds an operation slot, so they are bounded like traces.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <evring/export.h>
#include <evring/symbols.h>

#include "monitor.h"

#define DEPTH_DEFAULT 64

static json_t *jstr_or_null(const char *s)
{
	return s ? evr_mon_jstr(s) : json_null();
}

static json_t *stacks_json(const struct evr_stacks *st)
{
	const char *w = evr_symbolizer_warnings(st->sym);
	json_t *threads = json_array(), *warnings = json_array();

	for (uint32_t i = 0; i < st->nthreads && threads; i++) {
		const struct evr_thread_stack *t = &st->threads[i];
		char state[2] = { t->state, 0 };
		json_t *frames = json_array();

		for (uint32_t f = 0; f < t->nframes && frames; f++) {
			struct evr_sym sym;
			char pc[24], mo[24];

			evr_symbolizer_lookup(st->sym, t->pcs[f], !t->activation[f], &sym);
			snprintf(pc, sizeof(pc), "0x%" PRIx64, t->pcs[f]);
			snprintf(mo, sizeof(mo), "0x%" PRIx64, sym.module_offset);
			json_array_append_new(frames, json_pack("{s:s, s:o, s:I, s:o, s:s, s:o, s:i, s:b}",
				"pc", pc, "func", jstr_or_null(sym.func),
				"offset", (json_int_t)(sym.func ? sym.offset : 0),
				"module", jstr_or_null(sym.module), "module_offset", mo,
				"file", jstr_or_null(sym.file), "line", (int)sym.line, "jit", sym.jit));
		}
		json_array_append_new(threads, json_pack("{s:I, s:o, s:o, s:f, s:o, s:o}",
			"tid", (json_int_t)t->tid,
			"name", evr_mon_jstrn(t->name, strnlen(t->name, sizeof(t->name))),
			"state", evr_mon_jstr(state), "pause_us", (double)t->pause_ns / 1e3,
			"error", t->err ? jstr_or_null(t->errmsg ? t->errmsg : strerror(-t->err))
				       : json_null(),
			"frames", frames));
	}
	while (*w && warnings) {
		size_t l = strcspn(w, "\n");

		json_array_append_new(warnings, evr_mon_jstrn(w, l));
		w += l + (w[l] == '\n');
	}
	return json_pack("{s:i, s:f, s:o, s:o}", "pid", (int)st->pid, "total_us",
			 (double)st->total_ns / 1e3, "threads", threads, "warnings", warnings);
}

static int parse_depth(struct evr_mon_req *q, uint32_t *ret)
{
	const char *s = evr_mon_query(q, "depth");
	char *end;
	unsigned long v;

	*ret = DEPTH_DEFAULT;
	if (!s)
		return 0;
	v = strtoul(s, &end, 10);
	if (end == s || *end || *s == '-' || v < 1 || v > 1024)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

/* Take a snapshot under an operation slot; on failure the error is answered. */
static struct evr_stacks *snapshot(struct evr_mon_req *q, pid_t pid, enum MHD_Result *ret_mhd)
{
	struct evr_stacks *st = NULL;
	char err[512] = "";
	uint32_t depth;
	int r;

	if (parse_depth(q, &depth) < 0) {
		*ret_mhd = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "depth: a number "
						"from 1 to 1024");
		return NULL;
	}
	if (!evr_mon_op_get(q->m)) {
		*ret_mhd = evr_mon_send_busy(q);
		return NULL;
	}
	r = evr_stacks_snapshot(pid, depth, &st, err, sizeof(err));
	evr_mon_op_put(q->m);
	if (r < 0) {
		*ret_mhd = evr_mon_send_error(q, r, err);
		return NULL;
	}
	return st;
}

enum MHD_Result evr_mon_route_stacks(struct evr_mon_req *q, pid_t pid)
{
	enum MHD_Result ret = MHD_NO;
	struct evr_stacks *st = snapshot(q, pid, &ret);
	json_t *j;

	if (!st)
		return ret;
	j = stacks_json(st);
	evr_stacks_free(st);
	return evr_mon_send_json(q, 200, j);
}

/* The stacks as text, close to `evring stacks`, one <pre> per thread. */
int evr_mon_stacks_html(struct evr_mon_req *q, pid_t pid, struct evr_strbuf *sb,
			enum MHD_Result *ret_mhd)
{
	struct evr_stacks *st = snapshot(q, pid, ret_mhd);
	char line[1200], buf[1024];
	int err;

	if (!st)
		return -EIO;
	err = evr_strbuf_printf(sb, "<p class=\"muted\">%" PRIu32 " threads, snapshot taken in "
				"%.2f ms (each thread stopped only while it was unwound).</p>\n",
				st->nthreads, (double)st->total_ns / 1e6);
	for (uint32_t i = 0; i < st->nthreads && !err; i++) {
		const struct evr_thread_stack *t = &st->threads[i];

		snprintf(line, sizeof(line), "TID %u \"%.16s\" (%c)", t->tid, t->name, t->state);
		err = evr_strbuf_printf(sb, "<h2 class=\"thread\" data-tid=\"%u\">", t->tid);
		if (!err)
			err = evr_rpt_html_cstr(sb, line);
		if (!err)
			err = evr_strbuf_append(sb, "</h2><pre>", 10);
		if (!err && t->err)
			err = evr_rpt_html_cstr(sb, t->errmsg ? t->errmsg : strerror(-t->err));
		for (uint32_t f = 0; f < t->nframes && !err; f++) {
			struct evr_sym sym;

			evr_symbolizer_lookup(st->sym, t->pcs[f], !t->activation[f], &sym);
			snprintf(line, sizeof(line), "#%-2u 0x%016" PRIx64 " %s\n", f, t->pcs[f],
				 evr_sym_format(&sym, t->pcs[f], true, buf, sizeof(buf)));
			err = evr_rpt_html_cstr(sb, line);
		}
		if (!err)
			err = evr_strbuf_append(sb, "</pre>\n", 7);
	}
	evr_stacks_free(st);
	return err;
}
