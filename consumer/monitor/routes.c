// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The monitor's routes: one table line each (method, pattern, handler, the
 * query parameters it takes, and how GET /info shows them), and the dispatch
 * of an admitted request through router.c's matcher: 404 when no pattern fits
 * the path, 405 with Allow when one does but not with this method, {pid}
 * resolved (a name: the one process of that name), unknown query parameters
 * refused, then the handler.
 *
 * docs/monitor.md describes each route; GET /info lists this table.
 */
#include <errno.h>
#include <string.h>

#include "http.h"

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

static evr_mon_handler_fn route_info;

/* In GET /info's order. The router takes the first line whose pattern and method fit. */
static const struct evr_mon_route routes[] = {
	{ "GET", "/info", route_info, P_NONE, NULL },
	{ "GET", "/metrics", evr_mon_route_metrics, P_NONE, NULL },
	{ "GET", "/processes", evr_mon_route_processes, P_PROCESSES, "name=NAME" },
	{ "GET", "/processes/{pid}", evr_mon_route_process, P_NONE, NULL },
	{ "GET", "/processes/{pid}/sessions", evr_mon_route_sessions, P_NONE, NULL },
	{ "GET", "/processes/{pid}/threads", evr_mon_route_threads, P_NONE, NULL },
	{ "GET", "/processes/{pid}/events", evr_mon_route_schemas, P_EVENTS, "provider=P" },
	{ "GET", "/processes/{pid}/counters", evr_mon_route_counters, P_COUNTERS,
	  "interval=T&history=N&provider=P" },
	{ "GET", "/processes/{pid}/counters/{provider}/{name}", evr_mon_route_counters,
	  P_COUNTERS, "history=N" },
	{ "GET", "/processes/{pid}/counters/stream", evr_mon_route_counter_stream,
	  P_COUNTER_STREAM, "interval=T&providers=P,Q&duration=T" },
	{ "GET", "/processes/{pid}/stream", evr_mon_route_event_stream, P_EVENT_STREAM,
	  "providers=SPEC&events=A,B&duration=T" },
	{ "GET", "/processes/{pid}/trace", evr_mon_route_trace_get, evr_mon_trace_params,
	  "duration=T&providers=SPEC&format=evtrace|chrome|jsonl|ctf" },
	/* Several processes, or every one with an agent: one file of format 2. */
	{ "GET", "/trace", evr_mon_route_trace_multi, evr_mon_trace_multi_params,
	  "pid=A,B|all=1&duration=T&providers=SPEC&format=evtrace|chrome|jsonl|ctf" },
	/* Its parameters are the JSON body's (evr_mon_tparams_from_json()). */
	{ "POST", "/processes/{pid}/traces", evr_mon_route_trace_start, P_NONE, NULL },
	{ "GET", "/processes/{pid}/stacks", evr_mon_route_stacks, P_STACKS, "depth=N" },
	{ "GET", "/processes/{pid}/heap", evr_mon_route_heap, evr_mon_heap_params,
	  "duration=T&rate=R" },
	{ "GET", "/traces", evr_mon_route_trace_list, P_NONE, NULL },
	{ "GET", "/traces/{id}", evr_mon_route_trace_one, P_NONE, NULL },
	{ "POST", "/traces/{id}/stop", evr_mon_route_trace_stop, P_DOWNLOAD, NULL },
	{ "GET", "/traces/{id}/trace", evr_mon_route_trace_download, P_DOWNLOAD, "format=F" },
	{ "DELETE", "/traces/{id}", evr_mon_route_trace_delete, P_NONE, NULL },
	{ "GET", "/", evr_mon_page_index, P_NONE, NULL },
	{ "GET", "/ui/processes/{pid}", evr_mon_page_process, P_NONE, NULL },
	{ "GET", "/ui/processes/{pid}/counters", evr_mon_page_counters, P_NONE, NULL },
	{ "GET", "/ui/processes/{pid}/stacks", evr_mon_page_stacks, P_STACKS, NULL },
	{ "GET", "/ui/{asset}", evr_mon_page_asset, P_NONE, NULL },
};

#define NR_ROUTES (sizeof(routes) / sizeof(routes[0]))

/* GET /info: the monitor (api.c), and this table as "METHOD PATTERN[?QUERY]" lines. */
static enum MHD_Result route_info(struct evr_mon_req *q, const struct evr_mon_args *a)
{
	json_t *o = evr_mon_info_json(q), *r = json_array();
	char line[256];

	(void)a;
	for (size_t i = 0; i < NR_ROUTES && r; i++) {
		snprintf(line, sizeof(line), "%s %s%s%s", routes[i].method, routes[i].pattern,
			 routes[i].query ? "?" : "", routes[i].query ? routes[i].query : "");
		json_array_append_new(r, json_string(line));
	}
	if (!o || !r) {
		json_decref(o);
		json_decref(r);
		return MHD_NO;
	}
	json_object_set_new(o, "routes", r);
	return evr_mon_send_json(q, 200, o);
}

int evr_mon_routes_valid(char *err, size_t errlen)
{
	return evr_mon_routes_check(routes, NR_ROUTES, err, errlen);
}

enum MHD_Result evr_mon_route(struct evr_mon_req *q)
{
	struct evr_mon_match mt;
	enum MHD_Result ret;
	unsigned st;

	if (evr_mon_split_path(q->url, q->segs, &q->nsegs) < 0)
		return evr_mon_send_not_found(q);
	st = evr_mon_route_match(routes, NR_ROUTES, q->method, q->segs, q->nsegs, &mt);
	if (st == 405)
		return evr_mon_send_not_allowed(q, mt.allow);
	if (st)
		return evr_mon_send_not_found(q);
	if (mt.args.pid_name) {
		/* A name instead of a pid: the one process of that name. */
		char err[512];
		int r = evr_mon_pid_of_name(mt.args.pid_name, &mt.args.pid, err, sizeof(err));

		if (r == -ENOTUNIQ)
			return evr_mon_send_problem(q, 409, "Conflict", r, "%s", err);
		if (r < 0)
			return evr_mon_send_problem(q, 404, "Not Found", r, "%s", err);
	}
	if (!evr_mon_params_ok(q, mt.route->params, &ret))
		return ret;
	return mt.route->handler(q, &mt.args);
}
