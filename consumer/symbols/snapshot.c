// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Thread-stack snapshots of a live process: `evring stacks -p PID`.
 *
 * Method (shared/research/stacks.md §4): libdwfl's Linux process attach, the
 * code path of eu-stack. For each thread in turn, libdwfl stops it with
 * PTRACE_ATTACH, reads its registers, unwinds it with the modules' DWARF call
 * frame information (reading the stack with process_vm_readv), and detaches.
 * The alternative, a signal to each thread from evring's agent with a
 * frame-pointer walk in the handler, pauses a thread for well under a
 * microsecond instead of a fraction of a millisecond, but needs libevring in
 * the target and loses the caller of every function without a frame pointer,
 * which on Debian 12 is most of glibc (a thread blocked in read() would show
 * read and then its caller's caller). The ptrace method gives the stacks
 * eu-stack gives, for any process of the caller's user; its costs are the
 * pause per thread (measured and reported: evr_thread_stack.pause_ns) and
 * Yama's ptrace_scope, which the error message names.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <evring/mono-time.h>

#include "symbols-internal.h"

struct snap_ctx {
	struct evr_stacks *st;
	uint32_t max_depth;
	size_t cap;
	char (*msgs)[160];
};

struct frames_ctx {
	struct evr_thread_stack *t;
	uint32_t max_depth;
};

int evr_proc_uid(pid_t pid, uid_t *ret)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) < 0)
		return -ESRCH;
	*ret = st.st_uid;
	return 0;
}

int evr_proc_check_access(pid_t pid, const char *what, char *errbuf, size_t errlen)
{
	struct passwd *pw;
	uid_t uid;

	if (pid <= 0 || evr_proc_uid(pid, &uid) < 0) {
		snprintf(errbuf, errlen, "no process %d", (int)pid);
		return -ESRCH;
	}
	if (geteuid() == 0 || uid == geteuid())
		return 0;
	pw = getpwuid(uid);
	snprintf(errbuf, errlen, "process %d belongs to user %s (uid %u); %s", (int)pid,
		 pw ? pw->pw_name : "?", (unsigned)uid, what);
	return -EACCES;
}

static void thread_info(pid_t pid, struct evr_thread_stack *t)
{
	char path[64], buf[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)pid, t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, t->name, sizeof(t->name) - 1);
		close(fd);
		if (n > 0) {
			t->name[n] = '\0';
			if (t->name[n - 1] == '\n')
				t->name[n - 1] = '\0';
		}
	}
	t->state = '?';
	snprintf(path, sizeof(path), "/proc/%d/task/%u/stat", (int)pid, t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			char *rp;

			buf[n] = '\0';
			/* "tid (comm) S ...": the comm may hold ')' itself; the last one ends it. */
			rp = strrchr(buf, ')');
			if (rp && rp[1] == ' ' && rp[2])
				t->state = rp[2];
		}
	}
}

