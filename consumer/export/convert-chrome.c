// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring convert --format chrome: Chrome trace-event JSON, object form, which
 * the Perfetto UI and chrome://tracing open. Written as the trace is read, one
 * output record per trace record, so memory does not grow with the trace
 * (only with the number of threads and of slices open at one time).
 *
 * Mapping (docs/cli.md has the user's view):
 * - an event: an instant event, "ph":"i","s":"t", name "Provider/Event", its
 *   fields as args;
 * - a start (opcode 1) / stop (opcode 2) pair of one provider: "B" at the start
 *   and "E" at the stop on the start's thread, named by the common stem
 *   ("GCStart"/"GCEnd": "GC"). The decision is taken when the start is read, so
 *   that the file streams: async "b"/"e" would need to know at the start whether
 *   the stop will come on the same thread and nest. A stop that closes a slice
 *   below the innermost open one (the pairs cross) first closes the slices above
 *   it and reopens them at the same time (args "evring":"split"), so every "E"
 *   closes the innermost "B" of its thread. A stop with no open start on its
 *   thread (the trace began mid-activity) is an instant event like any other,
 *   with "evring":"no start"; a start still open at the end is closed at the
 *   last timestamp of the trace with "evring":"not closed";
 * - counter samples (evr_counter_sample_from_view()): "ph":"C" on a counter
 *   track named by the counter's display name, never also as instant events;
 * - the Heap provider's samples (docs/memory.md): besides their instant events,
 *   the estimated bytes in use over time as counter tracks, "Heap in use
 *   (estimated)" and "Anonymous mmap in use (estimated)", each value the sum of
 *   what the sampled blocks alive stand for (<evring/heap.h>, as report and
 *   pprof count them), written when an Alloc, Free, Mmap or Munmap changes it;
 * - lost events: a global instant event "Lost events" with args count and cpu;
 * - metadata: process_name, process_labels, thread_name (first time a tid
 *   appears; the THREADS chunks' names, or "tid N").
 * "ts" is CLOCK_MONOTONIC in microseconds with nanosecond digits (absolute, so
 * that it lines up with other tools of the same machine).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <evring/abi.h>
#include <evring/heap.h>

#include "export-internal.h"

/* What a rid is for the converter. */
/*
 * The work per record is bounded, whatever the trace: a stop closes and reopens
 * at most SPLIT_MAX slices that cross it, and at most DEPTH_MAX slices are open
 * on a thread. Beyond either bound the converter approximates, says so in
 * otherData.approximations and in its statistics, and stays linear: a stop whose
 * slice has more than SPLIT_MAX open slices above it is shown as an instant event
 * ("evring":"crossed") and its slice ends when it next becomes the innermost one
 * ("evring":"closed late", so it looks longer than it was); a start nested deeper
 * than DEPTH_MAX is an instant event ("evring":"too deep"), and so is the stop
 * that pairs with it. Without the bounds, pairs that cross deeply made the output
 * grow with the square of the trace (2,000 nested slices crossed by 2,000 others:
 * 8 M split records from 6,000 events).
 */
#define SPLIT_MAX 16u
#define DEPTH_MAX 1024u

struct chrome_type {
	const struct evr_schema_event *schema;
	int role;			/* 0 an instant event, 1 a start, 2 a stop */
	uint32_t pair;			/* start and stop of one pair share it: 0 .. npairs - 1 */
	char *stem;			/* the slice's name (starts only) */
	bool counter;			/* a Counter* event: maybe a counter sample */
	bool heap;			/* an event of the Heap provider */
	/*
	 * Written once, at the type's first record (see "Speed" below): the record's
	 * start up to "tid": as an instant ("i") and, for starts, as a slice's "B" and
	 * "E"; and each field's name as "name":, one after the other in fnames.
	 */
	struct evr_strbuf pre[3];
	struct evr_strbuf fnames;
	uint32_t *fname_end;		/* nfields offsets into fnames.buf */
	bool prepared;
};

enum { PRE_I, PRE_B, PRE_E };

struct chrome_slice {
	struct chrome_type *start;
	uint32_t prev_same;		/* 1 + index of the next outer open slice of its pair, 0 none */
	bool stopped;			/* its stop came while it was crossed: close it on surfacing */
};

struct chrome_thread {
	uint32_t tid;
	struct chrome_slice *stack;	/* open slices, innermost last */
	uint32_t depth, cap;
	/* Per pair (allocated at the thread's first start): 1 + index of its innermost
	 * open slice that is not stopped, 0 none; and its starts beyond DEPTH_MAX still
	 * open, shown as instant events. */
	uint32_t *top_of;
	uint32_t *too_deep;
};

struct chrome {
	FILE *out;
	struct evr_trace_reader *r;
	struct evr_strbuf sb;
	uint32_t pid;
	bool first;			/* no record written yet: no comma before it */
	uint64_t last_ts;
	struct evr_rpt_map types;	/* rid -> struct chrome_type */
	struct chrome_type *typev;
	uint32_t ntypes;
	struct evr_rpt_map threads;	/* tid -> struct chrome_thread */
	struct chrome_thread **threadv;
	uint32_t nthreads;
	uint32_t npairs;
	struct chrome_thread *last_thread;	/* records come in runs of one thread */
	struct chrome_type **by_rid;	/* rid -> type, for rids below nby_rid (the usual) */
	uint32_t nby_rid;
	struct evr_convert_stats st;
	uint64_t counters, slices, synthetic;
	uint64_t closed_late;		/* slices closed after their stop (crossed) */
	const struct evr_chrome_stacks *sk;	/* NULL: events' stacks are left out */
	struct evr_heap_live *live;	/* the Heap provider's sampled blocks alive */
	double heap_inuse[2];		/* their estimated bytes: heap blocks, mappings */
};

static const char *const start_suffixes[] = { "Started", "Start", "Begin" };
static const char *const stop_suffixes[] = { "Stopped", "Stop", "End" };

/* Length of @name without its start or stop suffix (the whole name if none). */
static size_t stem_len(const char *name, const char *const *sfx, size_t nsfx)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < nsfx; i++) {
		size_t k = strlen(sfx[i]);

		if (n > k && !strcmp(name + n - k, sfx[i]))
			return n - k;
	}
	return n;
}

