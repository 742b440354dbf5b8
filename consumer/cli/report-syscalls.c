// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring report's system-call section (report-syscalls.h). The records and
 * their summary are libevring-symbols' (syscalls-read.c), which convert's
 * Chrome slices read too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <evring/consumer.h>
#include <evring/trace.h>

#include "cli.h"
#include "report-syscalls.h"

#define CMD "report"

int evr_cli_syscalls_load(const char *cmd, const char *path, struct evr_trace_reader *r,
			  struct evr_syscall_set **ret)
{
	int err = evr_syscalls_load(r, ret);

	if (err == -ESPIPE) {
		*ret = NULL;
		return 0;
	}
	if (err == -EBADMSG) {
		evr_cli_warn(cmd, "%s: a SYSCALLS chunk is malformed; its calls are left out",
			     evr_cli_trace_name(path));
		err = 0;
	}
	return err;
}

int evr_report_syscalls_build(struct evr_trace_reader *r, const char *path,
			      struct evr_report_syscalls *ret)
{
	const struct evr_process_info *pi = evr_trace_reader_process(r);
	struct evr_syscall_set *set = NULL;
	int err;

	memset(ret, 0, sizeof(*ret));
	err = evr_cli_syscalls_load(CMD, path, r, &set);
	if (err < 0)
		return err;
	if (!set) {
		ret->unreadable = true;
		return 0;
	}
	if (pi) {
		const char *base = pi->exe ? strrchr(pi->exe, '/') : NULL;

		ret->main_pid = pi->pid;
		snprintf(ret->main_name, sizeof(ret->main_name), "%s",
			 base ? base + 1 : pi->exe ? pi->exe : "");
	}
	ret->recorded = set->n || set->has_info;
	ret->machine = set->has_info ? set->info.machine : evr_syscall_machine();
	ret->lost = set->info.lost;
	ret->calls = set->n;
	err = evr_syscalls_summary(set, &ret->v, &ret->n);
	evr_syscalls_set_free(set);
	return err;
}

void evr_report_syscalls_fini(struct evr_report_syscalls *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* "1.234 ms", "12.3 us", "850 ns": durations of system calls. */
static const char *fmt_dur(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 10000)
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	return buf;
}

/* "ENOENT 7, EAGAIN 2" */
static const char *fmt_errnos(const struct evr_syscall_stat *st, char *buf, size_t len)
{
	size_t off = 0;
	char nb[16];

	buf[0] = '\0';
	for (int i = 0; i < EVR_SYSCALL_ERRNOS && st->errno_count[i] && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s %" PRIu64, i ? ", " : "",
					evr_errno_name(st->errnos[i], nb, sizeof(nb)),
					st->errno_count[i]);
	return buf;
}

void evr_report_syscalls_print(FILE *f, const struct evr_report_syscalls *s)
{
	char b1[32], b2[32], b3[32], nb[32], eb[128];

	if (s->unreadable) {
		fprintf(f, "\nSystem calls: not read (a stream: report the file to see them)\n");
		return;
	}
	if (!s->recorded)
		return;
	fprintf(f, "\nSystem calls: %" PRIu64 " (wall time from entry to exit), %" PRIu64
		" tracepoint records lost\n", s->calls, s->lost);
	for (size_t i = 0; i < s->n; i++) {
		const struct evr_syscall_stat *st = &s->v[i];

		if (!i || s->v[i - 1].pid != st->pid) {
			if (st->pid == s->main_pid && s->main_name[0])
				fprintf(f, "\nProcess %" PRIu32 " (%s)\n", st->pid, s->main_name);
			else
				fprintf(f, "\nProcess %" PRIu32 "\n", st->pid);
			fprintf(f, "  %10s %8s %12s %12s %12s  %-24s %s\n", "CALLS", "ERRORS", "TOTAL",
				"AVG", "MAX", "SYSCALL", "ERRNO");
		}
		fprintf(f, "  %10" PRIu64 " %8" PRIu64 " %12s %12s %12s  %-24s %s\n", st->count,
			st->errors, fmt_dur(st->total_ns, b1, sizeof(b1)),
			fmt_dur(st->timed ? st->total_ns / st->timed : 0, b2, sizeof(b2)),
			fmt_dur(st->max_ns, b3, sizeof(b3)),
			evr_syscall_name_or_nr(st->nr, s->machine, nb, sizeof(nb)),
			fmt_errnos(st, eb, sizeof(eb)));
	}
}

