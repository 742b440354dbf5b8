// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Write-behind for buffered trace writes (write-behind.h).
 *
 * A recorder writes a stream far larger than it will read again. Through the
 * page cache each new 4 KiB of file takes a new page, and new pages can be
 * dear: on the development guest (Firecracker under PVM, whose host charges
 * 16-23 us for the first touch of a page) the kernel's time for buffered
 * writes to ext4 was 1.8-3.3 ns a byte into new pages against 0.38 when the
 * pages the writes had freed were used again (docs/recorder.md, "Through the
 * page cache"): more than a small machine's CPUs have for a 500 MB/s stream.
 * So once a window of the file (256 MiB) has cost the kernel more than 0.5 ns
 * a byte, the writeback of what lies half a window behind the end is started
 * (sync_file_range(SYNC_FILE_RANGE_WRITE), 4 MiB at a time), and what lies a
 * window behind is waited for and dropped (POSIX_FADV_DONTNEED), so that new
 * writes take pages the kernel just freed; from then on, for the rest of the
 * file (dropping costs nothing where pages are cheap, and where they are dear
 * the windows that reuse pages would look cheap and flip it back). Until then,
 * and where the page cache stays cheap, it is left alone: it holds what the
 * disk has not taken, gigabytes if need be, and a short recording writes
 * nothing back while it runs (the kernel's writeback would take CPU from the
 * producer and the recorder). Each window is measured on its own, by the
 * thread that wrote it: the cost of new pages on the development guest was
 * not the same in every window (a recording whose first window after a fall
 * of direct I/O read as cheap spent 10.9 s of system time in 13 s later).
 *
 * The writeback's calls are a worker thread's, started at the first drop:
 * while the disk stalls (up to a second on that guest at 500 MB/s), waiting
 * for a range blocks, and so does starting one (the device's queue is full:
 * SYNC_FILE_RANGE_WRITE alone took 1.04 s once), and a writer blocked there
 * is a recorder that does not drain its rings. The worker lags instead, the
 * page cache holds what the disk has not taken (new pages, dear), and the
 * worker catches up once the disk does; up to a window late (BEHIND_LAG),
 * after which the writer waits, as it did at once before. Where no thread can be had, the writer makes
 * the calls itself, as before. The worker works on its own dup() of the
 * descriptor, so that a writer closing its file never leaves it a number that
 * another file may take.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "write-behind.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC	0x01021994
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC	0x858458f6
#endif

#define BEHIND_STEP	(4ull << 20)	/* writeback started every so many bytes */
#define BEHIND_WINDOW	(256ull << 20)	/* left in the page cache behind the end */
/* How far the worker's drops may lag (in windows) before the writer waits for them:
 * the page cache's new pages cost the writer (1.8-3.3 ns a byte on the guest
 * above) what the stall does not. */
#define BEHIND_LAG	1u
/* The kernel's time a byte over the first window above which pages are dropped:
 * 0.1-0.3 ns where a new page costs nothing special, 1.8-3.3 on the guest above. */
#define BEHIND_DEAR_PS	500u

static uint64_t thread_sys_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return UINT64_MAX;
	return (uint64_t)ru.ru_stime.tv_sec * 1000000000u + (uint64_t)ru.ru_stime.tv_usec * 1000u;
}

/* A window to measure begins at writer byte @at. */
static void window_begin(struct evr_write_behind *b, uint64_t at)
{
	b->t0_bytes = at;
	b->t0_sys_ns = thread_sys_ns();
	b->t0_tid = (int)gettid();
}

/*
 * The tests' knobs (docs/recorder.md, "Through the page cache"):
 * EVR_RECORDER_BEHIND_MIB=N, a window of N MiB (a test's file need not be
 * larger than 256 MiB); EVR_RECORDER_BEHIND_DROP=1 or 0, drop or keep pages
 * whatever the windows cost (the decision is the machine's otherwise);
 * EVR_RECORDER_BEHIND_STALL_MS=N, a disk that stalls N ms at each step (what
 * the worker is for); EVR_RECORDER_BEHIND_INLINE=1, no worker (the writer
 * steps itself, as where no thread can be had).
 */
