// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr-bench-copy: how the recorder should move a packet from the session memfd
 * to the trace file, measured as CPU time (user + system) per byte.
 *
 * The recorder writes every packet as one EVENTS chunk: a small header, then
 * the packet's bytes, whose CRC-32C it computes first (the header carries it).
 * This program does exactly that for MiB of packets held in a memfd, with each
 * of the ways the kernel offers to put them into a file:
 *
 *   writev           header and packet in one writev() from the mapping (what
 *                    the recorder does);
 *   splice           header with write(), then the packet spliced from the
 *                    memfd into a pipe and from the pipe into the file (the
 *                    memfd's pages go into the pipe by reference);
 *   copy_file_range  header with write(), then copy_file_range() from the
 *                    memfd: the kernel refuses it between a memfd and a file of
 *                    another mount (EXDEV), which is where traces go, so it is
 *                    reported as unavailable when it fails that way.
 *
 * Then the trace writer itself, as the recorder drives it (its CRC, its
 * headers): buffered, and with direct I/O (EVR_TRACE_WRITER_DIRECT, where DIR
 * takes it) flushing every 1, 4, 16 and 64 packets: the batch size decides
 * what a direct write costs.
 *
 * Each method writes the whole memfd REPS times to a fresh file in DIR; the
 * best of the REPS is printed (the least disturbed by other processes).
 *
 * Usage: evr-bench-copy [DIR [MIB [PACKET_KIB]]]   (defaults: /dev/shm 128 64)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "trace-format.h"

#define REPS 5
#define HDR_BYTES 32

enum method { M_WRITEV, M_SPLICE, M_COPY_FILE_RANGE, M_COUNT };
static const char *const method_name[M_COUNT] = { "writev", "splice", "copy_file_range" };

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int write_full(int fd, const void *p, size_t len)
{
	return write(fd, p, len) == (ssize_t)len ? 0 : -errno;
}

/* One packet at @off of the memfd @mfd (mapped at @map) into @fd by @m. */
static int put_packet(enum method m, int fd, int mfd, const uint8_t *map, size_t off,
		      size_t len, const int pipefd[2])
{
	uint8_t hdr[HDR_BYTES] = { 0 };
	uint32_t crc = evr_crc32c(0, map + off, len);
	loff_t in = (loff_t)off;

	memcpy(hdr, &crc, sizeof(crc));
	if (m == M_WRITEV) {
		struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)(map + off), len } };

		return writev(fd, iov, 2) == (ssize_t)(sizeof(hdr) + len) ? 0 : -EIO;
	}
	if (write_full(fd, hdr, sizeof(hdr)) < 0)
		return -EIO;
	if (m == M_COPY_FILE_RANGE) {
		ssize_t n = copy_file_range(mfd, &in, fd, NULL, len, 0);

		if (n < 0)
			return -errno;
		return n == (ssize_t)len ? 0 : -EIO;
	}
	while (len) {
		ssize_t n = splice(mfd, &in, pipefd[1], NULL, len, 0);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		len -= (size_t)n;
		while (n) {
			ssize_t k = splice(pipefd[0], NULL, fd, NULL, (size_t)n, 0);

			if (k <= 0)
				return k < 0 ? -errno : -EIO;
			n -= k;
		}
	}
	return 0;
}

/* The whole memfd through the trace writer; @batch packets per flush (0: buffered). */
static int put_writer(int fd, const uint8_t *map, size_t total, size_t pkt, int batch,
		      bool *ret_direct)
{
	struct evr_trace_session s = {
		.mode = EVR_MODE_DISCARD, .packet_size = (uint32_t)pkt, .ring_size = total,
		.nr_rings = 1, .providers = "Bench", .client = "evr-bench-copy",
		.clock = { .kind = EVR_CLOCK_TSC, .shift = 1, .mult = 3, .ts_base = 1000,
			   .mono_base = 5000000000ull, .real_base = 1700000000000000000ull,
			   .ticks_per_sec = 666666666 },
	};
	struct evr_trace_writer *w;
	int err, n = 0;

	err = evr_trace_writer_new_flags(fd, batch ? EVR_TRACE_WRITER_DIRECT : 0, &w);
	if (err)
		return err;
	*ret_direct = evr_trace_writer_direct(w);
	err = evr_trace_writer_session(w, &s);
	for (size_t off = 0; off < total && !err; off += pkt) {
		err = evr_trace_writer_events(w, 0, off, map + off, (uint32_t)pkt);
		if (!err && batch && ++n % batch == 0)
			err = evr_trace_writer_flush(w);
	}
	if (!err)
		err = evr_trace_writer_end(w, &(struct evr_trace_end){ 0 });
	evr_trace_writer_free(w);
	return err;
}

