// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Events with known call chains, for `record --stacks`: chain_a() -> chain_b() ->
 * chain_c() fires Chain/Hit (a fixed-size payload: the generated fire function's
 * register path), and a second thread's chain_d() -> chain_e() fires Chain/Note
 * (a string: the payload-in-memory path). Built with frame pointers, like the
 * programs docs/stacks.md tells users to build. Usage: stacks-chain [N]: N of
 * each (default 1000), then exit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <evring/evring.h>

#define CHAIN_EVENTS(EVENT)                                                          \
	EVENT(chain_hit, "Hit", 1, EVR_LEVEL_INFO, 0x1, (u64, seq))                  \
	EVENT(chain_note, "Note", 2, EVR_LEVEL_INFO, 0x2, (str, text), (u32, seq))

EVR_PROVIDER_DECLARE(chain, CHAIN_EVENTS)
EVR_PROVIDER_DEFINE(chain, "Chain", CHAIN_EVENTS)

static volatile unsigned sink;

__attribute__((noinline)) static void chain_c(uint64_t i)
{
	chain_hit(i);
	sink++;		/* not a tail call: chain_c keeps its frame */
}

__attribute__((noinline)) static void chain_b(uint64_t i)
{
	chain_c(i);
	sink++;
}

__attribute__((noinline)) static void chain_a(uint64_t i)
{
	chain_b(i);
	sink++;
}

__attribute__((noinline)) static void chain_e(uint32_t i)
{
	chain_note("a note from chain_e", i);
	sink++;
}

__attribute__((noinline)) static void chain_d(uint32_t i)
{
	chain_e(i);
	sink++;
}

static void *noter(void *arg)
{
	uint32_t n = (uint32_t)(uintptr_t)arg;

	for (uint32_t i = 0; i < n; i++)
		chain_d(i);
	return NULL;
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1000;
	pthread_t t;

	if (pthread_create(&t, NULL, noter, (void *)(uintptr_t)n) != 0)
		return 1;
	for (uint32_t i = 0; i < n; i++)
		chain_a(i);
	pthread_join(t, NULL);
	return 0;
}
