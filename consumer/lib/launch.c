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
 * timeout.
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

#define CONNECT_TIMEOUT_MS 10000

extern char **environ;

static int fail(char *errbuf, size_t errlen, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *errbuf, size_t errlen, int err, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* environ without EVR_CONNECT, plus @connect ("EVR_CONNECT=..."). Free the array only. */
static char **child_env(char *connect)
{
	size_t n = 0, j = 0;
	char **v;

	while (environ[n])
		n++;
	v = calloc(n + 2, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "EVR_CONNECT=", 12) != 0)
			v[j++] = environ[i];
	v[j] = connect;
	return v;
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
static int await_connection(struct evr_launch *l, int lfd, const char *prog,
			    const char *client_name, struct evr_client **ret, char *errbuf,
			    size_t errlen)
{
	int timeout = connect_timeout_ms();
	uint64_t deadline = now_ns() + (uint64_t)timeout * 1000000u;
	char st[128];

	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
				       { .fd = l->pidfd, .events = POLLIN } };
		uint64_t now = now_ns();
		int r;

		if (now >= deadline)
			return fail(errbuf, errlen, -ETIMEDOUT,
				    "%s did not connect within %d ms: is it linked with libevring, "
				    "and its agent enabled (EVR_AGENT)?", prog, timeout);
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
	char **envp = NULL, *path = NULL, *connect = NULL;
	int lfd = -1, pipefd[2] = { -1, -1 }, exec_errno = 0, r;
	ssize_t n;
	pid_t pid;

	if (!argv || !argv[0] || !l || !ret)
		return -EINVAL;
	*l = (struct evr_launch){ .pid = -1, .pidfd = -1 };
	r = evr_client_listen(&lfd, &path, errbuf, errlen);
	if (r < 0)
		return r;
	r = fail(errbuf, errlen, -ENOMEM, "out of memory");
	if (asprintf(&connect, "EVR_CONNECT=%s", path) < 0) {
		connect = NULL;
		goto out;
	}
	envp = child_env(connect);
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
	r = await_connection(l, lfd, argv[0], client_name, ret, errbuf, errlen);
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
