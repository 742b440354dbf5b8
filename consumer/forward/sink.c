// SPDX-License-Identifier: LGPL-2.1-or-later
/* The list of sink kinds and what every sink shares. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"

const struct evr_fwd_sink_ops *const evr_fwd_sink_kinds[] = {
	&evr_fwd_sink_jsonl,
	&evr_fwd_sink_graphite,
	&evr_fwd_sink_journald,
	&evr_fwd_sink_lttng,
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

int evr_fwd_queue_size(struct evr_fwd_sink *s, size_t def, size_t *ret, char *err, size_t errlen)
{
	const char *v = evr_fwd_spec_get(&s->spec, "queue");
	unsigned long long n;
	char *end;

	*ret = def;
	if (!v)
		return 0;
	n = strtoull(v, &end, 10);
	if (end != v && (*end == 'K' || *end == 'k'))
		n <<= 10, end++;
	else if (end != v && (*end == 'M' || *end == 'm'))
		n <<= 20, end++;
	if (end == v || *end || n < 4096 || n > (1ull << 30)) {
		snprintf(err, errlen, "--to %s: queue=%s is not a size from 4K to 1024M", s->spec.text,
			 v);
		return -EINVAL;
	}
	*ret = (size_t)n;
	return 0;
}
