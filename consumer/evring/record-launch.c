// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record -- PROGRAM: trace a program from its first event.
 *
 * The reverse connection (<evring/consumer.h>): we listen on a private socket
 * and start PROGRAM with EVR_CONNECT naming it; libevring's constructor in the
 * program connects to us and waits, before main() runs, until we have started
 * the session and sent Resume. So the session sees the program's first event.
 *
 * While waiting for the connection we also watch the program itself (a pidfd):
 * a program that is not linked with libevring never connects, and one that
 * fails early exits; either is reported at once instead of after a timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/recorder.h>

#include "cli.h"
#include "record.h"

#define CMD "record"
#define CONNECT_TIMEOUT_MS 10000

extern char **environ;

/* environ without EVR_CONNECT, plus EVR_CONNECT=@path. Free the array only. */
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

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "died from signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended with wait status 0x%x", (unsigned)status);
}

static void reap(struct recorder *r, int timeout_ms)
{
	struct pollfd p = { .fd = r->child_pidfd, .events = POLLIN };
	int status;

	if (r->child <= 0 || r->child_reaped)
		return;
	if (r->child_pidfd >= 0 && timeout_ms > 0)
		while (poll(&p, 1, timeout_ms) < 0 && errno == EINTR)
			;
	if (waitpid(r->child, &status, WNOHANG) == r->child) {
		r->child_reaped = true;
		r->child_status = status;
	}
}

/*
 * Wait for the program to connect, to exit, or for the timeout.
 * Return: 0 connected (r->c set), -errno after printing why.
 */
static int await_connection(struct recorder *r, int lfd)
{
	const char *prog = r->o->program[0];
	int timeout = connect_timeout_ms();
	uint64_t deadline = evr_now_ns() + (uint64_t)timeout * 1000000u;
	char err[512], st[128];

	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
				       { .fd = r->child_pidfd, .events = POLLIN } };
		uint64_t now = evr_now_ns();
		int ret;

		if (now >= deadline) {
			evr_cli_error(CMD, "%s did not connect within %d ms: is it linked with "
				      "libevring, and its agent enabled (EVR_AGENT)?", prog, timeout);
			return -ETIMEDOUT;
		}
		ret = poll(p, r->child_pidfd >= 0 ? 2 : 1, (int)((deadline - now) / 1000000u) + 1);
		if (ret < 0 && errno != EINTR) {
			ret = -errno;
			evr_cli_error(CMD, "cannot wait for %s: %s", prog, strerror(-ret));
			return ret;
		}
		if (ret > 0 && (p[0].revents & POLLIN)) {
			ret = evr_client_accept(lfd, 1000, EVR_RECORD_CLIENT_NAME, &r->c, err,
						sizeof(err));
			if (ret == 0)
				return 0;
			evr_cli_error(CMD, "%s", err);
			return ret;
		}
		if (ret > 0 && p[1].revents) {
			reap(r, 0);
			if (r->child_reaped) {
				describe_status(r->child_status, st, sizeof(st));
				evr_cli_error(CMD, "%s %s before connecting: is it linked with "
					      "libevring, and its agent enabled (EVR_AGENT)?", prog, st);
				return -ECHILD;
			}
		}
	}
}

int evr_record_launch(struct recorder *r)
{
	char **argv = r->o->program, **envp = NULL;
	char err[512], *path = NULL, *connect = NULL;
	int lfd = -1, pipefd[2] = { -1, -1 }, exec_errno = 0, ret;
	ssize_t n;
	pid_t pid;

	ret = evr_client_listen(&lfd, &path, err, sizeof(err));
	if (ret < 0) {
		evr_cli_error(CMD, "%s", err);
		return ret;
	}
	ret = -ENOMEM;
	if (asprintf(&connect, "EVR_CONNECT=%s", path) < 0) {
		connect = NULL;
		goto oom;
	}
	envp = child_env(connect);
	if (!envp)
		goto oom;
	/* Close-on-exec: the child reports a failed exec through it, a successful
	 * one closes it. */
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		ret = -errno;
		evr_cli_error(CMD, "cannot start %s: %s", argv[0], strerror(-ret));
		goto out;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		evr_cli_error(CMD, "cannot start %s: %s", argv[0], strerror(-ret));
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
	r->child = pid;
	do
		n = read(pipefd[0], &exec_errno, sizeof(exec_errno));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(exec_errno)) {
		waitpid(pid, NULL, 0);
		r->child = -1;
		ret = -exec_errno;
		evr_cli_error(CMD, "cannot run %s: %s", argv[0], strerror(exec_errno));
		goto out;
	}
	r->child_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	ret = await_connection(r, lfd);
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
	return ret;
oom:
	evr_cli_error(CMD, "out of memory");
	goto out;
}

void evr_record_child_wait(struct recorder *r)
{
	struct evr_recorder_stats st;

	/* Ended or gone: the program is exiting (libevring ends its sessions from a
	 * destructor), give it a moment to become reapable. A
	 * Ctrl-C reached it too (same process group). After --duration it runs on. */
	evr_recorder_stats(r->rec, &st);
	if (st.stop == EVR_RECORDER_STOP_ENDED || st.stop == EVR_RECORDER_STOP_GONE)
		reap(r, 5000);
	else if (st.stop == EVR_RECORDER_STOP_REQUESTED)
		reap(r, 2000);
	else
		reap(r, 0);
}

void evr_record_child_abandon(struct recorder *r)
{
	char st[128];

	if (r->child <= 0 || r->child_reaped)
		return;
	/* We started it to trace it; do not leave it running untraced behind us. */
	if (kill(r->child, SIGKILL) == 0 && waitpid(r->child, &r->child_status, 0) == r->child) {
		r->child_reaped = true;
		describe_status(r->child_status, st, sizeof(st));
		evr_cli_error(CMD, "%s (pid %d) was stopped because recording failed (%s)",
			      r->o->program[0], (int)r->child, st);
	}
}

void evr_record_child_summary(const struct recorder *r, const char *why)
{
	char st[128];

	if (r->child_reaped) {
		describe_status(r->child_status, st, sizeof(st));
		fprintf(stderr, "evring record: %s; %s %s\n", why, r->o->program[0], st);
	} else {
		fprintf(stderr, "evring record: %s; %s (pid %d) is still running, no longer "
			"traced\n", why, r->o->program[0], (int)r->child);
	}
}
