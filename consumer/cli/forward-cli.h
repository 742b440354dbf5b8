/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* evring forward: the sinks as the command handles them (forward-sinks.c), for forward.c. */
#ifndef EVR_CLI_FORWARD_H
#define EVR_CLI_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

struct evr_fwd_sink;

/*
 * evr_fwd_sinks_parse() - each of the @nto specs @to into @sinks[*@n...], its
 * filter and its own keys checked, creating nothing. @many: the forwarder may
 * have several processes (struct evr_fwd_sink.many). *@n counts the sinks to
 * finish (evr_fwd_filter_fini(), evr_fwd_spec_fini()) even on failure.
 * Return: 0, or -EINVAL (a usage error) after printing it.
 */
int evr_fwd_sinks_parse(struct evr_fwd_sink *sinks, uint32_t *n, const char *const *to,
			uint32_t nto, bool many);

/* Open each of the @n sinks. Return: 0, or -errno (never -EINVAL) after printing why. */
int evr_fwd_sinks_open(struct evr_fwd_sink *sinks, uint32_t n);

/* Close the open ones: what they queued is delivered until @deadline_ns (CLOCK_MONOTONIC). */
void evr_fwd_sinks_close(struct evr_fwd_sink *sinks, uint32_t n, uint64_t deadline_ns);

/* Has every one of the @n sinks failed for good? */
bool evr_fwd_sinks_failed(struct evr_fwd_sink *sinks, uint32_t n);

/* The summary line of @s (sent, dropped and why, filtered), and its failure if it failed. */
void evr_fwd_sink_summary(struct evr_fwd_sink *s);

#endif /* EVR_CLI_FORWARD_H */
