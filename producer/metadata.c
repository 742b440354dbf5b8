// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Event descriptions into session metadata areas.
 *
 * Ordering (<evring/abi.h>, "Metadata area"): a description is appended to a
 * session (evr_shm_meta_append() store-releases meta_head past it) before the
 * session is published, or, for an event registered later, before the masks
 * are recomputed; only then can a writer put a record of that event into the
 * session. So a consumer meeting an unknown event id finds its description
 * below meta_head. An event whose description does not fit a session's area is
 * never enabled in that session: its bit in evr_event_meta.described stays
 * clear and the mask computation ANDs that set in.
 *
 * Packing waits for the first reader (pay for play, docs/protocol.md "What a
 * program pays at start-up"): a program nobody traces registers its providers
 * at every start, and packing each event there ran protobuf-c's code (pages of
 * text faulted in) and two allocations per event for descriptions nobody
 * asks for. Registration leaves evr_event_meta.pb NULL; the first session that
 * names the provider, or the first ListEvents, packs it, under the registry
 * lock like every other use of it. A description that cannot be packed then
 * (no memory) is treated like one that does not fit: not described, never
 * enabled in that session, and packing is tried again by the next reader.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <evring/framing.h>

#include "producer-internal.h"
#include "registry-internal.h"

int evr_meta_event_pack(const struct evr_provider *p, const struct evr_event *ev,
			struct evr_event_meta *ret)
{
	const struct evr_event_desc *desc = ev->desc;
	Evr__EventDesc d = EVR__EVENT_DESC__INIT;
	Evr__FieldDesc *fv = NULL, **fp = NULL;
	uint8_t *data;
	size_t len;
	int err;

	if (desc->nfields) {
		fv = calloc(desc->nfields, sizeof(*fv));
		fp = calloc(desc->nfields, sizeof(*fp));
		if (!fv || !fp) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (uint32_t i = 0; i < desc->nfields; i++) {
		evr__field_desc__init(&fv[i]);
		fv[i].name = (char *)desc->fields[i].name;
		fv[i].type = desc->fields[i].type;
		fp[i] = &fv[i];
	}
	d.rid = ev->rid;
	d.provider = (char *)p->name;
	d.name = (char *)desc->name;
	d.has_id = true;
	d.id = desc->id;
	d.has_level = true;
	d.level = desc->level;
	d.has_opcode = true;
	d.opcode = desc->opcode;
	d.has_keywords = true;
	d.keywords = desc->keywords;
	d.n_fields = desc->nfields;
	d.fields = fp;
	err = evr_pb_pack(&d.base, &data, &len);
	if (err == 0) {
		ret->pb = data;
		ret->pb_len = (uint32_t)len;
	}
out:
	free(fv);
	free(fp);
	return err;
}

int evr_meta_event_packed_locked(const struct evr_provider *p, uint32_t i)
{
	struct evr_provider_priv *pp = p->priv;

	if (pp->meta[i].pb)
		return 0;
	return evr_meta_event_pack(p, pp->events[i], &pp->meta[i]);
}

/* Append the description of event @i of @p to @s; set or clear its bit. */
static void describe_one(struct evr_session *s, const struct evr_provider *p, uint32_t i)
{
	struct evr_event_meta *m = &p->priv->meta[i];
	uint64_t bit = 1ull << s->slot;

	if (evr_meta_event_packed_locked(p, i) == 0 &&
	    evr_shm_meta_append(s->shm, EVR_META_EVENT, m->pb, m->pb_len) == 0)
		m->described |= bit;
	else
		m->described &= ~bit;	/* -ENOSPC (counted in meta_dropped), -ENOMEM */
}

void evr_meta_describe_session_locked(struct evr_session *s)
{
	uint64_t bit = 1ull << s->slot;

	for (struct evr_provider *p = evr_registry_providers_locked(); p; p = p->priv->next) {
		struct evr_provider_priv *pp = p->priv;
		bool named = evr_provider_spec_list_find(s->cfg.providers, p->name) != NULL;

		for (uint32_t i = 0; i < pp->nr; i++) {
			if (named)
				describe_one(s, p, i);
			else
				pp->meta[i].described &= ~bit;	/* slot reused: never enabled */
		}
	}
}

void evr_meta_describe_events_locked(struct evr_provider *p, uint32_t first)
{
	const struct evr_session_table *t = evr_session_table_get_rcu();
	struct evr_provider_priv *pp = p->priv;

	for (uint64_t live = t->live; live; live &= live - 1) {
		struct evr_session *s = t->slot[__builtin_ctzll(live)];

		if (!evr_provider_spec_list_find(s->cfg.providers, p->name))
			continue;
		for (uint32_t i = first; i < pp->nr; i++)
			describe_one(s, p, i);
	}
}
