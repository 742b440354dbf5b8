// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The HTTP side of evring monitor, on libmicrohttpd (no parser of our own).
 *
 * One thread per connection (MHD_USE_THREAD_PER_CONNECTION): a route may
 * block while it waits for a session's records or a trace's duration, and a
 * streaming response's reader polls the session and the client's socket, so a
 * client that goes away ends its session at once. We create the listening
 * sockets ourselves (TCP on the address asked, 127.0.0.1 by default, never
 * "everywhere" by accident; a Unix socket of mode 0600) and hand them to MHD.
 *
 * Every request passes one gate before its route: the Host header (against
 * DNS rebinding, when listening on loopback), the browser's own cross-site
 * markers (Origin, Sec-Fetch-Site: a page elsewhere may not drive the monitor
 * through the user's browser), authentication (auth.c), the body limit, and
 * POST bodies only as JSON (a cross-site form cannot send that). Answers are
 * queued from the second handler call, never the first: MHD 0.9.75 closes a
 * connection whose answer was queued before the body was read.
 *
 * Limits: connections (MHD, accepted-then-closed beyond), idle time (MHD's
 * connection timeout), header memory (MHD's pool: oversized headers get 431),
 * body size (413), and operations (traces and streams at once: 429).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "monitor.h"

#define HEADER_POOL (64u * 1024u)	/* per connection: request line and headers */
#define THREAD_STACK (512u * 1024u)

/* ---- small helpers -------------------------------------------------------------- */

const char *evr_mon_query(struct evr_mon_req *q, const char *key)
{
	return MHD_lookup_connection_value(q->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *evr_mon_header(struct evr_mon_req *q, const char *name)
{
	return MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, name);
}

int evr_mon_client_fd(struct evr_mon_req *q)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

	return ci ? ci->connect_fd : -1;
}

bool evr_mon_client_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	/* POLLIN alone is the client sending more (a pipelined request): not gone. */
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

bool evr_mon_op_get(struct evr_mon *m)
{
	unsigned cur = atomic_load_explicit(&m->ops, memory_order_relaxed);

	/* Relaxed: the count orders nothing else, it only bounds the work. */
	do {
		if (cur >= m->o.max_sessions)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&m->ops, &cur, cur + 1,
							memory_order_relaxed, memory_order_relaxed));
	return true;
}

void evr_mon_op_put(struct evr_mon *m)
{
	atomic_fetch_sub_explicit(&m->ops, 1, memory_order_relaxed);
}

/* ---- responses --------------------------------------------------------------------- */

enum MHD_Result evr_mon_send(struct evr_mon_req *q, unsigned status, struct MHD_Response *r)
{
	const char *ct;
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	ct = MHD_get_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (ct && !strncmp(ct, "text/html", 9)) {
		/* Pages load only their own script and style; nothing may frame them. */
		MHD_add_response_header(r, "Content-Security-Policy",
					"default-src 'self'; img-src 'self' data:; "
					"frame-ancestors 'none'; form-action 'self'");
		MHD_add_response_header(r, "X-Frame-Options", "DENY");
	}
	ret = MHD_queue_response(q->conn, status, r);
	MHD_destroy_response(r);
	q->answered = true;
	return ret;
}

enum MHD_Result evr_mon_send_buf(struct evr_mon_req *q, unsigned status, const char *ctype,
				 const void *buf, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)buf,
								  MHD_RESPMEM_MUST_COPY);

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	return evr_mon_send(q, status, r);
}

static enum MHD_Result send_json_ct(struct evr_mon_req *q, unsigned status, json_t *j,
				    const char *ctype)
{
	struct MHD_Response *r;
	char *s;
	size_t n;

	if (!j)
		return MHD_NO;
	s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(j);
	if (!s)
		return MHD_NO;
	n = strlen(s);
	/* A newline at the end: friendlier to curl in a terminal and to line tools. */
	s[n] = '\n';
	r = MHD_create_response_from_buffer(n + 1, s, MHD_RESPMEM_MUST_COPY);
	free(s);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	return evr_mon_send(q, status, r);
}

