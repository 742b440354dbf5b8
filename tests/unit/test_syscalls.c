// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * System calls of a trace (consumer/symbols/syscalls-read.c, syscalls-chrome.c):
 * the name table generated from <asm/unistd.h>, the strace -c style summary
 * (counts, errors and their errno, time of the calls that have one, order),
 * and the Chrome slices. The tracer itself needs the kernel's tracepoints:
 * tests/cli/syscalls.sh.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "evr-unit.h"

#include <evring/syscalls.h>

static void test_syscall_names(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(evr_syscall_name(SYS_write), "write");
	assert_string_equal(evr_syscall_name(SYS_openat), "openat");
	assert_int_equal(evr_syscall_number("write"), SYS_write);
	assert_int_equal(evr_syscall_number("exit_group"), SYS_exit_group);
	assert_int_equal(evr_syscall_number("syscall_1000"), 1000);
	assert_int_equal(evr_syscall_number("nosuchcall"), -ENOENT);
	assert_int_equal(evr_syscall_number("syscall_"), -ENOENT);
	assert_null(evr_syscall_name(-1));
	assert_null(evr_syscall_name(100000));
	/* A number beyond the headers, and one of another architecture: numbers only. */
	assert_string_equal(evr_syscall_name_or_nr(100000, evr_syscall_machine(), buf,
						   sizeof(buf)), "syscall_100000");
	assert_string_equal(evr_syscall_name_or_nr(SYS_write, evr_syscall_machine() + 1, buf,
						   sizeof(buf)), buf);
	assert_string_equal(evr_errno_name(ENOENT, buf, sizeof(buf)), "ENOENT");
}

static struct evr_syscall_rec call(uint32_t pid, int32_t nr, uint64_t dur, int64_t ret,
				   uint32_t flags)
{
	static uint64_t t = 1000;

	t += 10;
	return (struct evr_syscall_rec){ .time_ns = t, .dur_ns = dur, .pid = pid, .tid = pid,
					 .nr = nr, .ret = ret, .flags = flags };
}

static void test_syscall_summary(void **state)
{
	struct evr_syscall_rec v[] = {
		call(7, SYS_openat, 100, -ENOENT, 0),
		call(7, SYS_openat, 300, 3, 0),
		call(7, SYS_openat, 200, -ENOENT, 0),
		call(7, SYS_openat, 50, -EACCES, 0),
		call(7, SYS_write, 1000, 1, 0),
		call(7, SYS_exit_group, 0, 0, EVR_SYSCALL_NO_EXIT),
		call(9, SYS_write, 5, -EBADF, 0),
		call(9, SYS_clone, 0, 0, EVR_SYSCALL_NO_ENTER),
	};
	struct evr_syscall_set set = { .n = sizeof(v) / sizeof(v[0]), .v = v };
	struct evr_syscall_stat *st;
	size_t n;

	(void)state;
	assert_int_equal(evr_syscalls_summary(&set, &st, &n), 0);
	assert_int_equal(n, 5);
	/* Process 7 first, the heaviest total first. */
	assert_int_equal(st[0].pid, 7);
	assert_int_equal(st[0].nr, SYS_write);
	assert_int_equal(st[0].total_ns, 1000);
	assert_int_equal(st[1].nr, SYS_openat);
	assert_int_equal(st[1].count, 4);
	assert_int_equal(st[1].errors, 3);
	assert_int_equal(st[1].total_ns, 650);
	assert_int_equal(st[1].max_ns, 300);
	assert_int_equal(st[1].min_ns, 50);
	assert_int_equal(st[1].errnos[0], ENOENT);
	assert_int_equal(st[1].errno_count[0], 2);
	assert_int_equal(st[1].errnos[1], EACCES);
	assert_int_equal(st[1].errno_count[1], 1);
	/* No exit: a call, no time, no error. */
	assert_int_equal(st[2].nr, SYS_exit_group);
	assert_int_equal(st[2].count, 1);
	assert_int_equal(st[2].timed, 0);
	assert_int_equal(st[1].timed, 4);
	assert_int_equal(st[2].errors, 0);
	assert_int_equal(st[2].total_ns, 0);
	assert_int_equal(st[2].min_ns, 0);
	assert_int_equal(st[3].pid, 9);
	assert_int_equal(st[3].nr, SYS_write);
	assert_int_equal(st[3].errors, 1);
	assert_int_equal(st[3].errnos[0], EBADF);
	assert_int_equal(st[4].nr, SYS_clone);
	assert_int_equal(st[4].count, 1);
	free(st);
}

static void test_syscall_chrome(void **state)
{
	struct evr_syscall_rec v[] = {
		call(7, SYS_write, 1500, -EAGAIN, 0),
		call(7, SYS_exit_group, 0, 0, EVR_SYSCALL_NO_EXIT),
	};
	struct evr_syscall_set set = { .n = 2, .v = v };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	long n;

	(void)state;
	v[0].args[0] = 4;
	v[0].args[2] = 4096;
	assert_non_null(f);
	n = evr_syscalls_chrome_write(&set, f, true);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(n, (long)len);
	assert_non_null(strstr(buf, "{\"ph\":\"X\",\"cat\":\"syscall\",\"name\":\"write\",\"pid\":7,"
				    "\"tid\":7,"));
	assert_non_null(strstr(buf, ",\"dur\":1.500,\"args\":{\"ret\":-11,\"errno\":\"EAGAIN\","
				    "\"fd\":4,\"size\":4096}}"));
	assert_non_null(strstr(buf, "}},\n{\"ph\":\"X\",\"cat\":\"syscall\",\"name\":\"exit_group\""));
	assert_non_null(strstr(buf, "\"evring\":\"no exit\""));
	assert_int_equal(buf[0], '{');	/* first: no separator */
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syscall_names),
		cmocka_unit_test(test_syscall_summary),
		cmocka_unit_test(test_syscall_chrome),
	};

	return evr_unit_run(tests);
}
