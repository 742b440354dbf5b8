// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The /proc check (consumer/client/client-check.c, <evring/consumer.h>): the
 * last pid of /proc/loadavg moves with every process made; a process of ours
 * is never reported nor awaited; one in a mount and pid namespace of its own
 * (as root: unshare) is awaited while its agent does not listen, reported
 * once when a socket named by its own pid is there in its private runtime
 * directory, then never again, and forgotten once it is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evr-unit.h"

#include <evring/consumer.h>

static void test_last_pid_moves(void **state)
{
	int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC), a, b, st;
	pid_t child;

	(void)state;
	assert_true(fd >= 0);
	a = evr_proc_last_pid(fd);
	assert_true(a > 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	b = evr_proc_last_pid(fd);
	/* Our fork handed out a pid at least (others may have, too). */
	assert_int_not_equal(a, b);
	assert_int_equal(waitpid(child, &st, 0), child);
	close(fd);
}

/* A process of ours: the runtime directories' business (inotify), not the check's. */
static void test_ours_not_reported(void **state)
{
	struct evr_proc_check *pc;
	pid_t v[8], child;
	uint32_t n = 9;
	int p[2], st;

	(void)state;
	assert_int_equal(evr_proc_check_new(&pc), 0);
	assert_int_equal(evr_proc_check_run(pc, v, 8, &n), 0);
	assert_int_equal(n, 0);		/* the first look takes note only */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char c;

		close(p[1]);	/* its end: the read ends when the test closes its own */
		(void)read(p[0], &c, 1);
		_exit(0);
	}
	assert_int_equal(evr_proc_check_run(pc, v, 8, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(evr_proc_check_pending(pc), 0);
	close(p[1]);
	assert_int_equal(waitpid(child, &st, 0), child);
	close(p[0]);
	evr_proc_check_free(pc);
}

/*
 * The container: unshare a mount and pid namespace, fork its process 1, which
 * mounts a tmpfs (0700) over our runtime directory in its namespace, waits
 * for a byte on @go, then binds and listens on 1.sock there, says so on @ack,
 * and waits for @go's end. Writes the container's pid (ours) on @ack first.
 */
static void container(const char *rt, int go, int go_w, int ack)
{
	pid_t init;
	int st;

	close(go_w);	/* @go ends when the test closes its end */
	if (unshare(CLONE_NEWNS | CLONE_NEWPID) < 0)
		_exit(10);
	init = fork();
	if (init < 0)
		_exit(11);
	if (init > 0) {
		(void)!write(ack, &init, sizeof(init));
		waitpid(init, &st, 0);
		_exit(0);
	}
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		char c;
		int s;

		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("evr-test", rt, "tmpfs", 0, "mode=0700") < 0)
			_exit(12);
		if (read(go, &c, 1) != 1)
			_exit(13);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/1.sock", rt);
		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, 4) < 0)
			_exit(14);
		c = 'b';
		(void)!write(ack, &c, 1);
		(void)read(go, &c, 1);	/* until the test closes it */
		_exit(0);
	}
}

static void test_container_reported_once(void **state)
{
	const char *rt = getenv("EVR_RUNTIME_DIR");
	char c = 'g';
	struct evr_proc_check *pc;
	pid_t v[8], outer, init = 0;
	uint32_t n = 9;
	int go[2], ack[2], st;

	(void)state;
	if (geteuid() != 0)
		EVR_SKIP("needs root (unshare of a mount and a pid namespace)");
	outer = fork();
	assert_true(outer >= 0);
	if (outer == 0)
		_exit(unshare(CLONE_NEWNS | CLONE_NEWPID) < 0 ? 1 : 0);
	assert_int_equal(waitpid(outer, &st, 0), outer);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		EVR_SKIP("unshare of a mount and a pid namespace is not permitted here");

	/*
	 * From the start (ctest sets it): the container's process is compared by
	 * its /proc/PID/environ, which is what the program was started with.
	 */
	if (!rt || rt[0] != '/')
		EVR_SKIP("EVR_RUNTIME_DIR is not set to a directory of the test's (ctest sets it)");
	assert_true(mkdir(rt, 0700) == 0 || errno == EEXIST);
	assert_int_equal(evr_proc_check_new(&pc), 0);
	assert_int_equal(evr_proc_check_run(pc, v, 8, &n), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ack, O_CLOEXEC), 0);
	outer = fork();
	assert_true(outer >= 0);
	if (outer == 0)
		container(rt, go[0], go[1], ack[1]);
	assert_int_equal(read(ack[0], &init, sizeof(init)), (ssize_t)sizeof(init));

	/* Its agent does not listen yet: awaited, not reported. */
	assert_int_equal(evr_proc_check_run(pc, v, 8, &n), 0);
	assert_int_equal(n, 0);
	assert_true(evr_proc_check_pending(pc) >= 1);

	/* It listens: reported at the next look, by the pid it has here. */
	assert_int_equal(write(go[1], &c, 1), 1);
	assert_int_equal(read(ack[0], &c, 1), 1);
	assert_int_equal(c, 'b');
	assert_int_equal(evr_proc_check_run(pc, v, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0], init);
	/* Once. */
	assert_int_equal(evr_proc_check_run(pc, v, 8, &n), 0);
	assert_int_equal(n, 0);

	/* Gone: nothing awaited any more. */
	close(go[1]);
	assert_int_equal(waitpid(outer, &st, 0), outer);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(evr_proc_check_run(pc, v, 8, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(evr_proc_check_pending(pc), 0);
	evr_proc_check_free(pc);
	close(go[0]);
	close(ack[0]);
	close(ack[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_last_pid_moves),
		cmocka_unit_test(test_ours_not_reported),
		cmocka_unit_test(test_container_reported_once),
	};

	return evr_unit_run(tests);
}
