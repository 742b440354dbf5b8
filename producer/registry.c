// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The metadata registry: providers, their events and registry ids. Everything
 * here runs under evr_registry_lock. The per-event session masks that the hot
 * path reads are computed from the session table by session-table.c, which
 * this calls whenever a provider or an event is added.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "producer-internal.h"
#include "registry-internal.h"
#include "session-table-internal.h"
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
		/* 32 to start: the first provider's events, and the first page of
		 * malloc's heap holds it with the provider's own blocks (256 took
		 * 2 KiB and a page more at every start; docs/protocol.md). */
		uint32_t cap = cap_rid ? cap_rid * 2 : 32;
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
	/* Packed by its first reader (metadata.c): not at every start of a program
	 * nobody traces. */
	pp->meta[pp->nr] = (struct evr_event_meta){ .pb = NULL };
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
	evr_session_table_recompute_locked();
out:
	pthread_mutex_unlock(&evr_registry_lock);
	return ret;
}

void evr_provider_unregister(struct evr_provider *p)
{
	struct evr_provider_priv *pp;
	bool enabled;

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
	enabled = pp->ever_enabled;
	pthread_mutex_unlock(&evr_registry_lock);
	/*
	 * Writers may still be inside evr_event_write() on these events, if a
	 * session ever enabled them. If none did, no writer got past the inline
	 * mask check into a read-side section (every way in checks a mask first),
	 * so there is nothing to wait for: a program nobody traced exits without a
	 * grace period (a membarrier, liburcu's locks and signal masking) per
	 * provider its destructors unregister (docs/protocol.md, "What a program
	 * pays at start-up").
	 */
	if (enabled)
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
			evr_session_table_recompute_locked();
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
