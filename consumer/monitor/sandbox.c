// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The monitor's seccomp confinement, entered once it listens.
 *
 * Unlike `evring record`, the monitor keeps opening things after start-up: it
 * attaches to processes that start later (/proc, the agent sockets, the
 * session memory), accepts connections, starts threads, and writes the traces
 * it was asked to keep. So what it gives up is everything else: executing a
 * program, new listening or outgoing network sockets (only Unix sockets for
 * agents and netlink for sock_diag may be created), writing to other
 * processes (ptrace is limited to what a stack snapshot reads: attach, read
 * registers and memory, detach), executable mappings, changing credentials,
 * namespaces and mounts, loading modules or BPF, perf events, keyrings. A
 * parser bug an attacker exploits through a request or a producer's message
 * cannot turn into a shell, a port scan or a write into another process.
 *
 * Denied calls fail with EPERM (as in the evring command's sandbox: a missed
 * legitimate path becomes an ordinary error message, not a dead monitor).
 * clone3 gets ENOSYS so that glibc falls back to clone, whose flags a filter
 * can see: only threads (CLONE_THREAD) may be created.
 *
 * The list was found with `strace -f` on the monitor while tests/monitor ran.
 */
#include <errno.h>
#include <linux/sched.h>
#include <pwd.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "monitor.h"

static const int allowed[] = {
	/* descriptors, files, directories */
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev), SCMP_SYS(pread64),
	SCMP_SYS(pwrite64), SCMP_SYS(close), SCMP_SYS(openat), SCMP_SYS(open), SCMP_SYS(lseek),
	SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(statx), SCMP_SYS(stat), SCMP_SYS(lstat),
	SCMP_SYS(fstatfs), SCMP_SYS(getdents64), SCMP_SYS(readlink), SCMP_SYS(readlinkat),
	SCMP_SYS(fcntl), SCMP_SYS(dup), SCMP_SYS(dup3), SCMP_SYS(ftruncate), SCMP_SYS(fsync),
	SCMP_SYS(fdatasync), SCMP_SYS(mkdir), SCMP_SYS(mkdirat), SCMP_SYS(unlink),
	SCMP_SYS(unlinkat), SCMP_SYS(rmdir), SCMP_SYS(linkat), SCMP_SYS(sendfile),
	SCMP_SYS(access), SCMP_SYS(faccessat), SCMP_SYS(faccessat2), SCMP_SYS(umask),
	SCMP_SYS(pipe2), SCMP_SYS(fadvise64),
	/* sockets already there, and what connections need */
	SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(connect), SCMP_SYS(sendto),
	SCMP_SYS(recvfrom), SCMP_SYS(sendmsg), SCMP_SYS(recvmsg), SCMP_SYS(shutdown),
	SCMP_SYS(setsockopt), SCMP_SYS(getsockopt), SCMP_SYS(getsockname),
	SCMP_SYS(getpeername), SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(select),
	SCMP_SYS(pselect6), SCMP_SYS(pidfd_open), SCMP_SYS(eventfd2),
	/* memory (never executable: below) */
	SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
	/* threads, time, signals, exit */
	SCMP_SYS(futex), SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(sched_yield),
	SCMP_SYS(sched_getaffinity), SCMP_SYS(clock_gettime), SCMP_SYS(clock_nanosleep),
	SCMP_SYS(nanosleep), SCMP_SYS(gettimeofday), SCMP_SYS(getrandom),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction),
	SCMP_SYS(rt_sigtimedwait), SCMP_SYS(sigaltstack), SCMP_SYS(restart_syscall),
	SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getuid), SCMP_SYS(geteuid),
	SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(uname), SCMP_SYS(sysinfo),
	/* thread-stack snapshots: read the stopped thread's memory, wait for its stop */
	SCMP_SYS(process_vm_readv), SCMP_SYS(wait4),
};

