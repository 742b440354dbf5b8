// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The metadata registry: providers, their events, registry ids, and the
 * per-event session masks that the hot path reads. Everything here runs under
 * evr_registry_lock; the write path only reads event masks (relaxed) and the
 * per-session filters of dynamic events (relaxed atomics).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <evring/ring-rseq.h>

#include "producer-internal.h"
#include "heap-internal.h"
#include "registry-internal.h"
#include "stack-internal.h"

pthread_mutex_t evr_registry_lock = PTHREAD_MUTEX_INITIALIZER;
__thread uint32_t evr_tls_tid __attribute__((tls_model("initial-exec")));

static struct evr_provider *providers;		/* list through priv->next */
static struct evr_event **by_rid;		/* index: registry id; [0] unused */
static uint32_t nr_rid = 1, cap_rid;

static const struct evr_field_desc dynamic_fields[] = {
	{ "name", EVR_TYPE_STR }, { "keywords", EVR_TYPE_U64 }, { "level", EVR_TYPE_U8 },
	{ "data", EVR_TYPE_BYTES }, { NULL, 0 },
};
static const struct evr_field_desc json_fields[] = {
	{ "name", EVR_TYPE_STR }, { "keywords", EVR_TYPE_U64 }, { "level", EVR_TYPE_U8 },
	{ "json", EVR_TYPE_JSON }, { NULL, 0 },
};
/* Built-ins match every session that names the provider; each write is then
 * filtered by its own level and keywords (evr_dynamic_write()). */
static const struct evr_event_desc dynamic_desc = {
	.name = "Dynamic", .id = 0xfffffff0u, .level = EVR_LEVEL_LOGALWAYS,
	.nfields = 4, .fields = dynamic_fields,
};
static const struct evr_event_desc json_desc = {
	.name = "Json", .id = 0xfffffff1u, .level = EVR_LEVEL_LOGALWAYS,
	.nfields = 4, .fields = json_fields,
};

static const struct {
	const char *name;
	uint32_t size;
} type_info[EVR_TYPE_MAX_] = {
	[EVR_TYPE_U8] = { "u8", 1 },	[EVR_TYPE_U16] = { "u16", 2 },
	[EVR_TYPE_U32] = { "u32", 4 },	[EVR_TYPE_U64] = { "u64", 8 },
	[EVR_TYPE_I8] = { "i8", 1 },	[EVR_TYPE_I16] = { "i16", 2 },
	[EVR_TYPE_I32] = { "i32", 4 },	[EVR_TYPE_I64] = { "i64", 8 },
	[EVR_TYPE_F32] = { "f32", 4 },	[EVR_TYPE_F64] = { "f64", 8 },
	[EVR_TYPE_BOOL] = { "bool", 1 }, [EVR_TYPE_PTR] = { "ptr", 8 },
	[EVR_TYPE_STR] = { "str", 0 },	[EVR_TYPE_JSON] = { "json", 0 },
	[EVR_TYPE_BYTES] = { "bytes", 0 },
};

uint32_t evr_type_size(uint32_t type)
{
	return type > 0 && type < EVR_TYPE_MAX_ ? type_info[type].size : 0;
}

const char *evr_type_name(uint32_t type)
{
	return type > 0 && type < EVR_TYPE_MAX_ ? type_info[type].name : NULL;
}

static void reset_tid_in_child(void)
{
	evr_tls_tid = 0;
	evr_stack_atfork_child();
}

__attribute__((constructor)) static void evr_library_init(void)
{
	evr_clock_init();
	evr_stack_init();
	evr_memory_init();
	pthread_atfork(evr_stack_atfork_prepare, NULL, reset_tid_in_child);
	/* After the clock: a reverse-connected consumer may start a session before
	 * this returns (EVR_CONNECT). */
	evr_agent_library_init();
}

static int rid_assign_locked(struct evr_event *ev)
{
	if (nr_rid >= cap_rid) {
		uint32_t cap = cap_rid ? cap_rid * 2 : 256;
		struct evr_event **n = realloc(by_rid, sizeof(*n) * cap);

		if (!n)
			return -ENOMEM;
		by_rid = n;
		cap_rid = cap;
	}
	by_rid[nr_rid] = ev;
	ev->rid = nr_rid++;
	return 0;
}

