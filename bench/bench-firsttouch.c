// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr-bench-firsttouch: what reading a session's memory costs a recorder the
 * first time, against later times (docs/recorder.md, "Several processes").
 *
 *   evr-bench-firsttouch MIB [RUNS]
 *	A child process fills MIB MiB of a memfd through its own mapping, as a
 *	producer fills its rings; then this process reads the bytes (one load per
 *	64-byte line) in four ways, each on memory filled afresh, and prints the
 *	cost per 4 KiB page (median of RUNS, default 3) and the minor page faults
 *	this process took per 1000 pages:
 *	 - first: through a new mapping, as a recorder reads a ring's first lap;
 *	 - populated: the same after MADV_POPULATE_READ over the whole mapping
 *	   (the populate's own time printed apart): the page tables filled ahead,
 *	   so that the reads take no fault;
 *	 - again: a second read through the same mapping, as every later lap;
 *	 - pread: pread() of 64 KiB at a time into one buffer, no mapping.
 *
 * On the 2-vCPU nested guest (PVM: the host shadows the guest's page tables) a
 * first read costs 5-9 µs a page where a later one costs 0.2: the time is in
 * the host, on the first access to each page of the new mapping, not in the
 * guest's page faults (one per 16 pages, the kernel's fault-around), and a
 * populated mapping costs as much to read the first time, plus the populate.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <evring/mono-time.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

#define PAGE 4096u
#define LINE 64u
#define CHUNK (64u << 10)	/* pread()'s size: a packet */
#define RUNS_MAX 64

enum way { FIRST, POPULATED, AGAIN, PREAD, WAYS };

static const char *const way_name[WAYS] = { "first", "populated", "again", "pread" };

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* A new memfd of @size bytes, filled by a child through a mapping of its own. */
static int filled(size_t size)
{
	int fd = memfd_create("evr-bench-firsttouch", MFD_CLOEXEC);
	pid_t pid;
	int st;

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		fprintf(stderr, "evr-bench-firsttouch: memfd: %s\n", strerror(errno));
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "evr-bench-firsttouch: fork: %s\n", strerror(errno));
		exit(1);
	}
	if (pid == 0) {
		uint8_t *w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (w == MAP_FAILED)
			_exit(1);
		memset(w, 0x5a, size);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "evr-bench-firsttouch: the writer failed\n");
		exit(1);
	}
	return fd;
}

static uint64_t touch(const volatile uint8_t *p, size_t size)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < size; i += LINE)
		sum += p[i];
	return sum;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static uint8_t buf[CHUNK];
	double ns[WAYS][RUNS_MAX], flt[WAYS][RUNS_MAX], pop[RUNS_MAX];
	size_t size, pages;
	uint64_t sum = 0;
	int runs;

	if (argc < 2 || argc > 3 || atoi(argv[1]) <= 0) {
		fprintf(stderr, "usage: evr-bench-firsttouch MIB [RUNS]\n");
		return 2;
	}
	size = (size_t)atoi(argv[1]) << 20;
	pages = size / PAGE;
	runs = argc == 3 ? atoi(argv[2]) : 3;
	if (runs < 1 || runs > RUNS_MAX) {
		fprintf(stderr, "evr-bench-firsttouch: RUNS is 1 to %d\n", RUNS_MAX);
		return 2;
	}
	for (int r = 0; r < runs; r++) {
		for (int w = FIRST; w <= POPULATED; w++) {
			int fd = filled(size);
			const volatile uint8_t *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
			uint64_t t0, t1;
			long f0;

			if (m == MAP_FAILED) {
				fprintf(stderr, "evr-bench-firsttouch: mmap: %s\n", strerror(errno));
				return 1;
			}
			if (w == POPULATED) {
				t0 = evr_mono_ns();
				if (madvise((void *)m, size, MADV_POPULATE_READ) < 0) {
					fprintf(stderr, "evr-bench-firsttouch: MADV_POPULATE_READ: %s\n",
						strerror(errno));
					return 1;
				}
				pop[r] = (double)(evr_mono_ns() - t0) / (double)pages;
			}
			f0 = minflt();
			t0 = evr_mono_ns();
			sum += touch(m, size);
			t1 = evr_mono_ns();
			ns[w][r] = (double)(t1 - t0) / (double)pages;
			flt[w][r] = (double)(minflt() - f0) * 1000.0 / (double)pages;
			if (w == FIRST) {
				f0 = minflt();
				t0 = evr_mono_ns();
				sum += touch(m, size);
				ns[AGAIN][r] = (double)(evr_mono_ns() - t0) / (double)pages;
				flt[AGAIN][r] = (double)(minflt() - f0) * 1000.0 / (double)pages;
			}
			munmap((void *)m, size);
			close(fd);
		}
		{
			int fd = filled(size);
			long f0 = minflt();
			uint64_t t0 = evr_mono_ns();

			for (size_t off = 0; off < size; off += CHUNK) {
				if (pread(fd, buf, CHUNK, (off_t)off) != (ssize_t)CHUNK) {
					fprintf(stderr, "evr-bench-firsttouch: pread: %s\n",
						strerror(errno));
					return 1;
				}
				sum += touch(buf, CHUNK);
			}
			ns[PREAD][r] = (double)(evr_mono_ns() - t0) / (double)pages;
			flt[PREAD][r] = (double)(minflt() - f0) * 1000.0 / (double)pages;
			close(fd);
		}
	}
	printf("%zu MiB, %zu pages, median of %d runs (ns per 4 KiB page, minor faults per 1000 "
	       "pages):\n", size >> 20, pages, runs);
	for (int w = 0; w < WAYS; w++)
		printf("  %-10s %8.0f ns  %6.1f faults%s\n", way_name[w], median(ns[w], runs),
		       median(flt[w], runs), w == POPULATED ? "  (after the populate)" : "");
	printf("  populate   %8.0f ns  (MADV_POPULATE_READ itself)\n", median(pop, runs));
	/* Keeps the loads: the sum is never this. */
	return sum == 1 ? 3 : 0;
}
