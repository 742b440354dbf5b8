/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test helper: decode the Counter* events of <evring/counters.h> read from an
 * in-process session, by the schema of the event each record names.
 */
#ifndef EVR_TEST_COUNTER_SAMPLES_H
#define EVR_TEST_COUNTER_SAMPLES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <evring/evring.h>

struct sample {
	char provider[64];
	char event[32]; /* CounterMean, CounterRate, ... */
	char name[64], display[64], unit[16];
	uint32_t interval_ms;
	uint64_t count; /* Mean, Histogram */
	double f[5]; /* the f64 fields after count / interval_ms, in order */
};

struct dec {
	const uint8_t *p;
	uint32_t left;
	bool bad;
};

static inline void dec_raw(struct dec *d, void *out, uint32_t n)
{
	if (d->left < n) {
		d->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, d->p, n);
	d->p += n;
	d->left -= n;
}

static inline void dec_str(struct dec *d, char *out, size_t cap)
{
	uint32_t n = 0;

	dec_raw(d, &n, 4);
	if (d->bad || n > d->left || n >= cap) {
		d->bad = true;
		out[0] = 0;
		return;
	}
	memcpy(out, d->p, n);
	out[n] = 0;
	d->p += n;
	d->left -= n;
}

/* 1: @rec was a Counter* event, decoded into @ret; 0: another record; -1: bad. */
static inline int sample_decode(const struct evr_record *rec, struct sample *ret)
{
	const struct evr_event *ev;
	struct dec d = {rec->payload, rec->len, false};
	uint32_t nf = 0;

	if (rec->type != EVR_REC_EVENT)
		return 0;
	ev = evr_event_by_rid(rec->event_id);
	if (!ev || strncmp(ev->desc->name, "Counter", 7) != 0)
		return 0;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->provider, sizeof(ret->provider), "%s", ev->provider->name);
	snprintf(ret->event, sizeof(ret->event), "%s", ev->desc->name);
	dec_str(&d, ret->name, sizeof(ret->name));
	dec_str(&d, ret->display, sizeof(ret->display));
	dec_str(&d, ret->unit, sizeof(ret->unit));
	dec_raw(&d, &ret->interval_ms, 4);
	for (uint32_t i = 4; i < ev->desc->nfields; i++) {
		if (ev->desc->fields[i].type == EVR_TYPE_U64)
			dec_raw(&d, &ret->count, 8);
		else if (nf < 5)
			dec_raw(&d, &ret->f[nf++], 8);
		else
			d.bad = true;
	}
	return d.bad || d.left ? -1 : 1;
}

#endif /* EVR_TEST_COUNTER_SAMPLES_H */
