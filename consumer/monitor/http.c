// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The bottom of the monitor's HTTP side (http.h): what every route answers
 * with. Request values (query, headers, the client's socket), responses with
 * the common headers (no-store, nosniff, a strict CSP on pages), RFC 9457
 * problem+json errors and the status of an -errno, and the admission glue:
 * the gate's inputs from the headers, the page token of side-effect GETs,
 * connection deadlines and the operation slots (--max-sessions).
 *
 * It calls nothing above it (no route, no server.c), so that handlers, the
 * route table and the server's callbacks all stand on it.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"

/* ---- request values ------------------------------------------------------------ */

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

bool evr_mon_params_ok(struct evr_mon_req *q, const char *const *allowed, enum MHD_Result *ret)
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

/* @j (stolen) as @ctype, with header @hname: @hvalue too unless @hname is NULL. */
static enum MHD_Result send_json_ct(struct evr_mon_req *q, unsigned status, json_t *j,
				    const char *ctype, const char *hname, const char *hvalue)
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
	if (hname)
		MHD_add_response_header(r, hname, hvalue);
	return evr_mon_send(q, status, r);
}

enum MHD_Result evr_mon_send_json(struct evr_mon_req *q, unsigned status, json_t *j)
{
	return send_json_ct(q, status, j, "application/json", NULL, NULL);
}

/* A problem (evr_mon_send_problem()) of @detail, with header @hname: @hvalue unless NULL. */
static enum MHD_Result problem(struct evr_mon_req *q, unsigned status, const char *title,
			       int err, const char *hname, const char *hvalue, const char *detail)
{
	json_t *j;

	j = json_pack("{s:s, s:s, s:i, s:o, s:o}", "type", "about:blank", "title", title,
		      "status", (int)status, "detail", evr_mon_jstr(detail), "instance",
		      evr_mon_jstr(q->url ? q->url : "/"));
	if (j && err < 0) {
		const char *name = strerrorname_np(-err);

		if (name)
			json_object_set_new(j, "errno", json_string(name));
	}
	return send_json_ct(q, status, j, "application/problem+json", hname, hvalue);
}

enum MHD_Result evr_mon_send_problem(struct evr_mon_req *q, unsigned status, const char *title,
				     int err, const char *fmt, ...)
{
	char detail[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return problem(q, status, title, err, NULL, NULL, detail);
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

const char *evr_mon_status_title(unsigned status)
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

	return evr_mon_send_problem(q, st, evr_mon_status_title(st), err, "%s",
				    msg && *msg ? msg : strerror(-err));
}

enum MHD_Result evr_mon_send_busy(struct evr_mon_req *q)
{
	char detail[256];

	atomic_fetch_add_explicit(&q->m->refused_limit, 1, memory_order_relaxed);
	snprintf(detail, sizeof(detail), "the monitor already runs %u traces and streams, its "
		 "limit (--max-sessions); retry when one ends", q->m->o.max_sessions);
	return problem(q, 429, "Too Many Requests", -EBUSY, MHD_HTTP_HEADER_RETRY_AFTER, "1",
		       detail);
}

enum MHD_Result evr_mon_send_not_found(struct evr_mon_req *q)
{
	return evr_mon_send_problem(q, 404, "Not Found", 0, "no route %s %s (GET /info lists "
				    "them; docs/monitor.md describes each)", q->method, q->url);
}

enum MHD_Result evr_mon_send_not_allowed(struct evr_mon_req *q, const char *allow)
{
	char detail[512];

	snprintf(detail, sizeof(detail), "%s is not a method of %s (Allow: %s)", q->method,
		 q->url, allow);
	return problem(q, 405, "Method Not Allowed", 0, MHD_HTTP_HEADER_ALLOW, allow, detail);
}

/* ---- admission ------------------------------------------------------------------------ */

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

unsigned evr_mon_req_admit(struct evr_mon_req *q, bool is_unix, bool local_user,
			   const char **ret_why)
{
	q->admit = (struct evr_mon_admit_in){
		.is_unix = is_unix,
		.listen_loopback = q->m->listen_loopback,
		.port = q->m->port,
		.no_auth = q->m->o.no_auth,
		.key_ok = key_ok(q),
		.local_user = local_user,
		.method = q->method,
		.host = evr_mon_header(q, MHD_HTTP_HEADER_HOST),
		.origin = evr_mon_header(q, "Origin"),
		.referer = evr_mon_header(q, MHD_HTTP_HEADER_REFERER),
		.user_agent = evr_mon_header(q, MHD_HTTP_HEADER_USER_AGENT),
		.sec_fetch_site = evr_mon_header(q, "Sec-Fetch-Site"),
		.sec_fetch_mode = evr_mon_header(q, "Sec-Fetch-Mode"),
		.content_type = evr_mon_header(q, MHD_HTTP_HEADER_CONTENT_TYPE),
	};
	return evr_mon_admit(&q->admit, ret_why);
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

enum MHD_Result evr_mon_send_unauthorized(struct evr_mon_req *q)
{
	atomic_fetch_add_explicit(&q->m->refused_auth, 1, memory_order_relaxed);
	return problem(q, 401, "Unauthorized", 0, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		       "Bearer realm=\"evring monitor\"", q->m->o.has_key ?
		       "send the monitor's API key as 'Authorization: Bearer KEY' (only local "
		       "processes of the monitor's user get in without it)" :
		       "this monitor has no API key (--key-hash): only local processes of its "
		       "user may use it");
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