static int provider_add_event_locked(struct evr_provider *p, struct evr_event *ev)
{
	struct evr_provider_priv *pp = p->priv;
	int ret;

	if (pp->nr == pp->cap) {
		uint32_t cap = pp->cap ? pp->cap * 2 : 16;
		struct evr_event **n = realloc(pp->events, sizeof(*n) * cap);
		struct evr_event_meta *m;

		if (!n)
			return -ENOMEM;
		pp->events = n;
		m = realloc(pp->meta, sizeof(*m) * cap);
		if (!m)
			return -ENOMEM;
		pp->meta = m;
		pp->cap = cap;
	}
	ret = rid_assign_locked(ev);
	if (ret < 0)
		return ret;
	ret = evr_meta_event_pack(p, ev, &pp->meta[pp->nr]);
	if (ret < 0) {
		by_rid[ev->rid] = NULL;
		return ret;
	}
	ev->provider = p;
	pp->events[pp->nr++] = ev;
	return 0;
}

static struct evr_event *builtin_new(const struct evr_event_desc *desc)
{
	struct evr_event *ev = calloc(1, sizeof(*ev));

	if (ev) {
		ev->desc = desc;
		ev->flags = EVR_EVENT_F_BUILTIN | EVR_EVENT_F_OWNED;
	}
	return ev;
}

static void event_free(struct evr_event *ev)
{
	if (!ev || !(ev->flags & EVR_EVENT_F_OWNED))
		return;
	if (!(ev->flags & EVR_EVENT_F_BUILTIN))
		free((void *)ev->desc);	/* one block with its fields and strings */
	free(ev);
}

static void provider_priv_free(struct evr_provider_priv *pp)
{
	if (!pp)
		return;
	for (uint32_t i = 0; i < pp->nr; i++) {
		event_free(pp->events[i]);
		free(pp->meta[i].pb);
	}
	free(pp->events);
	free(pp->meta);
	free(pp);
}

static void provider_priv_free_cb(void *p)
{
	provider_priv_free(p);
}

int evr_provider_register(struct evr_provider *p)
{
	struct evr_provider_priv *pp;
	struct evr_event *dyn, *json;
	int ret = 0;

	if (!p || !p->name || !*p->name)
		return -EINVAL;
	pthread_mutex_lock(&evr_registry_lock);
	if (p->priv)
		goto out;
	for (struct evr_provider *q = providers; q; q = q->priv->next) {
		if (strcmp(q->name, p->name) == 0) {
			ret = -EEXIST;
			goto out;
		}
	}
	pp = calloc(1, sizeof(*pp));
	dyn = builtin_new(&dynamic_desc);
	json = builtin_new(&json_desc);
	if (!pp || !dyn || !json) {
		free(pp);
		free(dyn);
		free(json);
		ret = -ENOMEM;
		goto out;
	}
	p->priv = pp;
	pp->dynamic_ev = dyn;
	pp->json_ev = json;
	ret = provider_add_event_locked(p, dyn);
	if (ret == 0)
		ret = provider_add_event_locked(p, json);
	for (struct evr_event *const *e = p->events; ret == 0 && e && *e; e++)
		ret = provider_add_event_locked(p, *e);
	if (ret < 0) {
		for (uint32_t i = 0; i < pp->nr; i++)
			by_rid[pp->events[i]->rid] = NULL;
		p->priv = NULL;
		provider_priv_free(pp);
		goto out;
	}
	pp->next = providers;
	providers = p;
	/* Descriptions first: a session may receive an event once its mask is set. */
	evr_meta_describe_events_locked(p, 0);
	evr_registry_recompute_locked(evr_session_table_get_rcu());
out:
	pthread_mutex_unlock(&evr_registry_lock);
	return ret;
}

