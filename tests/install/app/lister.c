/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Links libevring-consumer: parses a duration with its API and prints it. */
#include <stdio.h>

#include <evring/consumer.h>

int main(void)
{
	uint64_t ns = 0;
	int r = evr_duration_parse("1500ms", &ns);

	printf("%d %llu\n", r, (unsigned long long)ns);
	return r < 0;
}
