// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `evring convert --format ctf`: a trace file to a CTF 1.8 trace directory that
 * babeltrace2 and Trace Compass read. The metadata (TSDL) is built in
 * convert-ctf-tsdl.c; this file writes the data streams.
 *
 * One stream file per ring (the CPU it serves), written packet by packet. The
 * trace reader gives events in global time order, so each ring's current packet
 * is kept in memory (at most EVR_CTF_PACKET_MAX bytes) and written when it is
 * full, when a loss must be placed after it, or at the end: a packet's header
 * holds its end time and size, which are known only once it is complete.
 *
 * Losses: CTF carries them as the packet context's events_discarded, the
 * number of events discarded in the stream so far (cumulative); babeltrace2
 * reports the difference between two consecutive packets as "discarded events"
 * between them. So a LOST view closes the ring's current packet and the count
 * lands in the next packet's context. babeltrace2 gives no count for losses
 * announced by a stream's first packet, so a ring whose first view is a loss
 * starts with an empty packet (events_discarded 0), and losses after a ring's
 * last event are carried by a final empty packet.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert-ctf-internal.h"
#include "export-internal.h"

/* One ring's data stream. */
struct ctf_stream {
	int fd;				/* -1 until the ring's first view */
	uint8_t *buf;			/* the current packet, EVR_CTF_PACKET_MAX bytes */
	uint32_t len;			/* bytes in it; 0: no packet open */
	uint64_t ts_begin, ts_end;	/* of the current packet */
	uint64_t seq;			/* packet_seq_num of the next packet */
	uint64_t discarded;		/* events lost on this ring so far */
	uint64_t discarded_written;	/* events_discarded of the last packet written */
	uint64_t loss_ts;		/* time of the last loss */
};

struct ctf_conv {
	const char *dir;
	int dirfd;			/* -1 when create is set */
	evr_export_create_fn *create;	/* NULL: openat(dirfd) */
	void *create_ctx;
	uint8_t uuid[16];
	struct evr_ctf_class *classes;	/* sorted by rid */
	uint32_t nclasses;
	struct ctf_stream *streams;	/* one per ring */
	uint32_t nstreams;
	uint8_t *ev;			/* scratch: one encoded event */
	struct evr_field_value *vals;
	struct evr_convert_stats st;
	char *err;			/* the caller's message buffer */
	size_t errlen;
};

/* ---- output ---------------------------------------------------------------- */

static int write_all(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_error(const struct ctf_conv *c, const char *name, int err)
{
	return evr_export_fail(c->err, c->errlen, err, "cannot write %s/%s: %s", c->dir, name,
			       strerror(-err));
}

/* Create @dir if missing; an existing one must be an empty directory. */
static int open_outdir(const char *dir, int *ret_fd, char *errbuf, size_t errlen)
{
	struct dirent *de;
	DIR *d;
	int fd, fd2, err = 0;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		err = -errno;
		return evr_export_fail(errbuf, errlen, err, "cannot create directory %s: %s", dir,
				       strerror(-err));
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOTDIR)
			evr_export_fail(errbuf, errlen, err, "%s exists and is not a directory",
					dir);
		else
			evr_export_fail(errbuf, errlen, err, "cannot open directory %s: %s", dir,
					strerror(-err));
		return err;
	}
	fd2 = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	d = fd2 >= 0 ? fdopendir(fd2) : NULL;
	if (!d) {
		err = -errno;
		if (fd2 >= 0)
			close(fd2);
		evr_export_fail(errbuf, errlen, err, "cannot read directory %s: %s", dir,
				strerror(-err));
		goto out;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			err = evr_export_fail(errbuf, errlen, -EEXIST, "%s is not empty (it holds "
					      "%s): name a new or empty directory", dir, de->d_name);
			break;
		}
	}
	closedir(d);
out:
	if (err < 0) {
		close(fd);
		return err;
	}
	*ret_fd = fd;
	return 0;
}