void evr_provider_unregister(struct evr_provider *p)
{
	struct evr_provider_priv *pp;

	if (!p)
		return;
	pthread_mutex_lock(&evr_registry_lock);
	pp = p->priv;
	if (!pp) {
		pthread_mutex_unlock(&evr_registry_lock);
		return;
	}
	for (struct evr_provider **q = &providers; *q; q = &(*q)->priv->next) {
		if (*q == p) {
			*q = pp->next;
			break;
		}
	}
	for (uint32_t i = 0; i < pp->nr; i++) {
		atomic_store_explicit(&pp->events[i]->percpu, NULL, memory_order_relaxed);
		atomic_store_explicit(&pp->events[i]->mask, 0, memory_order_relaxed);
		by_rid[pp->events[i]->rid] = NULL;
	}
	atomic_store_explicit(&p->mask, 0, memory_order_relaxed);
	p->priv = NULL;
	pthread_mutex_unlock(&evr_registry_lock);
	/* Writers may still be inside evr_event_write() on these events. */
	evr_session_table_synchronize();
	evr_reclaim_after_grace_period(pp, provider_priv_free_cb);
}

int evr_event_define(struct evr_provider *p, const struct evr_event_desc *desc,
		     struct evr_event **ret)
{
	struct evr_event_desc *d;
	struct evr_field_desc *f;
	struct evr_event *ev;
	size_t size, nlen;
	char *s;
	int err;

	if (!p || !desc || !desc->name || !ret || desc->nfields > 64 ||
	    (desc->nfields && !desc->fields) || desc->level > EVR_LEVEL_VERBOSE)
		return -EINVAL;
	nlen = strlen(desc->name) + 1;
	size = sizeof(*d) + sizeof(*f) * (desc->nfields + 1) + nlen;
	for (uint32_t i = 0; i < desc->nfields; i++) {
		if (!desc->fields[i].name || !evr_type_name(desc->fields[i].type))
			return -EINVAL;
		size += strlen(desc->fields[i].name) + 1;
	}
	/* One block: desc, fields, then the strings. */
	d = calloc(1, size);
	ev = calloc(1, sizeof(*ev));
	if (!d || !ev) {
		free(d);
		free(ev);
		return -ENOMEM;
	}
	*d = *desc;
	f = (struct evr_field_desc *)(d + 1);
	s = (char *)(f + desc->nfields + 1);
	memcpy(s, desc->name, nlen);
	d->name = s;
	s += nlen;
	for (uint32_t i = 0; i < desc->nfields; i++) {
		size_t l = strlen(desc->fields[i].name) + 1;

		memcpy(s, desc->fields[i].name, l);
		f[i].name = s;
		f[i].type = desc->fields[i].type;
		s += l;
	}
	d->fields = f;
	ev->desc = d;
	ev->flags = EVR_EVENT_F_OWNED;

	pthread_mutex_lock(&evr_registry_lock);
	if (!p->priv) {
		err = -EINVAL;
	} else {
		err = provider_add_event_locked(p, ev);
		if (err == 0) {
			evr_meta_describe_events_locked(p, p->priv->nr - 1);
			evr_registry_recompute_locked(evr_session_table_get_rcu());
		}
	}
	pthread_mutex_unlock(&evr_registry_lock);
	if (err < 0) {
		event_free(ev);
		return err;
	}
	*ret = ev;
	return 0;
}

const struct evr_event *evr_event_by_rid(uint32_t rid)
{
	const struct evr_event *ev = NULL;

	pthread_mutex_lock(&evr_registry_lock);
	if (rid > 0 && rid < nr_rid)
		ev = by_rid[rid];
	pthread_mutex_unlock(&evr_registry_lock);
	return ev;
}

/*
 * The write path's shortcut for an event that session mask @m of table @t
 * enables: the rings of the one session that wants it if that session is
 * per-CPU, else NULL (evr_event.percpu). Built-in events filter per write and
 * never take it. Whoever removes the session clears it before the grace period
 * that precedes freeing the rings (evr_session_stop(), evr_provider_unregister()).
 */
static struct evr_ring_writer *event_percpu_rings(const struct evr_event *ev,
						  const struct evr_session_table *t, uint64_t m,
						  uint64_t stack_slots)
{
	const struct evr_session *s;

	/* A session that wants stacks captures them under the RCU path (write_rcu()). */
	if (!m || (m & (m - 1)) || (ev->flags & EVR_EVENT_F_BUILTIN) || (m & stack_slots))
		return NULL;
	s = t->slot[__builtin_ctzll(m)];
	/* The fast path reads it inside rseq critical sections: only with their fence. */
	return s->nr_rings >= evr_ring_percpu_min && evr_rseq_fence_ok ? s->rings : NULL;
}

