// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The "Stress" provider, its session filters, and the deterministic payload
 * that both sides derive from (thread, kind, seq): the producer builds it, a
 * consumer checks its length and checksum without any shared state.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stress.h"

EVR_PROVIDER_DEFINE(stress_provider, STRESS_PROVIDER_NAME, STRESS_EVENTS)

const struct stress_kind stress_kinds[STRESS_NKINDS] = {
	{ "Info", 1, EVR_LEVEL_INFO, 0x1, 40, &stress_ev_info__event },
	{ "Verbose", 2, EVR_LEVEL_VERBOSE, 0x2, 25, &stress_ev_verbose__event },
	{ "Warn", 3, EVR_LEVEL_WARNING, 0x4, 15, &stress_ev_warn__event },
	{ "Error", 4, EVR_LEVEL_ERROR, 0x0, 10, &stress_ev_error__event },
	{ "Always", 5, EVR_LEVEL_LOGALWAYS, 0x6, 10, &stress_ev_always__event },
};

/*
 * Kinds: Info(kw 0x1, lvl 4) Verbose(0x2, 5) Warn(0x4, 3) Error(0x0, 2)
 * Always(0x6, 0). Bit k of .kinds is kind k in the table above.
 */
const struct stress_filter stress_filters[STRESS_NFILTERS] = {
	{ "Stress", 0x1f },			/* everything */
	{ "Stress:0x1:4", 0x09 },		/* Info, Error (keywords 0 match any) */
	{ "Stress:0x2:5", 0x1a },		/* Verbose, Error, Always (0x6 & 0x2) */
	{ "Stress:0x4:3", 0x1c },		/* Warn, Error, Always */
	{ "Stress::1", 0x10 },			/* level Critical: only LogAlways */
	{ "Stress:0x3:5", 0x1b },		/* all but Warn */
	{ "Stress:0x8:5,Absent", 0x08 },	/* only the keyword-less Error */
	{ "Stress:0x5:4", 0x1d },		/* all but Verbose (level 5 > 4) */
};

int stress_kind_by_id(uint32_t id)
{
	for (int k = 0; k < STRESS_NKINDS; k++)
		if (stress_kinds[k].id == id)
			return k;
	return -1;
}

int stress_emit(unsigned kind, uint32_t thread, uint64_t seq, const void *data, uint32_t len,
		uint64_t sum)
{
	switch (kind) {
	case 0:
		return stress_ev_info(thread, seq, data, len, sum);
	case 1:
		return stress_ev_verbose(thread, seq, data, len, sum);
	case 2:
		return stress_ev_warn(thread, seq, data, len, sum);
	case 3:
		return stress_ev_error(thread, seq, data, len, sum);
	case 4:
		return stress_ev_always(thread, seq, data, len, sum);
	}
	return -EINVAL;
}

uint64_t stress_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

uint64_t stress_rand(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return stress_mix64(*state);
}

static uint64_t payload_seed(uint32_t thread, uint32_t kind, uint64_t seq)
{
	return stress_mix64(((uint64_t)thread << 40) ^ ((uint64_t)kind << 32) ^
			    stress_mix64(seq + 0x5157));
}

/*
 * Mostly short payloads, with larger ones at regular sequence numbers so that
 * records of every size meet packet boundaries: 0-127 bytes usually, 512-2047
 * every 61st, 4096-12287 every 4099th.
 */
uint32_t stress_payload_len(uint32_t thread, uint32_t kind, uint64_t seq)
{
	uint64_t h = payload_seed(thread, kind, seq);

	if (seq % 4099 == 0)
		return 4096u + (uint32_t)(h % 8192u);
	if (seq % 61 == 0)
		return 512u + (uint32_t)(h % 1536u);
	return (uint32_t)(h % 128u);
}

void stress_payload_fill(uint8_t *buf, uint32_t len, uint32_t thread, uint32_t kind, uint64_t seq)
{
	uint64_t st = payload_seed(thread, kind, seq);
	uint32_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w = stress_rand(&st);

		memcpy(buf + i, &w, 8);
	}
	if (i < len) {
		uint64_t w = stress_rand(&st);

		memcpy(buf + i, &w, len - i);
	}
}

/*
 * Each step is h = mix(h ^ word) with a bijective mix, so changing any single
 * word (or the length, kind, thread or seq) always changes the result.
 */
uint64_t stress_checksum(uint32_t kind, uint32_t thread, uint64_t seq, const void *data,
			 uint32_t len)
{
	const uint8_t *p = data;
	uint64_t h = stress_mix64(0x9e3779b97f4a7c15ull ^ ((uint64_t)kind << 32 | thread));
	uint32_t i = 0;

	h = stress_mix64(h ^ seq);
	h = stress_mix64(h ^ len);
	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = stress_mix64(h ^ w);
	}
	if (i < len) {
		uint64_t w = 0;

		memcpy(&w, p + i, len - i);
		h = stress_mix64(h ^ w ^ ((uint64_t)(len - i) << 56));
	}
	return h;
}

uint64_t stress_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int stress_write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int stress_report(int fd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(line)) {
		/* Keep the line a line: cut it and end it with a newline. */
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	return stress_write_all(fd, line, (size_t)n);
}