int evr_convert_ctf_prepare(const char *dir, char *errbuf, size_t errlen)
{
	int fd, err = open_outdir(dir, &fd, errbuf, errlen);

	if (err == 0)
		close(fd);
	return err;
}

/* A new file @name in the output directory: a descriptor, or -errno. */
static int create_file(struct ctf_conv *c, const char *name)
{
	int fd;

	if (c->create)
		return c->create(c->create_ctx, name);
	fd = openat(c->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd;
}

static int write_file(struct ctf_conv *c, const char *name, const void *data, size_t len)
{
	int fd, err;

	fd = create_file(c, name);
	if (fd < 0)
		return write_error(c, name, fd);
	err = write_all(fd, data, len);
	if (close(fd) < 0 && !err)
		err = -errno;
	if (err < 0)
		return write_error(c, name, err);
	c->st.bytes += len;
	return 0;
}

/* ---- event classes --------------------------------------------------------- */

static int class_cmp(const void *a, const void *b)
{
	const struct evr_ctf_class *x = a, *y = b;

	return x->rid < y->rid ? -1 : x->rid > y->rid;
}

static int classes_init(struct ctf_conv *c, const struct evr_schema_set *set)
{
	uint32_t n = set ? evr_schema_set_count(set) : 0;

	c->classes = calloc(n ? n : 1, sizeof(*c->classes));
	if (!c->classes)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct evr_schema_event *ev = evr_schema_set_at(set, i);
		struct evr_ctf_class *k = &c->classes[i];

		k->rid = ev->rid;
		k->id = i + 1;	/* 0 is evring:unknown */
		k->ev = ev;
		for (uint32_t f = 0; f < ev->nfields; f++) {
			uint32_t t = ev->fields[f].type;

			if (t == EVR_FT_STR || t == EVR_FT_JSON || t == EVR_FT_BOOL)
				k->rewrite = true;
		}
	}
	c->nclasses = n;
	/* Event ids follow the set's order (the metadata lists them so); lookups are by rid. */
	qsort(c->classes, n, sizeof(*c->classes), class_cmp);
	return 0;
}

static const struct evr_ctf_class *class_find(const struct ctf_conv *c, uint32_t rid)
{
	struct evr_ctf_class key = { .rid = rid };

	return bsearch(&key, c->classes, c->nclasses, sizeof(key), class_cmp);
}

/* ---- events ---------------------------------------------------------------- */

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);	/* evring only builds on little-endian hosts (abi.h) */
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

/*
 * The CTF payload of @v by class @k into @out. The evring encoding is the CTF
 * one except for strings (u32 length + bytes -> bytes up to the first NUL, then
 * NUL) and bools (any non-zero byte -> 1); other fields are copied bit for bit.
 * Return: bytes, or -EBADMSG if the payload does not decode by its schema.
 */
static int encode_fields(struct ctf_conv *c, const struct evr_ctf_class *k,
			 const struct evr_event_view *v, uint8_t *out)
{
	const struct evr_schema_event *ev = k->ev;
	const uint8_t *in = v->payload;
	uint8_t *p = out;
	int n;

	/* Checks the whole payload against the schema: the walk below trusts it. */
	n = evr_decode_fields(ev, v->payload, v->len, c->vals);
	if (n < 0)
		return n;
	if (!k->rewrite) {
		memcpy(out, v->payload, v->len);
		return (int)v->len;
	}
	for (int i = 0; i < n; i++) {
		const struct evr_field_value *f = &c->vals[i];
		int sz = evr_field_type_size(f->type);	/* the payload decoded: no -1 */
		uint32_t len;
		const uint8_t *nul;

		if (f->type == EVR_FT_BOOL) {
			*p++ = *in ? 1 : 0;
			in++;
		} else if (sz > 0) {
			memcpy(p, in, (size_t)sz);
			p += sz;
			in += sz;
		} else if (f->type == EVR_FT_STR || f->type == EVR_FT_JSON) {
			/* CTF strings end at a NUL: cut there (docs/ctf.md). */
			nul = memchr(f->b.data, 0, f->b.len);
			len = nul ? (uint32_t)(nul - (const uint8_t *)f->b.data) : f->b.len;
			memcpy(p, f->b.data, len);
			p += len;
			*p++ = 0;
			in += 4 + f->b.len;
		} else {
			/* bytes: the same u32 length + data as the CTF sequence */
			memcpy(p, in, 4 + f->b.len);
			p += 4 + f->b.len;
			in += 4 + f->b.len;
		}
	}
	return (int)(p - out);
}

