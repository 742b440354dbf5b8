// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the schema set (decode/schema.c): valid descriptions,
 * lookup and order, replacement (old pointers stay valid), packing back, and
 * hostile input: invalid descriptions, random bytes, every truncation.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <evring/framing.h>
#include <evring/schema.h>

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static const struct evr_schema_field alloc_fields[] = {
	{ "addr", EVR_FT_U64 }, { "size", EVR_FT_U32 }, { "tag", EVR_FT_STR },
};

static void pack(const struct evr_schema_event *ev, void **data, size_t *len)
{
	assert_int_equal(evr_schema_event_pack(ev, data, len), 0);
}

static struct evr_schema_event sample(uint32_t rid, const char *name)
{
	return (struct evr_schema_event){
		.rid = rid, .id = 7, .provider = "MyApp", .name = name, .level = 5, .opcode = 1,
		.keywords = 0x8000000000000001ull, .nfields = 3, .fields = alloc_fields,
	};
}

static void add(struct evr_schema_set *s, const struct evr_schema_event *ev)
{
	void *data;
	size_t len;

	pack(ev, &data, &len);
	assert_int_equal(evr_schema_set_add_pb(s, data, len), 0);
	free(data);
}

static void test_schema_add_and_lookup(void **state)
{
	struct evr_schema_set *s;
	const struct evr_schema_event *e;
	struct evr_schema_event ev = sample(3, "Alloc");

	(void)state;
	assert_int_equal(evr_schema_set_new(&s), 0);
	assert_null(evr_schema_set_lookup(s, 3));
	add(s, &ev);
	e = evr_schema_set_lookup(s, 3);
	assert_non_null(e);
	assert_int_equal(e->rid, 3);
	assert_int_equal(e->id, 7);
	assert_string_equal(e->provider, "MyApp");
	assert_string_equal(e->name, "Alloc");
	assert_int_equal(e->level, 5);
	assert_int_equal(e->opcode, 1);
	assert_true(e->keywords == 0x8000000000000001ull);
	assert_int_equal(e->nfields, 3);
	assert_string_equal(e->fields[2].name, "tag");
	assert_int_equal(e->fields[2].type, EVR_FT_STR);
	assert_null(evr_schema_set_lookup(s, 4));
	assert_int_equal(evr_schema_set_count(s), 1);
	evr_schema_set_free(s);
	evr_schema_set_free(NULL);
}

/* Many rids, sparse and huge ones too: every one found, order of first addition. */
static void test_schema_many_rids(void **state)
{
	struct evr_schema_set *s;
	char name[32];

	(void)state;
	assert_int_equal(evr_schema_set_new(&s), 0);
	for (uint32_t i = 0; i < 5000; i++) {
		struct evr_schema_event ev = sample(i * 2654435761u, name);

		snprintf(name, sizeof(name), "E%u", i);
		add(s, &ev);
	}
	assert_int_equal(evr_schema_set_count(s), 5000);
	for (uint32_t i = 0; i < 5000; i++) {
		const struct evr_schema_event *e = evr_schema_set_lookup(s, i * 2654435761u);

		snprintf(name, sizeof(name), "E%u", i);
		assert_non_null(e);
		assert_string_equal(e->name, name);
		assert_ptr_equal(evr_schema_set_at(s, i), e);
	}
	assert_null(evr_schema_set_at(s, 5000));
	evr_schema_set_free(s);
}

static void test_schema_replacement_keeps_old_pointers(void **state)
{
	struct evr_schema_set *s;
	const struct evr_schema_event *old, *cur;
	struct evr_schema_event a = sample(9, "First"), b = sample(9, "Second");

	(void)state;
	assert_int_equal(evr_schema_set_new(&s), 0);
	add(s, &a);
	old = evr_schema_set_lookup(s, 9);
	b.nfields = 1;
	add(s, &b);
	cur = evr_schema_set_lookup(s, 9);
	assert_string_equal(cur->name, "Second");
	assert_int_equal(cur->nfields, 1);
	assert_string_equal(old->name, "First");	/* still valid */
	assert_string_equal(old->fields[1].name, "size");
	assert_int_equal(evr_schema_set_count(s), 1);
	assert_ptr_equal(evr_schema_set_at(s, 0), cur);
	evr_schema_set_free(s);
}

static void test_schema_no_fields(void **state)
{
	struct evr_schema_set *s;
	struct evr_schema_event ev = sample(1, "Tick");

	(void)state;
	ev.nfields = 0;
	ev.fields = NULL;
	assert_int_equal(evr_schema_set_new(&s), 0);
	add(s, &ev);
	assert_int_equal(evr_schema_set_lookup(s, 1)->nfields, 0);
	evr_schema_set_free(s);
}

static int add_raw(struct evr_schema_set *s, const Evr__EventDesc *d)
{
	uint8_t *data;
	size_t len;
	int ret;

	assert_int_equal(evr_pb_pack(&d->base, &data, &len), 0);
	ret = evr_schema_set_add_pb(s, data, len);
	free(data);
	return ret;
}