static size_t common_prefix(const char *a, const char *b)
{
	size_t i = 0;

	while (a[i] && a[i] == b[i])
		i++;
	return i;
}

/*
 * Pair the starts and stops of each provider: a stop goes with the start of
 * the same stem (GCStart/GCEnd); those left over go by the longest common
 * prefix (minirt's MethodJittingStarted/MethodLoadVerbose). A start or stop
 * without a partner type is an ordinary event.
 */
static int chrome_types(struct chrome *c)
{
	const struct evr_schema_set *set = evr_trace_reader_schemas(c->r);
	uint32_t n = set ? evr_schema_set_count(set) : 0;
	int err;

	c->typev = calloc(n ? n : 1, sizeof(*c->typev));
	if (!c->typev)
		return -ENOMEM;
	c->ntypes = n;
	for (uint32_t i = 0; i < n; i++) {
		const struct evr_schema_event *s = evr_schema_set_at(set, i);

		c->typev[i].schema = s;
		c->typev[i].counter = !strncmp(s->name, "Counter", 7);
		c->typev[i].heap = s->provider && !strcmp(s->provider, "Heap");
		c->typev[i].role = s->opcode == 1 ? 1 : s->opcode == 2 ? 2 : 0;
		c->typev[i].pair = UINT32_MAX;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < n; i++) {
			struct chrome_type *stop = &c->typev[i];
			size_t sl, best_len = 0;
			uint32_t best = UINT32_MAX;

			if (stop->role != 2 || stop->pair != UINT32_MAX)
				continue;
			sl = stem_len(stop->schema->name, stop_suffixes, 3);
			for (uint32_t j = 0; j < n; j++) {
				struct chrome_type *st = &c->typev[j];
				size_t tl;

				if (st->role != 1 || strcmp(st->schema->provider, stop->schema->provider))
					continue;
				tl = stem_len(st->schema->name, start_suffixes, 3);
				if (pass == 0) {
					if (tl == sl && !strncmp(st->schema->name, stop->schema->name, sl)) {
						best = j;
						break;
					}
				} else if (st->pair == UINT32_MAX) {
					size_t cp = common_prefix(st->schema->name, stop->schema->name);

					if (cp > best_len) {
						best_len = cp;
						best = j;
					}
				}
			}
			if (best == UINT32_MAX)
				continue;
			struct chrome_type *st = &c->typev[best];

			if (st->pair == UINT32_MAX) {
				st->pair = c->npairs++;
				st->stem = strndup(st->schema->name,
						   stem_len(st->schema->name, start_suffixes, 3));
				if (!st->stem)
					return -ENOMEM;
			}
			stop->pair = st->pair;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		if (c->typev[i].pair == UINT32_MAX)
			c->typev[i].role = 0;
		err = evr_rpt_map_put(&c->types, c->typev[i].schema->rid, &c->typev[i]);
		if (err < 0)
			return err;
	}
	/* Registry ids are small: a table finds a record's type without hashing. */
	for (uint32_t i = 0; i < n; i++)
		if (c->typev[i].schema->rid < 65536 && c->typev[i].schema->rid >= c->nby_rid)
			c->nby_rid = c->typev[i].schema->rid + 1;
	if (c->nby_rid && !(c->by_rid = calloc(c->nby_rid, sizeof(*c->by_rid))))
		return -ENOMEM;
	for (uint32_t i = 0; i < c->nby_rid; i++)
		c->by_rid[i] = evr_rpt_map_get(&c->types, i);
	return 0;
}

/*
 * Speed. Records are appended to c->sb, which goes to the output in blocks of
 * OUT_BLOCK bytes (one fwrite each, not one per record); the part of a record
 * that only depends on its event type (ph, name, cat, pid, the fields' names)
 * is rendered once per type; numbers and timestamps are formatted by hand,
 * strings copied as they are when they need no escaping. printf and the
 * per-record stdio calls were most of the time: 0.6 to 0.9 M events/s before,
 * CTF (which works this way) 15 times as fast.
 */
#define OUT_BLOCK (256u << 10)

/* Room for @n more bytes in @sb. Return: 0 or -ENOMEM. */
static inline int reserve(struct evr_strbuf *sb, size_t n)
{
	size_t cap;
	char *b;

	if (sb->cap - sb->len >= n)
		return 0;
	cap = sb->cap ? sb->cap : 4096;
	while (cap - sb->len < n)
		cap *= 2;
	b = realloc(sb->buf, cap);
	if (!b)
		return -ENOMEM;
	sb->buf = b;
	sb->cap = cap;
	return 0;
}

/* Append without a capacity check: the caller reserved. */
static inline void raw(struct evr_strbuf *sb, const void *p, size_t n)
{
	memcpy(sb->buf + sb->len, p, n);
	sb->len += n;
}

/* "00" to "99": two digits per division. */
static const char digits2[200] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* @v in decimal; at most 20 bytes. */
static inline void raw_u64(struct evr_strbuf *sb, uint64_t v)
{
	char t[20];
	size_t n = 0;

	while (v >= 100) {
		memcpy(t + 18 - n, digits2 + 2 * (v % 100), 2);
		v /= 100;
		n += 2;
	}
	if (v >= 10) {
		memcpy(t + 18 - n, digits2 + 2 * v, 2);
		n += 2;
	} else {
		t[19 - n++] = (char)('0' + v);
	}
	raw(sb, t + 20 - n, n);
}

/* Write out what is buffered. */
static int flush(struct chrome *c)
{
	if (c->sb.len && fwrite(c->sb.buf, 1, c->sb.len, c->out) != c->sb.len)
		return -EIO;
	c->st.bytes += c->sb.len;
	c->sb.len = 0;
	return 0;
}

/* Every record starts with this: the separator from the previous one. */
static int begin(struct chrome *c)
{
	int err = reserve(&c->sb, 2);

	if (err)
		return err;
	raw(&c->sb, &",\n"[c->first], 2 - c->first);
	c->first = false;
	return 0;
}

/* A record is complete: write out the buffer once it is large. */
static int emit(struct chrome *c)
{
	return c->sb.len >= OUT_BLOCK ? flush(c) : 0;
}

/* "ts":MICROSECONDS.NNN, exact: integer arithmetic, not a double. At most 29
 * bytes; the caller reserved them. */