enum MHD_Result evr_mon_send_json(struct evr_mon_req *q, unsigned status, json_t *j)
{
	return send_json_ct(q, status, j, "application/json");
}

__attribute__((format(printf, 5, 0)))
static enum MHD_Result problem_v(struct evr_mon_req *q, unsigned status, const char *title,
				 int err, const char *fmt, va_list ap)
{
	char detail[768];
	json_t *j;

	vsnprintf(detail, sizeof(detail), fmt, ap);
	j = json_pack("{s:s, s:s, s:i, s:o, s:o}", "type", "about:blank", "title", title,
		      "status", (int)status, "detail", evr_mon_jstr(detail), "instance",
		      evr_mon_jstr(q->url ? q->url : "/"));
	if (j && err < 0) {
		const char *name = strerrorname_np(-err);

		if (name)
			json_object_set_new(j, "errno", json_string(name));
	}
	return send_json_ct(q, status, j, "application/problem+json");
}

enum MHD_Result evr_mon_send_problem(struct evr_mon_req *q, unsigned status, const char *title,
				     int err, const char *fmt, ...)
{
	enum MHD_Result r;
	va_list ap;

	va_start(ap, fmt);
	r = problem_v(q, status, title, err, fmt, ap);
	va_end(ap);
	return r;
}

unsigned evr_mon_status_of(int err)
{
	switch (err) {
	case -ESRCH: case -ENOENT:
		return MHD_HTTP_NOT_FOUND;
	case -EACCES: case -EPERM:
		return MHD_HTTP_FORBIDDEN;
	case -EINVAL:
		return MHD_HTTP_BAD_REQUEST;
	case -EBUSY: case -EUSERS: case -EAGAIN:
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	case -ETIMEDOUT:
		return MHD_HTTP_GATEWAY_TIMEOUT;
	case -ECONNREFUSED: case -ECONNRESET: case -EPROTO: case -EPIPE: case -EBADMSG:
		return MHD_HTTP_BAD_GATEWAY;
	case -EOPNOTSUPP:
		return MHD_HTTP_NOT_IMPLEMENTED;
	case -ENODATA:		/* a profile of a trace without stacks */
		return MHD_HTTP_UNPROCESSABLE_CONTENT;
	default:
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

static const char *title_of(unsigned status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 421: return "Misdirected Request";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Internal Server Error";
	}
}

enum MHD_Result evr_mon_send_error(struct evr_mon_req *q, int err, const char *msg)
{
	unsigned st = evr_mon_status_of(err);

	return evr_mon_send_problem(q, st, title_of(st), err, "%s",
				    msg && *msg ? msg : strerror(-err));
}

enum MHD_Result evr_mon_send_busy(struct evr_mon_req *q)
{
	char detail[256];
	json_t *j;
	struct MHD_Response *r;
	char *s;

	atomic_fetch_add_explicit(&q->m->refused_limit, 1, memory_order_relaxed);
	snprintf(detail, sizeof(detail), "the monitor already runs %u traces and streams, its "
		 "limit (--max-sessions); retry when one ends", q->m->o.max_sessions);
	j = json_pack("{s:s, s:s, s:i, s:s, s:o, s:s}", "type", "about:blank", "title",
		      "Too Many Requests", "status", 429, "detail", detail, "instance",
		      evr_mon_jstr(q->url), "errno", "EBUSY");
	s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!s)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_COPY);
	free(s);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	return evr_mon_send(q, 429, r);
}

/* ---- the gate ------------------------------------------------------------------------ */

static bool key_ok(struct evr_mon_req *q)
{
	const char *a = evr_mon_header(q, MHD_HTTP_HEADER_AUTHORIZATION);

	if (!q->m->o.has_key || !a || strncasecmp(a, "Bearer ", 7))
		return false;
	a += 7;
	while (*a == ' ')
		a++;
	return evr_mon_key_check(q->m->o.key_hash, a, strlen(a));
}