static int json_stat(struct evr_strbuf *sb, const struct evr_syscall_stat *st, uint32_t machine,
		     bool first)
{
	char nb[32];
	const char *name = evr_syscall_name_or_nr(st->nr, machine, nb, sizeof(nb));
	int err = evr_strbuf_printf(sb, "%s{\"name\":", first ? "" : ",");

	if (!err)
		err = evr_strbuf_json_string(sb, name, strlen(name));
	if (!err)
		err = evr_strbuf_printf(sb, ",\"nr\":%" PRId32 ",\"count\":%" PRIu64 ",\"errors\":%"
					PRIu64 ",\"total_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
					",\"min_ns\":%" PRIu64 ",\"errnos\":{", st->nr, st->count,
					st->errors, st->total_ns, st->max_ns, st->min_ns);
	for (int i = 0; i < EVR_SYSCALL_ERRNOS && st->errno_count[i] && !err; i++)
		err = evr_strbuf_printf(sb, "%s\"%s\":%" PRIu64, i ? "," : "",
					evr_errno_name(st->errnos[i], nb, sizeof(nb)),
					st->errno_count[i]);
	if (!err)
		err = evr_strbuf_append(sb, "}}", 2);
	return err;
}

/* Every process's calls of the same system call together, the heaviest total first. */
static int cmp_total(const void *a, const void *b)
{
	const struct evr_syscall_stat *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

static int merged(const struct evr_report_syscalls *s, struct evr_syscall_stat **ret, size_t *n)
{
	struct evr_syscall_stat *v = calloc(s->n ? s->n : 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		const struct evr_syscall_stat *st = &s->v[i];
		size_t j;

		for (j = 0; j < k && v[j].nr != st->nr; j++)
			;
		if (j == k) {
			v[k] = *st;
			v[k].pid = 0;
			k++;
			continue;
		}
		v[j].count += st->count;
		v[j].timed += st->timed;
		v[j].errors += st->errors;
		v[j].total_ns += st->total_ns;
		if (st->max_ns > v[j].max_ns)
			v[j].max_ns = st->max_ns;
		if (st->min_ns < v[j].min_ns)
			v[j].min_ns = st->min_ns;
		for (int e = 0; e < EVR_SYSCALL_ERRNOS && st->errno_count[e]; e++) {
			int m;

			for (m = 0; m < EVR_SYSCALL_ERRNOS && v[j].errno_count[m] &&
				    v[j].errnos[m] != st->errnos[e]; m++)
				;
			if (m == EVR_SYSCALL_ERRNOS)
				continue;
			v[j].errnos[m] = st->errnos[e];
			v[j].errno_count[m] += st->errno_count[e];
		}
	}
	qsort(v, k, sizeof(*v), cmp_total);
	*ret = v;
	*n = k;
	return 0;
}

int evr_report_syscalls_json(struct evr_strbuf *sb, const struct evr_report_syscalls *s)
{
	static const char tail[] = "}\n";
	struct evr_syscall_stat *all = NULL;
	size_t nall = 0;
	int err;

	if (!s->recorded)
		return 0;
	if (sb->len < 2 || memcmp(sb->buf + sb->len - 2, tail, 2))
		return -EINVAL;
	err = merged(s, &all, &nall);
	if (err)
		return err;
	sb->len -= 2;
	err = evr_strbuf_printf(sb, ",\"syscall_totals\":{\"calls\":%" PRIu64 ",\"lost\":%" PRIu64
				"},\"syscalls\":[", s->calls, s->lost);
	for (size_t i = 0; i < nall && !err; i++)
		err = json_stat(sb, &all[i], s->machine, i == 0);
	if (!err)
		err = evr_strbuf_append(sb, "],\"syscalls_by_process\":[", 25);
	for (size_t i = 0; i < s->n && !err; i++) {
		bool first = !i || s->v[i - 1].pid != s->v[i].pid;

		if (first)
			err = evr_strbuf_printf(sb, "%s{\"pid\":%" PRIu32 ",\"syscalls\":[",
						i ? "]}," : "", s->v[i].pid);
		if (!err)
			err = json_stat(sb, &s->v[i], s->machine, first);
	}
	if (!err)
		err = evr_strbuf_append(sb, s->n ? "]}]}\n" : "]}\n", s->n ? 5 : 3);
	free(all);
	return err;
}
