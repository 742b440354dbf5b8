// SPDX-License-Identifier: LGPL-2.1-or-later
/* The list of sink kinds and what every sink shares. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "forward.h"

const struct evr_fwd_sink_ops *const evr_fwd_sink_kinds[] = {
	&evr_fwd_sink_jsonl,
	NULL,
};

void evr_fwd_sink_fail(struct evr_fwd_sink *s, int err, const char *fmt, ...)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	va_list ap;

	/* Only the first failure is told: the one that ended the sink. */
	pthread_mutex_lock(&lock);
	if (atomic_load_explicit(&s->error, memory_order_relaxed) == 0) {
		va_start(ap, fmt);
		vsnprintf(s->why, sizeof(s->why), fmt, ap);
		va_end(ap);
		/* Pairs with the acquire load of error before why is read. */
		atomic_store_explicit(&s->error, err < 0 ? err : -EIO, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
}

int evr_fwd_level_priority(uint8_t level)
{
	static const int prio[] = { 5, 2, 3, 4, 6, 7 };

	return level < 6 ? prio[level] : 7;
}

const char *evr_fwd_level_word(uint8_t level)
{
	static const char *const words[] = { "logalways", "critical", "error", "warning", "info",
					     "verbose" };

	return level < 6 ? words[level] : "verbose";
}
