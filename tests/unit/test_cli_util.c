// SPDX-License-Identifier: LGPL-2.1-or-later
/* Option value parsers and output helpers of the evring command (consumer/cli/util.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"

static void test_evr_parse_duration_units(void **state)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} ok[] = {
		{ "500ms", 500000000u }, { "30s", 30000000000u }, { "5m", 300000000000u },
		{ "1h", 3600000000000u }, { "2", 2000000000u }, { "1.5s", 1500000000u },
		{ "250us", 250000u }, { "10ns", 10u }, { "2min", 120000000000u },
		/* dotnet-trace's dd:hh:mm:ss and TimeSpan's hh:mm:ss */
		{ "00:00:00:05", 5000000000u }, { "00:01:30", 90000000000u },
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 0;
		assert_int_equal(evr_parse_duration("test", "--duration", ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].ns);
	}
}

static void test_evr_parse_duration_invalid(void **state)
{
	static const char *const bad[] = { "", "5x", "-1s", "+1s", "inf", "nan", "0", "0s", "1e3",
					   "0x10", "s", " 1s", "1 s", "1.5.2s", "1S", "00:00:00",
					   "00:60:00", "1:2:3:4:5" };
	uint64_t v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(evr_parse_duration("test", "--duration", bad[i], &v), -EINVAL);
		assert_int_equal(v, 42);	/* untouched on failure */
	}
}

static void test_evr_parse_size_units(void **state)
{
	static const struct {
		const char *s;
		uint64_t b;
	} ok[] = {
		{ "4096", 4096 }, { "64K", 65536 }, { "64k", 65536 }, { "64M", 64u << 20 },
		{ "1G", 1u << 30 }, { "1GiB", 1u << 30 }, { "2MB", 2u << 20 }, { "1.5M", 3u << 19 },
		{ "100b", 100 },
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 0;
		assert_int_equal(evr_parse_size("test", "--buffer-size", ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].b);
	}
}

static void test_evr_parse_size_invalid(void **state)
{
	static const char *const bad[] = { "", "lots", "-1M", "0", "0.1", "1T", "M", "1MM",
					   "99999999999G" };
	uint64_t v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(evr_parse_size("test", "--buffer-size", bad[i], &v), -EINVAL);
		assert_int_equal(v, 42);
	}
}

static void test_evr_fmt_bytes_units(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(evr_fmt_bytes(0, b, sizeof(b)), "0 B");
	assert_string_equal(evr_fmt_bytes(1023, b, sizeof(b)), "1023 B");
	assert_string_equal(evr_fmt_bytes(1536, b, sizeof(b)), "1.5 KiB");
	assert_string_equal(evr_fmt_bytes(64u << 20, b, sizeof(b)), "64.0 MiB");
	assert_string_equal(evr_fmt_count(987, b, sizeof(b)), "987");
	assert_string_equal(evr_fmt_count(1250000, b, sizeof(b)), "1.25 M");
}

static char *json_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	evr_json_fputs(f, s);
	fclose(f);
	return buf;
}

