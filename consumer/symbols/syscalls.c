// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record --syscalls: every system call of the recorded process's
 * threads, from perf_events' raw_syscalls:sys_enter and sys_exit tracepoints
 * (shared/research/machine.md §2): one pair of events for all calls, opened
 * per (thread, CPU) with inherit, into one ring per CPU (perf-ring.c), as
 * `perf record -p` does. The kernel writes both records cheaply (~1 µs a call
 * here, where strace's ptrace stops cost ~40 µs).
 *
 * - The tracepoints' ids and field offsets are read from tracefs at run time
 *   (the raw records are not ABI); tracefs is looked for where it is usually
 *   mounted, then in /proc/mounts, and mounted at /sys/kernel/tracing when it
 *   is nowhere and we may (root), as `perf trace` would need it too.
 * - Entry and exit are paired here, per thread, and stored as one record
 *   (struct evr_syscall_rec) with the duration and return value. A thread that
 *   blocks in a call may leave its CPU and return on another one, so the exit
 *   may sit in another CPU's ring than the entry: each drain sorts what it read
 *   by time and keeps back the records stamped after the drain began (the
 *   entry of such an exit might not have been visible yet in a ring read
 *   earlier), for the next drain.
 * - A full ring makes the kernel drop records and count them
 *   (PERF_RECORD_LOST): counted in SYSCALL_INFO.lost; a call that lost its
 *   entry or exit is stored with a NO_ENTER or NO_EXIT flag.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <evring/syscalls.h>

#include "perf-ring-internal.h"
#include "symbols-internal.h"

/* 4 MiB per CPU: ~30000 calls (~136 bytes each), drained every 10 ms (record.c). Over
 * perf_event_mlock_kb, which CAP_PERFMON, needed for the tracepoints anyway, lifts. */
#define RING_PAGES 1024u
#define CHUNK_BYTES (1u << 20)		/* SYSCALLS chunks are cut at this size */
#define MAX_NR 4096			/* numbers above are not system calls (x32 has bit 30) */
#define FILTER_MAX 64			/* calls named in a kernel filter, at most */

/* Where a tracepoint's fields are in its raw record (from its format file). */
struct field {
	uint32_t off, size;
};

struct tp {
	uint32_t id;
	struct field type, nr, arg;	/* arg: args[6] (enter) or ret (exit) */
};

/* One record read from a ring, before pairing. */
struct ev {
	uint64_t time, seq;
	uint32_t pid, tid;
	int32_t nr;
	bool exit;
	int64_t ret;
	uint64_t args[4];
};

/* A thread's call in progress. */
struct pending {
	uint32_t tid;			/* 0: free slot */
	bool busy;
	struct ev enter;
};

struct evr_syscalls {
	pid_t pid;
	struct tp enter, exit;
	struct evr_perf_set *events;
	uint8_t *want;			/* MAX_NR flags with a LIST, else NULL */
	struct ev *evs;			/* read and not yet paired */
	size_t nevs, capevs;
	uint64_t seq;
	struct pending *pend;		/* open addressing by tid */
	size_t npend, cappend;
	uint8_t *out;			/* the SYSCALLS chunk being filled */
	size_t outlen;
	struct evr_syscall_info_rec info;
};

/* ---- tracefs ------------------------------------------------------------------------ */

static bool has_events(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/events/raw_syscalls/sys_enter/id", dir);
	return access(path, F_OK) == 0;
}

/* The tracefs mount point in /proc/mounts, or "". */
static void tracefs_from_mounts(char *dir, size_t len)
{
	FILE *f = fopen("/proc/mounts", "re");
	char line[1024], mnt[512], type[64];

	dir[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %511s %63s", mnt, type) == 2 && !strcmp(type, "tracefs") &&
		    has_events(mnt)) {
			snprintf(dir, len, "%s", mnt);
			break;
		}
	}
	fclose(f);
}

