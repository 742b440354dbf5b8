// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr-bench-crc-lag: what the recorder's CRC-32C of a packet costs depending on
 * how long ago another CPU wrote it (docs/recorder.md, "Checksums").
 *
 * The recorder checksums every packet the producer just filled on another CPU:
 * 0.24-0.32 ns a byte there against 0.04 on bytes in its own cache, the
 * largest part of its user time. Would it be cheaper a few packets later, once
 * the lines have left the writer's L2 for the shared L3 (or memory), rather
 * than fetched from the writer's cache one by one?
 *
 * A writer thread fills a 16 MiB ring of 64 KiB packets, one after the other,
 * at RATE MB/s (the recorder's 500 MB/s stream by default; 0: as fast as it
 * can), with 8-byte stores as a producer's events would be; a reader thread on
 * another CPU takes packet k once the writer has finished packet k + LAG and
 * computes its CRC-32C (evr_crc32c(), the recorder's: folding on vectors where the
 * CPU has VPCLMULQDQ, else the crc32 instruction), timed per packet.
 * The ring is a memfd mapped shared, as the session's memory is. The writer
 * never laps the reader. LAG 0, 4, 16, 64 and 192 packets (0, 256 KiB, 1, 4
 * and 12 MiB written since), interleaved over ROUNDS rounds of PACKETS
 * packets each; then each packet's CRC again at once (its bytes now in the
 * reader's cache) as the floor. Prints ns/byte per round and lag (median
 * packet, and the mean), then the median of the rounds' medians per lag.
 *
 *   evr-bench-crc-lag [ROUNDS [PACKETS [RATE_MB_S [WRITER_CPU READER_CPU]]]]
 *   (defaults: 5 1024 500 0 1)
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <evring/mono-time.h>
#include <evring/trace.h>

#include "crc32c.h"

#define RING		(16u << 20)
#define PACKET		(64u << 10)
#define NPKT		(RING / PACKET)
#define NLAGS		5u

/* ... and 192: most of the ring, written since (beyond any L2, in or past L3). */
static const uint32_t lags[NLAGS] = { 0, 4, 16, 64, 192 };

/* Where the CRCs go, so that the compiler computes them. */
static volatile uint32_t crc_sink;

struct run {
	uint8_t *ring;
	uint32_t lag, packets;
	uint64_t rate_bps;		/* 0: no pacing */
	int wcpu;
	_Atomic uint64_t written;	/* packets finished by the writer */
	_Atomic uint64_t consumed;	/* packets checksummed by the reader */
	_Atomic bool stop;
};

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		fprintf(stderr, "evr-bench-crc-lag: cannot pin to CPU %d: %s\n", cpu,
			strerror(errno));
}