/*
 * Thread-stack snapshots stop a thread, read its registers and detach
 * (libdw's Linux process attach): only those ptrace requests, none that
 * writes to the traced process.
 */
static const long ptrace_reads[] = {
	PTRACE_ATTACH, PTRACE_DETACH, PTRACE_GETREGS, PTRACE_GETFPREGS, PTRACE_GETREGSET,
	PTRACE_PEEKDATA, PTRACE_PEEKTEXT, PTRACE_PEEKUSER, PTRACE_SEIZE, PTRACE_INTERRUPT,
};

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer ptraces the process at exit, which the sandbox forbids. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

static int rule1(scmp_filter_ctx ctx, uint32_t action, int nr, struct scmp_arg_cmp cmp)
{
	int r = seccomp_rule_add_array(ctx, action, nr, 1, &cmp);

	/* -EFAULT: a call this architecture does not have. */
	return r == -EFAULT ? 0 : r;
}

int evr_mon_sandbox_enter(const struct evr_mon_opts *o, char *err, size_t errlen)
{
	const struct scmp_arg_cmp no_exec = { .arg = 2, .op = SCMP_CMP_MASKED_EQ,
					      .datum_a = PROT_EXEC, .datum_b = 0 };
	const struct scmp_arg_cmp thread = { .arg = 0, .op = SCMP_CMP_MASKED_EQ,
					     .datum_a = CLONE_THREAD, .datum_b = CLONE_THREAD };
	const struct scmp_arg_cmp self = { .arg = 0, .op = SCMP_CMP_EQ,
					   .datum_a = (scmp_datum_t)getpid(), .datum_b = 0 };
	const struct scmp_arg_cmp unix_dom = { .arg = 0, .op = SCMP_CMP_EQ, .datum_a = AF_UNIX,
					       .datum_b = 0 };
	const struct scmp_arg_cmp netlink = { .arg = 0, .op = SCMP_CMP_EQ, .datum_a = AF_NETLINK,
					      .datum_b = 0 };
	const struct scmp_arg_cmp set_name = { .arg = 0, .op = SCMP_CMP_EQ,
					       .datum_a = PR_SET_NAME, .datum_b = 0 };
	const struct scmp_arg_cmp tcgets = { .arg = 1, .op = SCMP_CMP_EQ, .datum_a = TCGETS,
					     .datum_b = 0 };
	scmp_filter_ctx ctx;
	int r = 0;

	(void)o;
	/* The user database is read once now: a later getpwuid() (naming the
	 * owner of a process we may not attach to) then needs no NSS module load,
	 * which would map code. */
	(void)getpwuid(0);
	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx) {
		snprintf(err, errlen, "cannot set up the seccomp sandbox (out of memory)");
		return -ENOMEM;
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]) && r == 0; i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
		if (r == -EFAULT)
			r = 0;
	}
	if (r == 0)
		r = rule1(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), no_exec);
	if (r == 0)
		r = rule1(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), no_exec);
	if (r == 0)
		r = rule1(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), thread);
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r == -EFAULT)
		r = 0;
	if (r == 0)
		r = rule1(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), self);
	if (r == 0)
		r = rule1(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), unix_dom);
	if (r == 0)
		r = rule1(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), netlink);
	if (r == 0)
		r = rule1(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), set_name);
	if (r == 0)
		r = rule1(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), tcgets);
	for (size_t i = 0; i < sizeof(ptrace_reads) / sizeof(ptrace_reads[0]) && r == 0; i++) {
		const struct scmp_arg_cmp req = { .arg = 0, .op = SCMP_CMP_EQ,
						  .datum_a = (scmp_datum_t)ptrace_reads[i],
						  .datum_b = 0 };

		r = rule1(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ptrace), req);
	}
	/* seccomp_load() sets no_new_privs first, which unprivileged filters need. */
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0) {
		snprintf(err, errlen, "cannot install the seccomp sandbox: %s (use --no-sandbox to "
			 "run without it)", strerror(-r));
		return r;
	}
	return 0;
}