static inline void raw_ts(struct evr_strbuf *sb, uint64_t ts_ns)
{
	unsigned int ns = (unsigned int)(ts_ns % 1000);

	raw(sb, "\"ts\":", 5);
	raw_u64(sb, ts_ns / 1000);
	sb->buf[sb->len++] = '.';
	sb->buf[sb->len++] = (char)('0' + ns / 100);
	memcpy(sb->buf + sb->len, digits2 + 2 * (ns % 100), 2);
	sb->len += 2;
}

static int put_ts(struct evr_strbuf *sb, uint64_t ts_ns)
{
	int err = reserve(sb, 32);

	if (!err)
		raw_ts(sb, ts_ns);
	return err;
}

static int thread_name_record(struct chrome *c, uint32_t tid)
{
	const char *name = evr_trace_reader_thread_name(c->r, tid);
	char fallback[32];
	int err;

	if (!name) {
		snprintf(fallback, sizeof(fallback), tid ? "tid %u" : "unknown thread", tid);
		name = fallback;
	}
	if ((err = begin(c)) || (err = evr_strbuf_printf(&c->sb, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32
				     ",\"tid\":%" PRIu32 ",\"args\":{\"name\":", c->pid, tid)) ||
	    (err = evr_rpt_json_cstr(&c->sb, name)) || (err = evr_strbuf_append(&c->sb, "}}", 2)))
		return err;
	return emit(c);
}

