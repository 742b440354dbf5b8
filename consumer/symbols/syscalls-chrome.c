// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * System calls in Chrome trace-event JSON (evring convert --format chrome,
 * through evr_chrome_stacks.write_events): one complete event ("ph":"X") per
 * call on its thread's track, category "syscall", named by the call, with its
 * return value (and errno name) and the arguments people look for first: the
 * fd and size of reads and writes, the flags of an open; the other calls show
 * their first four arguments raw.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <evring/syscalls.h>

enum arg_kind { ARGS_RAW, ARGS_FD, ARGS_FD_SIZE, ARGS_FD_IOV, ARGS_OPENAT, ARGS_OPEN,
		ARGS_SOCKET, ARGS_ADDR_LEN };

static const struct {
	const char *name;
	enum arg_kind kind;
} kinds[] = {
	{ "read", ARGS_FD_SIZE }, { "write", ARGS_FD_SIZE }, { "pread64", ARGS_FD_SIZE },
	{ "pwrite64", ARGS_FD_SIZE }, { "sendto", ARGS_FD_SIZE }, { "recvfrom", ARGS_FD_SIZE },
	{ "readv", ARGS_FD_IOV }, { "writev", ARGS_FD_IOV }, { "preadv", ARGS_FD_IOV },
	{ "pwritev", ARGS_FD_IOV }, { "sendmsg", ARGS_FD }, { "recvmsg", ARGS_FD },
	{ "close", ARGS_FD }, { "fstat", ARGS_FD }, { "fsync", ARGS_FD }, { "fdatasync", ARGS_FD },
	{ "lseek", ARGS_FD }, { "ioctl", ARGS_FD }, { "fcntl", ARGS_FD }, { "connect", ARGS_FD },
	{ "accept", ARGS_FD }, { "accept4", ARGS_FD }, { "bind", ARGS_FD }, { "listen", ARGS_FD },
	{ "shutdown", ARGS_FD }, { "getsockopt", ARGS_FD }, { "setsockopt", ARGS_FD },
	{ "epoll_wait", ARGS_FD }, { "epoll_pwait", ARGS_FD }, { "epoll_ctl", ARGS_FD },
	{ "getdents64", ARGS_FD }, { "dup", ARGS_FD }, { "dup2", ARGS_FD }, { "dup3", ARGS_FD },
	{ "ftruncate", ARGS_FD }, { "fallocate", ARGS_FD }, { "sendfile", ARGS_FD },
	{ "openat", ARGS_OPENAT }, { "open", ARGS_OPEN }, { "creat", ARGS_OPEN },
	{ "socket", ARGS_SOCKET }, { "mmap", ARGS_ADDR_LEN }, { "munmap", ARGS_ADDR_LEN },
	{ "mprotect", ARGS_ADDR_LEN }, { "madvise", ARGS_ADDR_LEN },
};

static enum arg_kind kind_of(const char *name)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, name))
			return kinds[i].kind;
	return ARGS_RAW;
}

static int put_args(FILE *out, enum arg_kind k, const uint64_t *a)
{
	switch (k) {
	case ARGS_FD:
		return fprintf(out, ",\"fd\":%d", (int)a[0]);
	case ARGS_FD_SIZE:
		return fprintf(out, ",\"fd\":%d,\"size\":%" PRIu64, (int)a[0], a[2]);
	case ARGS_FD_IOV:
		return fprintf(out, ",\"fd\":%d,\"iovcnt\":%" PRIu64, (int)a[0], a[2]);
	case ARGS_OPENAT:
		return fprintf(out, ",\"dfd\":%d,\"flags\":\"0x%" PRIx64 "\",\"mode\":\"0%" PRIo64
			       "\"", (int)a[0], a[2], a[3]);
	case ARGS_OPEN:
		return fprintf(out, ",\"flags\":\"0x%" PRIx64 "\"", a[1]);
	case ARGS_SOCKET:
		return fprintf(out, ",\"domain\":%" PRIu64 ",\"type\":\"0x%" PRIx64
			       "\",\"protocol\":%" PRIu64, a[0], a[1], a[2]);
	case ARGS_ADDR_LEN:
		return fprintf(out, ",\"addr\":\"0x%" PRIx64 "\",\"len\":%" PRIu64, a[0], a[1]);
	case ARGS_RAW:
	default:
		return fprintf(out, ",\"args\":[\"0x%" PRIx64 "\",\"0x%" PRIx64 "\",\"0x%" PRIx64
			       "\",\"0x%" PRIx64 "\"]", a[0], a[1], a[2], a[3]);
	}
}

long evr_syscalls_chrome_write(void *ctx, FILE *out, bool first)
{
	const struct evr_syscall_set *s = ctx;
	uint32_t machine = s->has_info ? s->info.machine : evr_syscall_machine();
	long bytes = 0;

	for (size_t i = 0; i < s->n; i++) {
		const struct evr_syscall_rec *r = &s->v[i];
		char nb[32], eb[16];
		const char *name = evr_syscall_name_or_nr(r->nr, machine, nb, sizeof(nb));
		int n, m = 0;

		n = fprintf(out, "%s{\"ph\":\"X\",\"cat\":\"syscall\",\"name\":\"%s\",\"pid\":%"
			    PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":%" PRIu64 ".%03u,\"dur\":%" PRIu64
			    ".%03u,\"args\":{", first && !i ? "" : ",\n", name, r->pid, r->tid,
			    r->time_ns / 1000, (unsigned)(r->time_ns % 1000), r->dur_ns / 1000,
			    (unsigned)(r->dur_ns % 1000));
		if (n < 0)
			return -EIO;
		if (r->flags & EVR_SYSCALL_NO_EXIT)
			m = fprintf(out, "\"evring\":\"no exit\"");
		else if (r->ret < 0 && r->ret >= -4095)
			m = fprintf(out, "\"ret\":%" PRId64 ",\"errno\":\"%s\"", r->ret,
				    evr_errno_name((int)-r->ret, eb, sizeof(eb)));
		else
			m = fprintf(out, "\"ret\":%" PRId64, r->ret);
		if (m < 0)
			return -EIO;
		n += m;
		if (r->flags & EVR_SYSCALL_NO_ENTER) {
			m = fprintf(out, ",\"evring\":\"no entry\"}}");
		} else {
			m = put_args(out, kind_of(name), r->args);
			if (m >= 0) {
				n += m;
				m = fprintf(out, "}}");
			}
		}
		if (m < 0)
			return -EIO;
		bytes += n + m;
	}
	return bytes;
}
