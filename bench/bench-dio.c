// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr-bench-dio: how fast a disk takes the recorder's direct-write pattern
 * (docs/recorder.md, "Which I/O"). Writes 1 GiB to FILE with O_DIRECT, in 4 MiB
 * writes through io_uring, 4 in flight, each write either one contiguous
 * buffer or, as the trace writer gathers a batch, 64 segments of a chunk
 * header (HDR bytes, the padding to the direct-I/O alignment) each followed by
 * a 64 KiB packet. Prints MB/s. With "ahead", the file's space is allocated
 * first (fallocate), as the recorder does.
 *
 *   evr-bench-dio FILE HDR [ahead]	(HDR 0: one contiguous buffer per write)
 *
 * On the development guest's virtio disk: HDR 512, 40-300 MB/s; HDR 4096 and
 * HDR 0, 1.0-1.3 GB/s: a segment that ends inside a page keeps the block layer
 * from merging the write into one request.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 4
#define PACKETS 64
#define PACKET (64u << 10)
#define TOTAL (1024ull << 20)
#define SOURCE (32u << 20)		/* the packets come from a 32 MiB "ring" */

int main(int argc, char **argv)
{
	struct iovec iov[DEPTH][2 * PACKETS];
	struct io_uring ring;
	struct timespec t0, t1;
	size_t hdr, done = 0, off = 0, writes = 0;
	int fd, inflight = 0, slot = 0, err;
	uint8_t *src, *hdrs;

	if (argc < 3) {
		fprintf(stderr, "usage: evr-bench-dio FILE HDR [ahead]\n");
		return 2;
	}
	hdr = strtoul(argv[2], NULL, 10);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "evr-bench-dio: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (argc > 3 && fallocate(fd, 0, 0, (off_t)(TOTAL + (64u << 20))) < 0)
		fprintf(stderr, "evr-bench-dio: fallocate: %s (writing without)\n", strerror(errno));
	if (posix_memalign((void **)&src, 4096, SOURCE) ||
	    posix_memalign((void **)&hdrs, 4096, (hdr ? hdr : 1) * PACKETS * DEPTH))
		return 1;
	memset(src, 1, SOURCE);
	memset(hdrs, 2, (hdr ? hdr : 1) * PACKETS * DEPTH);
	err = io_uring_queue_init(2 * DEPTH, &ring, 0);
	if (err < 0) {
		fprintf(stderr, "evr-bench-dio: io_uring: %s\n", strerror(-err));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done < TOTAL) {
		struct io_uring_cqe *cqe;

		while (inflight < DEPTH && off < TOTAL) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			uint8_t *base = src + writes++ % (SOURCE / (PACKETS * PACKET)) *
						(PACKETS * PACKET);
			size_t len = 0;
			int n = 0;

			if (!hdr) {
				iov[slot][n++] = (struct iovec){ base, PACKETS * PACKET };
				len = PACKETS * PACKET;
			} else {
				for (int i = 0; i < PACKETS; i++) {
					iov[slot][n++] = (struct iovec){
						hdrs + ((size_t)slot * PACKETS + (size_t)i) * hdr, hdr };
					iov[slot][n++] = (struct iovec){ base + (size_t)i * PACKET,
									 PACKET };
					len += hdr + PACKET;
				}
			}
			io_uring_prep_writev(sqe, fd, iov[slot], (unsigned int)n, off);
			off += len;
			inflight++;
			slot = (slot + 1) % DEPTH;
			io_uring_submit(&ring);
		}
		err = io_uring_wait_cqe(&ring, &cqe);
		if (err < 0 || cqe->res < 0) {
			fprintf(stderr, "evr-bench-dio: write: %s\n",
				strerror(err < 0 ? -err : -cqe->res));
			return 1;
		}
		done += (size_t)cqe->res;
		inflight--;
		io_uring_cqe_seen(&ring, cqe);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s: header %zu B, space %s: %.0f MB/s\n", argv[1], hdr,
	       argc > 3 ? "ahead" : "appended",
	       (double)done / ((double)(t1.tv_sec - t0.tv_sec) +
			       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9) / 1e6);
	unlink(argv[1]);
	return 0;
}