static void provider_recompute_locked(struct evr_provider *p, const struct evr_session_table *t)
{
	struct evr_provider_priv *pp = p->priv;
	const struct evr_provider_spec *spec[EVR_MAX_SESSIONS] = { 0 };
	const struct evr_provider_spec *newest = NULL;
	uint64_t pmask = 0, kw = 0, newest_serial = 0, stack_slots = 0;
	uint32_t level = 0;
	bool changed;

	for (uint64_t live = t->live; live; live &= live - 1) {
		unsigned int i = (unsigned int)__builtin_ctzll(live);
		const struct evr_session *s = t->slot[i];

		spec[i] = evr_provider_spec_list_find(s->cfg.providers, p->name);
		/* Heap patches the process when on: by its name only, never by "*". */
		if (spec[i] && evr_heap_provider_by_name_only(p) && strcmp(spec[i]->name, p->name))
			spec[i] = NULL;
		if (!spec[i])
			continue;
		pmask |= 1ull << i;
		kw |= spec[i]->keywords;
		if (spec[i]->level > level)
			level = spec[i]->level;
		atomic_store_explicit(&pp->sess_keywords[i], spec[i]->keywords,
				      memory_order_relaxed);
		atomic_store_explicit(&pp->sess_level[i], spec[i]->level, memory_order_relaxed);
		{
			/* Checked when the session started: never -EINVAL here. */
			int depth = evr_stack_depth_arg(evr_provider_spec_arg(spec[i], "stacks"),
							s->cfg.stack_depth);

			if (depth > 0)
				stack_slots |= 1ull << i;
			atomic_store_explicit(&pp->sess_stack_depth[i], (uint8_t)(depth > 0 ? depth : 0),
					      memory_order_relaxed);
		}
		if (s->serial >= newest_serial) {
			newest_serial = s->serial;
			newest = spec[i];
		}
	}
	/* Before the masks: a writer that sees a session's bit finds its depth (a write
	 * racing with the start of a session may still go without a stack). */
	atomic_store_explicit(&pp->stack_slots, stack_slots, memory_order_relaxed);
	for (uint32_t e = 0; e < pp->nr; e++) {
		struct evr_event *ev = pp->events[e];
		uint64_t m = 0;

		for (uint64_t b = pmask; b; b &= b - 1) {
			unsigned int i = (unsigned int)__builtin_ctzll(b);

			if ((ev->flags & EVR_EVENT_F_BUILTIN) ||
			    (evr_keywords_match(spec[i]->keywords, ev->desc->keywords) &&
			     evr_level_match(spec[i]->level, ev->desc->level)))
				m |= 1ull << i;
		}
		/* Never enable an event in a session that lacks its description. */
		m &= pp->meta[e].described;
		/* Release: a writer that loads the rings sees them set up. */
		atomic_store_explicit(&ev->percpu, event_percpu_rings(ev, t, m, stack_slots),
				      memory_order_release);
		atomic_store_explicit(&ev->mask, m, memory_order_relaxed);
	}
	changed = pmask != atomic_load_explicit(&p->mask, memory_order_relaxed) ||
		  kw != atomic_load_explicit(&p->keywords, memory_order_relaxed) ||
		  level != atomic_load_explicit(&p->level, memory_order_relaxed);
	atomic_store_explicit(&p->keywords, kw, memory_order_relaxed);
	atomic_store_explicit(&p->level, level, memory_order_relaxed);
	atomic_store_explicit(&p->mask, pmask, memory_order_relaxed);
	if (changed && p->callback)
		p->callback(p, pmask != 0, (uint8_t)level, kw, pmask ? newest : NULL,
			    p->callback_ctx);
}

int evr_stack_depth_arg(const char *value, uint32_t session_depth)
{
	char *end;
	unsigned long v;

	if (!value)
		return (int)session_depth;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || end == value || *end || *value == '-' || v > EVR_STACK_MAX_FRAMES)
		return -EINVAL;
	if (v == 1)
		return (int)(session_depth ? session_depth : EVR_STACK_DEFAULT_DEPTH);
	return (int)v;
}

struct evr_provider *evr_registry_providers_locked(void)
{
	return providers;
}

void evr_registry_recompute_locked(const struct evr_session_table *t)
{
	for (struct evr_provider *p = providers; p; p = p->priv->next)
		provider_recompute_locked(p, t);
}