/* The whole CTF event (header, context, payload) of @v into c->ev. Return: its size. */
static uint32_t encode_event(struct ctf_conv *c, const struct evr_event_view *v)
{
	const struct evr_ctf_class *k = v->schema ? class_find(c, v->rid) : NULL;
	uint8_t *p = c->ev + EVR_CTF_EV_HDR_SIZE;
	uint32_t id = EVR_CTF_UNKNOWN_ID;
	int n = -EBADMSG;

	if (k && k->ev == v->schema)
		n = encode_fields(c, k, v, p);
	if (n >= 0) {
		id = k->id;
		p += n;
	} else {
		/* No description, or a payload it does not describe: keep the bytes. */
		c->st.undecodable++;
		p = put32(p, v->rid);
		p = put32(p, v->len);
		memcpy(p, v->payload, v->len);
		p += v->len;
	}
	put32(put64(put32(c->ev, id), v->ts_ns), v->tid);
	return (uint32_t)(p - c->ev);
}

/* ---- packets --------------------------------------------------------------- */

static void stream_name(uint32_t ring, char *buf, size_t len)
{
	snprintf(buf, len, "stream_%" PRIu32, ring);
}

static int stream_open(struct ctf_conv *c, uint32_t ring, struct ctf_stream **ret)
{
	struct ctf_stream *s;
	char name[32];

	if (ring >= c->nstreams) {
		return evr_export_fail(c->err, c->errlen, -EBADMSG, "the trace names ring %" PRIu32
				       " of %" PRIu32, ring, c->nstreams);
	}
	s = &c->streams[ring];
	if (s->fd < 0) {
		s->buf = malloc(EVR_CTF_PACKET_MAX);
		if (!s->buf)
			return evr_export_fail(c->err, c->errlen, -ENOMEM, "out of memory");
		stream_name(ring, name, sizeof(name));
		s->fd = create_file(c, name);
		if (s->fd < 0) {
			int err = s->fd;

			s->fd = -1;
			return write_error(c, name, err);
		}
	}
	*ret = s;
	return 0;
}

/* Write the current packet (possibly empty: only header and context) of @s. */
static int packet_write(struct ctf_conv *c, struct ctf_stream *s, uint32_t ring)
{
	uint64_t bits = (uint64_t)s->len * 8;
	uint8_t *p = s->buf;
	char name[32];
	int err;

	p = put32(p, EVR_CTF_MAGIC);
	memcpy(p, c->uuid, 16);
	p = put32(p + 16, 0);			/* stream_id */
	p = put64(p, s->ts_begin);
	p = put64(p, s->ts_end);
	p = put64(p, bits);			/* content_size */
	p = put64(p, bits);			/* packet_size: no padding */
	p = put64(p, s->seq);
	p = put64(p, s->discarded);
	p = put32(p, ring);			/* cpu_id */
	err = write_all(s->fd, s->buf, s->len);
	if (err < 0) {
		stream_name(ring, name, sizeof(name));
		return write_error(c, name, err);
	}
	c->st.bytes += s->len;
	s->seq++;
	s->discarded_written = s->discarded;
	s->len = 0;
	return 0;
}