static int tracefs_find(char *dir, size_t len, char *note, size_t notelen, char *errbuf,
			size_t errlen)
{
	static const char *const where[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		if (has_events(where[i])) {
			snprintf(dir, len, "%s", where[i]);
			return 0;
		}
		if (errno == EACCES) {
			snprintf(errbuf, errlen, "cannot read %s/events: permission denied (tracefs is "
				 "root's: run as root, or make it readable to you)", where[i]);
			return -EACCES;
		}
	}
	tracefs_from_mounts(dir, len);
	if (dir[0])
		return 0;
	if (geteuid() != 0) {
		snprintf(errbuf, errlen, "tracefs is not mounted (no /sys/kernel/tracing/events): "
			 "as root, mount -t tracefs nodev /sys/kernel/tracing");
		return -ENOENT;
	}
	if (mount("nodev", where[0], "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
		int err = errno;

		snprintf(errbuf, errlen, "tracefs is not mounted and mounting it at %s failed: %s%s",
			 where[0], strerror(err),
			 err == EPERM ? " (it needs CAP_SYS_ADMIN in the initial namespace)" : "");
		return -err;
	}
	if (!has_events(where[0])) {
		snprintf(errbuf, errlen, "tracefs at %s has no raw_syscalls events (a kernel "
			 "without CONFIG_FTRACE_SYSCALLS)", where[0]);
		return -ENOENT;
	}
	snprintf(note, notelen, "mounted tracefs at %s (it was not mounted)", where[0]);
	snprintf(dir, len, "%s", where[0]);
	return 0;
}

/* Offset and size of field @name in a format file's text. */
static bool format_field(const char *text, const char *name, struct field *ret)
{
	size_t nlen = strlen(name);

	for (const char *p = strstr(text, "field:"); p; p = strstr(p + 6, "field:")) {
		const char *semi = strchr(p, ';'), *q;
		unsigned off, size;

		if (!semi)
			return false;
		/* The declaration's last word, before any "[6]". */
		q = memchr(p, '[', (size_t)(semi - p));
		if (!q)
			q = semi;
		if ((size_t)(q - p) < nlen || memcmp(q - nlen, name, nlen) ||
		    (q[-(long)nlen - 1] != ' ' && q[-(long)nlen - 1] != '*'))
			continue;
		if (sscanf(semi, "; offset:%u; size:%u;", &off, &size) != 2 &&
		    sscanf(semi, ";\toffset:%u;\tsize:%u;", &off, &size) != 2)
			return false;
		ret->off = off;
		ret->size = size;
		return true;
	}
	return false;
}

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return 0;
}

static int tp_load(const char *dir, const char *event, const char *argname, struct tp *tp,
		   char *errbuf, size_t errlen)
{
	char path[PATH_MAX], text[8192];
	int err;

	snprintf(path, sizeof(path), "%s/events/raw_syscalls/%s/id", dir, event);
	err = read_small(path, text, sizeof(text));
	if (err == 0) {
		tp->id = (uint32_t)strtoul(text, NULL, 10);
		snprintf(path, sizeof(path), "%s/events/raw_syscalls/%s/format", dir, event);
		err = read_small(path, text, sizeof(text));
	}
	if (err < 0) {
		snprintf(errbuf, errlen, "cannot read %s: %s%s", path, strerror(-err),
			 err == -EACCES ? " (tracefs is root's: run as root)" : "");
		return err;
	}
	if (!format_field(text, "common_type", &tp->type))
		tp->type = (struct field){ 0, 2 };
	if (!tp->id || !format_field(text, "id", &tp->nr) ||
	    !format_field(text, argname, &tp->arg) || tp->nr.size > 8 || tp->arg.size < 8) {
		snprintf(errbuf, errlen, "%s: not the raw_syscalls layout this evring knows", path);
		return -EPROTO;
	}
	return 0;
}

/* ---- opening ---------------------------------------------------------------------- */

static const char *open_hint(int err)
{
	static char buf[192];
	char v[16] = "?";
	int fd;

	switch (err) {
	case EACCES:
	case EPERM:
		/* The value the user would change, as it is now. */
		fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, v, sizeof(v) - 1);

			v[n > 0 ? n : 0] = '\0';
			v[strcspn(v, "\n")] = '\0';
			close(fd);
		}
		snprintf(buf, sizeof(buf), " (tracepoints need CAP_PERFMON or CAP_SYS_ADMIN, or "
			 "kernel.perf_event_paranoid -1, here %s: run as root)", v[0] ? v : "?");
		return buf;
	case ENOENT:
	case EINVAL:
		return " (this kernel has no raw_syscalls tracepoints)";
	case EMFILE:
	case ENFILE:
		return " (two descriptors per thread and CPU: raise the open files limit)";
	default:
		return "";
	}
}