bool evr_mon_side_effect_check(struct evr_mon_req *q, enum MHD_Result *ret)
{
	if (evr_mon_side_effect_ok(&q->admit, evr_mon_query(q, "token"), q->m->token))
		return true;
	*ret = evr_mon_send_problem(q, 403, "Forbidden", -EPERM, "from a browser, %s %s needs "
				    "the token of the monitor's own pages (follow the link on "
				    "the process's page) or the API key", q->method, q->url);
	return false;
}

void evr_mon_req_deadline(struct evr_mon_req *q, uint64_t ns)
{
	evr_mon_conn_set_deadline(q->m, q->conn_ctx, ns);
}

static enum MHD_Result send_unauthorized(struct evr_mon_req *q)
{
	struct MHD_Response *r;
	json_t *j;
	char *s;

	atomic_fetch_add_explicit(&q->m->refused_auth, 1, memory_order_relaxed);
	j = json_pack("{s:s, s:s, s:i, s:s, s:o}", "type", "about:blank", "title", "Unauthorized",
		      "status", 401, "detail",
		      q->m->o.has_key ?
		      "send the monitor's API key as 'Authorization: Bearer KEY' (only local "
		      "processes of the monitor's user get in without it)" :
		      "this monitor has no API key (--key-hash): only local processes of its "
		      "user may use it",
		      "instance", evr_mon_jstr(q->url));
	s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!s)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_COPY);
	free(s);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				"Bearer realm=\"evring monitor\"");
	return evr_mon_send(q, 401, r);
}

/* ---- routing --------------------------------------------------------------------------- */

static bool is(const struct evr_mon_req *q, unsigned i, const char *s)
{
	return i < q->nsegs && !strcmp(q->segs[i], s);
}

static enum MHD_Result not_found(struct evr_mon_req *q)
{
	return evr_mon_send_problem(q, 404, "Not Found", 0, "no route %s %s (GET /info lists "
				    "them; docs/monitor.md describes each)", q->method, q->url);
}

static enum MHD_Result bad_method(struct evr_mon_req *q, const char *allow)
{
	struct MHD_Response *r;
	char *s;
	json_t *j = json_pack("{s:s, s:s, s:i, s:o, s:o}", "type", "about:blank", "title",
			      "Method Not Allowed", "status", 405, "detail",
			      evr_mon_jstr(q->method), "instance", evr_mon_jstr(q->url));

	s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!s)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_COPY);
	free(s);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	return evr_mon_send(q, 405, r);
}

/*
 * The query parameters each route takes. A name outside its route's list is a
 * 400 naming it: a mistyped `provders=` must not record everything as if it
 * were absent. `token` (evr_mon_side_effect_ok()) is taken everywhere.
 */
static const char *const P_NONE[] = { NULL };
static const char *const P_PROCESSES[] = { "name", NULL };
static const char *const P_EVENTS[] = { "provider", NULL };
static const char *const P_COUNTERS[] = { "interval", "provider", "history", NULL };
static const char *const P_EVENT_STREAM[] = { "format", "duration", "providers", "events",
					      NULL };
static const char *const P_COUNTER_STREAM[] = { "format", "duration", "providers",
						"interval", NULL };
static const char *const P_STACKS[] = { "depth", NULL };
static const char *const P_DOWNLOAD[] = { "format", NULL };

struct unknown_params {
	const char *const *allowed;
	struct evr_strbuf names;	/* the unknown ones, ", "-separated */
	int err;
};

static enum MHD_Result collect_unknown(void *cls, enum MHD_ValueKind kind, const char *key,
				       const char *value)
{
	struct unknown_params *u = cls;

	(void)kind;
	(void)value;
	if (!strcmp(key, "token"))
		return MHD_YES;
	for (const char *const *a = u->allowed; *a; a++)
		if (!strcmp(key, *a))
			return MHD_YES;
	if (u->names.len && !u->err)
		u->err = evr_strbuf_append(&u->names, ", ", 2);
	if (!u->err)
		u->err = evr_strbuf_printf(&u->names, "'%s'", key);
	return MHD_YES;
}

