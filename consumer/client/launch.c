// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Starting a program to trace it from its first event (`record -- PROGRAM`,
 * `forward -- PROGRAM`), over the reverse connection of <evring/consumer.h>:
 * we listen on a private socket and start PROGRAM with EVR_CONNECT naming it;
 * libevring's constructor in the program connects to us and waits, before
 * main() runs, until the caller has started its session and sent Resume.
 *
 * While waiting for the connection we also watch the program itself (a
 * pidfd): a program that is not linked with libevring never connects, and one
 * that fails early exits; either is reported at once instead of after a
 * timeout. The program's own wait for Resume (EVR_CONNECT_TIMEOUT_MS in its
 * environment) is set to the caller's timeout, so that both sides give up
 * together.
 *
 * A program that cannot be traced is the user's: evr_launch_stop() asks it to
 * stop (SIGTERM) and waits a while, and leaves it running if it does not.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/mono-time.h>

#include "client-internal.h"

#define CONNECT_TIMEOUT_MS 10000

extern char **environ;

#define fail evr_client_fail

/*
 * environ without EVR_CONNECT and EVR_CONNECT_TIMEOUT_MS, plus @connect
 * ("EVR_CONNECT=...") and @timeout ("EVR_CONNECT_TIMEOUT_MS=..."). Free the
 * array only.
 */
static char **child_env(char *connect, char *timeout)
{
	size_t n = 0, j = 0;
	char **v;

	while (environ[n])
		n++;
	v = calloc(n + 3, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "EVR_CONNECT=", 12) != 0 &&
		    strncmp(environ[i], "EVR_CONNECT_TIMEOUT_MS=", 23) != 0)
			v[j++] = environ[i];
	v[j++] = connect;
	v[j] = timeout;
	return v;
}

/* "10 s", "1.5 s", "500 ms" into @buf. */
static const char *fmt_ms(int ms, char *buf, size_t len)
{
	if (ms % 1000 == 0)
		snprintf(buf, len, "%d s", ms / 1000);
	else if (ms > 1000)
		snprintf(buf, len, "%.1f s", ms / 1000.0);
	else
		snprintf(buf, len, "%d ms", ms);
	return buf;
}

static int connect_timeout_ms(void)
{
	const char *s = getenv("EVR_CONNECT_TIMEOUT_MS");
	long v;

	if (!s || !*s)
		return CONNECT_TIMEOUT_MS;
	v = strtol(s, NULL, 10);
	return v > 0 && v < 3600000 ? (int)v : CONNECT_TIMEOUT_MS;
}

void evr_launch_describe(const struct evr_launch *l, char *buf, size_t len)
{
	int status = l->status;

	if (!l->reaped)
		snprintf(buf, len, "is still running");
	else if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "died from signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended with wait status 0x%x", (unsigned)status);
}

void evr_launch_reap(struct evr_launch *l, int timeout_ms)
{
	struct pollfd p = { .fd = l->pidfd, .events = POLLIN };
	int status;

	if (l->pid <= 0 || l->reaped)
		return;
	if (l->pidfd >= 0 && timeout_ms > 0)
		while (poll(&p, 1, timeout_ms) < 0 && errno == EINTR)
			;
	if (waitpid(l->pid, &status, WNOHANG) == l->pid) {
		l->reaped = true;
		l->status = status;
	}
}

int evr_launch_stop(struct evr_launch *l, int grace_ms)
{
	if (l->pid <= 0 || l->reaped)
		return 0;
	if (kill(l->pid, SIGTERM) < 0)
		return -errno;
	/* Without a pidfd there is nothing to wait on: look once. */
	evr_launch_reap(l, grace_ms);
	return l->reaped ? 1 : -ETIMEDOUT;
}

