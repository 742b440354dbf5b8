// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A program that spends nearly all of its CPU time in libc (memset of a large
 * buffer), so that its first CPU sample is in libc.so.6: the pprof test checks
 * that the program, not the library of the first sample, is pprof's main binary
 * (issue 28, item 5). It links libevring so that `evring record --` can trace it.
 * Usage: stacks-memset [ROUNDS]   (default 200, about 0.1 s of CPU)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/evring.h>

#define MEMSET_EVENTS(EVENT) EVENT(memset_round, "Round", 1, EVR_LEVEL_INFO, 0x1, (u64, n))

EVR_PROVIDER_DECLARE(memset_prov, MEMSET_EVENTS)
EVR_PROVIDER_DEFINE(memset_prov, "Memset", MEMSET_EVENTS)

int main(int argc, char **argv)
{
	uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 200;
	size_t len = 8u << 20;
	unsigned char *buf = malloc(len);
	uint64_t sum = 0;

	if (!buf)
		return 1;
	for (uint64_t i = 0; i < rounds; i++) {
		memset(buf, (int)i, len);
		sum += buf[i % len];
		memset_round(i);
	}
	printf("rounds %llu sum %llu\n", (unsigned long long)rounds, (unsigned long long)sum);
	free(buf);
	return 0;
}
