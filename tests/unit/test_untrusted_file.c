// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr_untrusted_open() (consumer/symbols/untrusted-file.c): what another user
 * can plant at a name a process gave us is refused without blocking (a FIFO
 * with no writer, a link to one, a device, a directory), and what passes is a
 * plain read-only close-on-exec fd of the file that was checked. A hang here
 * is a failure (the unit test timeout), never a pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <evring/untrusted-file.h>

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/evr-untrusted.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* @name in the test's directory; two calls may share one expression (symlink()). */
static const char *at(const char *name)
{
	static char path[2][128];
	static int i;

	i ^= 1;
	snprintf(path[i], sizeof(path[i]), "%s/%s", dir, name);
	return path[i];
}

static void write_file(const char *name, const char *text)
{
	int fd = open(at(name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_untrusted_open_regular(void **state)
{
	struct stat st;
	char buf[16] = { 0 };
	int fd;

	(void)state;
	write_file("map", "1000 10 f\n");
	fd = evr_untrusted_open(AT_FDCWD, at("map"), NULL, &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_size, 10);
	assert_int_equal(fcntl(fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDONLY);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(read(fd, buf, sizeof(buf)), 10);
	assert_string_equal(buf, "1000 10 f\n");
	close(fd);
}

static void test_untrusted_open_fifo_refused(void **state)
{
	const struct evr_untrusted_rules nofollow = {
		.owner = EVR_UNTRUSTED_ANY_OWNER, .nofollow = true,
	};

	(void)state;
	/* No writer: open(O_RDONLY) of it would block for good. */
	assert_int_equal(mkfifo(at("fifo"), 0644), 0);
	assert_int_equal(evr_untrusted_open(AT_FDCWD, at("fifo"), NULL, NULL), -EPERM);
	assert_int_equal(symlink(at("fifo"), at("link-to-fifo")), 0);
	assert_int_equal(evr_untrusted_open(AT_FDCWD, at("link-to-fifo"), NULL, NULL), -EPERM);
	assert_int_equal(evr_untrusted_open(AT_FDCWD, at("link-to-fifo"), &nofollow, NULL), -EPERM);
}

static void test_untrusted_open_devices_and_dirs_refused(void **state)
{
	(void)state;
	assert_int_equal(evr_untrusted_open(AT_FDCWD, "/dev/zero", NULL, NULL), -EPERM);
	assert_int_equal(symlink("/dev/zero", at("zero")), 0);
	assert_int_equal(evr_untrusted_open(AT_FDCWD, at("zero"), NULL, NULL), -EPERM);
	assert_int_equal(evr_untrusted_open(AT_FDCWD, dir, NULL, NULL), -EPERM);
}

static void test_untrusted_open_nofollow(void **state)
{
	const struct evr_untrusted_rules nofollow = {
		.owner = EVR_UNTRUSTED_ANY_OWNER, .nofollow = true,
	};
	int fd;

	(void)state;
	write_file("target", "x\n");
	assert_int_equal(symlink(at("target"), at("link")), 0);
	/* Links are followed by default (mapped files' names may go through one)... */
	fd = evr_untrusted_open(AT_FDCWD, at("link"), NULL, NULL);
	assert_true(fd >= 0);
	close(fd);
	/* ...never with nofollow, and the target itself still opens. */
	assert_int_equal(evr_untrusted_open(AT_FDCWD, at("link"), &nofollow, NULL), -EPERM);
	fd = evr_untrusted_open(AT_FDCWD, at("target"), &nofollow, NULL);
	assert_true(fd >= 0);
	close(fd);
}

static void test_untrusted_open_size_and_owner(void **state)
{
	struct evr_untrusted_rules r = { .owner = EVR_UNTRUSTED_ANY_OWNER, .max_size = 4 };
	uid_t other = getuid() == 0 ? 65534 : getuid() + 1;
	int fd;

	(void)state;
	write_file("big", "12345");
	assert_int_equal(evr_untrusted_open(AT_FDCWD, at("big"), &r, NULL), -EFBIG);
	r.max_size = 5;
	fd = evr_untrusted_open(AT_FDCWD, at("big"), &r, NULL);
	assert_true(fd >= 0);
	close(fd);
	/* Trusted when it is the owner's, or root's (perf trusts both); refused when another's. */
	r.owner = getuid();
	fd = evr_untrusted_open(AT_FDCWD, at("big"), &r, NULL);
	assert_true(fd >= 0);
	close(fd);
	r.owner = other;
	fd = evr_untrusted_open(AT_FDCWD, at("big"), &r, NULL);
	if (getuid() == 0) {
		/* Ours is root's: trusted for anyone. A file of a third uid is not. */
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(chown(at("big"), 12345, 12345), 0);
		assert_int_equal(evr_untrusted_open(AT_FDCWD, at("big"), &r, NULL), -EPERM);
		r.owner = 12345;
		fd = evr_untrusted_open(AT_FDCWD, at("big"), &r, NULL);
		assert_true(fd >= 0);
		close(fd);
	} else {
		assert_int_equal(fd, -EPERM);
	}
}

static void test_untrusted_open_errors(void **state)
{
	(void)state;
	assert_int_equal(evr_untrusted_open(AT_FDCWD, at("none"), NULL, NULL), -ENOENT);
	assert_int_equal(evr_untrusted_open(AT_FDCWD, "", NULL, NULL), -EINVAL);
	assert_int_equal(evr_untrusted_open(AT_FDCWD, NULL, NULL, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untrusted_open_regular),
		cmocka_unit_test(test_untrusted_open_fifo_refused),
		cmocka_unit_test(test_untrusted_open_devices_and_dirs_refused),
		cmocka_unit_test(test_untrusted_open_nofollow),
		cmocka_unit_test(test_untrusted_open_size_and_owner),
		cmocka_unit_test(test_untrusted_open_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