static void tests_setup(struct evr_write_behind *b)
{
	const char *mib = getenv("EVR_RECORDER_BEHIND_MIB");
	const char *drop = getenv("EVR_RECORDER_BEHIND_DROP");
	const char *stall = getenv("EVR_RECORDER_BEHIND_STALL_MS");
	const char *in = getenv("EVR_RECORDER_BEHIND_INLINE");
	char *end;
	unsigned long v;

	if (stall) {
		errno = 0;
		v = strtoul(stall, &end, 10);
		if (!errno && end != stall && !*end && v <= 60000)
			b->stall_ms = (uint32_t)v;
	}
	b->inline_only = in && !strcmp(in, "1");

	if (mib) {
		errno = 0;
		v = strtoul(mib, &end, 10);
		if (!errno && end != mib && !*end && v >= 1 && v <= 65536)
			b->window = (uint64_t)v << 20;
	}
	if (drop && (!strcmp(drop, "0") || !strcmp(drop, "1"))) {
		b->forced = true;
		b->drop = drop[0] == '1';
	}
}

void evr_write_behind_init(struct evr_write_behind *b, int fd, uint64_t written)
{
	struct statfs sfs;
	struct stat st;
	off_t pos;

	*b = (struct evr_write_behind){ .fd = -1, .window = BEHIND_WINDOW };
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fstatfs(fd, &sfs) < 0 ||
	    sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)
		return;
	pos = lseek(fd, 0, SEEK_CUR);
	if (pos < 0 || (uint64_t)pos < written)
		return;
	b->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (b->fd < 0)
		return;
	b->owns_fd = true;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	pthread_cond_init(&b->done, NULL);
	b->base = (uint64_t)pos - written;
	b->kicked = b->dropped = written;
	window_begin(b, written);
	b->on = true;
	tests_setup(b);
}

/*
 * A window written since window_begin(): drop from now on if it cost the
 * kernel dearly; else measure the next. Not a figure (another thread wrote it,
 * getrusage() refused): the next window is measured.
 */
static void measure(struct evr_write_behind *b, uint64_t end)
{
	uint64_t now = thread_sys_ns();

	if (now != UINT64_MAX && b->t0_sys_ns != UINT64_MAX && now >= b->t0_sys_ns &&
	    b->t0_tid == (int)gettid() &&
	    (now - b->t0_sys_ns) * 1000u > (end - b->t0_bytes) * BEHIND_DEAR_PS) {
		b->drop = true;
		/* What lies further behind stays for the kernel to write back and
		 * reclaim: no wait for all of it at once. */
		if (end - b->window > b->dropped)
			b->kicked = b->dropped = end - b->window;
		return;
	}
	window_begin(b, end);
}

/* Whether a step towards @end from @kicked and @dropped has something to do. */
static bool step_due(const struct evr_write_behind *b, uint64_t end, uint64_t kicked,
		     uint64_t dropped)
{
	return (end > b->window / 2 && end - b->window / 2 >= kicked + BEHIND_STEP) ||
	       (end >= b->window && end - b->window >= dropped + BEHIND_STEP);
}

/*
 * One step towards @end from @kicked and @dropped: start the writeback of what
 * lies half a window behind, wait for and drop what lies a window behind.
 * Return: 0 (the progress in *@kicked and *@dropped), -1 at a refusal.
 */
