// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The journald sink: one structured journal entry per event, in journald's
 * native protocol (one AF_UNIX datagram per entry; systemd's
 * docs/JOURNAL_NATIVE_PROTOCOL.md), written by our own encoder rather than
 * libsystemd's sd_journal_sendv(): that one hard-codes the socket path (so a
 * test cannot point it elsewhere), returns 0 and drops everything when
 * journald is absent, and blocks the caller on one process-wide socket.
 *
 *   --to journald[:SOCKET]     default /run/systemd/journal/socket
 *
 * Fields of an entry:
 *   MESSAGE              "Provider/Event name=value ..." (values as evring dump prints them)
 *   PRIORITY             syslog severity of the level: critical 2, error 3, warning 4,
 *                        info 6, verbose 7, LogAlways 5
 *   SYSLOG_IDENTIFIER    the producer's name (journald's own _PID, _COMM are the forwarder's)
 *   MESSAGE_ID           128 bits derived from "Provider/Event": one per event type
 *   OBJECT_PID           the producer (journald honours it for a root sender)
 *   EVR_PROVIDER EVR_EVENT EVR_EVENT_ID EVR_LEVEL EVR_KEYWORDS EVR_PID EVR_TID EVR_COMM
 *   EVR_TIMESTAMP_MONOTONIC_NS  EVR_TIMESTAMP_REALTIME_USEC   the event's own time
 *   EVR_F_<FIELD>        one per payload field: the name upper-cased, [^A-Z0-9_] as '_',
 *                        cut to journald's 64 characters, "_2", "_3"... on a collision;
 *                        integers in decimal, floats with 17 digits, bool true/false,
 *                        ptr 0x..., bytes as hex, str and json as they are
 * A value holding a newline (or any byte below 0x20 but tab) goes in the
 * protocol's binary form (the name, a newline, a 64-bit little-endian length,
 * the bytes), which journald stores as given.
 *
 * Entries are far below the datagram limit (evring's largest payload is under
 * 16 KiB), so journald's memfd form for huge entries is never needed; an entry
 * the kernel still refuses as too large is counted as such. The default
 * filter is level=warning: journald rate-limits each service to 10000 entries
 * per 30 s (the forwarder's unit, not the producer's), so it is a sink for the
 * rare events; use level= and max-rate= to choose.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <evring/abi.h>

#include "forward.h"

#define DEFAULT_SOCKET "/run/systemd/journal/socket"
#define OUTBOX_BYTES (4u << 20)
#define MESSAGE_MAX 2048u
#define BACKOFF_MIN_MS 200u
#define BACKOFF_MAX_MS 5000u
#define NAME_MAX_LEN 64u

struct journald {
	struct evr_fwd_sink *s;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct evr_strbuf e;		/* the entry being built (reader thread) */
	struct evr_strbuf msg;		/* its MESSAGE */
	struct evr_strbuf val;		/* one value */
	char names[EVR_SCHEMA_MAX_FIELDS][NAME_MAX_LEN + 1];
	/* The worker's socket. */
	int fd;
	uint32_t backoff_ms;
	bool said_down;
	_Atomic uint64_t connects, failures, too_large;
};

/* ---- the entry ---------------------------------------------------------------------------- */

/* KEY=value, or the binary form when the value holds a newline or control byte. */
static int put_field(struct evr_strbuf *e, const char *key, const void *v, size_t n)
{
	const unsigned char *p = v;
	bool binary = false;
	int r;

	for (size_t i = 0; i < n && !binary; i++)
		binary = p[i] < 0x20 && p[i] != '\t';
	if (!binary) {
		r = evr_strbuf_printf(e, "%s=", key);
		r = r ?: evr_strbuf_append(e, v, n);
		return r ?: evr_strbuf_append(e, "\n", 1);
	}
	{
		uint64_t le = (uint64_t)n;
		unsigned char len[8];

		for (int i = 0; i < 8; i++)
			len[i] = (unsigned char)(le >> (8 * i));
		r = evr_strbuf_printf(e, "%s\n", key);
		r = r ?: evr_strbuf_append(e, (const char *)len, 8);
		r = r ?: evr_strbuf_append(e, v, n);
		return r ?: evr_strbuf_append(e, "\n", 1);
	}
}