static void attr_init(struct perf_event_attr *a, uint32_t id)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = id;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
	a->disabled = 1;
	a->inherit = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* We read on the recorder's own schedule: no wake-ups. */
	a->watermark = 1;
	a->wakeup_watermark = (RING_PAGES * 4096u) / 2;
}

/* "write,openat,17" into s->want; the kernel filter's text into @filter. */
static int parse_list(struct evr_syscalls *s, const char *list, char *filter, size_t flen,
		      char *errbuf, size_t errlen)
{
	char *copy = strdup(list), *save = NULL, *tok;
	size_t fl = 0;
	int err = 0;

	s->want = calloc(MAX_NR, 1);
	if (!copy || !s->want) {
		free(copy);
		return -ENOMEM;
	}
	filter[0] = '\0';
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long nr = strtol(tok, &end, 10);

		if (*end || end == tok)
			nr = evr_syscall_number(tok);
		if (nr < 0 || nr >= MAX_NR) {
			snprintf(errbuf, errlen, "--syscalls: '%s' is no system call known here", tok);
			err = -EINVAL;
			break;
		}
		if (!s->want[nr]) {
			s->want[nr] = 1;
			s->info.nfilter++;
			if (fl < flen)
				fl += (size_t)snprintf(filter + fl, flen - fl, "%sid == %ld",
						       fl ? " || " : "", nr);
		}
	}
	free(copy);
	if (!err && !s->info.nfilter) {
		snprintf(errbuf, errlen, "--syscalls=: the list names no system call");
		err = -EINVAL;
	}
	if (s->info.nfilter > FILTER_MAX || fl >= flen)
		filter[0] = '\0';
	return err;
}

int evr_syscalls_new(pid_t pid, const char *list, struct evr_syscalls **ret, char *note,
		     size_t notelen, char *errbuf, size_t errlen)
{
	struct perf_event_attr a[2];
	struct evr_perf_set_opts po = {
		.pid = pid, .attrs = a, .nattrs = 2, .ring_pages = RING_PAGES,
		.what = "trace the system calls of", .hint = open_hint,
	};
	char dir[PATH_MAX], filter[FILTER_MAX * 16];
	struct evr_syscalls *s;
	int err;

	note[0] = '\0';
	filter[0] = '\0';
	err = evr_proc_check_access(pid, "you can trace only your own processes", errbuf, errlen);
	if (err < 0)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pid = pid;
	s->info.machine = evr_syscall_machine();
	s->out = malloc(CHUNK_BYTES);
	if (!s->out) {
		err = -ENOMEM;
		goto fail;
	}
	if (list) {
		err = parse_list(s, list, filter, sizeof(filter), errbuf, errlen);
		if (err < 0)
			goto fail;
	}
	err = tracefs_find(dir, sizeof(dir), note, notelen, errbuf, errlen);
	if (err == 0)
		err = tp_load(dir, "sys_enter", "args", &s->enter, errbuf, errlen);
	if (err == 0)
		err = tp_load(dir, "sys_exit", "ret", &s->exit, errbuf, errlen);
	if (err < 0)
		goto fail;
	attr_init(&a[0], s->enter.id);
	attr_init(&a[1], s->exit.id);
	err = evr_perf_set_new(&po, &s->events, errbuf, errlen);
	if (err < 0)
		goto fail;
	if (filter[0]) {
		uint32_t n;
		const int *fds = evr_perf_set_fds(s->events, &n);

		/* Fewer records for the kernel to write; where it refuses the filter, the
		 * records are filtered here (s->want) as they are anyway: those written
		 * before the filter was set. */
		for (uint32_t i = 0; i < n; i++)
			if (ioctl(fds[i], PERF_EVENT_IOC_SET_FILTER, filter) < 0)
				break;
	}
	s->info.threads = evr_perf_set_threads(s->events);
	s->info.cpus = evr_perf_set_cpus(s->events);
	*ret = s;
	return 0;
fail:
	evr_syscalls_free(s);
	return err;
}