static void *writer(void *arg)
{
	struct run *r = arg;
	const uint64_t t0 = evr_mono_ns();
	const uint64_t per_packet = r->rate_bps ? (uint64_t)PACKET * 1000000000u / r->rate_bps : 0;

	pin(r->wcpu);
	for (uint64_t k = 0; !atomic_load_explicit(&r->stop, memory_order_relaxed); k++) {
		uint64_t *p = (uint64_t *)(r->ring + (k % NPKT) * PACKET);

		/* Never a packet the reader has not taken yet (one spare). */
		while (k - atomic_load_explicit(&r->consumed, memory_order_acquire) >= NPKT - 1)
			if (atomic_load_explicit(&r->stop, memory_order_relaxed))
				return NULL;
		while (per_packet && evr_mono_ns() < t0 + k * per_packet)
			;
		for (uint32_t i = 0; i < PACKET / 8; i++)
			p[i] = k * 0x9e3779b97f4a7c15ull ^ i;
		atomic_store_explicit(&r->written, k + 1, memory_order_release);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One run at @r->lag: the median and the mean ns/byte, also warm (the floor). */
static int run_lag(struct run *r, double *med, double *mean, double *warm)
{
	uint64_t *ns = calloc(r->packets, sizeof(*ns));
	uint64_t *wns = calloc(r->packets, sizeof(*wns));
	uint64_t sum = 0;
	pthread_t t;
	int err;

	if (!ns || !wns) {
		free(ns);
		free(wns);
		return -ENOMEM;
	}
	atomic_store(&r->written, 0);
	atomic_store(&r->consumed, 0);
	atomic_store(&r->stop, false);
	err = pthread_create(&t, NULL, writer, r);
	if (err) {
		free(ns);
		free(wns);
		return -err;
	}
	for (uint64_t k = 0; k < r->packets; k++) {
		const uint8_t *p = r->ring + (k % NPKT) * PACKET;
		uint64_t t0, t1, t2;

		while (atomic_load_explicit(&r->written, memory_order_acquire) < k + 1 + r->lag)
			;
		t0 = evr_mono_ns();
		crc_sink ^= evr_crc32c(0, p, PACKET);
		t1 = evr_mono_ns();
		crc_sink ^= evr_crc32c(0, p, PACKET);
		t2 = evr_mono_ns();
		ns[k] = t1 - t0;
		wns[k] = t2 - t1;
		sum += ns[k];
		atomic_store_explicit(&r->consumed, k + 1, memory_order_release);
	}
	atomic_store(&r->stop, true);
	pthread_join(t, NULL);
	qsort(ns, r->packets, sizeof(*ns), cmp_u64);
	qsort(wns, r->packets, sizeof(*wns), cmp_u64);
	*med = (double)ns[r->packets / 2] / PACKET;
	*mean = (double)sum / r->packets / PACKET;
	*warm = (double)wns[r->packets / 2] / PACKET;
	free(ns);
	free(wns);
	return 0;
}

static double median(double *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	uint32_t rounds = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 5;
	uint32_t packets = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 1024;
	uint64_t rate = argc > 3 ? strtoull(argv[3], NULL, 0) : 500;
	int wcpu = argc > 4 ? atoi(argv[4]) : 0, rcpu = argc > 5 ? atoi(argv[5]) : 1;
	struct run r = { .packets = packets, .rate_bps = rate * 1000000u, .wcpu = wcpu };
	double *med, *warm;
	int fd;

	if (!rounds || packets < 2 * NPKT || !evr_crc32c_hw_available()) {
		fprintf(stderr, "usage: evr-bench-crc-lag [ROUNDS [PACKETS (>= %u) [RATE_MB_S "
			"[WRITER_CPU READER_CPU]]]] (needs SSE4.2)\n", 2 * NPKT);
		return 2;
	}
	fd = memfd_create("evr-bench-crc-lag", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, RING) < 0) {
		perror("evr-bench-crc-lag: memfd");
		return 1;
	}
	r.ring = mmap(NULL, RING, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	med = calloc((size_t)rounds * NLAGS, sizeof(*med));
	warm = calloc((size_t)rounds * NLAGS, sizeof(*warm));
	if (r.ring == MAP_FAILED || !med || !warm) {
		fprintf(stderr, "evr-bench-crc-lag: out of memory\n");
		return 1;
	}
	memset(r.ring, 0, RING);
	pin(rcpu);
	printf("# ring %u MiB, %u KiB packets, writer CPU %d at %llu MB/s%s, reader CPU %d\n",
	       RING >> 20, PACKET >> 10, wcpu, (unsigned long long)rate, rate ? "" : " (unpaced)",
	       rcpu);
	printf("# evr_crc32c: %s\n", evr_crc32c_fold_width() == 512   ? "folding on 512-bit vectors"
				      : evr_crc32c_fold_width() == 256 ? "folding on 256-bit vectors"
								       : "the crc32 instruction");
	printf("# round lag ns/byte(median) ns/byte(mean) warm ns/byte(median)\n");
	for (uint32_t i = 0; i < rounds; i++) {
		for (uint32_t l = 0; l < NLAGS; l++) {
			double mean;
			int err;

			r.lag = lags[l];
			err = run_lag(&r, &med[l * rounds + i], &mean, &warm[l * rounds + i]);
			if (err) {
				fprintf(stderr, "evr-bench-crc-lag: %s\n", strerror(-err));
				return 1;
			}
			printf("%u %u %.4f %.4f %.4f\n", i, lags[l], med[l * rounds + i], mean,
			       warm[l * rounds + i]);
			fflush(stdout);
		}
	}
	for (uint32_t l = 0; l < NLAGS; l++)
		printf("lag %2u packets (%5u KiB): %.4f ns/byte (median of %u rounds), warm %.4f\n",
		       lags[l], lags[l] * (PACKET >> 10), median(&med[l * rounds], rounds), rounds,
		       median(&warm[l * rounds], rounds));
	free(med);
	free(warm);
	munmap(r.ring, RING);
	close(fd);
	return 0;
}