/* Return: true when every query parameter is one of @allowed; else *@ret is the 400. */
static bool params_ok(struct evr_mon_req *q, const char *const *allowed, enum MHD_Result *ret)
{
	struct unknown_params u = { .allowed = allowed };
	struct evr_strbuf takes = { 0 };
	bool ok;

	MHD_get_connection_values(q->conn, MHD_GET_ARGUMENT_KIND, collect_unknown, &u);
	ok = !u.names.len && !u.err;
	if (!ok) {
		for (const char *const *a = allowed; *a && !u.err; a++)
			u.err = evr_strbuf_printf(&takes, "%s%s", a == allowed ? "" : ", ", *a);
		if (u.err)
			*ret = MHD_NO;
		else
			*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL,
						    "unknown parameter %s (%s %s takes %s)",
						    u.names.buf, q->method, q->url,
						    takes.len ? takes.buf : "none");
	}
	free(u.names.buf);
	free(takes.buf);
	return ok;
}

/* @call, when the query has only parameters of @list. */
#define WITH(list, call) (params_ok(q, (list), &pret) ? (call) : pret)

/* GET (or HEAD) expected: else 405. Return: true when the method fits. */
#define ROUTE_GET(q) (strcmp((q)->method, "GET") == 0 || (q)->head)

static enum MHD_Result route_process(struct evr_mon_req *q, unsigned base)
{
	bool get = ROUTE_GET(q), post = !strcmp(q->method, "POST");
	enum MHD_Result pret = MHD_NO;
	pid_t pid;

	if (evr_mon_parse_pid(q->segs[base], &pid) < 0) {
		/* A name instead of a pid: the one process of that name. */
		char err[512];
		int r = evr_mon_pid_of_name(q->segs[base], &pid, err, sizeof(err));

		if (r == -ENOTUNIQ)
			return evr_mon_send_problem(q, 409, "Conflict", r, "%s", err);
		if (r < 0)
			return evr_mon_send_problem(q, 404, "Not Found", r, "%s", err);
	}
	if (base == 2) {	/* /ui/processes/{pid}[/...] */
		if (!get)
			return bad_method(q, "GET, HEAD");
		if (q->nsegs == 3)
			return WITH(P_NONE, evr_mon_page_process(q, pid));
		if (q->nsegs == 4 && is(q, 3, "counters"))
			return WITH(P_NONE, evr_mon_page_counters(q, pid));
		if (q->nsegs == 4 && is(q, 3, "stacks"))
			return WITH(P_STACKS, evr_mon_page_stacks(q, pid));
		return not_found(q);
	}
	if (q->nsegs == 2)
		return get ? WITH(P_NONE, evr_mon_route_process(q, pid)) : bad_method(q, "GET, HEAD");
	/* Its parameters are the JSON body's (evr_mon_tparams_from_json()). */
	if (q->nsegs == 3 && is(q, 2, "traces"))
		return post ? WITH(P_NONE, evr_mon_route_trace_start(q, pid))
			    : bad_method(q, "POST");
	if (!get) {
		if (q->nsegs == 3 || (q->nsegs == 4 && is(q, 2, "counters")))
			return bad_method(q, "GET, HEAD");
		return not_found(q);
	}
	if (q->nsegs == 3) {
		if (is(q, 2, "sessions"))
			return WITH(P_NONE, evr_mon_route_sessions(q, pid));
		if (is(q, 2, "threads"))
			return WITH(P_NONE, evr_mon_route_threads(q, pid));
		if (is(q, 2, "events"))
			return WITH(P_EVENTS, evr_mon_route_schemas(q, pid));
		if (is(q, 2, "counters"))
			return WITH(P_COUNTERS, evr_mon_route_counters(q, pid, NULL, NULL));
		if (is(q, 2, "stream"))
			return WITH(P_EVENT_STREAM, evr_mon_route_event_stream(q, pid));
		if (is(q, 2, "trace"))
			return WITH(evr_mon_trace_params, evr_mon_route_trace_get(q, pid));
		if (is(q, 2, "stacks"))
			return WITH(P_STACKS, evr_mon_route_stacks(q, pid));
	}
	if (q->nsegs == 4 && is(q, 2, "counters") && is(q, 3, "stream"))
		return WITH(P_COUNTER_STREAM, evr_mon_route_counter_stream(q, pid));
	if (q->nsegs == 5 && is(q, 2, "counters"))
		return WITH(P_COUNTERS, evr_mon_route_counters(q, pid, q->segs[3], q->segs[4]));
	return not_found(q);
}