__attribute__((format(printf, 3, 4)))
static int put_fieldf(struct journald *j, const char *key, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	return put_field(&j->e, key, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* EVR_F_NAME for field @i of @ev: valid for journald, unique in the event. */
static void field_names(struct journald *j, const struct evr_schema_event *ev)
{
	for (uint32_t i = 0; i < ev->nfields && i < EVR_SCHEMA_MAX_FIELDS; i++) {
		char *out = j->names[i];
		size_t n = (size_t)snprintf(out, NAME_MAX_LEN + 1, "EVR_F_");
		const char *in = ev->fields[i].name;
		unsigned int dup = 1;

		for (; *in && n < NAME_MAX_LEN; in++) {
			char c = *in;

			if (c >= 'a' && c <= 'z')
				c = (char)(c - 'a' + 'A');
			else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
				c = '_';
			out[n++] = c;
		}
		out[n] = 0;
		/* Two fields that map to one name ("a-b", "a_b"): number the later. */
		for (uint32_t k = 0; k < i; k++)
			if (!strcmp(j->names[k], out)) {
				char suf[16];
				size_t sl = (size_t)snprintf(suf, sizeof(suf), "_%u", ++dup);
				size_t at = n + sl > NAME_MAX_LEN ? NAME_MAX_LEN - sl : n;

				memcpy(out + at, suf, sl + 1);
				k = (uint32_t)-1;	/* check the new name against all again */
			}
	}
}

/* One value as text into j->val (for MESSAGE and for EVR_F_*). */
static int value_text(struct journald *j, const struct evr_field_value *v)
{
	struct evr_strbuf *sb = &j->val;

	sb->len = 0;
	switch (v->type) {
	case EVR_FT_I8: case EVR_FT_I16: case EVR_FT_I32: case EVR_FT_I64:
		return evr_strbuf_printf(sb, "%" PRId64, v->i);
	case EVR_FT_F32: case EVR_FT_F64:
		return evr_strbuf_printf(sb, "%.17g", v->f);
	case EVR_FT_BOOL:
		return evr_strbuf_printf(sb, "%s", v->u ? "true" : "false");
	case EVR_FT_PTR:
		return evr_strbuf_printf(sb, "0x%" PRIx64, v->u);
	case EVR_FT_STR: case EVR_FT_JSON:
		return evr_strbuf_append(sb, v->b.data, v->b.len);
	case EVR_FT_BYTES: {
		const unsigned char *p = v->b.data;
		int r = 0;

		for (uint32_t i = 0; i < v->b.len && r == 0; i++)
			r = evr_strbuf_printf(sb, "%02x", p[i]);
		return r;
	}
	default:
		return evr_strbuf_printf(sb, "%" PRIu64, v->u);
	}
}

/* A stable 128-bit id per event type, as 32 hex digits (journald's MESSAGE_ID). */
static void message_id(const struct evr_schema_event *ev, char out[33])
{
	uint64_t a = 0xcbf29ce484222325ull, b = 0x9e3779b97f4a7c15ull;
	const char *parts[2] = { ev->provider, ev->name };

	for (int k = 0; k < 2; k++) {
		for (const unsigned char *p = (const unsigned char *)parts[k]; *p; p++) {
			a = (a ^ *p) * 0x100000001b3ull;
			b = (b ^ *p) * 0xff51afd7ed558ccdull;
		}
		a = (a ^ '/') * 0x100000001b3ull;
		b = (b ^ '/') * 0xff51afd7ed558ccdull;
	}
	snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, a, b ^ (a >> 29));
}

static int build_entry(struct journald *j, const struct evr_fwd_event *e)
{
	const struct evr_schema_event *ev = e->v->schema;
	char id[33];
	int r = 0;

	j->e.len = 0;
	j->msg.len = 0;
	r = evr_strbuf_printf(&j->msg, "%s/%s", ev->provider, ev->name);
	field_names(j, ev);
	for (uint32_t i = 0; r == 0 && e->vals && i < (uint32_t)e->nvals; i++) {
		r = value_text(j, &e->vals[i]);
		r = r ?: put_field(&j->e, j->names[i], j->val.buf ? j->val.buf : "", j->val.len);
		if (r == 0 && j->msg.len < MESSAGE_MAX) {
			bool quote = e->vals[i].type == EVR_FT_STR || e->vals[i].type == EVR_FT_JSON;

			r = evr_strbuf_printf(&j->msg, " %s=%s", ev->fields[i].name,
					      quote ? "\"" : "");
			r = r ?: evr_strbuf_append(&j->msg, j->val.buf ? j->val.buf : "", j->val.len);
			r = r ?: (quote ? evr_strbuf_append(&j->msg, "\"", 1) : 0);
		}
	}
	if (r == 0 && e->nvals < 0)
		r = evr_strbuf_printf(&j->msg, " <payload does not match the schema>");
	if (r == 0 && j->msg.len > MESSAGE_MAX) {
		j->msg.len = MESSAGE_MAX;
		r = evr_strbuf_append(&j->msg, "...", 3);
	}
	message_id(ev, id);
	r = r ?: put_field(&j->e, "MESSAGE", j->msg.buf, j->msg.len);
	r = r ?: put_fieldf(j, "PRIORITY", "%d", evr_fwd_level_priority(ev->level));
	r = r ?: put_field(&j->e, "SYSLOG_IDENTIFIER", e->src->comm, strlen(e->src->comm));
	r = r ?: put_field(&j->e, "MESSAGE_ID", id, 32);
	r = r ?: put_fieldf(j, "OBJECT_PID", "%d", (int)e->src->pid);
	r = r ?: put_field(&j->e, "EVR_PROVIDER", ev->provider, strlen(ev->provider));
	r = r ?: put_field(&j->e, "EVR_EVENT", ev->name, strlen(ev->name));
	r = r ?: put_fieldf(j, "EVR_EVENT_ID", "%u", ev->id);
	r = r ?: put_fieldf(j, "EVR_LEVEL", "%s", evr_fwd_level_word(ev->level));
	r = r ?: put_fieldf(j, "EVR_KEYWORDS", "0x%" PRIx64, ev->keywords);
	r = r ?: put_fieldf(j, "EVR_PID", "%d", (int)e->src->pid);
	r = r ?: put_fieldf(j, "EVR_TID", "%u", e->v->tid);
	r = r ?: put_field(&j->e, "EVR_COMM", e->src->comm, strlen(e->src->comm));
	r = r ?: put_fieldf(j, "EVR_TIMESTAMP_MONOTONIC_NS", "%" PRIu64, e->v->ts_ns);
	r = r ?: put_fieldf(j, "EVR_TIMESTAMP_REALTIME_USEC", "%" PRIu64, e->realtime_ns / 1000u);
	return r;
}

static void journald_event(struct evr_fwd_sink *s, const struct evr_fwd_event *e)
{
	struct journald *j = s->priv;

	if (!e->v->schema || build_entry(j, e) < 0) {
		s->st.too_large++;	/* nothing to name it by, or out of memory */
		return;
	}
	if (evr_fwd_outbox_push(s->outbox, j->e.buf, (uint32_t)j->e.len, 1) == -EMSGSIZE)
		s->st.too_large++;
}

/* ---- the worker ------------------------------------------------------------------------- */

static void disconnect(struct journald *j)
{
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
}

static int try_connect(struct journald *j)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, j->path, strlen(j->path));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	/* journald's advice: room for bursts, so that a short pause of journald
	 * does not turn at once into our drops. */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){ 8 << 20 }, sizeof(int));
	j->fd = fd;
	return 0;
}