void evr_syscalls_free(struct evr_syscalls *s)
{
	if (!s)
		return;
	evr_perf_set_free(s->events);
	free(s->want);
	free(s->evs);
	free(s->pend);
	free(s->out);
	free(s);
}

void evr_syscalls_info(const struct evr_syscalls *s, struct evr_syscall_info_rec *ret)
{
	*ret = s->info;
}

/* ---- reading the rings ------------------------------------------------------------ */

static uint64_t raw_field(const uint8_t *raw, uint32_t rawlen, struct field f, uint32_t idx)
{
	uint64_t v = 0;
	uint32_t size = f.size > 8 ? 8 : f.size, off = f.off + idx * 8;

	if (off + size > rawlen)
		return 0;
	memcpy(&v, raw + off, size);
	/* Sign-extend a narrower signed field ("int __syscall_nr" on some kernels). */
	if (size == 4)
		v = (uint64_t)(int64_t)(int32_t)v;
	return v;
}

static int push_ev(struct evr_syscalls *s, const struct ev *e)
{
	if (s->nevs == s->capevs) {
		size_t cap = s->capevs ? s->capevs * 2 : 1024;
		struct ev *v = realloc(s->evs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->evs = v;
		s->capevs = cap;
	}
	s->evs[s->nevs++] = *e;
	return 0;
}

static int on_rec(void *arg, const uint8_t *rec, const struct perf_event_header *h)
{
	struct evr_syscalls *s = arg;
	/* TID, TIME, RAW, in that order. */
	struct {
		uint32_t pid, tid;
		uint64_t time;
		uint32_t rawlen;
	} __attribute__((packed)) f;
	const uint8_t *raw;
	struct ev e = { 0 };
	uint16_t type;

	if (h->type == PERF_RECORD_LOST) {
		uint64_t lost;

		if (h->size >= sizeof(*h) + 16) {
			memcpy(&lost, rec + sizeof(*h) + 8, 8);
			s->info.lost += lost;
		}
		return 0;
	}
	if (h->type != PERF_RECORD_SAMPLE || h->size < sizeof(*h) + sizeof(f))
		return 0;
	memcpy(&f, rec + sizeof(*h), sizeof(f));
	raw = rec + sizeof(*h) + sizeof(f);
	if (f.rawlen > h->size - sizeof(*h) - sizeof(f))
		return 0;
	type = (uint16_t)raw_field(raw, f.rawlen, s->enter.type, 0);
	e.time = f.time;
	e.seq = s->seq++;
	e.pid = f.pid;
	e.tid = f.tid;
	if (type == s->enter.id) {
		e.nr = (int32_t)raw_field(raw, f.rawlen, s->enter.nr, 0);
		for (uint32_t i = 0; i < 4; i++)
			e.args[i] = raw_field(raw, f.rawlen, s->enter.arg, i);
	} else if (type == s->exit.id) {
		e.exit = true;
		e.nr = (int32_t)raw_field(raw, f.rawlen, s->exit.nr, 0);
		e.ret = (int64_t)raw_field(raw, f.rawlen, s->exit.arg, 0);
	} else {
		return 0;
	}
	if (s->want && (e.nr < 0 || e.nr >= MAX_NR || !s->want[e.nr]))
		return 0;
	return push_ev(s, &e);
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static struct pending *pend_get(struct evr_syscalls *s, uint32_t tid)
{
	size_t mask, i;

	if ((s->npend + 1) * 2 > s->cappend) {
		size_t cap = s->cappend ? s->cappend * 2 : 256;
		struct pending *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (size_t k = 0; k < s->cappend; k++) {
			if (!s->pend[k].tid)
				continue;
			for (i = s->pend[k].tid & (cap - 1); v[i].tid; i = (i + 1) & (cap - 1))
				;
			v[i] = s->pend[k];
		}
		free(s->pend);
		s->pend = v;
		s->cappend = cap;
	}
	mask = s->cappend - 1;
	for (i = (tid * 2654435761u) & mask; s->pend[i].tid; i = (i + 1) & mask)
		if (s->pend[i].tid == tid)
			return &s->pend[i];
	s->pend[i].tid = tid;
	s->npend++;
	return &s->pend[i];
}

static int flush_out(struct evr_syscalls *s, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = 0;

	if (s->outlen)
		err = emit(ctx, EVR_CHUNK_SYSCALLS, s->out, s->outlen);
	s->outlen = 0;
	return err;
}

static int put(struct evr_syscalls *s, const struct evr_syscall_rec *r, evr_sideband_emit_fn *emit,
	       void *ctx)
{
	if (s->outlen + sizeof(*r) > CHUNK_BYTES) {
		int err = flush_out(s, emit, ctx);

		if (err)
			return err;
	}
	memcpy(s->out + s->outlen, r, sizeof(*r));
	s->outlen += sizeof(*r);
	s->info.calls++;
	if (r->flags)
		s->info.unpaired++;
	return 0;
}

static struct evr_syscall_rec from_enter(const struct ev *e)
{
	struct evr_syscall_rec r = {
		.time_ns = e->time, .pid = e->pid, .tid = e->tid, .nr = e->nr,
	};

	memcpy(r.args, e->args, sizeof(r.args));
	return r;
}

/* Pair the records stamped up to @upto, keep the others back for the next drain. */
static int pair(struct evr_syscalls *s, uint64_t upto, evr_sideband_emit_fn *emit, void *ctx)
{
	size_t i;
	int err = 0;

	qsort(s->evs, s->nevs, sizeof(*s->evs), cmp_ev);
	for (i = 0; i < s->nevs && s->evs[i].time <= upto && !err; i++) {
		const struct ev *e = &s->evs[i];
		struct pending *p = pend_get(s, e->tid);
		struct evr_syscall_rec r;

		if (!p)
			return -ENOMEM;
		if (!e->exit) {
			if (p->busy) {	/* its exit was lost */
				r = from_enter(&p->enter);
				r.flags = EVR_SYSCALL_NO_EXIT;
				err = put(s, &r, emit, ctx);
			}
			p->enter = *e;
			p->busy = true;
			continue;
		}
		if (p->busy && p->enter.nr == e->nr) {
			r = from_enter(&p->enter);
			r.dur_ns = e->time - p->enter.time;
			r.ret = e->ret;
			p->busy = false;
			err = put(s, &r, emit, ctx);
			continue;
		}
		if (p->busy) {
			r = from_enter(&p->enter);
			r.flags = EVR_SYSCALL_NO_EXIT;
			p->busy = false;
			err = put(s, &r, emit, ctx);
		}
		/* An exit without its entry: the first return of a new thread or child
		 * (clone, fork), or an entry lost. */
		r = (struct evr_syscall_rec){ .time_ns = e->time, .pid = e->pid, .tid = e->tid,
					      .nr = e->nr, .ret = e->ret,
					      .flags = EVR_SYSCALL_NO_ENTER };
		if (!err)
			err = put(s, &r, emit, ctx);
	}
	memmove(s->evs, s->evs + i, (s->nevs - i) * sizeof(*s->evs));
	s->nevs -= i;
	return err;
}

int evr_syscalls_drain(struct evr_syscalls *s, evr_sideband_emit_fn *emit, void *ctx)
{
	struct timespec ts;
	uint64_t upto;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	upto = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	err = evr_perf_set_drain(s->events, on_rec, s);
	if (!err)
		err = pair(s, upto, emit, ctx);
	if (!err)
		err = flush_out(s, emit, ctx);
	return err;
}

int evr_syscalls_finish(struct evr_syscalls *s, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = evr_perf_set_drain(s->events, on_rec, s);

	if (!err)
		err = pair(s, UINT64_MAX, emit, ctx);
	/* Calls still in progress (or exit_group, which never returns). */
	for (size_t i = 0; i < s->cappend && !err; i++) {
		struct pending *p = &s->pend[i];

		if (p->tid && p->busy) {
			struct evr_syscall_rec r = from_enter(&p->enter);

			r.flags = EVR_SYSCALL_NO_EXIT;
			p->busy = false;
			err = put(s, &r, emit, ctx);
		}
	}
	if (!err)
		err = flush_out(s, emit, ctx);
	if (!err)
		err = emit(ctx, EVR_CHUNK_SYSCALL_INFO, &s->info, sizeof(s->info));
	return err;
}
