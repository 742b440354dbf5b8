// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr-bench-mapcost: what a recorder pays for a session's memory, apart from
 * its events (docs/recorder.md, "What the recorder costs").
 *
 * A session is a memfd the traced process backed (all of it, before use) and
 * the recorder maps and reads. Whatever the recorder does per event, it also
 * pays, once per recording, for mapping the session's pages into its page
 * tables, for pinning them when it registers them with io_uring, and at the end
 * for unmapping them and, when the traced process has already gone, for
 * freeing them (it holds the last reference). And every direct write has a
 * kernel share, smaller from a registered buffer. Each is timed here on its
 * own, in this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), for SIZE MiB:
 *
 *   fault-in    read one byte a page through a second mapping (the recorder's
 *               first lap: its page tables filled, 16 pages a fault)
 *   register    io_uring_register_buffers() on a mapping without its pages in
 *               this process's page tables, then on one with them
 *   munmap      the second mapping, every page mapped
 *   free        close() of the last reference: the pages go back
 *   write       4 MiB O_DIRECT writes of the memfd's bytes to DIR, 4 in
 *               flight through io_uring, plain (the kernel pins each write's
 *               pages) and from the registered buffer; as ns per 44.7-byte
 *               event (the README's stream)
 *
 *   evr-bench-mapcost [--huge] [DIR [SIZE_MIB [ROUNDS]]]   (defaults: . 64 5)
 *
 * --huge: the memfd's pages collapsed into 2 MiB ones once written
 * (MADV_COLLAPSE, as EVR_HUGE_PAGES=1 has the agent do: protocol.md, "Session
 * memory"), and every mapping on a 2 MiB boundary, as evring's are.
 *
 * Prints each figure per round and the median. DIR must take O_DIRECT (ext4,
 * XFS; not tmpfs): the write figures are skipped, saying so, where it does not.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK	(4u << 20)
#define DEPTH	4u
#define LAPS	8u
#define EVENT_BYTES 44.7

enum { FAULT_IN, REG_COLD, REG_WARM, MUNMAP, FREE, WRITE_PLAIN, WRITE_FIXED, NFIG };
static const char *const fig_name[NFIG] = {
	"fault-in ms", "register (unmapped) ms", "register (mapped) ms", "munmap ms", "free ms",
	"write plain ns/event", "write fixed ns/event",
};

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#define HUGE ((uintptr_t)2 << 20)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
static bool huge;

/* @len of @fd mapped shared, on a 2 MiB boundary (the rest of the reservation back). */
static uint8_t *map_session(int fd, size_t len)
{
	uint8_t *r = mmap(NULL, len + HUGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
	uint8_t *a;

	if (r == MAP_FAILED)
		return MAP_FAILED;
	a = (uint8_t *)(((uintptr_t)r + HUGE - 1) & ~(HUGE - 1));
	if (mmap(a, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		return MAP_FAILED;
	if (a > r)
		munmap(r, (size_t)(a - r));
	munmap(a + len, (size_t)(r + len + HUGE - (a + len)));
	return a;
}

/* A backed session: a memfd of @len, written through its own mapping (unmapped after). */
static int backed_memfd(size_t len)
{
	int fd = memfd_create("evr-bench-mapcost", MFD_CLOEXEC);
	uint8_t *w;

	if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
		return -1;
	w = map_session(fd, len);
	if (w == MAP_FAILED)
		return -1;
	memset(w, 0x5a, len);
	if (huge && madvise(w, len, MADV_COLLAPSE) < 0)
		return -1;
	munmap(w, len);
	return fd;
}

/* 4 MiB direct writes of @p, DEPTH in flight, LAPS times over; plain or fixed. */
static int write_laps(struct io_uring *ring, int out, uint8_t *p, size_t len, bool fixed,
		      double *ret_s)
{
	size_t n = len / CHUNK * LAPS, sub = 0, done = 0;
	unsigned int inflight = 0;
	double t = thread_cpu();

	while (done < n) {
		struct io_uring_cqe *cqe;

		while (inflight < DEPTH && sub < n) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			uint8_t *src = p + (sub * CHUNK) % len;

			if (fixed)
				io_uring_prep_write_fixed(sqe, out, src, CHUNK, (uint64_t)sub * CHUNK, 0);
			else
				io_uring_prep_write(sqe, out, src, CHUNK, (uint64_t)sub * CHUNK);
			sub++;
			inflight++;
		}
		if (io_uring_submit_and_wait(ring, 1) < 0)
			return -1;
		while (io_uring_peek_cqe(ring, &cqe) == 0) {
			if (cqe->res != (int)CHUNK) {
				errno = cqe->res < 0 ? -cqe->res : EIO;
				return -1;
			}
			io_uring_cqe_seen(ring, cqe);
			inflight--;
			done++;
		}
	}
	*ret_s = thread_cpu() - t;
	return 0;
}

/* Register @len at @p as buffer 0 of @ring; its CPU time in ms into @ret_ms. */
static int timed_register(struct io_uring *ring, uint8_t *p, size_t len, double *ret_ms)
{
	struct iovec iov = { .iov_base = p, .iov_len = len };
	double t = thread_cpu();
	int err = io_uring_register_buffers(ring, &iov, 1);

	if (err < 0) {
		errno = -err;
		return -1;
	}
	*ret_ms = (thread_cpu() - t) * 1e3;
	return 0;
}

static int one_round(const char *dir, size_t len, double fig[NFIG], bool *writes)
{
	struct io_uring ring;
	char path[4096];
	uint8_t *p;
	double t;
	int fd, out, err;

	fd = backed_memfd(len);
	if (fd < 0)
		return -1;
	err = io_uring_queue_init(2 * DEPTH, &ring, 0);
	if (err < 0) {
		errno = -err;
		return -1;
	}
	/* Registering a mapping whose pages are not in our page tables yet. */
	p = map_session(fd, len);
	if (p == MAP_FAILED)
		return -1;
	if (timed_register(&ring, p, len, &fig[REG_COLD]) < 0)
		return -1;
	io_uring_unregister_buffers(&ring);
	munmap(p, len);
	/* The recorder's way: its first lap maps the pages, then it registers. */
	p = map_session(fd, len);
	if (p == MAP_FAILED)
		return -1;
	t = thread_cpu();
	for (size_t o = 0; o < len; o += 4096)
		(void)*(volatile uint8_t *)(p + o);
	fig[FAULT_IN] = (thread_cpu() - t) * 1e3;
	if (timed_register(&ring, p, len, &fig[REG_WARM]) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/evr-bench-mapcost.XXXXXX", dir);
	out = mkstemp(path);
	if (out < 0)
		return -1;
	unlink(path);
	*writes = fcntl(out, F_SETFL, O_DIRECT) == 0 &&
		  fallocate(out, 0, 0, (off_t)(len / CHUNK * LAPS * CHUNK)) == 0;
	if (*writes) {
		double s;

		double events = (double)len * LAPS / EVENT_BYTES;

		if (write_laps(&ring, out, p, len, false, &s) < 0) {
			*writes = false;
		} else {
			fig[WRITE_PLAIN] = s * 1e9 / events;
			if (write_laps(&ring, out, p, len, true, &s) < 0)
				*writes = false;
			else
				fig[WRITE_FIXED] = s * 1e9 / events;
		}
	}
	close(out);
	io_uring_unregister_buffers(&ring);
	io_uring_queue_exit(&ring);
	t = thread_cpu();
	munmap(p, len);
	fig[MUNMAP] = (thread_cpu() - t) * 1e3;
	t = thread_cpu();
	close(fd);
	fig[FREE] = (thread_cpu() - t) * 1e3;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir;
	unsigned long mib, rounds;

	if (argc > 1 && strcmp(argv[1], "--huge") == 0) {
		huge = true;
		argv++;
		argc--;
	}
	dir = argc > 1 ? argv[1] : ".";
	mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
	rounds = argc > 3 ? strtoul(argv[3], NULL, 10) : 5;
	double (*fig)[NFIG];
	bool writes = true;

	if (mib < 4 || mib % 4 || mib > 4096 || rounds < 1 || rounds > 100) {
		fprintf(stderr, "usage: evr-bench-mapcost [--huge] [DIR [SIZE_MIB (a multiple of "
			"4) [ROUNDS]]]\n");
		return 2;
	}
	fig = calloc(rounds, sizeof(*fig));
	if (!fig)
		return 1;
	printf("round");
	for (int k = 0; k < NFIG; k++)
		printf(" | %s", fig_name[k]);
	printf("\n");
	for (unsigned long r = 0; r < rounds; r++) {
		bool w;

		if (one_round(dir, (size_t)mib << 20, fig[r], &w) < 0) {
			fprintf(stderr, "evr-bench-mapcost: %s\n", strerror(errno));
			return 1;
		}
		writes &= w;
		printf("%lu", r + 1);
		for (int k = 0; k < NFIG; k++)
			printf(" | %.2f", fig[r][k]);
		printf("\n");
	}
	printf("median of %lu rounds, %lu MiB, %s pages:\n", rounds, mib, huge ? "2 MiB" : "4 KiB");
	for (int k = 0; k < NFIG; k++) {
		double v[100];

		if (!writes && (k == WRITE_PLAIN || k == WRITE_FIXED)) {
			printf("  %-24s skipped: %s takes no O_DIRECT writes\n", fig_name[k], dir);
			continue;
		}
		for (unsigned long r = 0; r < rounds; r++)
			v[r] = fig[r][k];
		qsort(v, rounds, sizeof(v[0]), cmp_double);
		printf("  %-24s %.2f\n", fig_name[k],
		       rounds % 2 ? v[rounds / 2] : (v[rounds / 2 - 1] + v[rounds / 2]) / 2);
	}
	free(fig);
	return 0;
}