int evr_launch_kill(struct evr_launch *l)
{
	if (l->pid <= 0 || l->reaped)
		return 0;
	if (kill(l->pid, SIGKILL) < 0)
		return -errno;
	while (waitpid(l->pid, &l->status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	l->reaped = true;
	return 1;
}

void evr_launch_fini(struct evr_launch *l)
{
	if (l->pidfd >= 0)
		close(l->pidfd);
	l->pidfd = -1;
}

/* Wait for the program to connect, to exit, or for the timeout. */
static int await_connection(struct evr_launch *l, int lfd, const char *prog, int timeout,
			    const char *client_name, struct evr_client **ret, char *errbuf,
			    size_t errlen)
{
	uint64_t deadline = evr_mono_ns() + (uint64_t)timeout * 1000000u;
	char st[128], t[32];

	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
				       { .fd = l->pidfd, .events = POLLIN } };
		uint64_t now = evr_mono_ns();
		int r;

		if (now >= deadline)
			return fail(errbuf, errlen, -ETIMEDOUT,
				    "%s (pid %d) did not connect within %s: is it linked with "
				    "libevring, and its agent enabled (EVR_AGENT)?", prog, (int)l->pid,
				    fmt_ms(timeout, t, sizeof(t)));
		r = poll(p, l->pidfd >= 0 ? 2 : 1, (int)((deadline - now) / 1000000u) + 1);
		if (r < 0 && errno != EINTR)
			return fail(errbuf, errlen, -errno, "cannot wait for %s: %s", prog,
				    strerror(errno));
		if (r > 0 && (p[0].revents & POLLIN))
			return evr_client_accept(lfd, 1000, client_name, ret, errbuf, errlen);
		if (r > 0 && p[1].revents) {
			evr_launch_reap(l, 0);
			if (l->reaped) {
				evr_launch_describe(l, st, sizeof(st));
				return fail(errbuf, errlen, -ECHILD,
					    "%s %s before connecting: is it linked with libevring, "
					    "and its agent enabled (EVR_AGENT)?", prog, st);
			}
		}
	}
}

int evr_client_launch(char *const *argv, const char *client_name, struct evr_launch *l,
		      struct evr_client **ret, char *errbuf, size_t errlen)
{
	return evr_client_launch_timeout(argv, client_name, 0, l, ret, errbuf, errlen);
}

int evr_client_launch_timeout(char *const *argv, const char *client_name, int timeout_ms,
			      struct evr_launch *l, struct evr_client **ret, char *errbuf,
			      size_t errlen)
{
	char **envp = NULL, *path = NULL, *connect = NULL, timeout[48];
	int lfd = -1, pipefd[2] = { -1, -1 }, exec_errno = 0, r;
	ssize_t n;
	pid_t pid;

	if (!argv || !argv[0] || !l || !ret || timeout_ms < 0)
		return -EINVAL;
	if (!timeout_ms)
		timeout_ms = connect_timeout_ms();
	*l = (struct evr_launch){ .pid = -1, .pidfd = -1 };
	r = evr_client_listen(&lfd, &path, errbuf, errlen);
	if (r < 0)
		return r;
	r = fail(errbuf, errlen, -ENOMEM, "out of memory");
	if (asprintf(&connect, "EVR_CONNECT=%s", path) < 0) {
		connect = NULL;
		goto out;
	}
	/* The program waits for us as long as we wait for it. */
	snprintf(timeout, sizeof(timeout), "EVR_CONNECT_TIMEOUT_MS=%d", timeout_ms);
	envp = child_env(connect, timeout);
	if (!envp)
		goto out;
	/* Close-on-exec: the child reports a failed exec through it, a successful
	 * one closes it. */
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		r = fail(errbuf, errlen, -errno, "cannot start %s: %s", argv[0], strerror(errno));
		goto out;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = fail(errbuf, errlen, -errno, "cannot start %s: %s", argv[0], strerror(errno));
		goto out;
	}
	if (pid == 0) {
		int e;

		close(pipefd[0]);
		execvpe(argv[0], argv, envp);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	l->pid = pid;
	do
		n = read(pipefd[0], &exec_errno, sizeof(exec_errno));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(exec_errno)) {
		waitpid(pid, NULL, 0);
		l->pid = -1;
		r = fail(errbuf, errlen, -exec_errno, "cannot run %s: %s", argv[0],
			 strerror(exec_errno));
		goto out;
	}
	l->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	r = await_connection(l, lfd, argv[0], timeout_ms, client_name, ret, errbuf, errlen);
out:
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	close(lfd);
	unlink(path);
	free(path);
	free(envp);
	free(connect);
	return r;
}
