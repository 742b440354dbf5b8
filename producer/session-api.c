// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sessions in this process: start (parse, check the limits, create rings, then
 * insert into the session table) and stop (remove from the table, then flush and
 * mark ended). The table and the masks are session-table.c's. The agent that
 * serves consumers attaching by PID drives the same functions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "producer-internal.h"
#include "counters-internal.h"
#include "registry-internal.h"
#include "session-table-internal.h"

#define EVR_DEFAULT_RING_SIZE	(4u << 20)
#define EVR_DEFAULT_PACKET	(64u << 10)

static uint64_t next_serial = 1;

/* Who started each live slot, for ListSessions. Registry lock. */
static struct {
	char *client;			/* NULL: in-process */
	uint32_t pid;
	uint64_t bytes;			/* counted against the limits (agent sessions) */
} owners[EVR_MAX_SESSIONS];

/* Readers and tests get at the session through these accessors only. */
int evr_session_memfd(const struct evr_session *s)
{
	return s ? s->memfd : -EINVAL;
}

int evr_session_doorbell_fd(const struct evr_session *s)
{
	return s ? s->doorbell_fd : -EINVAL;
}

const struct evr_shm_hdr *evr_session_shm(const struct evr_session *s)
{
	return s ? s->shm : NULL;
}

static int err_line(char *errbuf, size_t errlen, int err, const char *msg)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", msg);
	return err;
}

int evr_session_start(const struct evr_session_opts *opts, struct evr_session **ret,
		      char *errbuf, size_t errlen)
{
	/* The agent's sessions got them when their consumer connected. */
	evr_builtin_providers_ensure();
	return evr_session_start_owned(opts, NULL, (uint32_t)getpid(), ret, errbuf, errlen);
}

uint64_t evr_session_bytes_locked(uint32_t slot)
{
	return slot < EVR_MAX_SESSIONS ? owners[slot].bytes : 0;
}

const char *evr_session_client_locked(uint32_t slot, uint32_t *ret_pid)
{
	if (slot >= EVR_MAX_SESSIONS)
		return NULL;
	*ret_pid = owners[slot].pid;
	return owners[slot].client ? owners[slot].client : "in-process";
}

