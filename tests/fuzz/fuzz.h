/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the fuzz targets of tests/fuzz/ share. Each target defines the two
 * libFuzzer entry points below; it is linked either with libFuzzer (clang,
 * -fsanitize=fuzzer: scripts/fuzz, the `fuzz` ctest label) or with replay.c,
 * which feeds it the files of its corpus once (any compiler: the `unit` label,
 * so that every input ever found keeps being checked in the ordinary builds).
 *
 * A target checks properties as well as the absence of crashes: it calls
 * fuzz_check(), which aborts (a finding) with the property that failed.
 */
#ifndef EVR_FUZZ_H
#define EVR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define fuzz_check(cond)                                                                        \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "%s:%d: property does not hold: %s\n", __FILE__,        \
				__LINE__, #cond);                                               \
			abort();                                                                \
		}                                                                               \
	} while (0)

/* ---- trace files (fuzz-trace.c) ------------------------------------------------- */

/*
 * The first input byte of the trace and convert targets says what to repair in
 * the rest before it is read, so that mutations reach what lies behind the
 * checksums (a random mutation almost never keeps a CRC-32C right):
 */
enum {
	FUZZ_FIX_FILE_CRC = 0x1,	/* the file header's CRC */
	FUZZ_FIX_HDR_CRC = 0x2,		/* every chunk header's CRC */
	FUZZ_FIX_DATA_CRC = 0x4,	/* every chunk payload's CRC */
	FUZZ_FIX_SEQ = 0x8,		/* chunk numbers 0, 1, 2... */
	FUZZ_FIX_MAGIC = 0x10,		/* chunk magics */
};

/*
 * Copy @data (@size bytes, the control byte first) into the memfd @fd as a
 * trace file, repaired as the control byte says: chunk by chunk, from the
 * header's hdr_size, as far as whole chunk headers go.
 * Return: 0, or -1 when the input is too short or the file cannot be written.
 */
int fuzz_trace_file(int fd, const uint8_t *data, size_t size);

#endif /* EVR_FUZZ_H */
