// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The consumers' seccomp allow-lists (<evring/sandbox.h>).
 *
 * The lists were found with `strace -f` on each tool's scenarios in the tests
 * (record: attach and -- PROGRAM, normal end, Ctrl-C, producer killed, disk
 * full; dump, report and convert on good and truncated files; ps; clrtop in
 * batch and on a terminal, overview and -p; providers). What strace shows
 * them doing once confined is small: read, write, writev, pread64, poll,
 * sendmsg, recvmsg, wait4, brk, mmap, munmap, close, futex, rt_sigreturn,
 * exit_group. The monitor, a server that keeps attaching, opening and
 * snapshotting, needs more (FILES, SERVER, PTRACE_READ: found with strace on
 * every route in tests/monitor, which tests/monitor/sandbox.sh repeats). The rest below is for paths the scenarios do not hit but must
 * keep working: malloc growing or shrinking (mremap, madvise, mprotect), the
 * clock without a vDSO, a contended lock, abort() on a failed assertion
 * (rt_sigprocmask, rt_sigaction, getpid, gettid, tgkill to ourselves), a system
 * call restarted after Ctrl-C.
 *
 * Denied calls fail with EPERM rather than killing the process: either way the
 * attacker gains nothing, but a legitimate path we missed (a glibc version that
 * implements some call differently) then surfaces as one ordinary error
 * message naming EPERM, through the error handling every call already has.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <evring/sandbox.h>

#include "sandbox-internal.h"

static const int base_calls[] = {
	/* Descriptors that are already open. */
	SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(readv), SCMP_SYS(write), SCMP_SYS(writev),
	SCMP_SYS(close),
	/* Memory (mmap and mprotect below: never executable). */
	SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
	/* Time, locks. */
	SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday), SCMP_SYS(futex),
	/* Signals and exit. */
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction),
	SCMP_SYS(restart_syscall), SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(exit),
	SCMP_SYS(exit_group),
	/* Our own alternate signal stack (ASan asks for it at every noreturn call). */
	SCMP_SYS(sigaltstack),
};

static const int wait_calls[] = {
	SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(select), SCMP_SYS(pselect6),
	SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl), SCMP_SYS(nanosleep),
	SCMP_SYS(clock_nanosleep), SCMP_SYS(rt_sigtimedwait),
};

static const int socket_calls[] = {
	SCMP_SYS(sendmsg), SCMP_SYS(recvmsg), SCMP_SYS(sendto), SCMP_SYS(recvfrom),
	SCMP_SYS(getsockopt), SCMP_SYS(shutdown),
};

static const int child_calls[] = { SCMP_SYS(wait4), SCMP_SYS(waitid) };

static const int thread_calls[] = {
	SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(sched_yield),
	/* pthread_getattr_np() of a new thread, which the sanitizers' thread
	 * start calls: its own affinity, nothing else. */
	SCMP_SYS(sched_getaffinity),
};

/* EVR_SANDBOX_FILES. No execve, no chmod/chown, no rename, no symlinks. */
static const int file_calls[] = {
	SCMP_SYS(openat), SCMP_SYS(open), SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(statx),
	SCMP_SYS(stat), SCMP_SYS(lstat), SCMP_SYS(fstatfs), SCMP_SYS(getdents64),
	SCMP_SYS(readlink), SCMP_SYS(readlinkat), SCMP_SYS(access), SCMP_SYS(faccessat),
	SCMP_SYS(faccessat2), SCMP_SYS(mkdir), SCMP_SYS(mkdirat), SCMP_SYS(unlink),
	SCMP_SYS(unlinkat), SCMP_SYS(rmdir), SCMP_SYS(umask), SCMP_SYS(lseek), SCMP_SYS(fcntl),
	SCMP_SYS(dup), SCMP_SYS(dup3), SCMP_SYS(pipe2), SCMP_SYS(pwrite64), SCMP_SYS(ftruncate),
	SCMP_SYS(fsync), SCMP_SYS(fdatasync), SCMP_SYS(fadvise64), SCMP_SYS(sendfile),
};

/* EVR_SANDBOX_SERVER, besides socket() for two families only. */
static const int server_calls[] = {
	SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(connect), SCMP_SYS(setsockopt),
	SCMP_SYS(getsockname), SCMP_SYS(getpeername), SCMP_SYS(eventfd2), SCMP_SYS(pidfd_open),
	SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(uname),
	SCMP_SYS(sysinfo), SCMP_SYS(sched_getaffinity), SCMP_SYS(getrandom),
};

/*
 * EVR_SANDBOX_PTRACE_READ: libdw's attach to a live thread stops it, reads its
 * registers and memory and detaches. No POKE*, SETREGS*, CONT, SYSCALL: nothing
 * that changes or resumes the traced process otherwise.
 */
