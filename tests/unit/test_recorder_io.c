// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recorder's way back to direct I/O (consumer/recorder/recorder-io.h):
 * what the disk took, and whether the stream fits three quarters of it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "recorder-io.h"

#define MB 1000000ull
#define MS 1000000ull

static void test_disk_rate_is_bytes_over_write_time(void **state)
{
	(void)state;
	/* 2 MiB in 5 ms: 419 MB/s; in 20 ms, a stalled disk: 105 MB/s. */
	assert_int_equal(evr_recorder_disk_bps(2u << 20, 5 * MS), 419430400u);
	assert_int_equal(evr_recorder_disk_bps(2u << 20, 20 * MS), 104857600u);
	assert_int_equal(evr_recorder_disk_bps(2u << 20, 0), 0);
	assert_int_equal(evr_recorder_disk_bps(0, 5 * MS), 0);
}

static void test_stream_fits_three_quarters_of_the_disk(void **state)
{
	const uint64_t disk = 420 * MB, dt = 250 * MS;

	(void)state;
	/* This guest's case: 500 MB/s to a disk that took 420 stays buffered. */
	assert_false(evr_recorder_stream_fits(500 * MB / 4, dt, disk));
	/* Just below and just above 315 MB/s, three quarters of 420. */
	assert_true(evr_recorder_stream_fits(314 * MB / 4, dt, disk));
	assert_false(evr_recorder_stream_fits(316 * MB / 4, dt, disk));
	/* Nothing sent: direct I/O may come back. */
	assert_true(evr_recorder_stream_fits(0, dt, disk));
	/* A longer interval at the same rate decides the same way. */
	assert_false(evr_recorder_stream_fits(500 * MB * 10, 10000 * MS, disk));
	assert_true(evr_recorder_stream_fits(300 * MB * 10, 10000 * MS, disk));
}

static void test_stream_fits_when_nothing_was_measured(void **state)
{
	(void)state;
	/* No direct write timed yet, or no time passed: the calm rings decide. */
	assert_true(evr_recorder_stream_fits(500 * MB, 250 * MS, 0));
	assert_true(evr_recorder_stream_fits(500 * MB, 0, 420 * MB));
}

static void test_stream_fits_without_overflow(void **state)
{
	(void)state;
	/* Products past 2^64 in integers: a day of a 10 GB/s disk's bytes. */
	assert_true(evr_recorder_stream_fits(UINT64_C(1) << 40, UINT64_C(86400) * 1000 * MS,
					     10000 * MB));
	assert_false(evr_recorder_stream_fits(UINT64_MAX, 1 * MS, UINT64_MAX / 2));
}

static void test_disk_behind_only_when_writes_hold_the_ring(void **state)
{
	(void)state;
	/* The first lap on the development guest: 29.6 MB unread, nothing in flight. */
	assert_false(evr_recorder_disk_behind(29597128, 29597128));
	/* Writes in flight hold most of it: the disk. */
	assert_true(evr_recorder_disk_behind(20u << 20, 2u << 20));
	assert_true(evr_recorder_disk_behind(20u << 20, 0));
	/* Half and half: the disk (it holds as much as the recorder lags). */
	assert_true(evr_recorder_disk_behind(20u << 20, 10u << 20));
	assert_true(evr_recorder_disk_behind(21, 10));
	assert_false(evr_recorder_disk_behind(21, 11));
	/* More unread than held: the recorder. */
	assert_false(evr_recorder_disk_behind(20u << 20, (10u << 20) + 1));
	/* Read apart (the two are maxima over rings): never a wrapped difference. */
	assert_false(evr_recorder_disk_behind(1u << 20, 2u << 20));
	assert_true(evr_recorder_disk_behind(UINT64_MAX, 0));
}

/* The page cache is dear when it takes half of a CPU from the recorder, over a long enough window. */
static void test_cache_dear_at_half_a_cpu(void **state)
{
	(void)state;
	/* The Intel guest after a fall: the recorder busy all the time. */
	assert_true(evr_recorder_cache_dear(250 * MS, 250 * MS));
	assert_true(evr_recorder_cache_dear(125 * MS, 250 * MS));
	assert_false(evr_recorder_cache_dear(125 * MS - 1, 250 * MS));
	/* A copy into cheap pages: 500 MB/s at 0.2 ns a byte, a tenth of a CPU. */
	assert_false(evr_recorder_cache_dear(25 * MS, 250 * MS));
	/* Too short a window to say (the catch-up of what the rings held first). */
	assert_false(evr_recorder_cache_dear(EVR_RECORDER_CACHE_PRICE_NS - 1,
					     EVR_RECORDER_CACHE_PRICE_NS - 1));
	assert_true(evr_recorder_cache_dear(EVR_RECORDER_CACHE_PRICE_NS / 2,
					    EVR_RECORDER_CACHE_PRICE_NS));
	/* More CPU than time (another thread's, or a clock read apart): dear. */
	assert_true(evr_recorder_cache_dear(UINT64_MAX, EVR_RECORDER_CACHE_PRICE_NS));
}

static void test_rings_hold_twice_the_longest_stall(void **state)
{
	(void)state;
	/* 64 MiB rings hold 134 ms of 500 MB/s: direct I/O. */
	assert_true(evr_recorder_rings_hold(64ull << 20, 500 * MB / 4, 250 * MS));
	/* 8 MiB rings (--buffer-size 16M on 2 CPUs) hold 16.8 ms: the page cache. */
	assert_false(evr_recorder_rings_hold(8ull << 20, 500 * MB / 4, 250 * MS));
	/* The start's threshold is exactly the rule at 500 MB/s, with what rounds. */
	assert_true(evr_recorder_rings_hold(EVR_RECORDER_DIRECT_START_RING, 500 * MB, 1000 * MS));
	assert_false(evr_recorder_rings_hold(EVR_RECORDER_DIRECT_START_RING, 530 * MB,
					     1000 * MS));
	/* Just around the line: 1 MiB holds 64 ms of 16.384 MB/s. */
	assert_true(evr_recorder_rings_hold(1ull << 20, 16384000, 1000 * MS));
	assert_false(evr_recorder_rings_hold(1ull << 20, 16384001 + 1000, 1000 * MS));
	/* Nothing sent, or no time: nothing against direct I/O. */
	assert_true(evr_recorder_rings_hold(1ull << 20, 0, 250 * MS));
	assert_true(evr_recorder_rings_hold(1ull << 20, 500 * MB, 0));
	/* No overflow with the largest values. */
	assert_false(evr_recorder_rings_hold(UINT64_C(1) << 32, UINT64_MAX, 1 * MS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disk_rate_is_bytes_over_write_time),
		cmocka_unit_test(test_stream_fits_three_quarters_of_the_disk),
		cmocka_unit_test(test_stream_fits_when_nothing_was_measured),
		cmocka_unit_test(test_stream_fits_without_overflow),
		cmocka_unit_test(test_rings_hold_twice_the_longest_stall),
		cmocka_unit_test(test_disk_behind_only_when_writes_hold_the_ring),
		cmocka_unit_test(test_cache_dear_at_half_a_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