static int step(const struct evr_write_behind *b, uint64_t end, uint64_t *kicked,
		uint64_t *dropped)
{
	uint64_t base = b->base, window = b->window, kick = end - window / 2;
	int fd = b->fd;

	if (b->stall_ms && step_due(b, end, *kicked, *dropped)) {
		struct timespec ts = { b->stall_ms / 1000, (long)(b->stall_ms % 1000) * 1000000 };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}

	if (end > window / 2 && kick >= *kicked + BEHIND_STEP) {
		if (sync_file_range(fd, (off_t)(base + *kicked), (off_t)(kick - *kicked),
				    SYNC_FILE_RANGE_WRITE) < 0)
			return -1;
		*kicked = kick;
	}
	if (end < window || end - window < *dropped + BEHIND_STEP)
		return 0;
	/* Written back (waited for), then out of the page cache. */
	if (sync_file_range(fd, (off_t)(base + *dropped), (off_t)(end - window - *dropped),
			    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			    SYNC_FILE_RANGE_WAIT_AFTER) < 0 ||
	    posix_fadvise(fd, (off_t)(base + *dropped), (off_t)(end - window - *dropped),
			  POSIX_FADV_DONTNEED) != 0)
		return -1;
	*dropped = end - window;
	return 0;
}

static void *worker_main(void *arg)
{
	struct evr_write_behind *b = arg;

	pthread_mutex_lock(&b->mu);
	while (!b->failed) {
		uint64_t end = b->end, kicked = b->kicked, dropped = b->dropped, gen = b->gen;
		int r;

		if (!step_due(b, end, kicked, dropped)) {
			if (b->quit)
				break;	/* all that was posted is done: the file is as designed */
			pthread_cond_wait(&b->cv, &b->mu);
			continue;
		}
		pthread_mutex_unlock(&b->mu);
		r = step(b, end, &kicked, &dropped);
		pthread_mutex_lock(&b->mu);
		if (r < 0)
			b->failed = true;
		else if (gen == b->gen) {
			b->kicked = kicked;
			b->dropped = dropped;
		}
		pthread_cond_broadcast(&b->done);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* The worker, started at the first drop; none (a sandbox without threads, no
 * memory): the writer steps itself. Signals blocked in it: the program's
 * handlers run on its own threads. */
static void worker_start(struct evr_write_behind *b)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	b->started = !pthread_create(&b->worker, NULL, worker_main, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	b->inline_only = !b->started;
}

void evr_write_behind_note(struct evr_write_behind *b, uint64_t end)
{
	if (!b->on)
		return;
	if (!b->drop && !b->forced && end - b->t0_bytes >= b->window)
		measure(b, end);
	/* Cheap so far: the kernel's own writeback, as for any buffered write (a
	 * short recording then writes nothing back while it runs, where the CPUs
	 * are the producer's and the recorder's). */
	if (!b->drop)
		return;
	if (!b->started && !b->inline_only)
		worker_start(b);
	if (b->inline_only) {
		if (step(b, end, &b->kicked, &b->dropped) < 0)
			b->on = false;
		return;
	}
	if (end - b->posted < BEHIND_STEP)
		return;
	pthread_mutex_lock(&b->mu);
	b->end = end;
	pthread_cond_signal(&b->cv);
	/* A stall longer than the lag allowed: the writer waits, as it would have
	 * at the stall's start without a worker. */
	while (!b->failed && end - b->dropped > (1u + BEHIND_LAG) * b->window + 2 * BEHIND_STEP)
		pthread_cond_wait(&b->done, &b->mu);
	if (b->failed)
		b->on = false;	/* a refusal: the writer's page cache is the kernel's now */
	pthread_mutex_unlock(&b->mu);
	b->posted = end;
}

void evr_write_behind_resume(struct evr_write_behind *b, uint64_t written)
{
	if (!b->on)
		return;
	if (b->started)
		pthread_mutex_lock(&b->mu);
	if (written >= b->kicked) {
		b->kicked = b->dropped = b->end = b->posted = written;
		b->gen++;
		window_begin(b, written);
	}
	if (b->started)
		pthread_mutex_unlock(&b->mu);
}

void evr_write_behind_fini(struct evr_write_behind *b)
{
	if (!b->owns_fd)
		return;
	if (b->started) {
		pthread_mutex_lock(&b->mu);
		b->quit = true;
		pthread_cond_signal(&b->cv);
		pthread_mutex_unlock(&b->mu);
		pthread_join(b->worker, NULL);
		b->started = false;
	}
	pthread_cond_destroy(&b->done);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	close(b->fd);
	b->owns_fd = false;
	b->on = false;
}