static const long ptrace_reads[] = {
	PTRACE_SEIZE, PTRACE_ATTACH, PTRACE_INTERRUPT, PTRACE_GETREGS, PTRACE_GETFPREGS,
	PTRACE_GETREGSET, PTRACE_PEEKDATA, PTRACE_PEEKTEXT, PTRACE_PEEKUSER, PTRACE_DETACH,
};

static const unsigned long terminal_ioctls[] = {
	TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ, FIONREAD,
};

#if defined(__SANITIZE_ADDRESS__)
/*
 * LeakSanitizer checks at exit by ptrace-ing the process from a new thread and
 * reading /proc/self/task: exactly what the sandbox forbids. In ASan builds the
 * leak check is off by default; run with --no-sandbox and ASAN_OPTIONS=
 * detect_leaks=1 to check for leaks.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

int evr_sandbox_allow_calls(scmp_filter_ctx ctx, const int *nr, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr[i], 0);

		/* -EFAULT: a call this architecture does not have; nothing to allow. */
		if (r < 0 && r != -EFAULT)
			return r;
	}
	return 0;
}

int evr_sandbox_allow_if(scmp_filter_ctx ctx, int nr, unsigned int arg, enum scmp_compare op,
			 uint64_t a, uint64_t b)
{
	/* Spelled out rather than SCMP_Ax(), whose compound literal leaves datum_b
	 * to clang's warning. */
	const struct scmp_arg_cmp cmp = { .arg = arg, .op = op, .datum_a = a, .datum_b = b };
	int r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, 1, &cmp);

	return r == -EFAULT ? 0 : r;
}

int evr_sandbox_base(scmp_filter_ctx ctx)
{
	int r = evr_sandbox_allow_calls(ctx, base_calls, sizeof(base_calls) / sizeof(base_calls[0]));

	if (r == 0)
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(mmap), 2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
	if (r == 0)
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(mprotect), 2, SCMP_CMP_MASKED_EQ, PROT_EXEC,
					 0);
	/* abort() and raise() signal this process only. */
	if (r == 0)
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(tgkill), 0, SCMP_CMP_EQ,
					 (uint64_t)getpid(), 0);
	return r;
}

int evr_sandbox_load(scmp_filter_ctx ctx, int r, char *errbuf, size_t errlen)
{
	/* seccomp_load() sets no_new_privs first, which unprivileged filters need. */
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0 && errbuf && errlen)
		snprintf(errbuf, errlen,
			 "cannot install the seccomp sandbox: %s (use --no-sandbox to run without it)",
			 strerror(-r));
	return r < 0 ? r : 0;
}