/* Return: 0 connected, -EAGAIN not yet (backed off), -ECANCELED. */
static int ensure_connected(struct journald *j)
{
	int r;

	if (j->fd >= 0)
		return 0;
	r = try_connect(j);
	if (r == 0) {
		atomic_fetch_add_explicit(&j->connects, 1, memory_order_relaxed);
		if (j->said_down)
			fprintf(stderr, "evring forward: %s: connected again\n", j->s->spec.text);
		j->said_down = false;
		j->backoff_ms = BACKOFF_MIN_MS;
		return 0;
	}
	atomic_fetch_add_explicit(&j->failures, 1, memory_order_relaxed);
	if (!j->said_down)
		fprintf(stderr, "evring forward: %s: %s%s: %s; retrying\n", j->s->spec.text,
			r == -ENOENT || r == -ECONNREFUSED ? "journald is not running at " :
							     "cannot connect to ",
			j->path, strerror(-r));
	j->said_down = true;
	if (evr_fwd_outbox_sleep(j->s->outbox, j->backoff_ms))
		return -ECANCELED;
	j->backoff_ms = j->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : j->backoff_ms * 2;
	return -EAGAIN;
}

static int deliver(void *ctx, const char *const *msg, const uint32_t *len,
		   const uint32_t *weight, uint32_t n)
{
	struct journald *j = ctx;
	uint32_t i = 0;
	int r;

	(void)weight;
	r = ensure_connected(j);
	if (r < 0)
		return r == -ECANCELED ? r : 0;
	while (i < n) {
		struct pollfd p = { .fd = j->fd, .events = POLLOUT };

		if (send(j->fd, msg[i], len[i], MSG_NOSIGNAL) == (ssize_t)len[i]) {
			i++;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EMSGSIZE) {
			/* Delivered nowhere: counted as too large, and taken out of the queue. */
			atomic_fetch_add_explicit(&j->too_large, 1, memory_order_relaxed);
			i++;
			continue;
		}
		if (errno == EAGAIN || errno == ENOBUFS) {
			/* journald is behind: wait for room, while the queue absorbs. */
			if (poll(&p, 1, 100) <= 0 && evr_fwd_outbox_cancelled(j->s->outbox))
				break;
			continue;
		}
		/* Gone (restarted, stopped): reconnect, resend from this entry. */
		fprintf(stderr, "evring forward: %s: sending failed: %s; reconnecting\n",
			j->s->spec.text, strerror(errno));
		disconnect(j);
		break;
	}
	if (!i && evr_fwd_outbox_cancelled(j->s->outbox))
		return -ECANCELED;
	return (int)i;
}

