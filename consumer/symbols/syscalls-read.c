// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The system calls of a trace (record --syscalls): their names, loading the
 * SYSCALLS chunks, and the strace -c / perf trace -s style summary that
 * evring report prints.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/syscalls.h>
#include <evring/trace.h>

#include "syscall-names.h"

#define NNAMES (sizeof(evr_syscall_names_table) / sizeof(evr_syscall_names_table[0]))

uint32_t evr_syscall_machine(void)
{
#if defined(__x86_64__) && !defined(__ILP32__)
	return EM_X86_64;
#elif defined(__aarch64__)
	return EM_AARCH64;
#elif defined(__riscv)
	return EM_RISCV;
#elif defined(__powerpc64__)
	return EM_PPC64;
#elif defined(__s390x__)
	return EM_S390;
#else
	return 0;	/* unknown: names are shown as numbers */
#endif
}

const char *evr_syscall_name(int32_t nr)
{
	return nr >= 0 && (size_t)nr < NNAMES ? evr_syscall_names_table[nr] : NULL;
}

int evr_syscall_number(const char *name)
{
	if (!strncmp(name, "syscall_", 8) && name[8]) {
		char *end;
		long nr = strtol(name + 8, &end, 10);

		if (!*end && nr >= 0 && nr < 65536)
			return (int)nr;
	}
	for (size_t i = 0; i < NNAMES; i++)
		if (evr_syscall_names_table[i] && !strcmp(evr_syscall_names_table[i], name))
			return (int)i;
	return -ENOENT;
}

const char *evr_syscall_name_or_nr(int32_t nr, uint32_t machine, char *buf, size_t len)
{
	const char *name = machine == evr_syscall_machine() ? evr_syscall_name(nr) : NULL;

	if (name)
		return name;
	snprintf(buf, len, "syscall_%d", (int)nr);
	return buf;
}

const char *evr_errno_name(int e, char *buf, size_t len)
{
	const char *name = strerrorname_np(e);

	if (name)
		return name;
	snprintf(buf, len, "E%d", e);
	return buf;
}

void evr_syscalls_set_free(struct evr_syscall_set *s)
{
	if (!s)
		return;
	free(s->v);
	free(s);
}

static int cmp_time(const void *a, const void *b)
{
	const struct evr_syscall_rec *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

int evr_syscalls_load(struct evr_trace_reader *r, struct evr_syscall_set **ret)
{
	struct evr_syscall_set *s = calloc(1, sizeof(*s));
	struct evr_trace_chunk c;
	uint64_t pos = 0;
	size_t cap = 0;
	int err, bad = 0;

	if (!s)
		return -ENOMEM;
	/* Only these chunks' payloads are read: a trace's EVENTS chunks are skipped. */
	while ((err = evr_trace_reader_chunk_next_kind(r, &pos, EVR_CHUNK_SYSCALLS, &c)) != 0) {
		size_t n;

		if (err == -EBADMSG) {
			bad = err;
			continue;
		}
		if (err < 0)
			goto fail;
		if (c.len % sizeof(struct evr_syscall_rec)) {
			bad = -EBADMSG;
			continue;
		}
		n = c.len / sizeof(struct evr_syscall_rec);
		if (s->n + n > cap) {
			size_t nc = cap ? cap * 2 : 4096;
			struct evr_syscall_rec *v;

			while (nc < s->n + n)
				nc *= 2;
			v = realloc(s->v, nc * sizeof(*v));
			if (!v) {
				err = -ENOMEM;
				goto fail;
			}
			s->v = v;
			cap = nc;
		}
		memcpy(s->v + s->n, c.data, c.len);
		s->n += n;
	}
	pos = 0;
	while ((err = evr_trace_reader_chunk_next_kind(r, &pos, EVR_CHUNK_SYSCALL_INFO, &c)) != 0) {
		if (err > 0 && c.len >= sizeof(s->info)) {
			memcpy(&s->info, c.data, sizeof(s->info));
			s->has_info = true;
		}
		if (err < 0 && err != -EBADMSG)
			goto fail;
	}
	/* The recorder stores calls as they end, and the unfinished ones last. */
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), cmp_time);
	*ret = s;
	return bad;
fail:
	evr_syscalls_set_free(s);
	return err;
}

static int cmp_key(const void *a, const void *b)
{
	const struct evr_syscall_rec *x = *(const struct evr_syscall_rec *const *)a;
	const struct evr_syscall_rec *y = *(const struct evr_syscall_rec *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

static int cmp_stat(const void *a, const void *b)
{
	const struct evr_syscall_stat *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

static void add_errno(struct evr_syscall_stat *st, uint16_t e)
{
	size_t i;

	for (i = 0; i < EVR_SYSCALL_ERRNOS && st->errno_count[i]; i++)
		if (st->errnos[i] == e)
			break;
	if (i == EVR_SYSCALL_ERRNOS)
		return;		/* a fifth kind of error: in errors, not named */
	st->errnos[i] = e;
	st->errno_count[i]++;
	/* Keep the most frequent first. */
	while (i > 0 && st->errno_count[i] > st->errno_count[i - 1]) {
		uint16_t te = st->errnos[i];
		uint64_t tc = st->errno_count[i];

		st->errnos[i] = st->errnos[i - 1];
		st->errno_count[i] = st->errno_count[i - 1];
		st->errnos[i - 1] = te;
		st->errno_count[i - 1] = tc;
		i--;
	}
}

int evr_syscalls_summary(const struct evr_syscall_set *s, struct evr_syscall_stat **ret,
			 size_t *n)
{
	const struct evr_syscall_rec **p = malloc((s->n ? s->n : 1) * sizeof(*p));
	struct evr_syscall_stat *v = malloc((s->n ? s->n : 1) * sizeof(*v));
	size_t k = 0;

	if (!p || !v) {
		free(p);
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->n; i++)
		p[i] = &s->v[i];
	qsort(p, s->n, sizeof(*p), cmp_key);
	for (size_t i = 0; i < s->n; i++) {
		const struct evr_syscall_rec *r = p[i];
		struct evr_syscall_stat *st;

		if (!k || v[k - 1].pid != r->pid || v[k - 1].nr != r->nr) {
			v[k] = (struct evr_syscall_stat){ .pid = r->pid, .nr = r->nr,
							  .min_ns = UINT64_MAX };
			k++;
		}
		st = &v[k - 1];
		st->count++;
		if (!(r->flags & EVR_SYSCALL_NO_EXIT) && r->ret < 0 && r->ret >= -4095) {
			st->errors++;
			add_errno(st, (uint16_t)-r->ret);
		}
		if (r->flags)
			continue;	/* no duration */
		st->timed++;
		st->total_ns += r->dur_ns;
		if (r->dur_ns > st->max_ns)
			st->max_ns = r->dur_ns;
		if (r->dur_ns < st->min_ns)
			st->min_ns = r->dur_ns;
	}
	for (size_t i = 0; i < k; i++)
		if (v[i].min_ns == UINT64_MAX)
			v[i].min_ns = 0;
	qsort(v, k, sizeof(*v), cmp_stat);
	free(p);
	*ret = v;
	*n = k;
	return 0;
}