static enum MHD_Result route(struct evr_mon_req *q)
{
	enum MHD_Result pret = MHD_NO;
	bool get = ROUTE_GET(q);

	if (q->nsegs == 0)
		return get ? WITH(P_NONE, evr_mon_page_index(q)) : bad_method(q, "GET, HEAD");
	if (is(q, 0, "processes")) {
		if (q->nsegs == 1)
			return get ? WITH(P_PROCESSES, evr_mon_route_processes(q)) : bad_method(q, "GET, HEAD");
		return route_process(q, 1);
	}
	if (is(q, 0, "traces")) {
		if (q->nsegs == 1)
			return get ? WITH(P_NONE, evr_mon_route_trace_list(q)) : bad_method(q, "GET, HEAD");
		if (q->nsegs == 2) {
			if (get)
				return WITH(P_NONE, evr_mon_route_trace_one(q, q->segs[1]));
			if (!strcmp(q->method, "DELETE"))
				return WITH(P_NONE, evr_mon_route_trace_delete(q, q->segs[1]));
			return bad_method(q, "GET, HEAD, DELETE");
		}
		if (q->nsegs == 3 && is(q, 2, "stop"))
			return !strcmp(q->method, "POST") ? WITH(P_DOWNLOAD, evr_mon_route_trace_stop(q,
								q->segs[1]))
							  : bad_method(q, "POST");
		if (q->nsegs == 3 && is(q, 2, "trace"))
			return get ? WITH(P_DOWNLOAD, evr_mon_route_trace_download(q, q->segs[1]))
				   : bad_method(q, "GET, HEAD");
		return not_found(q);
	}
	if (q->nsegs == 1 && is(q, 0, "metrics"))
		return get ? WITH(P_NONE, evr_mon_route_metrics(q)) : bad_method(q, "GET, HEAD");
	if (q->nsegs == 1 && is(q, 0, "info"))
		return get ? WITH(P_NONE, evr_mon_route_info(q)) : bad_method(q, "GET, HEAD");
	if (is(q, 0, "ui")) {
		if (q->nsegs >= 3 && is(q, 1, "processes"))
			return route_process(q, 2);
		if (q->nsegs == 2)
			return get ? WITH(P_NONE, evr_mon_page_asset(q, q->segs[1])) : bad_method(q, "GET, HEAD");
	}
	return not_found(q);
}

static void req_free(struct evr_mon_req *q)
{
	if (!q)
		return;
	evr_mon_segs_free(q->segs, q->nsegs);
	free(q->body);
	free(q->url);
	free(q);
}

/* ---- the MHD callbacks --------------------------------------------------------------- */

static enum MHD_Result too_big(struct evr_mon_req *q)
{
	return evr_mon_send_problem(q, 413, "Content Too Large", -E2BIG, "the request body is "
				    "larger than %zu bytes (--max-body)", q->m->o.max_body);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct evr_mon *m = cls;
	struct evr_mon_req *q = *con_cls;
	const union MHD_ConnectionInfo *ci;
	struct evr_mon_conn *cc;
	const char *why;
	unsigned status;
	bool bad_bytes;

