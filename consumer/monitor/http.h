/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The monitor's HTTP side below the server: one request, the helpers every
 * route answers with, the route table's types and the routes themselves.
 *
 *   server.c   libmicrohttpd glue: listening sockets, the daemons, the MHD
 *              callbacks (body, the admission gate), hands a request to routes.c
 *   routes.c   the route table {method, pattern, handler, parameters} and the
 *              dispatch: 404, 405 with Allow, typed captures, unknown parameters
 *   router.c   the matcher over a table (pure: the unit tests link it alone)
 *   http.c     the bottom: request values, responses, problem+json errors,
 *              admission glue (the gate's inputs, page token, operation slots)
 *   api.c, pages.c, stacks.c, stream.c, trace.c: the handlers
 *
 * Handlers include this header and call only http.c (and the parts below it:
 * the hub, util.c, conns.c); nothing of theirs calls back into server.c or
 * routes.c, so the files form a one-way stack. A new route is one line of
 * routes.c's table and a handler of type evr_mon_handler_fn.
 */
#ifndef EVR_MONITOR_HTTP_H
#define EVR_MONITOR_HTTP_H

#include "monitor.h"

/* One HTTP request, from its headers to its answer. */
struct evr_mon_req {
	struct evr_mon *m;
	struct MHD_Connection *conn;
	const char *method;		/* "GET", ... (MHD's strings) */
	char *url;			/* the path, copied */
	char *body;			/* the request body, NUL-terminated, or NULL */
	size_t body_len;
	bool body_too_big;
	bool head;			/* HEAD: as GET without the body */
	char *segs[EVR_MON_MAX_SEGS];	/* the path's segments, percent-decoded */
	unsigned nsegs;
	bool answered;
	struct evr_mon_conn *conn_ctx;	/* the connection's (conns.c) */
	bool bad_bytes;			/* a control byte in the path or query: 400 */
	struct evr_mon_admit_in admit;	/* what admission saw (headers borrowed from MHD) */
};

/* ---- request values (http.c) ------------------------------------------------ */

/* The value of query parameter @key, or NULL. */
const char *evr_mon_query(struct evr_mon_req *q, const char *key);
/* A request header, or NULL. */
const char *evr_mon_header(struct evr_mon_req *q, const char *name);
/* The connection's socket, for noticing a client that went away. */
int evr_mon_client_fd(struct evr_mon_req *q);
/* Has the client closed its side (or reset)? Never blocks. */
bool evr_mon_client_gone(int fd);

/*
 * evr_mon_params_ok() - is every query parameter one of @allowed (NULL-ended;
 * `token` is taken everywhere)? A mistyped `provders=` must not record
 * everything as if it were absent.
 * Return: true; false when the 400 naming the unknown ones was answered (*@ret).
 */
bool evr_mon_params_ok(struct evr_mon_req *q, const char *const *allowed, enum MHD_Result *ret);

/* ---- responses (http.c) ------------------------------------------------------- */

/* Queue @r (adding the common headers) and drop our reference. */
enum MHD_Result evr_mon_send(struct evr_mon_req *q, unsigned status, struct MHD_Response *r);
/* @j (stolen) as application/json. */
enum MHD_Result evr_mon_send_json(struct evr_mon_req *q, unsigned status, json_t *j);
/* @len bytes of @buf (copied) as @ctype. */
enum MHD_Result evr_mon_send_buf(struct evr_mon_req *q, unsigned status, const char *ctype,
				 const void *buf, size_t len);
/*
 * An RFC 9457 problem: application/problem+json {type, title, status, detail,
 * instance, errno?}. @err: a negative errno whose name goes into "errno", or 0.
 */
__attribute__((format(printf, 5, 6)))
enum MHD_Result evr_mon_send_problem(struct evr_mon_req *q, unsigned status, const char *title,
				     int err, const char *fmt, ...);
/* The HTTP status for an attach or session error -errno from libevring-consumer. */
unsigned evr_mon_status_of(int err);
/* The reason phrase of @status ("Not Found"), as problems title it. */
const char *evr_mon_status_title(unsigned status);
/* A problem for attach/session error @err with the library's message @msg. */
enum MHD_Result evr_mon_send_error(struct evr_mon_req *q, int err, const char *msg);
/* 404: no route for the path (with any method). */
enum MHD_Result evr_mon_send_not_found(struct evr_mon_req *q);
/* 405: the path has routes, none for this method; @allow lists theirs ("GET, HEAD"). */
enum MHD_Result evr_mon_send_not_allowed(struct evr_mon_req *q, const char *allow);

/* ---- admission (http.c) --------------------------------------------------------- */

/*
 * evr_mon_req_admit() - fill q->admit from the request's headers and what the
 * server knows of its connection, and apply evr_mon_admit() to it.
 * Return: 0 admitted, else the HTTP status with *@ret_why as evr_mon_admit().
 */
unsigned evr_mon_req_admit(struct evr_mon_req *q, bool is_unix, bool local_user,
			   const char **ret_why);
/* 401 with WWW-Authenticate, counted in refused_auth. */
enum MHD_Result evr_mon_send_unauthorized(struct evr_mon_req *q);

/*
 * evr_mon_side_effect_check() - a GET that starts something (a trace, a stacks
 * snapshot): from a browser it needs the page token (?token=) or the key.
 * Return: true to go on; false when the 403 was answered (*@ret).
 */
bool evr_mon_side_effect_check(struct evr_mon_req *q, enum MHD_Result *ret);
/* End the request's connection at @ns (CLOCK_MONOTONIC), 0 never (conns.c). */
void evr_mon_req_deadline(struct evr_mon_req *q, uint64_t ns);

/* Take one of o.max_sessions operation slots. Return: true, or false (full). */
bool evr_mon_op_get(struct evr_mon *m);
void evr_mon_op_put(struct evr_mon *m);
/* 429 with Retry-After when the slots are full. */
enum MHD_Result evr_mon_send_busy(struct evr_mon_req *q);

/* ---- routes (router.c: the matcher; routes.c: the table) ------------------------ */

/*
 * What a route's pattern captured. A capture is a whole path segment, named
 * in the pattern by the field it fills: {pid}, {id}, {provider}, {name},
 * {asset}. {pid} is typed: a decimal process id, or else a process name that
 * routes.c resolves (the one process of that name, as `-n NAME`) before the
 * handler runs. Strings are borrowed from the request's segments.
 */
struct evr_mon_args {
	pid_t pid;			/* {pid} */
	const char *pid_name;		/* {pid} that is no number: the router's, resolved to pid */
	const char *id;			/* {id}: a trace's */
	const char *provider, *name;	/* {provider}/{name}: a counter's */
	const char *asset;		/* {asset}: a page's script or style */
};

/* A route's handler: the request is admitted, its method, path and parameters fit. */
typedef enum MHD_Result evr_mon_handler_fn(struct evr_mon_req *q, const struct evr_mon_args *a);

struct evr_mon_route {
	const char *method;		/* "GET" (which serves HEAD too), "POST", "DELETE" */
	const char *pattern;		/* "/processes/{pid}/traces": literals and captures */
	evr_mon_handler_fn *handler;
	const char *const *params;	/* the query parameters it takes, NULL-ended */
	const char *query;		/* how GET /info shows them ("name=NAME"), or NULL */
};

/* The longest Allow value: every method once, with HEAD ("GET, HEAD, POST, ..."). */
#define EVR_MON_ALLOW_MAX 64

struct evr_mon_match {
	const struct evr_mon_route *route;	/* the route; NULL when none (404, 405) */
	struct evr_mon_args args;		/* its captures */
	char allow[EVR_MON_ALLOW_MAX];		/* 405: the methods the path has, in table order */
};

/**
 * evr_mon_route_match() - the route of @tab (@n entries) for @method and the
 * path @segs (@nsegs segments, as evr_mon_split_path() makes them): the first
 * whose pattern and method both fit, HEAD fitting GET.
 * @ret: the route and its captures; for 405 the Allow value.
 *
 * Return: 0 matched; 404 when no pattern fits the path; 405 when some do but
 * none has @method (ret->allow: their methods, each once, GET as "GET, HEAD").
 * Context: any thread; pure (the table is read-only).
 */
unsigned evr_mon_route_match(const struct evr_mon_route *tab, size_t n, const char *method,
			     char *const *segs, unsigned nsegs, struct evr_mon_match *ret);

/*
 * evr_mon_routes_check() - is every line of @tab well formed: a known method,
 * a pattern of '/'-separated literals and known captures, at most
 * EVR_MON_MAX_SEGS segments, a handler and a parameter list?
 * Return: 0, or -EINVAL with the first fault (the line's method and pattern) in @err.
 */
int evr_mon_routes_check(const struct evr_mon_route *tab, size_t n, char *err, size_t errlen);

/*
 * The monitor's table (routes.c). evr_mon_route() answers one admitted
 * request: its path split, matched, {pid} resolved, parameters checked, then
 * its handler. evr_mon_routes_valid() checks the table at start-up.
 */
enum MHD_Result evr_mon_route(struct evr_mon_req *q);
int evr_mon_routes_valid(char *err, size_t errlen);

/* ---- handlers, by file ---------------------------------------------------------- */

/* api.c. The body of GET /info but its "routes" (routes.c adds the table's). */
json_t *evr_mon_info_json(struct evr_mon_req *q);
evr_mon_handler_fn evr_mon_route_processes, evr_mon_route_process, evr_mon_route_sessions,
	evr_mon_route_threads, evr_mon_route_schemas, evr_mon_route_counters,
	evr_mon_route_metrics;

/* stacks.c */
evr_mon_handler_fn evr_mon_route_stacks;
/* heap.c: a heap profile (pprof) of {pid}; the query parameters it takes. */
evr_mon_handler_fn evr_mon_route_heap;
extern const char *const evr_mon_heap_params[];
/* The stacks of @pid as HTML into @sb; on failure the error is answered (*@ret_mhd). */
int evr_mon_stacks_html(struct evr_mon_req *q, pid_t pid, struct evr_strbuf *sb,
			enum MHD_Result *ret_mhd);

/* stream.c */
evr_mon_handler_fn evr_mon_route_event_stream, evr_mon_route_counter_stream;

/* trace.c */
evr_mon_handler_fn evr_mon_route_trace_get, evr_mon_route_trace_start, evr_mon_route_trace_list,
	evr_mon_route_trace_one, evr_mon_route_trace_stop, evr_mon_route_trace_download,
	evr_mon_route_trace_delete;
/* trace-multi.c: GET /trace over several processes or all; the query parameters it takes. */
evr_mon_handler_fn evr_mon_route_trace_multi;
extern const char *const evr_mon_trace_multi_params[];

/* pages.c */
evr_mon_handler_fn evr_mon_page_index, evr_mon_page_process, evr_mon_page_counters,
	evr_mon_page_stacks, evr_mon_page_asset;

#endif /* EVR_MONITOR_HTTP_H */
