// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The schema set: registry id -> event description, fed with packed
 * evr.EventDesc messages from untrusted sources (a live session's metadata
 * area, ListEvents replies, trace files).
 *
 * Each description is copied into one allocation (event, fields, strings), so a
 * pointer handed out stays valid until the set is freed, even after a later
 * description of the same rid replaced it: replaced ones are kept on a list.
 * Lookup is an open-addressing hash on rid, because rids from a file or a
 * hostile producer may be anything, not the small dense numbers a healthy
 * producer assigns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <evring/framing.h>
#include <evring/schema.h>

struct schema_block {
	struct schema_block *next_retired;
	struct evr_schema_event ev;
	/* fields, then the strings */
};

struct evr_schema_set {
	struct schema_block **order;	/* current description of each rid, first-add order */
	uint32_t n, cap;
	uint32_t *slots;		/* hash: index into order + 1, 0 empty */
	uint32_t nslots;		/* power of two, > 2 * n */
	struct schema_block *retired;	/* replaced descriptions */
};

static const char *const type_names[EVR_FT_MAX_] = {
	[EVR_FT_U8] = "u8",	[EVR_FT_U16] = "u16",	[EVR_FT_U32] = "u32",
	[EVR_FT_U64] = "u64",	[EVR_FT_I8] = "i8",	[EVR_FT_I16] = "i16",
	[EVR_FT_I32] = "i32",	[EVR_FT_I64] = "i64",	[EVR_FT_F32] = "f32",
	[EVR_FT_F64] = "f64",	[EVR_FT_BOOL] = "bool", [EVR_FT_PTR] = "ptr",
	[EVR_FT_STR] = "str",	[EVR_FT_JSON] = "json", [EVR_FT_BYTES] = "bytes",
};

const char *evr_field_type_name(uint32_t type)
{
	return type > 0 && type < EVR_FT_MAX_ ? type_names[type] : NULL;
}