static int frame_cb(Dwfl_Frame *frame, void *arg)
{
	struct frames_ctx *fc = arg;
	struct evr_thread_stack *t = fc->t;
	Dwarf_Addr pc;
	bool act;

	if (!dwfl_frame_pc(frame, &pc, &act))
		return DWARF_CB_ABORT;
	t->pcs[t->nframes] = pc;
	t->activation[t->nframes] = act;
	t->nframes++;
	return t->nframes >= fc->max_depth ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static int thread_cb(Dwfl_Thread *thread, void *arg)
{
	struct snap_ctx *c = arg;
	struct evr_stacks *st = c->st;
	struct evr_thread_stack *t;
	struct frames_ctx fc;
	uint64_t t0;
	int ret;

	if (st->nthreads == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct evr_thread_stack *v = realloc(st->threads, cap * sizeof(*v));
		char (*m)[160] = realloc(c->msgs, cap * sizeof(*m));

		if (v)
			st->threads = v;
		if (m)
			c->msgs = m;
		if (!v || !m)
			return DWARF_CB_ABORT;
		c->cap = cap;
	}
	t = &st->threads[st->nthreads];
	memset(t, 0, sizeof(*t));
	t->tid = (uint32_t)dwfl_thread_tid(thread);
	thread_info(st->pid, t);
	t->pcs = calloc(c->max_depth, sizeof(*t->pcs));
	t->activation = calloc(c->max_depth, sizeof(*t->activation));
	if (!t->pcs || !t->activation) {
		free(t->pcs);
		free(t->activation);
		return DWARF_CB_ABORT;
	}
	st->nthreads++;
	fc.t = t;
	fc.max_depth = c->max_depth;
	t0 = evr_mono_ns();
	/* Attach (stop), unwind, detach: the thread is stopped for this call's time. */
	ret = dwfl_thread_getframes(thread, frame_cb, &fc);
	t->pause_ns = evr_mono_ns() - t0;
	if (ret == -1 && t->nframes == 0) {
		int e = dwfl_errno();
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%u", (int)st->pid, t->tid);
		if (access(path, F_OK) < 0) {
			t->err = -ESRCH;
			t->state = '?';
			snprintf(c->msgs[st->nthreads - 1], sizeof(c->msgs[0]),
				 "thread exited during the snapshot");
		} else {
			t->err = -EIO;
			snprintf(c->msgs[st->nthreads - 1], sizeof(c->msgs[0]), "cannot unwind: %s",
				 dwfl_errmsg(e));
		}
	}
	return DWARF_CB_OK;
}

static int ptrace_hint(char *errbuf, size_t errlen, pid_t pid, int err)
{
	char scope = '0';
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &scope, 1) != 1)
			scope = '0';
		close(fd);
	}
	if (scope != '0')
		snprintf(errbuf, errlen,
			 "cannot trace process %d: %s (kernel.yama.ptrace_scope is %c: run as root, "
			 "or set it to 0)",
			 (int)pid, strerror(err), scope);
	else
		snprintf(errbuf, errlen, "cannot trace process %d: %s", (int)pid, strerror(err));
	return -err;
}

int evr_stacks_snapshot(pid_t pid, uint32_t max_depth, struct evr_stacks **ret, char *errbuf,
			size_t errlen)
{
	struct snap_ctx c = { 0 };
	struct evr_stacks *st;
	uint64_t t0 = evr_mono_ns();
	int err;

	if (max_depth < 1 || max_depth > 1024)
		return -EINVAL;
	err = evr_proc_check_access(pid, "you can see the stacks of your own processes only",
				    errbuf, errlen);
	if (err < 0)
		return err;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->pid = pid;
	err = evr_symbolizer_new_pid(pid, &st->sym, errbuf, errlen);
	if (err < 0)
		goto fail;
	err = dwfl_linux_proc_attach(evr_symbolizer_dwfl(st->sym), pid, false);
	if (err) {
		err = err > 0 ? err : EIO;
		if (err == ESRCH || err == ENOENT) {
			snprintf(errbuf, errlen, "process %d exited", (int)pid);
			err = -ESRCH;
		} else {
			err = ptrace_hint(errbuf, errlen, pid, err);
		}
		goto fail;
	}
	c.st = st;
	c.max_depth = max_depth;
	err = dwfl_getthreads(evr_symbolizer_dwfl(st->sym), thread_cb, &c);
	if (err == -1 && st->nthreads == 0) {
		int e = dwfl_errno();

		if (kill(pid, 0) < 0 && errno == ESRCH) {
			snprintf(errbuf, errlen, "process %d exited", (int)pid);
			err = -ESRCH;
		} else {
			snprintf(errbuf, errlen, "cannot trace process %d: %s", (int)pid,
				 dwfl_errmsg(e));
			err = -EPERM;
		}
		goto fail;
	}
	/* The threads' messages live in c.msgs, which the snapshot keeps. */
	for (uint32_t i = 0; i < st->nthreads; i++)
		if (st->threads[i].err)
			st->threads[i].errmsg = c.msgs[i];
	st->total_ns = evr_mono_ns() - t0;
	*ret = st;
	/* Freed with the snapshot: stored after the thread array. */
	st->msgs_ = c.msgs;
	return 0;
fail:
	free(c.msgs);
	evr_stacks_free(st);
	return err;
}

void evr_stacks_free(struct evr_stacks *st)
{
	if (!st)
		return;
	for (uint32_t i = 0; i < st->nthreads; i++) {
		free(st->threads[i].pcs);
		free(st->threads[i].activation);
	}
	free(st->threads);
	free(st->msgs_);
	evr_symbolizer_free(st->sym);
	free(st);
}
