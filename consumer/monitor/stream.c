// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Live streams, one session each, tied to the HTTP connection:
 *
 *   GET /processes/{pid}/stream?providers=SPEC[&events=A,B][&duration=T]
 *       every event of the session, decoded, as `evring dump --json` prints
 *       them, plus {"type":"lost",...} records and a final {"type":"end",...}
 *   GET /processes/{pid}/counters/stream?interval=T[&providers=P,Q][&duration=T]
 *       every counter sample as it comes, at the caller's interval
 *
 * As NDJSON (application/x-ndjson, the default) or Server-Sent Events
 * (Accept: text/event-stream, or format=sse: "id:", "event:", "data:" lines,
 * and a comment every 15 s so that proxies keep the connection).
 *
 * The response's reader runs on the connection's own thread and may block: it
 * waits on the session (evr_client_wait) in slices of 100 ms, looking at the
 * client's socket between them, so a client that goes away ends the session
 * within a slice, and the free callback releases it in the producer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define SLICE_MS 100
#define HEARTBEAT_NS 15000000000ull
#define BUDGET 4096			/* records per fill */
#define MAX_NAMES 32
#define DRAIN_NS 2000000000ull		/* after the duration: what was recorded, at most this */

struct stream {
	struct evr_mon *m;
	struct evr_client *c;
	pid_t pid;
	int client_fd;
	bool sse;
	bool counters;
	bool stopping;			/* the duration passed: session stopped, draining */
	bool ended;			/* the end record is queued */
	const char *end_reason;
	uint64_t deadline_ns;		/* 0: until the client or the process goes */
	uint64_t last_send_ns;
	uint64_t seq, events, lost;
	struct evr_strbuf out;
	size_t out_pos;
	char *names[MAX_NAMES];		/* events=: event names wanted; none: all */
	uint32_t nnames;
	struct evr_strbuf line;
};

static void stream_free(void *cls)
{
	struct stream *s = cls;

	/* Closing the connection ends the session: the producer frees it now. */
	evr_client_free(s->c);
	evr_mon_op_put(s->m);
	for (uint32_t i = 0; i < s->nnames; i++)
		free(s->names[i]);
	free(s->out.buf);
	free(s->line.buf);
	free(s);
}

/* Queue one record: "JSON\n", or an SSE event with @kind. */
static int emit(struct stream *s, const char *kind, const char *json, size_t len)
{
	int err;

	if (s->sse) {
		err = evr_strbuf_printf(&s->out, "id: %" PRIu64 "\nevent: %s\ndata: ", ++s->seq, kind);
		if (!err)
			err = evr_strbuf_append(&s->out, json, len);
		if (!err)
			err = evr_strbuf_append(&s->out, "\n\n", 2);
		return err;
	}
	err = evr_strbuf_append(&s->out, json, len);
	if (!err)
		err = evr_strbuf_append(&s->out, "\n", 1);
	return err;
}

static bool wanted(const struct stream *s, const struct evr_event_view *v)
{
	if (!s->nnames || v->type != EVR_REC_EVENT)
		return true;
	for (uint32_t i = 0; i < s->nnames; i++)
		if (v->schema && !strcmp(v->schema->name, s->names[i]))
			return true;
	return false;
}

static int emit_view(struct stream *s, const struct evr_event_view *v)
{
	struct evr_counter_sample cs;
	int err;

	if (v->type == EVR_REC_LOST) {
		s->lost += v->lost;
		s->line.len = 0;
		err = evr_event_to_json(v, &s->line);
		return err ? err : emit(s, "lost", s->line.buf, s->line.len);
	}
	if (s->counters) {
		json_t *j;
		char *txt;

		if (evr_counter_sample_from_view(v, &cs) != 1)
			return 0;
		s->events++;
		j = evr_mon_sample_json(s->pid, &cs);
		txt = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
		json_decref(j);
		if (!txt)
			return -ENOMEM;
		err = emit(s, "counter", txt, strlen(txt));
		free(txt);
		return err;
	}
	if (!wanted(s, v))
		return 0;
	s->events++;
	s->line.len = 0;
	err = evr_event_to_json(v, &s->line);
	return err ? err : emit(s, "event", s->line.buf, s->line.len);
}