/* One way of writing the whole memfd: a kernel method, or the trace writer. */
struct job {
	enum method m;			/* with !writer */
	bool writer;
	int batch;			/* writer: packets per flush, 0 buffered */
	bool direct;			/* writer: out, direct I/O was granted */
	int mfd;
	const uint8_t *map;
	size_t total, pkt;
	const int *pipefd;
};

static int put_all(struct job *j, int fd)
{
	int err = 0;

	if (j->writer)
		return put_writer(fd, j->map, j->total, j->pkt, j->batch, &j->direct);
	for (size_t off = 0; off < j->total && !err; off += j->pkt)
		err = put_packet(j->m, fd, j->mfd, j->map, off, j->pkt, j->pipefd);
	return err;
}

/* @j REPS times to a fresh file at @path: the least CPU time in @best, or -errno. */
static int best_of(const char *path, struct job *j, double *best)
{
	int err = 0;

	for (int rep = 0; rep < REPS && !err; rep++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		double t;

		if (fd < 0) {
			fprintf(stderr, "evr-bench-copy: %s: %s\n", path, strerror(errno));
			exit(1);
		}
		t = cpu_s();
		err = put_all(j, fd);
		t = cpu_s() - t;
		close(fd);
		unlink(path);
		if (!err && (rep == 0 || t < *best))
			*best = t;
	}
	return err;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/dev/shm";
	size_t total = (size_t)(argc > 2 ? atoi(argv[2]) : 128) << 20;
	size_t pkt = (size_t)(argc > 3 ? atoi(argv[3]) : 64) << 10;
	char path[4096];
	int pipefd[2], mfd;
	uint8_t *map;

	if (argc > 4 || !total || !pkt || total % pkt) {
		fprintf(stderr, "usage: evr-bench-copy [DIR [MIB [PACKET_KIB]]] (MIB a multiple "
				"of the packet)\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/evr-bench-copy.%d", dir, (int)getpid());
	mfd = memfd_create("evr-bench-copy", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, (off_t)total) < 0) {
		perror("evr-bench-copy: memfd");
		return 1;
	}
	map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (map == MAP_FAILED || pipe2(pipefd, O_CLOEXEC) < 0) {
		perror("evr-bench-copy: mmap/pipe");
		return 1;
	}
	/* A pipe that holds a whole packet: one splice each way per packet. */
	(void)fcntl(pipefd[1], F_SETPIPE_SZ, (int)pkt);
	for (size_t i = 0; i < total; i++)
		map[i] = (uint8_t)(i * 131u + (i >> 12));

	printf("%zu MiB in %zu KiB packets to %s, CPU time per byte, best of %d:\n", total >> 20,
	       pkt >> 10, dir, REPS);
	for (int m = 0; m < M_COUNT; m++) {
		struct job jb = { .m = (enum method)m, .mfd = mfd, .map = map, .total = total,
				  .pkt = pkt, .pipefd = pipefd };
		double best = 0;
		int err = best_of(path, &jb, &best);

		if (err)
			printf("  %-16s unavailable: %s\n", method_name[m], strerror(-err));
		else
			printf("  %-16s %.3f ns/byte\n", method_name[m], best * 1e9 / (double)total);
	}
	for (int b = 0; b <= 64; b = b ? 4 * b : 1) {
		struct job jb = { .writer = true, .batch = b, .map = map, .total = total, .pkt = pkt };
		double best = 0;
		int err = best_of(path, &jb, &best);
		char name[32];

		if (b)
			snprintf(name, sizeof(name), "writer direct %d", b);
		else
			snprintf(name, sizeof(name), "writer buffered");
		if (err)
			printf("  %-20s failed: %s\n", name, strerror(-err));
		else if (b && !jb.direct)
			printf("  %-20s unavailable: %s takes no direct I/O\n", name, dir);
		else
			printf("  %-20s %.3f ns/byte\n", name, best * 1e9 / (double)total);
	}
	return 0;
}