int evr_sandbox_enter(const struct evr_sandbox_opts *o, char *errbuf, size_t errlen)
{
	scmp_filter_ctx ctx;
	int r;

	if (!o)
		return -EINVAL;
	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "cannot set up the seccomp sandbox (out of memory)");
		return -ENOMEM;
	}
	r = evr_sandbox_base(ctx);
	if (r == 0 && (o->allow & EVR_SANDBOX_WAIT))
		r = evr_sandbox_allow_calls(ctx, wait_calls, sizeof(wait_calls) / sizeof(wait_calls[0]));
	if (r == 0 && (o->allow & EVR_SANDBOX_SOCKETS))
		r = evr_sandbox_allow_calls(ctx, socket_calls,
					    sizeof(socket_calls) / sizeof(socket_calls[0]));
	if (r == 0 && (o->allow & EVR_SANDBOX_CHILD)) {
		r = evr_sandbox_allow_calls(ctx, child_calls,
					    sizeof(child_calls) / sizeof(child_calls[0]));
		/* Asking our program to stop (evr_launch_stop()): that pid, SIGTERM only. */
		if (r == 0 && o->child > 0) {
			const struct scmp_arg_cmp cmp[2] = {
				{ .arg = 0, .op = SCMP_CMP_EQ, .datum_a = (uint64_t)o->child },
				{ .arg = 1, .op = SCMP_CMP_EQ, .datum_a = SIGTERM },
			};

			r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 2, cmp);
		}
	}
	if (r == 0 && (o->allow & EVR_SANDBOX_THREADS)) {
		r = evr_sandbox_allow_calls(ctx, thread_calls,
					    sizeof(thread_calls) / sizeof(thread_calls[0]));
		if (r == 0)
			r = evr_sandbox_allow_if(ctx, SCMP_SYS(clone), 0, SCMP_CMP_MASKED_EQ,
						 CLONE_THREAD, CLONE_THREAD);
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
		if (r == -EFAULT)
			r = 0;
		if (r == 0)
			r = evr_sandbox_allow_if(ctx, SCMP_SYS(prctl), 0, SCMP_CMP_EQ, PR_SET_NAME, 0);
	}
	for (size_t i = 0; r == 0 && (o->allow & EVR_SANDBOX_TERMINAL) &&
			   i < sizeof(terminal_ioctls) / sizeof(terminal_ioctls[0]); i++)
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(ioctl), 1, SCMP_CMP_EQ, terminal_ioctls[i], 0);
	if (r == 0 && (o->allow & EVR_SANDBOX_TERMINAL))
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(kill), 0, SCMP_CMP_EQ, (uint64_t)getpid(), 0);
	/* evr_shm_session_map(): the seals and the size of the memfd received. */
	if (r == 0 && (o->allow & EVR_SANDBOX_SESSIONS))
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(fcntl), 1, SCMP_CMP_EQ, F_GET_SEALS, 0);
	if (r == 0 && (o->allow & EVR_SANDBOX_SESSIONS))
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(lseek), 2, SCMP_CMP_EQ, SEEK_END, 0);
	if (r == 0 && (o->allow & EVR_SANDBOX_FILES))
		r = evr_sandbox_allow_calls(ctx, file_calls, sizeof(file_calls) / sizeof(file_calls[0]));
	/* isatty() (libseccomp merges it with TERMINAL's). */
	if (r == 0 && (o->allow & EVR_SANDBOX_FILES))
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(ioctl), 1, SCMP_CMP_EQ, TCGETS, 0);
	if (r == 0 && (o->allow & EVR_SANDBOX_SERVER))
		r = evr_sandbox_allow_calls(ctx, server_calls,
					    sizeof(server_calls) / sizeof(server_calls[0]));
	if (r == 0 && (o->allow & EVR_SANDBOX_SERVER))
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(socket), 0, SCMP_CMP_EQ, AF_UNIX, 0);
	if (r == 0 && (o->allow & EVR_SANDBOX_SERVER))
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(socket), 0, SCMP_CMP_EQ, AF_NETLINK, 0);
	for (size_t i = 0; r == 0 && (o->allow & EVR_SANDBOX_PTRACE_READ) &&
			   i < sizeof(ptrace_reads) / sizeof(ptrace_reads[0]); i++)
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(ptrace), 0, SCMP_CMP_EQ,
					 (uint64_t)ptrace_reads[i], 0);
	if (r == 0 && (o->allow & EVR_SANDBOX_PTRACE_READ))
		r = evr_sandbox_allow_calls(ctx, &(const int){ SCMP_SYS(process_vm_readv) }, 1);
	/* wait4 for the stop (libseccomp merges it with CHILD's). */
	if (r == 0 && (o->allow & EVR_SANDBOX_PTRACE_READ))
		r = evr_sandbox_allow_calls(ctx, &(const int){ SCMP_SYS(wait4) }, 1);
	if (r == 0 && (o->allow & EVR_SANDBOX_FDFLAGS))
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(fcntl), 1, SCMP_CMP_EQ, F_GETFL, 0);
	if (r == 0 && (o->allow & EVR_SANDBOX_FDFLAGS))
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(fcntl), 1, SCMP_CMP_EQ, F_SETFL, 0);
	/* The trace writer's write-behind (consumer/tracefile/write-behind.c). */
	if (r == 0 && (o->allow & EVR_SANDBOX_FDFLAGS))
		r = evr_sandbox_allow_calls(ctx, (const int[]){ SCMP_SYS(sync_file_range),
								SCMP_SYS(fadvise64),
								SCMP_SYS(getrusage) }, 3);
	/* io_uring_register: the recorder's ring registers its fixed buffer once
	 * recording (its restrictions allow that and no other registration). */
	if (r == 0 && (o->allow & EVR_SANDBOX_URING))
		r = evr_sandbox_allow_calls(ctx, (const int[]){ SCMP_SYS(io_uring_enter),
								SCMP_SYS(io_uring_register),
								SCMP_SYS(ftruncate),
								SCMP_SYS(fallocate) }, 4);
	if (r == 0 && (o->allow & EVR_SANDBOX_URING))
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(lseek), 2, SCMP_CMP_EQ, SEEK_SET, 0);
	return evr_sandbox_load(ctx, r, errbuf, errlen);
}

int evr_sandbox_probe(char *ret_what, size_t len)
{
	const char *path = "/etc/passwd";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = errno;

	if (fd >= 0) {
		close(fd);
		snprintf(ret_what, len, "open(%s) succeeded: no sandbox", path);
		return -EEXIST;
	}
	snprintf(ret_what, len, "open(%s): %s", path, strerror(err));
	return err == EPERM ? 0 : -err;
}