static void packet_start(struct ctf_stream *s, uint64_t ts)
{
	s->len = EVR_CTF_PKT_START;
	s->ts_begin = ts;
	s->ts_end = ts;
}

static int add_event(struct ctf_conv *c, const struct evr_event_view *v)
{
	struct ctf_stream *s;
	uint32_t n;
	int err;

	err = stream_open(c, v->ring, &s);
	if (err < 0)
		return err;
	n = encode_event(c, v);
	if (s->len && s->len + n > EVR_CTF_PACKET_MAX) {
		err = packet_write(c, s, v->ring);
		if (err < 0)
			return err;
	}
	if (!s->len)
		packet_start(s, v->ts_ns);
	memcpy(s->buf + s->len, c->ev, n);
	s->len += n;
	s->ts_end = v->ts_ns;
	c->st.events++;
	return 0;
}

static int add_loss(struct ctf_conv *c, const struct evr_event_view *v)
{
	struct ctf_stream *s;
	int err;

	err = stream_open(c, v->ring, &s);
	if (err < 0)
		return err;
	/*
	 * Close the packet the events before the loss are in, so that the count
	 * goes into the next one; a stream must not begin with a count (see top).
	 */
	if (!s->len && s->seq == 0)
		packet_start(s, v->ts_ns);
	if (s->len) {
		err = packet_write(c, s, v->ring);
		if (err < 0)
			return err;
	}
	s->discarded = evr_trace_lost_add(s->discarded, v->lost);
	s->loss_ts = v->ts_ns;
	c->st.lost = evr_trace_lost_add(c->st.lost, v->lost);
	return 0;
}

static int streams_finish(struct ctf_conv *c)
{
	int err;

	for (uint32_t i = 0; i < c->nstreams; i++) {
		struct ctf_stream *s = &c->streams[i];
		char name[32];

		if (s->fd < 0)
			continue;
		if (s->len) {
			err = packet_write(c, s, i);
			if (err < 0)
				return err;
		}
		if (s->discarded != s->discarded_written) {
			/* Losses after the ring's last event: an empty packet carries them. */
			packet_start(s, s->loss_ts);
			err = packet_write(c, s, i);
			if (err < 0)
				return err;
		}
		err = close(s->fd) < 0 ? -errno : 0;
		s->fd = -1;
		if (err < 0) {
			stream_name(i, name, sizeof(name));
			return write_error(c, name, err);
		}
	}
	return 0;
}

/* ---- the trace ------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	/* splitmix64's finalizer: spreads every input bit over the output. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * A UUID (version 4 layout) derived from the session, so that converting the
 * same trace twice gives the same CTF trace.
 */
static void make_uuid(const struct evr_trace_session *s, const struct evr_process_info *p,
		      uint8_t ret[16])
{
	uint64_t a = 0x6576726963746621ull, b;

	if (s)
		a = mix64(a ^ s->session_serial) ^ mix64(s->start_realtime_ns) ^
		    mix64(s->start_mono_ns + s->session_id);
	if (p)
		a = mix64(a ^ p->pid) ^ mix64(p->start_realtime_ns);
	b = mix64(a + 0x9e3779b97f4a7c15ull);
	memcpy(ret, &a, 8);
	memcpy(ret + 8, &b, 8);
	ret[6] = (uint8_t)((ret[6] & 0x0f) | 0x40);
	ret[8] = (uint8_t)((ret[8] & 0x3f) | 0x80);
}

