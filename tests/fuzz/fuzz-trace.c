// SPDX-License-Identifier: LGPL-2.1-or-later
/* The trace and convert targets' input: a trace file, repaired chunk by chunk (fuzz.h). */
#include <string.h>
#include <unistd.h>

#include <evring/trace.h>

#include "fuzz.h"

#define HDR_CRC_LEN 60u		/* the file header bytes its CRC covers */
#define CHUNK_HDR_CRC_LEN 20u	/* the chunk header bytes its CRC covers */

int fuzz_trace_file(int fd, const uint8_t *data, size_t size)
{
	struct evr_trace_file_hdr fh;
	uint8_t fix, *buf;
	size_t len, off;
	uint32_t seq = 0;
	int ret = 0;

	if (size < 1)
		return -1;
	fix = data[0];
	len = size - 1;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -1;
	memcpy(buf, data + 1, len);
	if (len >= sizeof(fh)) {
		memcpy(&fh, buf, sizeof(fh));
		if (fix & FUZZ_FIX_FILE_CRC) {
			fh.crc = evr_crc32c(0, &fh, HDR_CRC_LEN);
			memcpy(buf, &fh, sizeof(fh));
		}
		off = fh.hdr_size >= sizeof(fh) && fh.hdr_size <= 4096 && !(fh.hdr_size & 7) ?
			      fh.hdr_size : len;
		while (off <= len && len - off >= sizeof(struct evr_trace_chunk_hdr)) {
			struct evr_trace_chunk_hdr h;

			memcpy(&h, buf + off, sizeof(h));
			if (fix & FUZZ_FIX_MAGIC)
				h.magic = EVR_TRACE_CHUNK_MAGIC;
			if (fix & FUZZ_FIX_SEQ)
				h.seq = seq++;
			if ((fix & FUZZ_FIX_DATA_CRC) && h.len <= len - off - sizeof(h))
				h.data_crc = evr_crc32c(0, buf + off + sizeof(h), h.len);
			if (fix & FUZZ_FIX_HDR_CRC)
				h.hdr_crc = evr_crc32c(0, &h, CHUNK_HDR_CRC_LEN);
			memcpy(buf + off, &h, sizeof(h));
			off += sizeof(h) + (((uint64_t)h.len + 7) & ~7ull);
		}
	}
	if (ftruncate(fd, 0) < 0 || (len && pwrite(fd, buf, len, 0) != (ssize_t)len))
		ret = -1;
	free(buf);
	return ret;
}