/* The thread @tid, created (and named in the output) the first time. */
static int thread_get(struct chrome *c, uint32_t tid, struct chrome_thread **ret)
{
	struct chrome_thread *t = c->last_thread && c->last_thread->tid == tid ?
					  c->last_thread : evr_rpt_map_get(&c->threads, tid);
	struct chrome_thread **v;
	int err;

	if (t) {
		*ret = c->last_thread = t;
		return 0;
	}
	t = calloc(1, sizeof(*t));
	v = t ? realloc(c->threadv, (c->nthreads + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(t);
		return -ENOMEM;
	}
	c->threadv = v;
	t->tid = tid;
	if ((err = evr_rpt_map_put(&c->threads, tid, t)) < 0) {
		free(t);
		return err;
	}
	v[c->nthreads++] = t;
	/* The name goes out before the thread's first record. */
	err = thread_name_record(c, tid);
	if (err < 0)
		return err;
	*ret = t;
	return 0;
}

/* {"ph":PH,"name":NAME,"cat":PROVIDER,"pid":P,"tid":T,"ts":TS, then the caller's args. */
static int head(struct chrome *c, const char *ph, const char *name, size_t name_len,
		const char *cat, uint32_t tid, uint64_t ts)
{
	int err;

	if ((err = begin(c)) || (err = evr_strbuf_printf(&c->sb, "{\"ph\":\"%s\",\"name\":", ph)) ||
	    (err = evr_strbuf_json_string(&c->sb, name, name_len)) ||
	    (err = evr_strbuf_append(&c->sb, ",\"cat\":", 7)) ||
	    (err = evr_rpt_json_cstr(&c->sb, cat)) ||
	    (err = evr_strbuf_printf(&c->sb, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",", c->pid,
				     tid)))
		return err;
	return put_ts(&c->sb, ts);
}

/* A "B" or "E" of @start's slice made up by the converter (split, end of trace). */
static int synthetic(struct chrome *c, const char *ph, const struct chrome_type *start,
		     uint32_t tid, uint64_t ts, const char *why)
{
	int err = head(c, ph, start->stem, strlen(start->stem), start->schema->provider, tid, ts);

	if (!err)
		err = evr_strbuf_printf(&c->sb, ",\"args\":{\"evring\":\"%s\"}}", why);
	if (!err)
		err = emit(c);
	c->synthetic++;
	return err;
}

/* The per-pair tables of @t, at its first slice. */
static int thread_pairs(struct chrome *c, struct chrome_thread *t)
{
	if (t->top_of)
		return 0;
	t->top_of = calloc(c->npairs ? c->npairs : 1, sizeof(*t->top_of));
	t->too_deep = calloc(c->npairs ? c->npairs : 1, sizeof(*t->too_deep));
	return t->top_of && t->too_deep ? 0 : -ENOMEM;
}

static int push(struct chrome_thread *t, struct chrome_type *start)
{
	struct chrome_slice *sl;

	if (t->depth == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 8;
		struct chrome_slice *ns = realloc(t->stack, cap * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		t->stack = ns;
		t->cap = cap;
	}
	sl = &t->stack[t->depth];
	sl->start = start;
	sl->stopped = false;
	sl->prev_same = t->top_of[start->pair];
	t->top_of[start->pair] = ++t->depth;
	return 0;
}

/* The fields of @v as ,"args":{...}} closing the record. */
static int args_close(struct chrome *c, const struct evr_event_view *v, const char *extra)
{
	bool bad = false;
	uint64_t sf = 0;
	int err;

	/* The event's stack: a node of the top-level stackFrames (evr_chrome_stacks). */
	if (c->sk && v->nframes && c->sk->stack_id(c->sk->ctx, v, &sf) == 0 && sf &&
	    (err = evr_strbuf_printf(&c->sb, ",\"sf\":%" PRIu64, sf)))
		return err;
	if ((err = evr_strbuf_append(&c->sb, ",\"args\":{", 9)) ||
	    (err = evr_rpt_json_fields(&c->sb, v, &bad)))
		return err;
	if (bad)
		c->st.undecodable++;
	if (extra) {
		bool empty = c->sb.buf[c->sb.len - 1] == '{';

		if ((err = evr_strbuf_printf(&c->sb, "%s\"evring\":\"%s\"", empty ? "" : ",", extra)))
			return err;
	}
	return evr_strbuf_append(&c->sb, "}}", 2);
}

/* ---- the fast path: described events, their type's text rendered once ---- */

#define EXACT_MAX (UINT64_C(1) << 53)	/* as evr_rpt_json_value(): beyond, a string */

/* {"ph":"PH","name":NAME,"cat":PROVIDER,"pid":PID,"tid": into @sb, as head() writes it. */
static int prefix(struct chrome *c, struct evr_strbuf *sb, const char *ph, const char *name,
		  size_t name_len, const char *cat)
{
	int err;

	if ((err = evr_strbuf_printf(sb, "{\"ph\":\"%s\",\"name\":", ph)) ||
	    (err = evr_strbuf_json_string(sb, name, name_len)) ||
	    (err = evr_strbuf_append(sb, ",\"cat\":", 7)) || (err = evr_rpt_json_cstr(sb, cat)))
		return err;
	return evr_strbuf_printf(sb, ",\"pid\":%" PRIu32 ",\"tid\":", c->pid);
}

/* Render what every record of @ty shares, at its first record. */
static int type_prepare(struct chrome *c, struct chrome_type *ty)
{
	const struct evr_schema_event *s = ty->schema;
	struct evr_strbuf name = { 0 };
	int err;

	if (ty->prepared)
		return 0;
	err = evr_strbuf_printf(&name, "%s/%s", s->provider, s->name);
	if (!err)
		err = prefix(c, &ty->pre[PRE_I], "i", name.buf, name.len, s->provider);
	free(name.buf);
	if (!err && ty->stem)
		err = prefix(c, &ty->pre[PRE_B], "B", ty->stem, strlen(ty->stem), s->provider);
	if (!err && ty->stem)
		err = prefix(c, &ty->pre[PRE_E], "E", ty->stem, strlen(ty->stem), s->provider);
	if (!err && s->nfields && !(ty->fname_end = calloc(s->nfields, sizeof(*ty->fname_end))))
		err = -ENOMEM;
	for (uint32_t i = 0; !err && i < s->nfields; i++) {
		err = evr_rpt_json_cstr(&ty->fnames, s->fields[i].name ? s->fields[i].name : "");
		if (!err)
			err = evr_strbuf_append(&ty->fnames, ":", 1);
		if (!err)
			ty->fname_end[i] = (uint32_t)ty->fnames.len;
	}
	ty->prepared = !err;
	return err;
}

/* A str or json value: copied as it is when no byte needs escaping (the usual
 * case), else as evr_strbuf_json_string() writes it. */
static int put_string(struct evr_strbuf *sb, const uint8_t *p, uint32_t n)
{
	uint32_t i = 0;
	int err;

	while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\')
		i++;
	if (i < n)
		return evr_strbuf_json_string(sb, p, n);
	if ((err = reserve(sb, (size_t)n + 2)))
		return err;
	sb->buf[sb->len++] = '"';
	raw(sb, p, n);
	sb->buf[sb->len++] = '"';
	return 0;
}

/* One field's value, as evr_rpt_json_value() writes it. */
static int put_value(struct evr_strbuf *sb, const struct evr_field_value *v)
{
	static const char hex[] = "0123456789abcdef";
	int err = reserve(sb, 48);
	uint64_t u;

	if (err)
		return err;
	switch (v->type) {
	case EVR_FT_U8: case EVR_FT_U16: case EVR_FT_U32: case EVR_FT_U64:
		if (v->u > EXACT_MAX) {
			sb->buf[sb->len++] = '"';
			raw_u64(sb, v->u);
			sb->buf[sb->len++] = '"';
		} else {
			raw_u64(sb, v->u);
		}
		return 0;
	case EVR_FT_I8: case EVR_FT_I16: case EVR_FT_I32: case EVR_FT_I64: {
		bool quote = v->i > (int64_t)EXACT_MAX || v->i < -(int64_t)EXACT_MAX;

		u = v->i < 0 ? 0 - (uint64_t)v->i : (uint64_t)v->i;
		if (quote)
			sb->buf[sb->len++] = '"';
		if (v->i < 0)
			sb->buf[sb->len++] = '-';
		raw_u64(sb, u);
		if (quote)
			sb->buf[sb->len++] = '"';
		return 0;
	}
	case EVR_FT_BOOL:
		if (v->u)
			raw(sb, "true", 4);
		else
			raw(sb, "false", 5);
		return 0;
	case EVR_FT_PTR: {
		char t[16];
		int n = 0;

		u = v->u;
		do {
			t[15 - n++] = hex[u & 15];
			u >>= 4;
		} while (u);
		raw(sb, "\"0x", 3);
		raw(sb, t + 16 - n, (size_t)n);
		sb->buf[sb->len++] = '"';
		return 0;
	}
	case EVR_FT_STR: case EVR_FT_JSON:
		return put_string(sb, v->b.data, v->b.len);
	case EVR_FT_F32: case EVR_FT_F64:
		if (!isfinite(v->f)) {
			raw(sb, "null", 4);	/* JSON has no NaN */
			return 0;
		}
		sb->len += (size_t)evr_rpt_fmt_double(sb->buf + sb->len, v->f);
		return 0;
	default:
		/* Bytes (hex), unknown types: the shared code. */
		return evr_rpt_json_value(sb, v);
	}
}

/*
 * The fields of @v as ,"args":{...}} closing the record, as args_close() writes
 * them: field names from the type, values formatted here. Whatever is unusual
 * (no schema, a payload that does not decode, a stack) goes to args_close().
 */
static int args_fast(struct chrome *c, struct chrome_type *ty, const struct evr_event_view *v,
		     const char *extra)
{
	struct evr_field_value vals[EVR_SCHEMA_MAX_FIELDS];
	const struct evr_schema_event *s = ty->schema;
	uint32_t prev = 0;
	int n, err;

	if ((c->sk && v->nframes) || s->nfields > EVR_SCHEMA_MAX_FIELDS || (!v->payload && v->len))
		return args_close(c, v, extra);
	n = evr_decode_fields(s, v->payload ? v->payload : "", v->len, vals);
	if (n < 0)
		return args_close(c, v, extra);
	if ((err = reserve(&c->sb, 16 + ty->fnames.len + (extra ? 32 : 0))))
		return err;
	raw(&c->sb, ",\"args\":{", 9);
	for (int i = 0; i < n; i++) {
		if (i)
			raw(&c->sb, ",", 1);
		raw(&c->sb, ty->fnames.buf + prev, ty->fname_end[i] - prev);
		prev = ty->fname_end[i];
		if ((err = put_value(&c->sb, &vals[i])))
			return err;
		/* put_value() may have grown the buffer: room for what follows. */
		if ((err = reserve(&c->sb, 16 + ty->fnames.len - prev + (extra ? 32 : 0))))
			return err;
	}
	if (extra) {
		if (n)
			raw(&c->sb, ",", 1);
		raw(&c->sb, "\"evring\":\"", 10);
		raw(&c->sb, extra, strlen(extra));
		raw(&c->sb, "\"", 1);
	}
	raw(&c->sb, "}}", 2);
	return 0;
}

/* A record of a described event: its type's prefix @pre, tid, ts, @mid, fields. */
static int fast_record(struct chrome *c, struct chrome_type *ty, const struct evr_strbuf *pre,
		       const struct evr_event_view *v, bool instant, const char *extra)
{
	int err;

	if ((err = begin(c)) || (err = reserve(&c->sb, pre->len + 64)))
		return err;
	/* tid (10), "," (1), ts (29), "s" (8): within the 64 reserved. */
	raw(&c->sb, pre->buf, pre->len);
	raw_u64(&c->sb, v->tid);
	raw(&c->sb, ",", 1);
	raw_ts(&c->sb, v->ts_ns);
	if (instant)
		raw(&c->sb, ",\"s\":\"t\"", 8);
	if ((err = args_fast(c, ty, v, extra)))
		return err;
	return emit(c);
}

/* An instant event: of type @ty (NULL: none, or not the view's) through the
 * fast path, else rendered field by field. */
static int instant(struct chrome *c, struct chrome_type *ty, const struct evr_event_view *v,
		   const char *extra)
{
	const struct evr_schema_event *s = v->schema;
	char name[64];
	int err;

	if (ty && s && ty->schema == s) {
		if ((err = type_prepare(c, ty)))
			return err;
		return fast_record(c, ty, &ty->pre[PRE_I], v, true, extra);
	}
	if (s) {
		struct evr_strbuf n = { 0 };

		if ((err = evr_strbuf_printf(&n, "%s/%s", s->provider, s->name)) == 0)
			err = head(c, "i", n.buf, n.len, s->provider, v->tid, v->ts_ns);
		free(n.buf);
	} else {
		snprintf(name, sizeof(name), "?/rid %" PRIu32, v->rid);
		err = head(c, "i", name, strlen(name), "?", v->tid, v->ts_ns);
	}
	if (!err)
		err = evr_strbuf_append(&c->sb, ",\"s\":\"t\"", 8);
	if (!err)
		err = args_close(c, v, extra);
	return err ? err : emit(c);
}

static int slice_start(struct chrome *c, struct chrome_thread *t, struct chrome_type *ty,
		       const struct evr_event_view *v)
{
	int err = thread_pairs(c, t);

	if (err)
		return err;
	if (t->depth >= DEPTH_MAX) {
		/* Its stop, innermost of its pair by then, will be an instant as well. */
		t->too_deep[ty->pair]++;
		c->st.too_deep++;
		return instant(c, ty, v, "too deep");
	}
	err = push(t, ty);
	if (!err)
		err = type_prepare(c, ty);
	if (!err)
		err = fast_record(c, ty, &ty->pre[PRE_B], v, false, NULL);
	c->slices++;
	return err;
}

/* Close the slices at the top of @t whose stop came while they were crossed. */
static int pop_stopped(struct chrome *c, struct chrome_thread *t, uint32_t tid, uint64_t ts)
{
	while (t->depth && t->stack[t->depth - 1].stopped) {
		int err = synthetic(c, "E", t->stack[t->depth - 1].start, tid, ts, "closed late");

		if (err)
			return err;
		t->depth--;
		c->closed_late++;
	}
	return 0;
}

/*
 * The stop of the innermost open slice of its pair, at index @k with at most
 * SPLIT_MAX slices above it: close those (innermost first), close it, reopen
 * those not stopped in their order, so that every "E" closes the innermost "B".
 */
static int stop_split(struct chrome *c, struct chrome_thread *t, uint32_t k,
		      struct chrome_type *ty, const struct evr_event_view *v)
{
	const struct chrome_type *start = t->stack[k].start;
	uint32_t remap[SPLIT_MAX + 1];		/* old index - k - 1 -> 1 + new index, 0 gone */
	uint32_t top = t->depth, out = k;
	int err;

	for (uint32_t j = top; j > k + 1; j--) {
		const struct chrome_slice *sl = &t->stack[j - 1];

		err = synthetic(c, "E", sl->start, v->tid, v->ts_ns,
				sl->stopped ? "closed late" : "split");
		if (err)
			return err;
		c->closed_late += sl->stopped;
	}
	/* The start's slice name (its type was prepared at its "B"), the stop's fields. */
	err = type_prepare(c, ty);
	if (!err)
		err = fast_record(c, ty, &start->pre[PRE_E], v, false, NULL);
	if (err)
		return err;
	/* It was the innermost open slice of its pair. */
	t->top_of[start->pair] = t->stack[k].prev_same;
	/* Move the live slices above it down by one (stopped ones are gone), fixing
	 * the links that pointed at them: only they, and top_of, can. */
	for (uint32_t j = k + 1; j < top; j++) {
		struct chrome_slice sl = t->stack[j];

		remap[j - k - 1] = 0;
		if (sl.stopped)
			continue;
		if (sl.prev_same > k + 1)
			sl.prev_same = remap[sl.prev_same - 1 - k - 1];
		if (t->top_of[sl.start->pair] == j + 1)
			t->top_of[sl.start->pair] = out + 1;
		remap[j - k - 1] = out + 1;
		t->stack[out++] = sl;
	}
	t->depth = out;
	for (uint32_t j = k; j < t->depth; j++) {
		err = synthetic(c, "B", t->stack[j].start, v->tid, v->ts_ns, "split");
		if (err)
			return err;
	}
	return 0;
}

static int slice_stop(struct chrome *c, struct chrome_thread *t, struct chrome_type *ty,
		      const struct evr_event_view *v)
{
	uint32_t k;
	int err = thread_pairs(c, t);

	if (err)
		return err;
	if (t->too_deep[ty->pair]) {
		t->too_deep[ty->pair]--;
		c->st.too_deep++;
		return instant(c, ty, v, "too deep");
	}
	k = t->top_of[ty->pair];
	if (k == 0)
		return instant(c, ty, v, "no start");
	k--;
	if (t->depth - k - 1 > SPLIT_MAX) {
		/* Crossed by too many: its slice ends when it surfaces. */
		t->stack[k].stopped = true;
		t->top_of[ty->pair] = t->stack[k].prev_same;
		c->st.crossed++;
		return instant(c, ty, v, "crossed");
	}
	err = stop_split(c, t, k, ty, v);
	if (!err)
		err = pop_stopped(c, t, v->tid, v->ts_ns);
	return err;
}

/* ,"args":{"K0":V0,...}} for the @n values of a counter sample. */
static int counter_args(struct evr_strbuf *sb, const char *const *keys, const double *vals,
			int n)
{
	int err = 0;

	for (int i = 0; i < n && !err; i++) {
		err = evr_strbuf_printf(sb, "%s\"%s\":", i ? "," : ",\"args\":{", keys[i]);
		if (!err)
			err = evr_rpt_json_double(sb, vals[i]);
	}
	return err ? err : evr_strbuf_append(sb, "}}", 2);
}

static int counter(struct chrome *c, const struct evr_event_view *v,
		   const struct evr_counter_sample *s)
{
	static const char *const mean_keys[] = { "mean", "min", "max" };
	static const char *const hist_keys[] = { "p50", "p90", "p99" };
	static const char *const value_key[] = { "value" };
	int err;

	err = head(c, "C", s->display_name, s->display_name_len, s->provider, v->tid, v->ts_ns);
	if (err)
		return err;
	/*
	 * Numbers are doubles, written to read back exactly; a track's keys never
	 * change. A sample is the traced process's (or a damaged file's) bytes:
	 * NaN and infinities are null, as in every JSON evring writes.
	 */
	switch (s->kind) {
	case EVR_SAMPLE_MEAN:
		err = counter_args(&c->sb, mean_keys, (const double[]){ s->mean, s->min, s->max }, 3);
		break;
	case EVR_SAMPLE_HISTOGRAM:
		err = counter_args(&c->sb, hist_keys, (const double[]){ s->p50, s->p90, s->p99 }, 3);
		break;
	default:
		err = counter_args(&c->sb, value_key, &s->value, 1);
		break;
	}
	c->counters++;
	return err ? err : emit(c);
}

static int lost(struct chrome *c, const struct evr_event_view *v)
{
	int err = begin(c) ? -ENOMEM : evr_strbuf_printf(&c->sb, "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"Lost events\","
				    "\"cat\":\"evring\",\"pid\":%" PRIu32 ",\"tid\":0,", c->pid);

	if (!err)
		err = put_ts(&c->sb, v->ts_ns);
	if (!err)
		err = evr_strbuf_printf(&c->sb, ",\"args\":{\"count\":%" PRIu64 ",\"cpu\":%" PRIu32
					"}}", v->lost, v->ring);
	return err ? err : emit(c);
}

/*
 * An event of the Heap provider: the block it adds or removes, and the new
 * estimate of its kind's bytes in use on that kind's counter track. A Free of a
 * block the trace never saw allocated (before the recording, not sampled)
 * changes nothing and writes nothing.
 */
static int heap_counter(struct chrome *c, const struct evr_event_view *v)
{
	static const char *const names[2] = { "Heap in use (estimated)",
					       "Anonymous mmap in use (estimated)" };
	static const char *const key[] = { "bytes" };
	struct evr_heap_rec h;
	struct evr_heap_block b;
	enum evr_heap_kind k = evr_heap_decode(v, &h);
	int m = (h.flags & EVR_HEAP_F_MMAP) ? 1 : 0, err;
	double before;

	if (k == EVR_HEAP_NONE)
		return 0;
	if (!c->live && (err = evr_heap_live_new(&c->live)) < 0)
		return err;
	before = c->heap_inuse[m];
	/* A Free or Munmap (of all or part), or an address given out again whose
	 * Free the trace lacks. */
	if (k == EVR_HEAP_FREE ? evr_heap_live_release(c->live, &h, &b) :
				 evr_heap_live_take(c->live, h.address, &b))
		c->heap_inuse[m] -= b.bytes;
	if (k == EVR_HEAP_ALLOC && !(h.flags & EVR_HEAP_F_UNTRACKED)) {
		b = (struct evr_heap_block){ .address = h.address, .size = h.size,
					     .ts_ns = v->ts_ns, .objects = h.objects,
					     .bytes = h.bytes };
		if ((err = evr_heap_live_put(c->live, &b)) < 0)
			return err;
		c->heap_inuse[m] += h.bytes;
	}
	/* Sums of doubles drift: never below zero, and an empty heap reads 0. */
	if (c->heap_inuse[m] < 0.5)
		c->heap_inuse[m] = 0;
	if (c->heap_inuse[m] == before)
		return 0;
	err = head(c, "C", names[m], strlen(names[m]), "Heap", v->tid, v->ts_ns);
	if (!err)
		err = counter_args(&c->sb, key, (const double[]){ round(c->heap_inuse[m]) }, 1);
	c->counters++;
	return err ? err : emit(c);
}

static int record(struct chrome *c, const struct evr_event_view *v)
{
	struct chrome_type *ty;
	struct chrome_thread *t;
	struct evr_counter_sample s;
	int err;

	if (v->ts_ns > c->last_ts)
		c->last_ts = v->ts_ns;
	if (v->type == EVR_REC_LOST) {
		c->st.lost = evr_trace_lost_add(c->st.lost, v->lost);
		return lost(c, v);
	}
	c->st.events++;
	if ((err = thread_get(c, v->tid, &t)) < 0)
		return err;
	ty = v->rid < c->nby_rid ? c->by_rid[v->rid] : evr_rpt_map_get(&c->types, v->rid);
	/* A Counter* event that does not decode is shown as an ordinary event. Only
	 * Counter* types can be samples: the others skip the check. */
	if ((!ty || ty->counter || ty->schema != v->schema) &&
	    evr_counter_sample_from_view(v, &s) == 1)
		return counter(c, v, &s);
	/* A rid described again differently (a later METADATA entry) is an ordinary event. */
	if (!ty || ty->schema != v->schema)
		return instant(c, NULL, v, NULL);
	if (ty->role == 0) {
		/* The counter after the event that changed it. */
		err = instant(c, ty, v, NULL);
		return err || !ty->heap ? err : heap_counter(c, v);
	}
	if (ty->role == 1)
		return slice_start(c, t, ty, v);
	return slice_stop(c, t, ty, v);
}

static int process_records(struct chrome *c)
{
	const struct evr_process_info *p = evr_trace_reader_process(c->r);
	const struct evr_trace_session *s = evr_trace_reader_session(c->r);
	struct evr_strbuf lab = { 0 };
	int err;

	/* process_name: the command as the process reported it (argv[0], else exe). */
	err = begin(c) ? -ENOMEM : evr_strbuf_printf(&c->sb, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32
				",\"tid\":0,\"args\":{\"name\":", c->pid);
	if (!err)
		err = evr_rpt_json_cstr(&c->sb, p && p->argc && p->argv[0] ? p->argv[0]
					: p && p->exe ? p->exe
					: "unknown process (the file has no PROCESS chunk)");
	if (!err)
		err = evr_strbuf_append(&c->sb, "}}", 2);
	if (!err)
		err = emit(c);
	if (err)
		return err;
	if (p && p->hostname)
		err = evr_strbuf_printf(&lab, "host %s", p->hostname);
	if (!err && s && s->providers && *s->providers)
		err = evr_strbuf_printf(&lab, "%sproviders %s", lab.len ? ", " : "", s->providers);
	if (!err && lab.len) {
		err = begin(c) ? -ENOMEM : evr_strbuf_printf(&c->sb, "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":%"
					PRIu32 ",\"tid\":0,\"args\":{\"labels\":", c->pid);
		if (!err)
			err = evr_strbuf_json_string(&c->sb, lab.buf, lab.len);
		if (!err)
			err = evr_strbuf_append(&c->sb, "}}", 2);
		if (!err)
			err = emit(c);
	}
	free(lab.buf);
	return err;
}

static int other_data(struct chrome *c)
{
	const struct evr_process_info *p = evr_trace_reader_process(c->r);
	const struct evr_trace_session *s = evr_trace_reader_session(c->r);
	struct evr_trace_stats st;
	int err;

	evr_trace_reader_stats(c->r, &st);
	if (c->sk) {
		long n;

		if (fputs("\n]", c->out) == EOF)
			return -EIO;
		n = c->sk->write_frames(c->sk->ctx, c->out);
		if (n < 0)
			return (int)n;
		c->st.bytes += 2 + (uint64_t)n;
	}
	c->sb.len = 0;
	err = evr_strbuf_printf(&c->sb, "%s,\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{"
				"\"generator\":\"evring convert\",\"clock\":\"CLOCK_MONOTONIC\","
				"\"ts_unit\":\"us\",\"events\":%" PRIu64 ",\"lost\":%" PRIu64
				",\"counter_samples\":%" PRIu64 ",\"truncated\":%s"
				",\"approximations\":{\"crossed\":%" PRIu64 ",\"too_deep\":%" PRIu64
				",\"closed_late\":%" PRIu64 ",\"split_records\":%" PRIu64
				",\"split_max\":%u,\"depth_max\":%u},\"damaged\":%s"
				",\"damaged_events\":%" PRIu64 ",\"lost_damaged\":%" PRIu64,
				c->sk ? "" : "\n]", c->st.events, c->st.lost, c->counters,
				st.truncated ? "true" : "false", c->st.crossed, c->st.too_deep,
				c->closed_late, c->synthetic, SPLIT_MAX, DEPTH_MAX,
				st.damaged ? "true" : "false", st.damaged_events, st.lost_damaged);
	if (!err && st.truncated) {
		err = evr_strbuf_append(&c->sb, ",\"truncated_why\":", 17);
		if (!err)
			err = evr_rpt_json_cstr(&c->sb, st.truncated_why);
	}
	if (!err && s)
		err = evr_strbuf_printf(&c->sb, ",\"realtime_minus_monotonic_ns\":%" PRId64,
					(int64_t)(s->clock.real_base - s->clock.mono_base));
	if (!err && !p)
		err = evr_strbuf_append(&c->sb, ",\"pid\":null", 11);	/* the file does not say */
	if (!err && p) {
		err = evr_strbuf_printf(&c->sb, ",\"pid\":%" PRIu32 ",\"exe\":", p->pid);
		if (!err)
			err = evr_rpt_json_cstr(&c->sb, p->exe ? p->exe : "");
		if (!err)
			err = evr_strbuf_append(&c->sb, ",\"host\":", 8);
		if (!err)
			err = evr_rpt_json_cstr(&c->sb, p->hostname ? p->hostname : "");
	}
	if (!err && s && s->providers) {
		err = evr_strbuf_append(&c->sb, ",\"providers\":", 13);
		if (!err)
			err = evr_rpt_json_cstr(&c->sb, s->providers);
	}
	if (!err)
		err = evr_strbuf_append(&c->sb, "}}\n", 3);
	if (err)
		return err;
	if (fwrite(c->sb.buf, 1, c->sb.len, c->out) != c->sb.len)
		return -EIO;
	c->st.bytes += c->sb.len;
	return 0;
}

/* Slices still open: closed at the last timestamp, innermost first. */
static int close_open(struct chrome *c)
{
	for (uint32_t i = 0; i < c->nthreads; i++) {
		struct chrome_thread *t = c->threadv[i];

		while (t->depth) {
			const struct chrome_slice *sl = &t->stack[t->depth - 1];
			int err = synthetic(c, "E", sl->start, t->tid, c->last_ts,
					    sl->stopped ? "closed late" : "not closed");

			if (err)
				return err;
			c->closed_late += sl->stopped;
			t->depth--;
		}
	}
	return 0;
}

int evr_convert_chrome(struct evr_trace_reader *r, FILE *out, struct evr_convert_stats *ret,
		       char *errbuf, size_t errlen)
{
	return evr_convert_chrome_stacks(r, out, NULL, ret, errbuf, errlen);
}

/* Free what one process's conversion allocated. */
static void chrome_fini(struct chrome *c)
{
	for (uint32_t i = 0; i < c->nthreads; i++) {
		free(c->threadv[i]->stack);
		free(c->threadv[i]->top_of);
		free(c->threadv[i]->too_deep);
		free(c->threadv[i]);
	}
	free(c->threadv);
	for (uint32_t i = 0; i < c->ntypes; i++) {
		free(c->typev[i].stem);
		for (int k = 0; k < 3; k++)
			free(c->typev[i].pre[k].buf);
		free(c->typev[i].fnames.buf);
		free(c->typev[i].fname_end);
	}
	free(c->typev);
	free(c->by_rid);
	evr_rpt_map_fini(&c->types);
	evr_rpt_map_fini(&c->threads);
	evr_heap_live_free(c->live);
	free(c->sb.buf);
}

/* Every record of one process (c->r), after the file's opening: its metadata,
 * events, and the slices it left open. */
static int chrome_body(struct chrome *c)
{
	struct evr_event_view v;
	int err = chrome_types(c);

	if (err < 0)
		return err;
	if ((err = process_records(c)) < 0)
		return err;
	while ((err = evr_trace_reader_next(c->r, &v)) == 1)
		if ((err = record(c, &v)) < 0)
			break;
	if (err < 0)
		return err;
	if ((err = close_open(c)) < 0)
		return err;
	return flush(c);
}

static void chrome_fail(struct evr_trace_reader *r, int err, char *errbuf, size_t errlen)
{
	if (err == -ENOMEM)
		evr_export_fail(errbuf, errlen, err, "out of memory");
	else if (err == -EIO)
		evr_export_fail(errbuf, errlen, err, "cannot write the output: %s",
				strerror(errno ? errno : EIO));
	else if (err < 0)
		evr_export_fail(errbuf, errlen, err, "%s", evr_trace_reader_errmsg(r));
}

int evr_convert_chrome_stacks(struct evr_trace_reader *r, FILE *out,
			      const struct evr_chrome_stacks *sk, struct evr_convert_stats *ret,
			      char *errbuf, size_t errlen)
{
	const struct evr_process_info *p = evr_trace_reader_process(r);
	struct chrome c = { .out = out, .r = r, .first = true, .sk = sk };
	int err;

	/* Chrome needs a pid: the traced one; 0 when the file does not say (otherData
	 * then says "pid": null rather than making one up). */
	c.pid = p ? p->pid : 0;
	if (fputs("{\"traceEvents\":[", out) == EOF) {
		err = -EIO;
		goto out;
	}
	c.st.bytes = 16;
	if ((err = chrome_body(&c)) < 0)
		goto out;
	/* What the caller adds to the events (system calls as slices), before otherData. */
	if (sk && sk->write_events) {
		long n = sk->write_events(sk->events_ctx, out, c.first);

		if (n < 0) {
			err = (int)n;
			goto out;
		}
		c.st.bytes += (uint64_t)n;
		c.first = c.first && !n;
	}
	if ((err = other_data(&c)) < 0)
		goto out;
	if (fflush(out) != 0 || ferror(out))
		err = -EIO;
out:
	chrome_fail(r, err, errbuf, errlen);
	chrome_fini(&c);
	if (err < 0)
		return err;
	*ret = c.st;
	return 0;
}

/*
 * Several processes: each one's records in turn, with its own pid, so that a
 * viewer groups each process's threads under it (Perfetto: a process track
 * group each). Their times are all CLOCK_MONOTONIC: one timeline. Viewers sort
 * the records; the file need not interleave them.
 */
int evr_convert_chrome_procs(struct evr_trace_reader *const *rs, const uint32_t *pids, uint32_t n,
			     FILE *out, struct evr_convert_stats *ret, char *errbuf, size_t errlen)
{
	struct evr_convert_stats sum = { .bytes = 16 };
	struct evr_strbuf sb = { 0 };
	uint64_t counters = 0, closed_late = 0, synth = 0;
	bool first = true, truncated = false;
	int err = 0;

	if (fputs("{\"traceEvents\":[", out) == EOF) {
		chrome_fail(NULL, -EIO, errbuf, errlen);
		return -EIO;
	}
	for (uint32_t i = 0; i < n && !err; i++) {
		struct chrome c = { .out = out, .r = rs[i], .first = first, .pid = pids[i] };
		struct evr_trace_stats st;

		err = chrome_body(&c);
		if (err < 0)
			chrome_fail(rs[i], err, errbuf, errlen);
		first = c.first;
		sum.events += c.st.events;
		sum.lost = evr_trace_lost_add(sum.lost, c.st.lost);
		sum.bytes += c.st.bytes;
		sum.crossed += c.st.crossed;
		sum.too_deep += c.st.too_deep;
		sum.undecodable += c.st.undecodable;
		counters += c.counters;
		closed_late += c.closed_late;
		synth += c.synthetic;
		evr_trace_reader_stats(rs[i], &st);
		truncated |= st.truncated;
		chrome_fini(&c);
	}
	if (err < 0)
		return err;
	err = evr_strbuf_printf(&sb, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{"
				"\"generator\":\"evring convert\",\"clock\":\"CLOCK_MONOTONIC\","
				"\"ts_unit\":\"us\",\"events\":%" PRIu64 ",\"lost\":%" PRIu64
				",\"counter_samples\":%" PRIu64 ",\"truncated\":%s"
				",\"approximations\":{\"crossed\":%" PRIu64 ",\"too_deep\":%" PRIu64
				",\"closed_late\":%" PRIu64 ",\"split_records\":%" PRIu64
				",\"split_max\":%u,\"depth_max\":%u},\"pids\":[", sum.events,
				sum.lost, counters, truncated ? "true" : "false", sum.crossed,
				sum.too_deep, closed_late, synth, SPLIT_MAX, DEPTH_MAX);
	for (uint32_t i = 0; i < n && !err; i++)
		err = evr_strbuf_printf(&sb, "%s%" PRIu32, i ? "," : "", pids[i]);
	if (!err)
		err = evr_strbuf_append(&sb, "]}}\n", 4);
	if (!err && fwrite(sb.buf, 1, sb.len, out) != sb.len)
		err = -EIO;
	if (!err && (fflush(out) != 0 || ferror(out)))
		err = -EIO;
	sum.bytes += sb.len;
	free(sb.buf);
	if (err < 0) {
		chrome_fail(NULL, err, errbuf, errlen);
		return err;
	}
	*ret = sum;
	return 0;
}