int evr_session_start_owned(const struct evr_session_opts *opts, const char *client,
			    uint32_t client_pid, struct evr_session **ret, char *errbuf,
			    size_t errlen)
{
	char *client_copy = NULL;
	struct evr_session_config cfg = { 0 };
	struct evr_session_table *next, *spare;
	struct evr_clock_calib clock;
	struct evr_session *s = NULL;
	uint64_t bytes = 0;
	uint32_t slot;
	int err;

	if (!opts || !ret)
		return err_line(errbuf, errlen, -EINVAL, "missing session options");
	if (!opts->providers)
		return err_line(errbuf, errlen, -EINVAL, "no providers given");
	if (opts->mode != EVR_MODE_DISCARD && opts->mode != EVR_MODE_OVERWRITE)
		return err_line(errbuf, errlen, -EINVAL, "mode is neither discard nor overwrite");
	if (opts->interval_ms && opts->interval_ms < EVR_COUNTER_INTERVAL_MIN_MS)
		return err_line(errbuf, errlen, -EINVAL, "counter interval is under 10 ms");
	if (opts->stack_depth > EVR_STACK_MAX_FRAMES)
		return err_line(errbuf, errlen, -EINVAL, "stack depth is over 127 frames");
	err = evr_provider_spec_parse(opts->providers, &cfg.providers, errbuf, errlen);
	if (err < 0)
		return err;
	for (size_t i = 0; i < cfg.providers->n; i++) {
		const char *v = evr_provider_spec_arg(&cfg.providers->v[i], "stacks");

		if (evr_stack_depth_arg(v, opts->stack_depth) < 0) {
			if (errbuf && errlen)
				snprintf(errbuf, errlen,
					 "provider %zu \"%s\": stacks=%s: expected 0, 1 or a depth up to 127",
					 i + 1, cfg.providers->v[i].name, v);
			evr_provider_spec_list_free(cfg.providers);
			return -EINVAL;
		}
	}
	cfg.stack_depth = opts->stack_depth;
	cfg.mode = opts->mode;
	if (client) {
		client_copy = strdup(client);
		if (!client_copy) {
			evr_provider_spec_list_free(cfg.providers);
			return err_line(errbuf, errlen, -ENOMEM, "out of memory");
		}
	}
	cfg.nr_rings = evr_session_nr_rings();
	cfg.meta_size = opts->meta_size;
	evr_clock_calibrate(&clock);

	/* Lock order (counters-internal.h): the counters lock first. Held until the
	 * session is published, so its baselines come before its mask bits. */
	if (opts->interval_ms)
		evr_counters_lock();
	pthread_mutex_lock(&evr_registry_lock);
	if (evr_session_table_free_slot_locked(&slot) < 0) {
		err = err_line(errbuf, errlen, -EBUSY,
			       "the process already has 64 sessions, the maximum");
		goto err_unlock;
	}
	/* A consumer's session gets the default ring, or less where that would not
	 * fit under the limits; the program's own gets it whole. */
	cfg.ring_size = opts->ring_size ? opts->ring_size
		      : client ? evr_memory_default_ring_locked(cfg.nr_rings)
		      : EVR_DEFAULT_RING_SIZE;
	cfg.packet_size = opts->packet_size;
	if (!cfg.packet_size) {
		cfg.packet_size = EVR_DEFAULT_PACKET;
		while (cfg.packet_size > EVR_PACKET_SIZE_MIN &&
		       cfg.ring_size < (uint64_t)cfg.packet_size * 16)
			cfg.packet_size /= 2;
	}
	/* Before anything is allocated: a session over the limits is refused. */
	if (client) {
		err = evr_memory_admit_locked(cfg.nr_rings, cfg.ring_size, &bytes, errbuf, errlen);
		if (err < 0)
			goto err_unlock;
	}
	/* Two tables: the one published now, and the one evr_session_stop() will
	 * publish, allocated here so that stopping can never fail. */
	next = malloc(sizeof(*next));
	spare = malloc(sizeof(*spare));
	if (!next || !spare) {
		free(next);
		free(spare);
		err = err_line(errbuf, errlen, -ENOMEM, "out of memory");
		goto err_release;
	}
	err = evr_session_create(&cfg, slot, next_serial++, &clock, &s, errbuf, errlen);
	if (err < 0) {
		free(next);
		free(spare);
		goto err_release;
	}
	s->stop_table = spare;
	cfg.providers = NULL;	/* owned by s now */
	/* Before publishing: a value recorded once a provider shows the session's
	 * bit must be in one of its intervals, not in its baselines. */
	err = evr_counters_session_begin_locked(s, opts->interval_ms);
	if (err < 0) {
		evr_session_destroy(s);	/* never published: frees spare too */
		err = err_line(errbuf, errlen, err, "cannot start the counters timer");
		goto err_release;
	}
	/* Descriptions before anything can be enabled (see metadata.c). */
	evr_meta_describe_session_locked(s);
	owners[slot].client = client_copy;
	owners[slot].pid = client_pid;
	owners[slot].bytes = bytes;
	evr_session_table_insert_locked(s, next);
	pthread_mutex_unlock(&evr_registry_lock);
	if (opts->interval_ms)
		evr_counters_unlock();
	/* The agent backs its sessions a slice at a time (agent.c); ours now. Then
	 * the agent is told: it writes each ring's pages ahead of its writers. */
	if (!client) {
		evr_memory_populate_all(s);
		evr_agent_kick();
	}
	*ret = s;
	return 0;

err_release:
	evr_memory_release_locked(bytes);
err_unlock:
	pthread_mutex_unlock(&evr_registry_lock);
	if (opts->interval_ms)
		evr_counters_unlock();
	evr_provider_spec_list_free(cfg.providers);
	free(client_copy);
	return err;
}

void evr_session_stop(struct evr_session *s)
{
	if (!s)
		return;
	/* First, without the registry lock (lock order in counters-internal.h). */
	evr_counters_session_end(s);
	pthread_mutex_lock(&evr_registry_lock);
	if (!evr_session_table_remove_locked(s)) {
		pthread_mutex_unlock(&evr_registry_lock);
		return;		/* already stopped */
	}
	free(owners[s->slot].client);
	owners[s->slot].client = NULL;
	evr_memory_release_locked(owners[s->slot].bytes);
	owners[s->slot].bytes = 0;
	/* After the grace period of the removal: the rings are ours alone. */
	evr_session_flush_and_end(s, evr_clock_now());
	pthread_mutex_unlock(&evr_registry_lock);
}

void evr_sessions_reset_in_child_locked(void)
{
	for (uint32_t i = 0; i < EVR_MAX_SESSIONS; i++) {
		free(owners[i].client);
		owners[i].client = NULL;
		evr_memory_release_locked(owners[i].bytes);
		owners[i].bytes = 0;
	}
	evr_session_table_reset_in_child_locked();
}

void evr_session_free(struct evr_session *s)
{
	if (!s)
		return;
	evr_session_stop(s);
	evr_session_destroy(s);
}

int evr_session_reader_new(struct evr_session *s, uint32_t flags, struct evr_reader **ret)
{
	if (!s || !ret)
		return -EINVAL;
	/* A reader of a session started in this process is that session's own:
	 * nothing written since the start is history to it. */
	return evr_reader_new(s->shm, s->doorbell_fd, flags | EVR_READER_FROM_START, ret);
}