static void test_schema_rejects_invalid(void **state)
{
	struct evr_schema_set *s;
	Evr__EventDesc d = EVR__EVENT_DESC__INIT;
	Evr__FieldDesc f = EVR__FIELD_DESC__INIT, *fp[EVR_SCHEMA_MAX_FIELDS + 1];

	(void)state;
	assert_int_equal(evr_schema_set_new(&s), 0);
	d.rid = 1;
	d.provider = "P";
	d.name = "E";
	f.name = "x";
	f.type = EVR_FT_U8;
	fp[0] = &f;
	d.n_fields = 1;
	d.fields = fp;
	assert_int_equal(add_raw(s, &d), 0);
	f.type = EVR_FT_MAX_;			/* unknown field type */
	assert_int_equal(add_raw(s, &d), -EBADMSG);
	f.type = 0;
	assert_int_equal(add_raw(s, &d), -EBADMSG);
	f.type = EVR_FT_BYTES;
	f.name = "";				/* empty field name */
	assert_int_equal(add_raw(s, &d), -EBADMSG);
	f.name = "x";
	d.name = "";				/* empty event name */
	assert_int_equal(add_raw(s, &d), -EBADMSG);
	d.name = "E";
	d.provider = "";			/* empty provider */
	assert_int_equal(add_raw(s, &d), -EBADMSG);
	d.provider = "P";
	d.has_level = true;
	d.level = 256;				/* does not fit */
	assert_int_equal(add_raw(s, &d), -EBADMSG);
	d.has_level = false;
	for (int i = 0; i <= EVR_SCHEMA_MAX_FIELDS; i++)
		fp[i] = &f;
	d.n_fields = EVR_SCHEMA_MAX_FIELDS + 1;	/* too many fields */
	assert_int_equal(add_raw(s, &d), -EBADMSG);
	d.n_fields = EVR_SCHEMA_MAX_FIELDS;
	assert_int_equal(add_raw(s, &d), 0);
	/* Not an EventDesc at all (required fields missing). */
	assert_int_equal(evr_schema_set_add_pb(s, "", 0), -EBADMSG);
	assert_int_equal(evr_schema_set_count(s), 1);
	assert_int_equal(evr_schema_set_lookup(s, 1)->nfields, EVR_SCHEMA_MAX_FIELDS);
	evr_schema_set_free(s);
}

static void test_schema_every_truncation(void **state)
{
	struct evr_schema_set *s;
	struct evr_schema_event ev = sample(77, "Alloc");
	void *data;
	size_t len;

	(void)state;
	assert_int_equal(evr_schema_set_new(&s), 0);
	pack(&ev, &data, &len);
	for (size_t k = 0; k < len; k++) {
		int ret = evr_schema_set_add_pb(s, data, k);

		assert_true(ret == 0 || ret == -EBADMSG);
		if (ret == 0) {
			/* A prefix that parses must still be a whole, valid description. */
			const struct evr_schema_event *e = evr_schema_set_lookup(s, 77);

			assert_non_null(e);
			assert_true(e->provider[0] && e->name[0]);
		}
	}
	assert_int_equal(evr_schema_set_add_pb(s, data, len), 0);
	assert_int_equal(evr_schema_set_lookup(s, 77)->nfields, 3);
	free(data);
	evr_schema_set_free(s);
}

static void test_schema_random_bytes(void **state)
{
	struct evr_schema_set *s;
	struct evr_schema_event ev = sample(5, "Alloc");
	uint8_t buf[256];
	void *valid;
	size_t vlen;

	(void)state;
	assert_int_equal(evr_schema_set_new(&s), 0);
	pack(&ev, &valid, &vlen);
	for (int i = 0; i < 10000; i++) {
		size_t len = rnd() % sizeof(buf);
		int ret;

		if (i % 2 && vlen <= sizeof(buf)) {
			/* Flip a few bytes of a valid description. */
			memcpy(buf, valid, vlen);
			len = vlen;
			for (int k = 0; k < 3; k++)
				buf[rnd() % vlen] = (uint8_t)rnd();
		} else {
			for (size_t k = 0; k < len; k++)
				buf[k] = (uint8_t)rnd();
		}
		ret = evr_schema_set_add_pb(s, buf, len);
		assert_true(ret == 0 || ret == -EBADMSG);
	}
	/* Whatever got in is well-formed. */
	for (uint32_t i = 0; i < evr_schema_set_count(s); i++) {
		const struct evr_schema_event *e = evr_schema_set_at(s, i);

		assert_true(e->provider[0] && e->name[0] && e->nfields <= EVR_SCHEMA_MAX_FIELDS);
		for (uint32_t f = 0; f < e->nfields; f++)
			assert_non_null(evr_field_type_name(e->fields[f].type));
	}
	free(valid);
	evr_schema_set_free(s);
}

static void test_field_type_names(void **state)
{
	(void)state;
	assert_string_equal(evr_field_type_name(EVR_FT_U8), "u8");
	assert_string_equal(evr_field_type_name(EVR_FT_I64), "i64");
	assert_string_equal(evr_field_type_name(EVR_FT_BOOL), "bool");
	assert_string_equal(evr_field_type_name(EVR_FT_BYTES), "bytes");
	assert_null(evr_field_type_name(0));
	assert_null(evr_field_type_name(EVR_FT_MAX_));
	assert_null(evr_field_type_name(UINT32_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schema_add_and_lookup),
		cmocka_unit_test(test_schema_many_rids),
		cmocka_unit_test(test_schema_replacement_keeps_old_pointers),
		cmocka_unit_test(test_schema_no_fields),
		cmocka_unit_test(test_schema_rejects_invalid),
		cmocka_unit_test(test_schema_every_truncation),
		cmocka_unit_test(test_schema_random_bytes),
		cmocka_unit_test(test_field_type_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