/* ---- the sink -------------------------------------------------------------------------- */

static int journald_check(struct evr_fwd_sink *s, char *err, size_t errlen)
{
	const char *p = s->spec.arg && *s->spec.arg ? s->spec.arg : DEFAULT_SOCKET;
	size_t q;

	if (strlen(p) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, errlen, "--to %s: the socket path is too long", s->spec.text);
		return -EINVAL;
	}
	return evr_fwd_queue_size(s, OUTBOX_BYTES, &q, err, errlen);
}

static int journald_open(struct evr_fwd_sink *s, char *err, size_t errlen)
{
	struct journald *j = calloc(1, sizeof(*j));
	size_t qsize;
	int r;

	if (!j)
		return -ENOMEM;
	j->s = s;
	j->fd = -1;
	j->backoff_ms = BACKOFF_MIN_MS;
	snprintf(j->path, sizeof(j->path), "%s",
		 s->spec.arg && *s->spec.arg ? s->spec.arg : DEFAULT_SOCKET);
	r = evr_fwd_queue_size(s, OUTBOX_BYTES, &qsize, err, errlen);
	r = r ?: evr_fwd_outbox_new(qsize, EVR_FWD_DROP_NEWEST, deliver, j, &s->outbox);
	if (r < 0) {
		if (r != -EINVAL)
			snprintf(err, errlen, "--to %s: cannot start its sender: %s", s->spec.text,
				 strerror(-r));
		free(j);
		return r;
	}
	s->priv = j;
	return 0;
}

static void journald_close(struct evr_fwd_sink *s, uint64_t deadline_ns)
{
	struct journald *j = s->priv;
	uint64_t big;

	if (!j)
		return;
	evr_fwd_outbox_close(s->outbox, deadline_ns);
	disconnect(j);
	/* The worker has been joined: its counts are final. Entries the kernel
	 * refused as too large were "delivered" out of the queue; move them. */
	s->st.connects = atomic_load_explicit(&j->connects, memory_order_relaxed);
	s->st.connect_failures = atomic_load_explicit(&j->failures, memory_order_relaxed);
	big = atomic_load_explicit(&j->too_large, memory_order_relaxed);
	s->st.too_large += big;
	s->st.sent_adjust = big;
	s->priv = NULL;
	free(j->e.buf);
	free(j->msg.buf);
	free(j->val.buf);
	free(j);
}

static const char *const journald_keys[] = { "queue", NULL };

const struct evr_fwd_sink_ops evr_fwd_sink_journald = {
	.kind = "journald",
	.what = EVR_FWD_EVENTS,
	.default_level = 3 /* warning */,
	.keys = journald_keys,
	.check = journald_check,
	.open = journald_open,
	.event = journald_event,
	.close = journald_close,
};
