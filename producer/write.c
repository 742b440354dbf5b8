// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The write path. Callers have already seen a nonzero event mask (inline check).
 * Here: RCU read-side lock (liburcu-bp, inlined with _LGPL_SOURCE: a TLS counter
 * and a compiler barrier when sys_membarrier is available), load the session
 * table, re-read the mask inside the critical section (a mask bit read before it
 * could belong to a session slot that has since been reused), then one write per
 * interested session into its ring for this CPU: in per-CPU mode an rseq
 * critical section (<evring/ring-rseq.h>), otherwise the try-lock. The timestamp,
 * thread id and the record's header are computed once for all sessions. No lock
 * is waited on, nothing is allocated, no system call is made.
 */
#define _LGPL_SOURCE
#include <urcu-bp.h>

#include "registry-internal.h"
#include "write-internal.h"

static inline bool builtin_wants(const struct evr_provider_priv *pp, unsigned int slot,
				 uint8_t level, uint64_t keywords)
{
	return evr_level_match((uint8_t)atomic_load_explicit(&pp->sess_level[slot],
							     memory_order_relaxed), level) &&
	       evr_keywords_match(atomic_load_explicit(&pp->sess_keywords[slot],
						       memory_order_relaxed), keywords);
}

/* @filter: for built-in events, the level and keywords of this write. */
static inline __attribute__((always_inline)) int
write_rcu(struct evr_event *ev, const void *payload, uint32_t len, bool filter, uint8_t level,
	  uint64_t keywords)
{
	struct evr_session_table *t = evr_session_table_get_rcu();
	uint64_t mask = atomic_load_explicit(&ev->mask, memory_order_relaxed) & t->live;
	uint32_t cpu = UINT32_MAX;
	struct evr_rseq_rec rec;
	struct rseq *rs;

	if (!mask)
		return 0;
	evr_rseq_rec_init(&rec, ev->rid, evr_clock_now(), evr_thread_id(), payload, len);
	rs = evr_rseq_area();
	do {
		unsigned int i = (unsigned int)__builtin_ctzll(mask);
		struct evr_session *s = t->slot[i];

		mask &= mask - 1;
		if (filter && !builtin_wants(ev->provider->priv, i, level, keywords))
			continue;
		evr_session_write_rec_rcu(s, rs, &rec, &cpu);
	} while (mask);
	return 0;
}

int evr_event_write(struct evr_event *ev, const void *payload, uint32_t len)
{
	int ret;

	if (EVR_UNLIKELY(len > EVR_MAX_PAYLOAD))
		return evr_event_write_too_big(ev);
	urcu_bp_read_lock();
	ret = write_rcu(ev, payload, len, false, 0, 0);
	urcu_bp_read_unlock();
	return ret;
}

int evr_event_write_too_big(struct evr_event *ev)
{
	struct evr_session_table *t;
	uint64_t mask;
	uint32_t cpu = evr_cpu_current();

	urcu_bp_read_lock();
	t = evr_session_table_get_rcu();
	mask = atomic_load_explicit(&ev->mask, memory_order_relaxed) & t->live;
	for (; mask; mask &= mask - 1)
		evr_session_count_lost_rcu(t->slot[__builtin_ctzll(mask)], cpu);
	urcu_bp_read_unlock();
	return -EMSGSIZE;
}

static uint64_t encoded_size(const struct evr_event_desc *d, const union evr_value *v)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < d->nfields; i++) {
		switch (d->fields[i].type) {
		case EVR_TYPE_STR:
		case EVR_TYPE_JSON:
			n += 4 + (uint64_t)evr__strlen(v[i].s);
			break;
		case EVR_TYPE_BYTES:
			n += 4 + (uint64_t)(v[i].b.data ? v[i].b.len : 0);
			break;
		default:
			n += evr_type_size(d->fields[i].type);
		}
	}
	return n;
}

static void encode(const struct evr_event_desc *d, const union evr_value *v, uint8_t *p)
{
	for (uint32_t i = 0; i < d->nfields; i++) {
		uint32_t t = d->fields[i].type;

		switch (t) {
		case EVR_TYPE_STR:
		case EVR_TYPE_JSON:
			evr__put_var(&p, v[i].s, evr__strlen(v[i].s));
			break;
		case EVR_TYPE_BYTES:
			evr__put_var(&p, v[i].b.data, v[i].b.data ? v[i].b.len : 0);
			break;
		case EVR_TYPE_F32: {
			float f = (float)v[i].f;

			evr__put(&p, &f, 4);
			break;
		}
		case EVR_TYPE_F64:
			evr__put(&p, &v[i].f, 8);
			break;
		case EVR_TYPE_PTR:
			evr__put_u64(&p, (uint64_t)(uintptr_t)v[i].p);
			break;
		case EVR_TYPE_BOOL:
			evr__put_u8(&p, v[i].u ? 1 : 0);
			break;
		default:
			/* Integers: the low bytes, little endian. */
			evr__put(&p, &v[i].u, evr_type_size(t));
		}
	}
}

int evr_event_writev(struct evr_event *ev, const union evr_value *values, uint32_t n)
{
	uint64_t len;

	if (!ev || !ev->desc || n != ev->desc->nfields || (n && !values))
		return -EINVAL;
	if (!evr_event_enabled(ev))
		return 0;
	len = encoded_size(ev->desc, values);
	if (len > EVR_MAX_PAYLOAD)
		return evr_event_write_too_big(ev);
	uint8_t buf[len ? len : 1];

	encode(ev->desc, values, buf);
	return evr_event_write(ev, buf, (uint32_t)len);
}

/*
 * Dynamic and Json events: encoded by their built-in schema (name, keywords,
 * level, then @last: the data or the JSON document), filtered per session by
 * this write's own level and keywords.
 */
static int builtin_write(struct evr_provider *p, struct evr_event *ev, const char *name,
			 uint8_t level, uint64_t keywords, union evr_value last)
{
	const union evr_value v[4] = { { .s = name }, { .u = keywords }, { .u = level }, last };
	uint64_t len;
	int ret;

	if (!evr_provider_enabled(p, level, keywords))
		return 0;
	len = encoded_size(ev->desc, v);
	if (len > EVR_MAX_PAYLOAD)
		return evr_event_write_too_big(ev);
	uint8_t buf[len];

	encode(ev->desc, v, buf);
	urcu_bp_read_lock();
	ret = write_rcu(ev, buf, (uint32_t)len, true, level, keywords);
	urcu_bp_read_unlock();
	return ret;
}

int evr_dynamic_write(struct evr_provider *p, const char *name, uint8_t level,
		      uint64_t keywords, const void *data, uint32_t len)
{
	struct evr_provider_priv *pp;

	if (!p || !name)
		return -EINVAL;
	pp = p->priv;
	if (!pp)
		return -EINVAL;
	return builtin_write(p, pp->dynamic_ev, name, level, keywords,
			     (union evr_value){ .b = { data, len } });
}

int evr_json_write(struct evr_provider *p, const char *name, uint8_t level, uint64_t keywords,
		   const char *json)
{
	struct evr_provider_priv *pp;

	if (!p || !name || !json)
		return -EINVAL;
	pp = p->priv;
	if (!pp)
		return -EINVAL;
	return builtin_write(p, pp->json_ev, name, level, keywords, (union evr_value){ .s = json });
}