static void test_evr_json_fputs_escapes(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "\"plain\"" },
		{ "a\"b\\c", "\"a\\\"b\\\\c\"" },
		{ "l1\nl2\tx\x01\x7f", "\"l1\\nl2\\tx\\u0001\\u007f\"" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
		/* invalid UTF-8: a lone continuation, a truncated sequence, an overlong form,
		 * a surrogate */
		{ "a\x80z", "\"a\\ufffdz\"" },
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"" },
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
		{ "", "\"\"" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = json_of(cases[i].in);

		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

static void test_evr_cli_exit_status_mapping(void **state)
{
	(void)state;
	assert_int_equal(evr_cli_exit_status(0), EVR_EXIT_OK);
	assert_int_equal(evr_cli_exit_status(1), EVR_EXIT_OK);
	assert_int_equal(evr_cli_exit_status(-EINVAL), EVR_EXIT_USAGE);
	assert_int_equal(evr_cli_exit_status(-ENOENT), EVR_EXIT_FAILURE);
}

/* The loss line: a stall the rings could not hold, then a disk slower than the stream. */
static void test_evr_loss_advice_says_why_and_what_to_do(void **state)
{
	/* 500 MB/s asked (42 bytes an event, 12 M/s for 1 s), 8 MiB rings unread 40 ms,
	 * a disk that took 1 GB/s: the rings hold 16.8 ms; 32 MiB rings hold 67 ms, more
	 * than the 8 MiB and the 8.4 MB lost. */
	const struct evr_loss_facts stall = {
		.events = 11800000, .lost = 200000, .bytes = 11800000ull * 42,
		.ring_size = 8u << 20, .nr_rings = 2, .stall_ns = 40000000,
		.write_ns = 495600000, .stream_ns = 1008000000, .direct = true,
	};
	struct evr_loss_facts f = stall;
	char buf[800];

	(void)state;
	assert_string_equal(evr_loss_advice(&f, buf, sizeof(buf)),
			    "200000 of 12000000 events lost (1.7%): the rings (2 of 8.0 MiB) "
			    "hold 16.8 ms of this stream (500 MB/s asked) and went unread for up "
			    "to 40 ms (the disk took 1000 MB/s); to avoid it: --buffer-size 64M "
			    "would have held that, or --io buffered, or fewer providers");
	/* Rings that held the 40 ms and lost all the same (the disk slow for a while, no
	 * long wait): never the size that lost, but one that holds it and the loss. */
	f.ring_size = 64u << 20;
	assert_string_equal(evr_loss_advice(&f, buf, sizeof(buf)),
			    "200000 of 12000000 events lost (1.7%): the rings (2 of 64.0 MiB) "
			    "hold 134.2 ms of this stream (500 MB/s asked) and went unread for "
			    "up to 40 ms (the disk took 1000 MB/s), less than they hold: for a "
			    "while the recorder read less than the stream; to avoid it: "
			    "--buffer-size 256M would have held that, or --io buffered, or fewer "
			    "providers");
	/* ... where the drain waited for the disk's writes longer than the rings hold. */
	f.disk_waited_ns = 1788000000;
	assert_non_null(strstr(evr_loss_advice(&f, buf, sizeof(buf)),
			       "up to 40 ms (the disk took 1000 MB/s), less than they hold: for a "
			       "while the disk took less than the stream (the recorder waited 1788 "
			       "ms in all for its writes); to avoid it: --buffer-size 256M"));
	f = stall;
	/* Through io_uring a write in flight held its spans for 90 ms, longer than the
	 * rings went unread: that is the wait the buffer offered must hold (135 ms of
	 * 500 MB/s: 128 MiB rings). */
	f.write_max_ns = 90000000;
	assert_string_equal(evr_loss_advice(&f, buf, sizeof(buf)),
			    "200000 of 12000000 events lost (1.7%): the rings (2 of 8.0 MiB) "
			    "hold 16.8 ms of this stream (500 MB/s asked) and a write held their "
			    "space for up to 90 ms (the disk took 1000 MB/s); to avoid it: "
			    "--buffer-size 256M would have held that, or --io buffered, or fewer "
			    "providers");
	/* Shorter than the time unread: the time unread is the reason, as before. */
	f.write_max_ns = 30000000;
	assert_non_null(strstr(evr_loss_advice(&f, buf, sizeof(buf)),
			       "went unread for up to 40 ms (the disk took 1000 MB/s); to avoid "
			       "it: --buffer-size 64M would have held that"));
	f = stall;
	/* Buffered all along, the disk's rate unknown (under 16 MiB written); 16.8 MB lost:
	 * 32 MiB rings hold it with the 8 MiB. */
	f.direct = false;
	f.bytes = 1000000;
	f.events = 1000000 / 42;
	f.lost = 400000;
	assert_non_null(strstr(evr_loss_advice(&f, buf, sizeof(buf)),
			       "went unread for up to 40 ms, less than they hold: for a while the "
			       "recorder read less than the stream; to avoid it: --buffer-size 64M "
			       "would have held that, or fewer providers"));
	/* The disk took 300 MB/s of a 500 MB/s stream: no buffer would do. */
	f = (struct evr_loss_facts){
		.events = 11000000, .lost = 1000000, .bytes = 11000000ull * 42,
		.ring_size = 64u << 20, .nr_rings = 2, .stall_ns = 500000000,
		.write_ns = 1540000000, .stream_ns = 1008000000, .direct = true,
	};
	assert_string_equal(evr_loss_advice(&f, buf, sizeof(buf)),
			    "1000000 of 12000000 events lost (8.3%): the disk took 300 MB/s "
			    "against 500 MB/s asked, and the rings (2 of 64.0 MiB) hold 134.2 ms "
			    "of this stream; to avoid it: --io buffered, fewer providers, or a "
			    "faster disk (a larger --buffer-size only delays the loss)");
	f.cache_slow = true;
	assert_non_null(strstr(evr_loss_advice(&f, buf, sizeof(buf)),
			       "; to avoid it: fewer providers, or a faster disk"));
	/* The page cache did not catch up after a fall: it is not offered again. */
	f = stall;
	f.direct_fell_back = true;
	f.cache_slow = true;
	assert_string_equal(evr_loss_advice(&f, buf, sizeof(buf)),
			    "200000 of 12000000 events lost (1.7%): the rings (2 of 8.0 MiB) "
			    "hold 16.8 ms of this stream (500 MB/s asked) and went unread for up "
			    "to 40 ms (the page cache did not catch up; the disk took 1000 MB/s); "
			    "to avoid it: --buffer-size 64M would have held that, or fewer "
			    "providers");
	/* It cost the recorder half of a CPU or more: said so, and not offered either. */
	f.cache_dear = true;
	assert_string_equal(evr_loss_advice(&f, buf, sizeof(buf)),
			    "200000 of 12000000 events lost (1.7%): the rings (2 of 8.0 MiB) "
			    "hold 16.8 ms of this stream (500 MB/s asked) and went unread for up "
			    "to 40 ms (the page cache cost the recorder too much CPU; the disk took "
			    "1000 MB/s); to avoid it: --buffer-size 64M would have held that, or "
			    "fewer providers");
}

/* The stop signals, in a child of ours (it may exit from the handler): the status it
 * ends with, 0 if it returned from @body. */
static int stop_signals_child(void (*body)(void))
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		evr_cli_catch_stop_signals();
		body();
		_exit(evr_cli_stop_signal == SIGINT ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Deliver @sig, sent by @send, now: blocked while it is sent, then taken in
 * sigsuspend() (sanitizers deliver signals in the calls they intercept). */
static void deliver(int sig, void (*send)(int))
{
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, sig);
	sigprocmask(SIG_BLOCK, &block, &old);
	send(sig);
	sigdelset(&old, sig);
	sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void kill_self(int sig)
{
	kill(getpid(), sig);
}

static void queue_self(int sig)
{
	sigqueue(getpid(), sig, (union sigval){ 0 });
}

/* From a process of its own, which has sent it when it is reaped. */
static void kill_from_child(int sig)
{
	pid_t self = getpid(), helper = fork();

	if (helper == 0) {
		kill(self, sig);
		_exit(0);
	}
	while (waitpid(helper, NULL, 0) < 0 && errno == EINTR)
		;
}

/* timeout(1)'s way: its signal to the child and again to its group, from one sender. */
static void same_sender_twice(void)
{
	deliver(SIGINT, kill_self);
	if (evr_cli_stop_signal != SIGINT)
		_exit(4);
	deliver(SIGINT, kill_self);
	deliver(SIGINT, kill_self);
}

/* A second stop from another process: the user's "leave now". */
static void other_sender_second(void)
{
	deliver(SIGINT, kill_self);
	deliver(SIGTERM, kill_from_child);
	_exit(5);
}

/* A second stop from the kernel or sigqueue() (the terminal's Ctrl-C has no sender). */
static void queued_second(void)
{
	deliver(SIGINT, kill_self);
	deliver(SIGINT, queue_self);
	_exit(5);
}

static void test_evr_cli_stop_signals_repeat_and_leave(void **state)
{
	(void)state;
	assert_int_equal(stop_signals_child(same_sender_twice), 0);
	assert_int_equal(stop_signals_child(other_sender_second), 128 + SIGTERM);
	assert_int_equal(stop_signals_child(queued_second), 128 + SIGINT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evr_parse_duration_units),
		cmocka_unit_test(test_evr_parse_duration_invalid),
		cmocka_unit_test(test_evr_parse_size_units),
		cmocka_unit_test(test_evr_parse_size_invalid),
		cmocka_unit_test(test_evr_fmt_bytes_units),
		cmocka_unit_test(test_evr_json_fputs_escapes),
		cmocka_unit_test(test_evr_cli_exit_status_mapping),
		cmocka_unit_test(test_evr_loss_advice_says_why_and_what_to_do),
		cmocka_unit_test(test_evr_cli_stop_signals_repeat_and_leave),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