static int write_metadata(struct ctf_conv *c, struct evr_trace_reader *r)
{
	const struct evr_trace_session *s = evr_trace_reader_session(r);
	struct evr_ctf_meta_in in = {
		.proc = evr_trace_reader_process(r),
		.sess = s,
		.classes = NULL,
		.nclasses = c->nclasses,
	};
	struct evr_ctf_class *byid;
	struct evr_strbuf sb = { 0 };
	int err;

	memcpy(in.uuid, c->uuid, 16);
	if (s)
		in.clock_offset_ns = (int64_t)(s->clock.real_base - s->clock.mono_base);
	/* In id order, so that the metadata reads in the order events were described. */
	byid = calloc(c->nclasses ? c->nclasses : 1, sizeof(*byid));
	if (!byid)
		return evr_export_fail(c->err, c->errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < c->nclasses; i++)
		byid[c->classes[i].id - 1] = c->classes[i];
	in.classes = byid;
	err = evr_ctf_metadata(&sb, &in);
	free(byid);
	if (err < 0) {
		evr_export_fail(c->err, c->errlen, err, "%s", err == -ENOMEM ? "out of memory"
					: "an event description has an unknown type");
		goto out;
	}
	err = write_file(c, "metadata", sb.buf, sb.len);
out:
	free(sb.buf);
	return err;
}

int evr_convert_ctf(struct evr_trace_reader *r, const char *dir, struct evr_convert_stats *ret,
		    char *errbuf, size_t errlen)
{
	return evr_convert_ctf_at(r, dir, NULL, NULL, ret, errbuf, errlen);
}

int evr_convert_ctf_at(struct evr_trace_reader *r, const char *dir, evr_export_create_fn *create,
		       void *create_ctx, struct evr_convert_stats *ret, char *errbuf,
		       size_t errlen)
{
	const struct evr_trace_session *sess = evr_trace_reader_session(r);
	struct ctf_conv c = { .dir = dir, .dirfd = -1, .create = create, .create_ctx = create_ctx,
			      .err = errbuf, .errlen = errlen };
	struct evr_event_view v;
	int err;

	if (!create) {
		err = open_outdir(dir, &c.dirfd, errbuf, errlen);
		if (err < 0)
			return err;
	}
	c.nstreams = sess ? sess->nr_rings : 0;
	c.streams = calloc(c.nstreams ? c.nstreams : 1, sizeof(*c.streams));
	/* An event's CTF form is at most its payload plus headers and the rid/length pair. */
	c.ev = malloc(EVR_CTF_EV_HDR_SIZE + 8 + EVR_MAX_PAYLOAD);
	c.vals = calloc(EVR_SCHEMA_MAX_FIELDS, sizeof(*c.vals));
	if (!c.streams || !c.ev || !c.vals ||
	    classes_init(&c, evr_trace_reader_schemas(r)) < 0) {
		err = evr_export_fail(errbuf, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < c.nstreams; i++)
		c.streams[i].fd = -1;
	make_uuid(sess, evr_trace_reader_process(r), c.uuid);
	err = write_metadata(&c, r);
	if (err < 0)
		goto out;

	while ((err = evr_trace_reader_next(r, &v)) == 1) {
		if (v.type == EVR_REC_LOST)
			err = add_loss(&c, &v);
		else if (v.len > EVR_MAX_PAYLOAD) {
			/* The reader never returns one (a record is smaller): guard the buffer. */
			err = evr_export_fail(errbuf, errlen, -EBADMSG, "an event payload of %"
					      PRIu32 " bytes is too large", v.len);
		} else
			err = add_event(&c, &v);
		if (err < 0)
			goto out;
	}
	if (err < 0) {
		evr_export_fail(errbuf, errlen, err, "%s", err == -ENOMEM ? "out of memory"
				: evr_trace_reader_errmsg(r));
		goto out;
	}
	err = streams_finish(&c);
	if (err < 0)
		goto out;
	*ret = c.st;
out:
	for (uint32_t i = 0; i < c.nstreams; i++) {
		if (c.streams[i].fd >= 0)
			close(c.streams[i].fd);
		free(c.streams[i].buf);
	}
	free(c.streams);
	free(c.classes);
	free(c.ev);
	free(c.vals);
	if (c.dirfd >= 0)
		close(c.dirfd);
	return err;
}