static int emit_end(struct stream *s)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "{\"type\":\"end\",\"%s\":%" PRIu64 ",\"lost\":%" PRIu64
			 ",\"reason\":\"%s\"}", s->counters ? "samples" : "events", s->events,
			 s->lost, s->end_reason);

	s->ended = true;
	return emit(s, "end", buf, (size_t)n);
}

/* Read what the session has into the output. */
static int fill(struct stream *s)
{
	struct evr_event_view v;
	int r = 0;

	for (uint32_t budget = BUDGET; budget && s->out.len - s->out_pos < 65536; budget--) {
		r = evr_client_next(s->c, &v);
		if (r <= 0)
			break;
		r = emit_view(s, &v);
		if (r < 0)
			break;
	}
	evr_client_release(s->c);
	return r < 0 ? r : 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	char err[256];

	(void)pos;
	for (;;) {
		uint64_t now = evr_mono_ns();

		/*
		 * The deadline before anything else: a session that always has records
		 * never lets the loop below reach an empty ring, where it used to be
		 * looked at (a 2 s stream ran for ever).
		 */
		if (s->deadline_ns && now >= s->deadline_ns && !s->ended) {
			if (!s->stopping) {
				/* Stop: the producer flushes every ring; we drain, then end. */
				s->stopping = true;
				s->end_reason = "duration";
				if (evr_client_stop(s->c, err, sizeof(err)) < 0 &&
				    evr_client_state(s->c) != EVR_CLIENT_GONE &&
				    emit_end(s) < 0)
					return MHD_CONTENT_READER_END_WITH_ERROR;
			} else if (now >= s->deadline_ns + DRAIN_NS && emit_end(s) < 0) {
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
		}
		if (s->out_pos < s->out.len) {
			size_t n = s->out.len - s->out_pos;

			if (n > max)
				n = max;
			memcpy(buf, s->out.buf + s->out_pos, n);
			s->out_pos += n;
			if (s->out_pos == s->out.len)
				s->out.len = s->out_pos = 0;
			s->last_send_ns = evr_mono_ns();
			return (ssize_t)n;
		}
		if (s->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (evr_mon_client_gone(s->client_fd))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (fill(s) < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (s->out.len)
			continue;
		if (evr_client_drained(s->c)) {
			if (!s->stopping)
				s->end_reason = evr_client_state(s->c) == EVR_CLIENT_GONE ?
						"process gone" : "process ended the session";
			if (emit_end(s) < 0)
				return MHD_CONTENT_READER_END_WITH_ERROR;
			continue;
		}
		if (s->sse && now - s->last_send_ns >= HEARTBEAT_NS) {
			if (evr_strbuf_append(&s->out, ": keepalive\n\n", 13) < 0)
				return MHD_CONTENT_READER_END_WITH_ERROR;
			continue;
		}
		evr_client_wait(s->c, SLICE_MS);
	}
}

/* "A,B,C" into s->names. Return: 0, -EINVAL (too many or empty names). */
static int parse_names(struct stream *s, const char *list)
{
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (!n || s->nnames == MAX_NAMES)
			return -EINVAL;
		s->names[s->nnames] = strndup(p, n);
		if (!s->names[s->nnames])
			return -ENOMEM;
		s->nnames++;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static bool want_sse(struct evr_mon_req *q, int *ret_bad)
{
	const char *f = evr_mon_query(q, "format");
	const char *accept = evr_mon_header(q, MHD_HTTP_HEADER_ACCEPT);

	*ret_bad = 0;
	if (f) {
		if (!strcmp(f, "sse"))
			return true;
		if (strcmp(f, "ndjson") && strcmp(f, "jsonl"))
			*ret_bad = -EINVAL;
		return false;
	}
	return accept && strstr(accept, "text/event-stream");
}

/* Counter providers named by the caller: "A,B" -> "A:0x0:0,B:0x0:0". */
static char *counter_providers(const char *list)
{
	struct evr_strbuf sb = { 0 };
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n && evr_strbuf_printf(&sb, "%s%.*s:0x0:0", sb.len ? "," : "", (int)n, p) < 0) {
			free(sb.buf);
			return NULL;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return sb.buf;
}

static enum MHD_Result start_stream(struct evr_mon_req *q, pid_t pid, bool counters)
{
	const char *dur = evr_mon_query(q, "duration");
	const char *prov = evr_mon_query(q, "providers");
	struct evr_attach_opts ao = { .mode = EVR_MODE_DISCARD };
	struct MHD_Response *r;
	enum MHD_Result ret = MHD_NO;
	struct stream *s;
	char err[512], *spec = NULL;
	uint64_t ns = 0, iv_ns;
	int bad, e;

	s = calloc(1, sizeof(*s));
	if (!s)
		return MHD_NO;
	s->m = q->m;
	s->pid = pid;
	s->counters = counters;
	s->sse = want_sse(q, &bad);
	if (bad) {
		free(s);
		return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "format: ndjson or sse");
	}
	if (dur && evr_mon_parse_duration(dur, &ns) < 0) {
		free(s);
		return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "duration: '%s' is not "
					    "a duration (500ms, 10s, 5m)", dur);
	}
	if (!counters && evr_mon_query(q, "events") &&
	    parse_names(s, evr_mon_query(q, "events")) < 0) {
		for (uint32_t i = 0; i < s->nnames; i++)
			free(s->names[i]);
		free(s);
		return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "events: a comma-"
					    "separated list of at most %d event names", MAX_NAMES);
	}
	if (counters) {
		const char *iv = evr_mon_query(q, "interval");

		iv_ns = (uint64_t)q->m->o.counter_interval_ms * 1000000u;
		if (iv && (evr_mon_parse_duration(iv, &iv_ns) < 0 || iv_ns < 10000000ull ||
			   iv_ns > 3600000000000ull)) {
			for (uint32_t i = 0; i < s->nnames; i++)
				free(s->names[i]);
			free(s);
			return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "interval: a "
						    "duration from 10ms to 1h");
		}
		ao.counter_interval_ms = (uint32_t)(iv_ns / 1000000u);
		ao.ring_size = 64u * 1024u;
	}
	if (!evr_mon_op_get(q->m)) {
		for (uint32_t i = 0; i < s->nnames; i++)
			free(s->names[i]);
		free(s);
		return evr_mon_send_busy(q);
	}
	/* From here on stream_free() releases everything, the slot included. */
	e = evr_client_connect(pid, EVR_MON_NAME, &s->c, err, sizeof(err));
	if (e == 0 && counters) {
		if (prov)
			spec = counter_providers(prov);
		else
			e = evr_mon_counter_spec(s->c, &spec, err, sizeof(err));
		if (e == 0 && !spec) {
			e = -EINVAL;
			snprintf(err, sizeof(err), "providers: a comma-separated list of names");
		}
	}
	if (e == 0) {
		ao.providers = counters ? spec : prov ? prov : "*";
		e = evr_client_start(s->c, &ao, err, sizeof(err));
	}
	free(spec);
	if (e < 0) {
		ret = evr_mon_send_error(q, e, err);
		stream_free(s);
		return ret;
	}
	s->client_fd = evr_mon_client_fd(q);
	s->last_send_ns = evr_mono_ns();
	if (ns)
		s->deadline_ns = s->last_send_ns + ns;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_read, s,
					      stream_free);
	if (!r) {
		stream_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				s->sse ? "text/event-stream" : "application/x-ndjson");
	/* A proxy must not hold the records back. */
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	/*
	 * A stream may have nothing to send for longer than the idle timeout,
	 * which MHD would then apply the moment the reader returns: no timeout
	 * for it. stream_read() notices a client that leaves by itself.
	 */
	MHD_set_connection_option(q->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0);
	/* A client that does not read never calls stream_read() again: its
	 * connection (and the session with it) ends an idle timeout after the
	 * duration and the drain, whatever it does. */
	if (s->deadline_ns)
		evr_mon_req_deadline(q, s->deadline_ns + DRAIN_NS +
				     (uint64_t)q->m->o.idle_timeout_s * 1000000000u);
	return evr_mon_send(q, 200, r);
}

enum MHD_Result evr_mon_route_event_stream(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	return start_stream(q, args->pid, false);
}

enum MHD_Result evr_mon_route_counter_stream(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	return start_stream(q, args->pid, true);
}
