// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-sandbox: the broker does only what it may (plain names in its own
 * directory, never an existing file; the list; attaching with every check), and
 * a confined process cannot open, create sockets or execute.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <evring/consumer.h>
#include <evring/sandbox.h>

static char dir[] = "/tmp/evr-test-sandbox-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	return system(path) == 0 ? 0 : -1;
}

static void test_evr_broker_create_only_plain_new_names(void **state)
{
	static const char *const bad[] = { "../escape", "/etc/evil", "a/b", ".", "..", "" };
	struct evr_broker *b;
	char err[512], path[128];
	struct stat st;
	int fd;

	(void)state;
	assert_int_equal(evr_broker_new(dir, &b, err, sizeof(err)), 0);
	fd = evr_broker_create(b, "stream_0", err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	snprintf(path, sizeof(path), "%s/stream_0", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 1);
	/* O_EXCL: never an existing file. */
	assert_int_equal(evr_broker_create(b, "stream_0", err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "cannot create stream_0"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(evr_broker_create(b, bad[i], err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "may not create"));
	}
	assert_int_equal(access("/tmp/escape", F_OK), -1);
	evr_broker_free(b);

	/* Without a directory, nothing may be created. */
	assert_int_equal(evr_broker_new(NULL, &b, err, sizeof(err)), 0);
	assert_int_equal(evr_broker_create(b, "x", err, sizeof(err)), -EINVAL);
	evr_broker_free(b);
}

static void test_evr_broker_attach_checks(void **state)
{
	struct evr_client *c = NULL;
	struct evr_broker *b;
	char err[512], want[64];
	pid_t *v = NULL, gone;
	uint32_t n = 0;

	(void)state;
	assert_int_equal(evr_broker_new(NULL, &b, err, sizeof(err)), 0);
	for (gone = 4000000; kill(gone, 0) == 0 || errno != ESRCH; gone++)
		;
	assert_int_equal(evr_broker_attach(b, gone, "test", &c, err, sizeof(err)), -ESRCH);
	snprintf(want, sizeof(want), "no process %d", (int)gone);
	assert_string_equal(err, want);
	assert_null(c);
	/* Our own pid runs no agent (this test does not link libevring). */
	assert_int_equal(evr_broker_attach(b, getpid(), "test", &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "does not run libevring's agent"));
	assert_true(evr_broker_process_list(b, &v, &n, err, sizeof(err)) >= 0);
	for (uint32_t i = 1; i < n; i++)
		assert_true(v[i] > v[i - 1]);
	free(v);
	evr_broker_free(b);
}

/* In a child: confine, then try what an attacker would. Exit 0 if all refused. */
static void test_evr_sandbox_enter_refuses(void **state)
{
	int st;
	pid_t child;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct evr_sandbox_opts o = { .allow = EVR_SANDBOX_WAIT | EVR_SANDBOX_SOCKETS };
		char err[512], what[256];
		char *const argv[] = { "/bin/true", NULL };

		if (evr_sandbox_enter(&o, err, sizeof(err)) < 0)
			_exit(10);
		if (evr_sandbox_probe(what, sizeof(what)) != 0)
			_exit(11);
		if (socket(AF_UNIX, SOCK_STREAM, 0) >= 0 || errno != EPERM)
			_exit(12);
		if (open("/tmp", O_RDONLY | O_DIRECTORY) >= 0 || errno != EPERM)
			_exit(13);
		execv(argv[0], argv);
		_exit(errno == EPERM ? 0 : 14);
	}
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * The monitor's profile (files, a server, ptrace reads) still refuses what an
 * attacker wants: executing, an Internet socket, a process of its own, writing
 * into another process, executable memory. In a child, as above.
 */
static void test_evr_sandbox_enter_server_refuses(void **state)
{
	int st;
	pid_t child;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct evr_sandbox_opts o = {
			.allow = EVR_SANDBOX_WAIT | EVR_SANDBOX_SOCKETS | EVR_SANDBOX_THREADS |
				 EVR_SANDBOX_SESSIONS | EVR_SANDBOX_FILES | EVR_SANDBOX_SERVER |
				 EVR_SANDBOX_PTRACE_READ,
		};
		char err[512];
		char *const argv[] = { "/bin/true", NULL };
		int fd;

		if (evr_sandbox_enter(&o, err, sizeof(err)) < 0)
			_exit(10);
		/* What it is for: files by path, Unix sockets. */
		fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(11);
		close(fd);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			_exit(12);
		close(fd);
		/* What it must not do. */
		if (socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EPERM)
			_exit(13);
		if (socket(AF_INET6, SOCK_DGRAM, 0) >= 0 || errno != EPERM)
			_exit(14);
		if (ptrace(PTRACE_POKEDATA, getppid(), NULL, NULL) >= 0 || errno != EPERM)
			_exit(15);
		if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) !=
		    MAP_FAILED || errno != EPERM)
			_exit(16);
		/* fork() is clone without CLONE_THREAD. */
		if (fork() >= 0 || errno != EPERM)
			_exit(17);
		if (kill(getppid(), 0) >= 0 || errno != EPERM)
			_exit(18);
		execv(argv[0], argv);
		_exit(errno == EPERM ? 0 : 19);
	}
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evr_broker_create_only_plain_new_names),
		cmocka_unit_test(test_evr_broker_attach_checks),
		cmocka_unit_test(test_evr_sandbox_enter_refuses),
		cmocka_unit_test(test_evr_sandbox_enter_server_refuses),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