int evr_schema_set_new(struct evr_schema_set **ret)
{
	struct evr_schema_set *s;

	if (!ret)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

void evr_schema_set_free(struct evr_schema_set *s)
{
	struct schema_block *b, *next;

	if (!s)
		return;
	for (uint32_t i = 0; i < s->n; i++)
		free(s->order[i]);
	for (b = s->retired; b; b = next) {
		next = b->next_retired;
		free(b);
	}
	free(s->order);
	free(s->slots);
	free(s);
}

static uint32_t rid_hash(uint32_t rid)
{
	/* Fibonacci hashing: sequential rids spread over the table. */
	return rid * 2654435769u;
}

/* Index into s->order of @rid, or UINT32_MAX. */
static uint32_t find(const struct evr_schema_set *s, uint32_t rid)
{
	uint32_t mask, i;

	if (!s->nslots)
		return UINT32_MAX;
	mask = s->nslots - 1;
	for (i = rid_hash(rid) & mask;; i = (i + 1) & mask) {
		uint32_t v = s->slots[i];

		if (!v)
			return UINT32_MAX;
		if (s->order[v - 1]->ev.rid == rid)
			return v - 1;
	}
}

static void slots_insert(uint32_t *slots, uint32_t nslots, uint32_t rid, uint32_t idx)
{
	uint32_t mask = nslots - 1;
	uint32_t i;

	for (i = rid_hash(rid) & mask; slots[i]; i = (i + 1) & mask)
		;
	slots[i] = idx + 1;
}

/* Room for one more rid in order[] and the hash table. */
static int reserve(struct evr_schema_set *s)
{
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 64;
		struct schema_block **o;

		if (cap < s->cap)
			return -ENOMEM;
		o = realloc(s->order, sizeof(*o) * cap);
		if (!o)
			return -ENOMEM;
		s->order = o;
		s->cap = cap;
	}
	if ((uint64_t)(s->n + 1) * 2 >= s->nslots) {
		uint32_t nslots = s->nslots ? s->nslots * 2 : 128;
		uint32_t *slots;

		if (nslots < s->nslots)
			return -ENOMEM;
		slots = calloc(nslots, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (uint32_t i = 0; i < s->n; i++)
			slots_insert(slots, nslots, s->order[i]->ev.rid, i);
		free(s->slots);
		s->slots = slots;
		s->nslots = nslots;
	}
	return 0;
}

static bool name_ok(const char *n)
{
	return n && *n;
}

/* Copy a validated EventDesc into one block. */
static struct schema_block *block_from_pb(const Evr__EventDesc *d)
{
	size_t size, plen, nlen;
	struct evr_schema_field *f;
	struct schema_block *b;
	char *p;

	plen = strlen(d->provider) + 1;
	nlen = strlen(d->name) + 1;
	size = sizeof(*b) + sizeof(*f) * d->n_fields + plen + nlen;
	for (size_t i = 0; i < d->n_fields; i++)
		size += strlen(d->fields[i]->name) + 1;
	b = calloc(1, size);
	if (!b)
		return NULL;
	f = (struct evr_schema_field *)(b + 1);
	p = (char *)(f + d->n_fields);
	b->ev.rid = d->rid;
	b->ev.id = d->has_id ? d->id : 0;
	b->ev.level = d->has_level ? (uint8_t)d->level : 0;
	b->ev.opcode = d->has_opcode ? (uint8_t)d->opcode : 0;
	b->ev.keywords = d->has_keywords ? d->keywords : 0;
	b->ev.nfields = (uint32_t)d->n_fields;
	b->ev.fields = d->n_fields ? f : NULL;
	memcpy(p, d->provider, plen);
	b->ev.provider = p;
	p += plen;
	memcpy(p, d->name, nlen);
	b->ev.name = p;
	p += nlen;
	for (size_t i = 0; i < d->n_fields; i++) {
		size_t l = strlen(d->fields[i]->name) + 1;

		memcpy(p, d->fields[i]->name, l);
		f[i].name = p;
		f[i].type = d->fields[i]->type;
		p += l;
	}
	return b;
}

static bool desc_valid(const Evr__EventDesc *d)
{
	if (!name_ok(d->provider) || !name_ok(d->name) || d->n_fields > EVR_SCHEMA_MAX_FIELDS)
		return false;
	if ((d->has_level && d->level > UINT8_MAX) || (d->has_opcode && d->opcode > UINT8_MAX))
		return false;
	for (size_t i = 0; i < d->n_fields; i++) {
		if (!d->fields[i] || !name_ok(d->fields[i]->name) ||
		    !evr_field_type_name(d->fields[i]->type))
			return false;
	}
	return true;
}

int evr_schema_set_add_pb(struct evr_schema_set *s, const void *data, size_t len)
{
	ProtobufCMessage *m;
	Evr__EventDesc *d;
	struct schema_block *b;
	uint32_t idx;
	int err;

	if (!s || (len && !data))
		return -EINVAL;
	err = evr_pb_unpack(&evr__event_desc__descriptor, data, len, &m);
	if (err < 0)
		return -EBADMSG;
	d = (Evr__EventDesc *)m;
	if (!desc_valid(d)) {
		evr_pb_free(m);
		return -EBADMSG;
	}
	b = block_from_pb(d);
	evr_pb_free(m);
	if (!b)
		return -ENOMEM;
	idx = find(s, b->ev.rid);
	if (idx != UINT32_MAX) {
		s->order[idx]->next_retired = s->retired;
		s->retired = s->order[idx];
		s->order[idx] = b;
		return 0;
	}
	err = reserve(s);
	if (err < 0) {
		free(b);
		return err;
	}
	s->order[s->n] = b;
	slots_insert(s->slots, s->nslots, b->ev.rid, s->n);
	s->n++;
	return 0;
}

const struct evr_schema_event *evr_schema_set_lookup(const struct evr_schema_set *s, uint32_t rid)
{
	uint32_t idx;

	if (!s)
		return NULL;
	idx = find(s, rid);
	return idx == UINT32_MAX ? NULL : &s->order[idx]->ev;
}

uint32_t evr_schema_set_count(const struct evr_schema_set *s)
{
	return s ? s->n : 0;
}

const struct evr_schema_event *evr_schema_set_at(const struct evr_schema_set *s, uint32_t i)
{
	return s && i < s->n ? &s->order[i]->ev : NULL;
}

int evr_schema_event_pack(const struct evr_schema_event *ev, void **ret_data, size_t *ret_len)
{
	Evr__EventDesc d = EVR__EVENT_DESC__INIT;
	Evr__FieldDesc *fv = NULL, **fp = NULL;
	uint8_t *data;
	size_t len;
	int err;

	if (!ev || !ev->provider || !ev->name || !ret_data || !ret_len ||
	    ev->nfields > EVR_SCHEMA_MAX_FIELDS || (ev->nfields && !ev->fields))
		return -EINVAL;
	if (ev->nfields) {
		fv = calloc(ev->nfields, sizeof(*fv));
		fp = calloc(ev->nfields, sizeof(*fp));
		if (!fv || !fp) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (uint32_t i = 0; i < ev->nfields; i++) {
		evr__field_desc__init(&fv[i]);
		fv[i].name = (char *)(ev->fields[i].name ? ev->fields[i].name : "");
		fv[i].type = ev->fields[i].type;
		fp[i] = &fv[i];
	}
	d.rid = ev->rid;
	d.provider = (char *)ev->provider;
	d.name = (char *)ev->name;
	d.has_id = true;
	d.id = ev->id;
	d.has_level = true;
	d.level = ev->level;
	d.has_opcode = true;
	d.opcode = ev->opcode;
	d.has_keywords = true;
	d.keywords = ev->keywords;
	d.n_fields = ev->nfields;
	d.fields = fp;
	err = evr_pb_pack(&d.base, &data, &len);
	if (err == 0) {
		*ret_data = data;
		*ret_len = len;
	}
out:
	free(fv);
	free(fp);
	return err;
}
