// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * consumer/client/client-ns.c: how a container's runtime directory is reached
 * from the host. The walk is done here on a directory that stands for the
 * container's root: links resolved against it and never against ours, ".."
 * refused, a link as the last component, a loop, a missing path, and the
 * owner and mode checks; then a process's environment and its namespaces as
 * /proc tells them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evr-unit.h"

#include "client-internal.h"

struct fixture {
	char root[64];
	int rootfd;
	struct evr_ns_proc p;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[128];

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/tmp/evr-test-ns.XXXXXX");
	assert_non_null(mkdtemp(f->root));
	/* root/b/rt: the directory; root/a -> /b (absolute: the container's /b); root/c -> b. */
	snprintf(path, sizeof(path), "%s/b", f->root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/b/rt", f->root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/a", f->root);
	assert_int_equal(symlink("/b", path), 0);
	snprintf(path, sizeof(path), "%s/c", f->root);
	assert_int_equal(symlink("b", path), 0);
	snprintf(path, sizeof(path), "%s/l", f->root);
	assert_int_equal(symlink("/b/rt", path), 0);
	snprintf(path, sizeof(path), "%s/x", f->root);
	assert_int_equal(symlink("/x", path), 0);
	snprintf(path, sizeof(path), "%s/open", f->root);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chmod(path, 0777), 0);
	f->rootfd = open(f->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->rootfd >= 0);
	f->p = (struct evr_ns_proc){ .pid = 4242, .ns_pid = 1, .uid = geteuid() };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	close(f->rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* The directory @dir opens as (and is) root/b/rt. */
static void assert_opens_rt(struct fixture *f, const char *dir)
{
	char shown[256], err[512] = "", path[128];
	struct stat a, b;
	int fd = evr_ns_rundir_open(&f->p, f->rootfd, dir, shown, sizeof(shown), err, sizeof(err));

	if (fd < 0)
		fail_msg("%s: %d %s", dir, fd, err);
	snprintf(path, sizeof(path), "%s/b/rt", f->root);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	snprintf(path, sizeof(path), "/proc/4242/root%s", dir);
	assert_string_equal(shown, path);
	close(fd);
}

static void test_ns_rundir_open_links_in_root(void **state)
{
	struct fixture *f = *state;

	assert_opens_rt(f, "/b/rt");
	assert_opens_rt(f, "//b/./rt/");
	/* /a -> /b: against the given root; ours has no /b/rt. */
	assert_opens_rt(f, "/a/rt");
	assert_opens_rt(f, "/c/rt");
}

/* @dir is refused with -@err and a line containing @want. */
static void assert_refused(struct fixture *f, const char *dir, int err, const char *want)
{
	char shown[256], msg[512] = "";
	int fd = evr_ns_rundir_open(&f->p, f->rootfd, dir, shown, sizeof(shown), msg, sizeof(msg));

	if (fd >= 0)
		close(fd);
	if (fd != -err || (want && !strstr(msg, want)))
		fail_msg("%s: %d '%s', want %d '%s'", dir, fd, msg, -err, want ? want : "");
}

static void test_ns_rundir_open_refusals(void **state)
{
	struct fixture *f = *state;
	struct evr_ns_proc other = f->p;

	assert_refused(f, "/b/../b/rt", EPERM, "climbs out of the process's root");
	assert_refused(f, "/l", EPERM, "it is a symbolic link, not a directory");
	assert_refused(f, "/x/rt", ELOOP, "cannot examine /proc/4242/root/x/rt");
	assert_refused(f, "/nope/rt", ENOENT, NULL);
	assert_refused(f, "/b/rt/nope", ENOENT, NULL);
	assert_refused(f, "/open", EPERM, "its mode 0777 lets other users create sockets in it");
	/* Owned by someone else than the process. */
	other.uid = geteuid() + 1;
	{
		char shown[256], msg[512] = "";
		int fd = evr_ns_rundir_open(&other, f->rootfd, "/b/rt", shown, sizeof(shown), msg,
					    sizeof(msg));

		assert_int_equal(fd, -EPERM);
		assert_non_null(strstr(msg, "refusing /proc/4242/root/b/rt: it belongs to"));
	}
}

static void test_ns_environ_get_child(void **state)
{
	char *argv[] = { "sleep", "60", NULL };
	char *envp[] = { "A=1", "EVR_RUNTIME_DIRX=no", "EVR_RUNTIME_DIR=/run/x", "B=2", NULL };
	char buf[64], small[4];
	pid_t pid;
	int st;

	(void)state;
	if (posix_spawn(&pid, "/bin/sleep", NULL, NULL, argv, envp) != 0)
		fail_msg("cannot start /bin/sleep");
	/* Until the exec shows its environment (the parent's, before it). */
	for (int i = 0; i < 100000; i++) {
		if (evr_ns_environ_get(pid, "B", buf, sizeof(buf)) == 1)
			break;
	}
	assert_int_equal(evr_ns_environ_get(pid, "EVR_RUNTIME_DIR", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "/run/x");
	assert_int_equal(evr_ns_environ_get(pid, "A", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "1");
	assert_int_equal(evr_ns_environ_get(pid, "NOPE", buf, sizeof(buf)), 0);
	assert_int_equal(evr_ns_environ_get(pid, "EVR_RUNTIME_DIR", small, sizeof(small)),
			 -ENAMETOOLONG);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(evr_ns_environ_get(pid, "A", buf, sizeof(buf)) < 0);
}

static void test_ns_probe_self(void **state)
{
	struct evr_ns_proc p;

	(void)state;
	assert_int_equal(evr_ns_probe(getpid(), &p), 0);
	assert_int_equal(p.pid, getpid());
	assert_int_equal(p.ns_pid, getpid());
	assert_int_equal(p.uid, geteuid());
	assert_false(p.other_pidns || p.other_mntns || p.other_userns);
	assert_int_equal(evr_ns_probe(0x7ffffff0, &p), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ns_rundir_open_links_in_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ns_rundir_open_refusals, setup, teardown),
		cmocka_unit_test(test_ns_environ_get_child),
		cmocka_unit_test(test_ns_probe_self),
	};

	return evr_unit_run(tests);
}