	if (!q) {
		const char *cl;

		/* The headers are in: no header deadline any more (streams set their own). */
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		cc = ci ? ci->socket_context : NULL;
		if (cc)
			evr_mon_conn_set_deadline(m, cc, 0);

		q = calloc(1, sizeof(*q));
		if (!q)
			return MHD_NO;
		q->m = m;
		q->conn = conn;
		q->method = method;
		q->head = !strcmp(method, "HEAD");
		q->url = strdup(url);
		if (cc) {
			q->bad_bytes = cc->bad_bytes;
			cc->bad_bytes = false;
		}
		*con_cls = q;
		if (!q->url)
			return MHD_NO;
		atomic_fetch_add_explicit(&m->requests, 1, memory_order_relaxed);
		/* A body announced too large is refused before it is read (and the
		 * connection closed: its bytes are never consumed). */
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > m->o.max_body)
			return too_big(q);
		return MHD_YES;
	}
	if (q->answered)
		return MHD_YES;
	if (*data_size) {
		size_t n = *data_size;

		if (!q->body_too_big && q->body_len + n <= m->o.max_body) {
			char *nb = realloc(q->body, q->body_len + n + 1);

			if (!nb)
				return MHD_NO;
			memcpy(nb + q->body_len, data, n);
			q->body = nb;
			q->body_len += n;
			q->body[q->body_len] = '\0';
		} else {
			q->body_too_big = true;	/* read and dropped: 413 at the end */
		}
		*data_size = 0;
		return MHD_YES;
	}
	(void)version;
	bad_bytes = q->bad_bytes;

	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	cc = ci ? ci->socket_context : NULL;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
	if (!cc)
		return MHD_NO;
	q->conn_ctx = cc;
	q->admit = (struct evr_mon_admit_in){
		.is_unix = ci && ci->daemon == m->unx,
		.listen_loopback = m->listen_loopback,
		.port = m->port,
		.no_auth = m->o.no_auth,
		.key_ok = key_ok(q),
		.local_user = cc->local_user,
		.method = method,
		.host = evr_mon_header(q, MHD_HTTP_HEADER_HOST),
		.origin = evr_mon_header(q, "Origin"),
		.referer = evr_mon_header(q, MHD_HTTP_HEADER_REFERER),
		.user_agent = evr_mon_header(q, MHD_HTTP_HEADER_USER_AGENT),
		.sec_fetch_site = evr_mon_header(q, "Sec-Fetch-Site"),
		.sec_fetch_mode = evr_mon_header(q, "Sec-Fetch-Mode"),
		.content_type = evr_mon_header(q, MHD_HTTP_HEADER_CONTENT_TYPE),
	};
	status = evr_mon_admit(&q->admit, &why);
	if (status == 401)
		return send_unauthorized(q);
	if (status)
		return evr_mon_send_problem(q, status, title_of(status), status == 403 ? -EPERM : 0,
					    "%s", why);
	if (q->admit.key_ok)
		evr_mon_conn_authenticated(m, cc);
	if (q->body_too_big)
		return too_big(q);
	if (bad_bytes)
		return evr_mon_send_problem(q, 400, "Bad Request", -EILSEQ, "the path or a "
					    "parameter has a control byte (%%00-%%1F, %%7F)");
	if (evr_mon_split_path(q->url, q->segs, &q->nsegs) < 0)
		return not_found(q);
	return route(q);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct evr_mon *m = cls;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	(void)toe;
	/* A kept-alive connection has the same time for its next request's headers. */
	if (ci && ci->socket_context)
		evr_mon_conn_set_deadline(m, ci->socket_context, evr_mono_ns() +
					  (uint64_t)m->o.header_timeout_s * 1000000000u);
	req_free(*con_cls);
	*con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct evr_mon *m = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		*socket_context = evr_mon_conn_open(m, ci ? ci->connect_fd : -1);
	} else {
		evr_mon_conn_close(m, *socket_context);
		*socket_context = NULL;
	}
}

/*
 * MHD's unescape callback, for the path and every query key and value: ours,
 * so that a control byte (%00 above all, which cut the path short) is noticed
 * and answered 400 instead of routed.
 */
static size_t on_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	size_t n;

	(void)cls;
	if (evr_mon_unescape(s, &n) < 0 && ci && ci->socket_context)
		((struct evr_mon_conn *)ci->socket_context)->bad_bytes = true;
	return n;
}

__attribute__((format(printf, 2, 0)))
static void on_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	fprintf(stderr, "evring monitor: http: %s\n", line);
}

/* ---- listening sockets ----------------------------------------------------------------- */

