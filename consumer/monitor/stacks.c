// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Thread stacks: a snapshot of every thread of a process (libevring-symbols:
 * ptrace + libdw, as `evring stacks` takes it), as the JSON document
 * `evring stacks --json` prints (evr_stacks_json(): one writer for both;
 * docs/stacks.md has its shape), and as the stacks page. Each thread is
 * stopped only while it is unwound; a snapshot holds an operation slot, so
 * they are bounded like traces.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <evring/export.h>
#include <evring/consumer.h>
#include <evring/symbols.h>

#include "http.h"

#define DEPTH_DEFAULT 64

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
	/* ptrace() and /proc need a pid of ours; listen mode's id of a process elsewhere is not. */
	if (evr_client_dialin_foreign(pid)) {
		*ret_mhd = evr_mon_send_problem(q, 409, "Conflict", -EOPNOTSUPP, "process %d is "
						"in a pid namespace the monitor cannot see (it came "
						"in listen mode): its stacks cannot be read from here "
						"(ptrace needs its pid); run the monitor in its pid "
						"namespace for stacks", (int)pid);
		return NULL;
	}
	/* The snapshot stops each thread for a moment: not for a page elsewhere. */
	if (!evr_mon_side_effect_check(q, ret_mhd))
		return NULL;
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

enum MHD_Result evr_mon_route_stacks(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	enum MHD_Result ret = MHD_NO;
	struct evr_stacks *st = snapshot(q, pid, &ret);
	struct evr_strbuf sb = { 0 };
	int r;

	if (!st)
		return ret;
	/* libevring-symbols writes it: the document of `evring stacks --json`. */
	r = evr_stacks_json(st, &sb);
	if (r == 0)
		r = evr_strbuf_append(&sb, "\n", 1);
	evr_stacks_free(st);
	if (r < 0)
		ret = evr_mon_send_problem(q, 500, "Internal Server Error", r,
					   "cannot write the stacks document: %s", strerror(-r));
	else
		ret = evr_mon_send_buf(q, 200, "application/json", sb.buf, sb.len);
	free(sb.buf);
	return ret;
}

/*
 * One frame, one line of the thread's <pre>. The newline is markup, not text:
 * the escaper turns control characters (a newline among them) into U+FFFD, so
 * it is appended after the escaped text, never escaped with it.
 */
static int frame_line(struct evr_strbuf *sb, const char *text)
{
	int err = evr_rpt_html_cstr(sb, text);

	return err ? err : evr_strbuf_append(sb, "\n", 1);
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
			/* As evring stacks prints them: what is inlined there first. */
			for (uint32_t k = 0; k < sym.ninlined && !err; k++) {
				snprintf(line, sizeof(line), "#%-2u 0x%016" PRIx64 " %s", f,
					 t->pcs[f],
					 evr_sym_format_inlined(&sym, k, true, buf, sizeof(buf)));
				err = frame_line(sb, line);
			}
			snprintf(line, sizeof(line), "#%-2u 0x%016" PRIx64 " %s", f, t->pcs[f],
				 evr_sym_format(&sym, t->pcs[f], true, buf, sizeof(buf)));
			if (!err)
				err = frame_line(sb, line);
		}
		if (!err)
			err = evr_strbuf_append(sb, "</pre>\n", 7);
	}
	evr_stacks_free(st);
	return err;
}
