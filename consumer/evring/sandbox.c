// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The seccomp sandbox of `evring record` and `evring dump`.
 *
 * Both tools parse hostile input: the session memory and the agent's messages
 * (record), trace files from anywhere (dump). Once their files, socket and
 * mapping are open they need no new resource, so they install an allow-list of
 * system calls: reading and writing descriptors already open, memory management
 * without PROT_EXEC, waiting, time, signals, and exiting. A parser bug an
 * attacker exploits can then not open a file, connect anywhere, execute a
 * program or map code.
 *
 * Denied calls fail with EPERM rather than killing the process. Either way the
 * attacker gains nothing; but a legitimate path we missed (a glibc version that
 * implements some call differently) then surfaces as one ordinary error message
 * naming EPERM, through the error handling every call already has, and the
 * recorder still writes its final chunks: a kill would leave a file without
 * its summary and the user with a bare "Bad system call". The tests strace the
 * real scenarios to keep the list exact, and prove the filter is active with
 * --debug-sandbox-probe.
 *
 * The list was found with `strace -f` on record (attach and -- PROGRAM, normal
 * end, Ctrl-C, producer killed, disk full) and dump (text, --json, truncated
 * file).
 */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

struct rule {
	int nr;
	unsigned nargs;
	struct scmp_arg_cmp arg;
};

#define ALLOW(name) { SCMP_SYS(name), 0, { 0 } }
#define ALLOW_IF(name, cmp) { SCMP_SYS(name), 1, cmp }

/*
 * What strace shows the tools doing once sandboxed: read, write, writev,
 * pread64, poll, sendmsg, recvmsg, wait4, brk, mmap, munmap, close,
 * rt_sigreturn, exit_group. The rest below is for paths the scenarios do not
 * hit but must keep working: malloc growing or shrinking (mremap, madvise,
 * mprotect), the clock without a vDSO, a contended stdio lock, abort() on a
 * failed assertion (rt_sigprocmask, rt_sigaction, getpid, gettid, tgkill to
 * ourselves), a system call restarted after Ctrl-C.
 */
static const struct rule common_rules[] = {
	/* Descriptors that are already open. */
	ALLOW(read), ALLOW(pread64), ALLOW(write), ALLOW(writev), ALLOW(close),
	/* Memory: malloc, the trace reader; never executable. */
	ALLOW(brk), ALLOW(munmap), ALLOW(mremap), ALLOW(madvise),
	ALLOW_IF(mmap, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)),
	ALLOW_IF(mprotect, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)),
	/* Time, locks. */
	ALLOW(clock_gettime), ALLOW(futex),
	/* Signals and exit. */
	ALLOW(rt_sigreturn), ALLOW(rt_sigprocmask), ALLOW(rt_sigaction), ALLOW(restart_syscall),
	ALLOW(getpid), ALLOW(gettid), ALLOW(exit), ALLOW(exit_group),
};

static const struct rule record_rules[] = {
	/* Waiting for the doorbell, the producer's pidfd and the agent socket. */
	ALLOW(poll), ALLOW(ppoll),
	/* The agent's control socket: StopSession and its reply. */
	ALLOW(sendmsg), ALLOW(recvmsg),
	/* `record -- PROGRAM`: the program's exit status. */
	ALLOW(wait4),
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

static int add_rules(scmp_filter_ctx ctx, const struct rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int ret = r[i].nargs ? seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r[i].nr, 1, r[i].arg)
				     : seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r[i].nr, 0);

		/* -EFAULT: a call this architecture does not have; nothing to allow. */
		if (ret < 0 && ret != -EFAULT)
			return ret;
	}
	return 0;
}

int evr_sandbox_enter(enum evr_sandbox_profile profile, char *errbuf, size_t errlen)
{
	scmp_filter_ctx ctx;
	int ret;

	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx) {
		snprintf(errbuf, errlen, "cannot set up the seccomp sandbox (out of memory)");
		return -ENOMEM;
	}
	ret = add_rules(ctx, common_rules, sizeof(common_rules) / sizeof(common_rules[0]));
	if (ret < 0)
		goto fail;
	/* abort() and raise() signal this process only. Spelled out rather than
	 * SCMP_A0(), whose compound literal leaves datum_b to clang's warning. */
	{
		const struct scmp_arg_cmp self = {
			.arg = 0, .op = SCMP_CMP_EQ, .datum_a = (scmp_datum_t)getpid(), .datum_b = 0
		};

		ret = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, &self);
	}
	if (ret < 0)
		goto fail;
	if (profile == EVR_SANDBOX_RECORD) {
		ret = add_rules(ctx, record_rules, sizeof(record_rules) / sizeof(record_rules[0]));
		if (ret < 0)
			goto fail;
	}
	/* seccomp_load() sets no_new_privs first, which unprivileged filters need. */
	ret = seccomp_load(ctx);
	if (ret < 0)
		goto fail;
	seccomp_release(ctx);
	return 0;
fail:
	snprintf(errbuf, errlen,
		 "cannot install the seccomp sandbox: %s (use --no-sandbox to run without it)",
		 strerror(-ret));
	seccomp_release(ctx);
	return ret;
}

int evr_cli_sandbox_enter(const char *cmd, enum evr_sandbox_profile profile,
			  const struct evr_cli_flags *flags)
{
	char err[512];
	int ret;

	if (flags->no_sandbox)
		return 0;
	ret = evr_sandbox_enter(profile, err, sizeof(err));
	if (ret < 0)
		evr_cli_error(cmd, "%s", err);
	return ret;
}

int evr_sandbox_probe(const char *cmd)
{
	const char *path = "/etc/passwd";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = errno;

	if (fd >= 0) {
		close(fd);
		evr_cli_error(cmd, "sandbox probe: open(%s) succeeded: no sandbox", path);
		return -EACCES;
	}
	evr_cli_error(cmd, "sandbox probe: open(%s): %s", path, strerror(err));
	return err == EPERM ? 0 : -EACCES;
}