static int listen_tcp(struct evr_mon *m, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char port[8], host[256];
	int fd, r, one = 1;

	snprintf(port, sizeof(port), "%u", m->o.listen_port);
	snprintf(host, sizeof(host), "%s", m->o.listen_host);
	r = getaddrinfo(host, port, &hints, &ai);
	if (r) {
		snprintf(err, errlen, "--listen %s: %s", host, gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		goto fail;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		r = -errno;
		goto fail;
	}
	m->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	snprintf(m->url, sizeof(m->url), "http://%s%s%s:%u", ai->ai_family == AF_INET6 ? "[" : "",
		 host, ai->ai_family == AF_INET6 ? "]" : "", m->port);
	freeaddrinfo(ai);
	return fd;
fail:
	snprintf(err, errlen, "cannot listen on %s:%u: %s", host, m->o.listen_port, strerror(-r));
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return r;
}

static int listen_unix(struct evr_mon *m, char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = m->o.unix_path;
	mode_t old;
	int fd, r;

	if (strlen(path) >= sizeof(a.sun_path)) {
		snprintf(err, errlen, "--unix %s: the path is longer than %zu bytes", path,
			 sizeof(a.sun_path) - 1);
		return -EINVAL;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A socket left by a monitor that died is replaced; a live one is not. */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		close(fd);
		snprintf(err, errlen, "--unix %s: another monitor listens there", path);
		return -EADDRINUSE;
	}
	if (errno == ECONNREFUSED) {
		struct stat st;

		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(path);
	}
	close(fd);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Mode 0600 from the start: no window where others may connect. */
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	if (r < 0 || listen(fd, 128) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

static struct MHD_Daemon *start_daemon(struct evr_mon *m, int fd)
{
	return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				MHD_USE_POLL | MHD_USE_ERROR_LOG,
				0, NULL, NULL, on_request, m,
				/* First, so that MHD's own early messages come through it too. */
				MHD_OPTION_EXTERNAL_LOGGER, on_log, m,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)m->o.max_connections,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)m->o.idle_timeout_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEADER_POOL,
				MHD_OPTION_THREAD_STACK_SIZE, (size_t)THREAD_STACK,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, m,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
				MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, m,
				MHD_OPTION_STRICT_FOR_CLIENT, 1,
				MHD_OPTION_END);
}

int evr_mon_server_start(struct evr_mon *m, char *err, size_t errlen)
{
	uint8_t hash[EVR_MON_HASH_BYTES];
	int fd = -1, r;

	m->unix_fd = -1;
	r = evr_mon_key_generate(m->token, hash);
	if (r == 0)
		r = evr_mon_conns_start(m);
	if (r < 0) {
		snprintf(err, errlen, "cannot start: %s", strerror(-r));
		return r;
	}
	m->listen_loopback = evr_mon_name_is_loopback(m->o.listen_host, strlen(m->o.listen_host));
	if (m->o.listen_host[0]) {
		fd = listen_tcp(m, err, errlen);
		if (fd < 0)
			return fd;
		m->tcp = start_daemon(m, fd);
		if (!m->tcp) {
			close(fd);
			snprintf(err, errlen, "cannot start the HTTP server on %s", m->url);
			return -EIO;
		}
	}
	if (m->o.unix_path) {
		fd = listen_unix(m, err, errlen);
		if (fd < 0) {
			evr_mon_server_stop(m);
			return fd;
		}
		m->unix_fd = fd;
		m->unx = start_daemon(m, fd);
		if (!m->unx) {
			evr_mon_server_stop(m);
			snprintf(err, errlen, "cannot start the HTTP server on %s", m->o.unix_path);
			return -EIO;
		}
		if (!m->url[0])
			snprintf(m->url, sizeof(m->url), "unix:%s", m->o.unix_path);
	}
	return 0;
}

void evr_mon_server_stop(struct evr_mon *m)
{
	/* MHD closes a listening socket it was given when it stops. */
	if (m->tcp) {
		MHD_stop_daemon(m->tcp);
		m->tcp = NULL;
	}
	if (m->unx) {
		MHD_stop_daemon(m->unx);
		m->unx = NULL;
	} else if (m->unix_fd >= 0) {
		close(m->unix_fd);
	}
	if (m->unix_fd >= 0)
		unlink(m->o.unix_path);
	m->unix_fd = -1;
	/* After the daemons: no connection is left to shut down. */
	evr_mon_conns_stop(m);
}
