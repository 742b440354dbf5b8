// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The JSON routes: the monitor itself (/info), the processes it can attach to,
 * one process's sessions, threads and registered events, its counters (from
 * the hub, or sampled at the caller's interval by a session of its own),
 * and /metrics.
 *
 * Whatever a process sends (names, command lines, counter names) is untrusted:
 * it goes into JSON through evr_mon_jstr(), which replaces invalid UTF-8.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define ATTACH_WAIT_MS 3000		/* a fresh process: its first attach and samples */

static void add_kind_fields(json_t *o, const struct evr_counter_sample *s)
{
	switch (s->kind) {
	case EVR_SAMPLE_MEAN:
		json_object_set_new(o, "count", json_integer((json_int_t)s->count));
		json_object_set_new(o, "mean", evr_mon_jreal(s->mean));
		json_object_set_new(o, "min", evr_mon_jreal(s->min));
		json_object_set_new(o, "max", evr_mon_jreal(s->max));
		json_object_set_new(o, "stddev", evr_mon_jreal(s->stddev));
		break;
	case EVR_SAMPLE_RATE:
		json_object_set_new(o, "increment", evr_mon_jreal(s->increment));
		json_object_set_new(o, "rate_per_s", evr_mon_jreal(s->rate_per_s));
		break;
	case EVR_SAMPLE_HISTOGRAM:
		json_object_set_new(o, "count", json_integer((json_int_t)s->count));
		json_object_set_new(o, "sum", evr_mon_jreal(s->sum));
		json_object_set_new(o, "p50", evr_mon_jreal(s->p50));
		json_object_set_new(o, "p90", evr_mon_jreal(s->p90));
		json_object_set_new(o, "p99", evr_mon_jreal(s->p99));
		break;
	}
}

json_t *evr_mon_counter_json(const struct evr_mon_counter *c, uint32_t history)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "provider", evr_mon_jstr(c->provider));
	json_object_set_new(o, "name", evr_mon_jstr(c->name));
	json_object_set_new(o, "display_name", evr_mon_jstr(c->display));
	json_object_set_new(o, "unit", evr_mon_jstr(c->unit));
	json_object_set_new(o, "kind", json_string(evr_sample_kind_name(c->kind)));
	json_object_set_new(o, "interval_ms", json_integer(c->last.interval_ms));
	json_object_set_new(o, "samples", json_integer((json_int_t)c->nsamples));
	json_object_set_new(o, "ts", json_integer((json_int_t)c->last.ts_ns));
	json_object_set_new(o, "value", evr_mon_jreal(c->last.value));
	add_kind_fields(o, &c->last);
	if (c->metric[0])
		json_object_set_new(o, "metric", json_string(c->metric));
	if (history) {
		json_t *h = json_array();
		uint32_t n = history < c->hist_n ? history : c->hist_n;
		/* The oldest point is at 0 until the ring fills, then at hist_next. */
		uint32_t oldest = c->hist_n < c->hist_cap ? 0 : c->hist_next;

		for (uint32_t k = 0; k < n && h; k++) {
			const struct evr_mon_point *pt =
				&c->hist[(oldest + c->hist_n - n + k) % c->hist_cap];

			json_array_append_new(h, json_pack("[I,o]", (json_int_t)pt->ts_ns,
							   evr_mon_jreal(pt->value)));
		}
		json_object_set_new(o, "history", h);
	}
	return o;
}

json_t *evr_mon_sample_json(pid_t pid, const struct evr_counter_sample *s)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "type", json_string("counter"));
	json_object_set_new(o, "ts", json_integer((json_int_t)s->ts_ns));
	json_object_set_new(o, "pid", json_integer(pid));
	json_object_set_new(o, "provider", evr_mon_jstr(s->provider));
	json_object_set_new(o, "name", evr_mon_jstrn(s->name, s->name_len));
	json_object_set_new(o, "display_name", evr_mon_jstrn(s->display_name,
							     s->display_name_len));
	json_object_set_new(o, "unit", evr_mon_jstrn(s->unit, s->unit_len));
	json_object_set_new(o, "kind", json_string(evr_sample_kind_name(s->kind)));
	json_object_set_new(o, "interval_ms", json_integer(s->interval_ms));
	json_object_set_new(o, "value", evr_mon_jreal(s->value));
	add_kind_fields(o, s);
	return o;
}

/* ---- processes ------------------------------------------------------------------------ */

/*
 * What @o says of where process @pid lives: "ns_pid", the pid it knows itself
 * by in a pid namespace of its own (a container), when not @pid; "listen_mode",
 * whether it connected to --agent-socket (no runtime directory of its here);
 * "pid_namespace": "other" when the namespace it knows itself in is not ours
 * ("pid" is then ours for it: listen mode's id when we cannot name it at all).
 */
static void set_pid_namespace(json_t *o, pid_t pid, uint32_t ns_pid)
{
	if (ns_pid)
		json_object_set_new(o, "ns_pid", json_integer(ns_pid));
	json_object_set_new(o, "listen_mode", json_boolean(evr_client_dialin_has(pid)));
	json_object_set_new(o, "pid_namespace",
			    json_string(evr_client_dialin_foreign(pid) || ns_pid ? "other" : "same"));
}

static json_t *proc_json(const struct evr_mon_proc *p)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "pid", json_integer(p->pid));
	json_object_set_new(o, "name", evr_mon_jstr(p->name));
	json_object_set_new(o, "state", json_string(evr_mon_proc_state_name(p->state)));
	set_pid_namespace(o, p->pid, p->ns_pid);
	if (p->command) {
		json_object_set_new(o, "command", evr_mon_jstr(p->command));
		json_object_set_new(o, "exe", evr_mon_jstr(p->exe));
		json_object_set_new(o, "uid", json_integer(p->uid));
		json_object_set_new(o, "cpus", json_integer(p->nr_cpus));
		json_object_set_new(o, "evring_version", evr_mon_jstr(p->version));
		json_object_set_new(o, "start_time_ns",
				    json_integer((json_int_t)p->start_realtime_ns));
	}
	json_object_set_new(o, "counters", json_integer(p->nctr));
	if (p->state == EVR_MON_FAILED || p->state == EVR_MON_EXITED) {
		json_object_set_new(o, "error", evr_mon_jstr(p->err));
		if (p->errnum && strerrorname_np(p->errnum))
			json_object_set_new(o, "errno", json_string(strerrorname_np(p->errnum)));
	}
	return o;
}

int evr_mon_pid_of_name(const char *name, pid_t *ret, char *err, size_t errlen)
{
	struct evr_strbuf pids = { 0 };
	pid_t *v = NULL;
	uint32_t n = 0;
	int r = evr_process_find(name, &v, &n);

	if (r < 0) {
		snprintf(err, errlen, "cannot list processes: %s", strerror(-r));
		return r;
	}
	if (n == 1)
		*ret = v[0];
	for (uint32_t i = 0; i < n && r == 0; i++)
		r = evr_strbuf_printf(&pids, "%s%d", i ? ", " : "", (int)v[i]);
	free(v);
	if (n == 0)
		snprintf(err, errlen, "no process named %s runs libevring's agent (GET /processes "
			 "lists those that do)", name);
	else if (n > 1)
		snprintf(err, errlen, "%u processes named %s run libevring's agent (pids %s): name "
			 "one by its pid", n, name, pids.buf ? pids.buf : "");
	free(pids.buf);
	return n == 0 ? -ESRCH : n > 1 ? -ENOTUNIQ : 0;
}

enum MHD_Result evr_mon_route_processes(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	struct evr_mon_hub *h = &q->m->hub;
	const char *name = evr_mon_query(q, "name");
	json_t *a = json_array();
	pid_t *named = NULL;
	uint32_t nnamed = 0;
	int r;

	if (!a)
		return MHD_NO;
	/* name=: the processes `-n NAME` would choose from (libevring-consumer decides). */
	if (name) {
		r = evr_process_find(name, &named, &nnamed);
		if (r < 0) {
			json_decref(a);
			return evr_mon_send_problem(q, r == -EINVAL ? 400 : 500,
						    r == -EINVAL ? "Bad Request" : "Internal Server Error",
						    r, "name=%s: %s", name, r == -EINVAL ?
						    "an empty name" : strerror(-r));
		}
	}
	pthread_mutex_lock(&h->lock);
	evr_mon_hub_refresh_locked(h);
	for (uint32_t i = 0; i < h->n; i++) {
		const struct evr_mon_proc *p = h->procs[i];
		bool keep = !name;

		if (!p->listed && p->state != EVR_MON_LIVE)
			continue;
		for (uint32_t k = 0; k < nnamed && !keep; k++)
			keep = named[k] == p->pid;
		if (keep)
			json_array_append_new(a, proc_json(p));
	}
	pthread_mutex_unlock(&h->lock);
	free(named);
	return evr_mon_send_json(q, 200, a);
}

/*
 * Connect to @pid for a question the hub's session cannot answer (the hub's
 * client belongs to the hub thread). Answers the error itself on failure.
 */
static int connect_or_fail(struct evr_mon_req *q, pid_t pid, struct evr_client **ret,
			   enum MHD_Result *ret_mhd)
{
	char err[512];
	int r = evr_client_connect(pid, EVR_MON_NAME, ret, err, sizeof(err));

	if (r < 0)
		*ret_mhd = evr_mon_send_error(q, r, err);
	return r;
}

static json_t *sessions_json(struct evr_client *c, char *err, size_t errlen, int *ret_err)
{
	struct evr_session_info *v = NULL;
	uint32_t n = 0;
	json_t *a;

	*ret_err = evr_client_list_sessions(c, &v, &n, err, errlen);
	if (*ret_err < 0)
		return NULL;
	a = json_array();
	for (uint32_t i = 0; i < n && a; i++)
		json_array_append_new(a, json_pack("{s:I, s:I, s:o, s:s, s:I, s:o, s:I}",
			"id", (json_int_t)v[i].session_id, "serial", (json_int_t)v[i].serial,
			"providers", evr_mon_jstr(v[i].providers),
			"mode", v[i].mode ? "overwrite" : "discard",
			"ring_size", (json_int_t)v[i].ring_size, "client", evr_mon_jstr(v[i].client),
			"client_pid", (json_int_t)v[i].client_pid));
	evr_session_info_free(v, n);
	return a;
}

static json_t *threads_json(struct evr_client *c, char *err, size_t errlen, int *ret_err)
{
	struct evr_thread_info *v = NULL;
	uint32_t n = 0;
	json_t *a;

	*ret_err = evr_client_list_threads(c, &v, &n, err, errlen);
	if (*ret_err < 0)
		return NULL;
	a = json_array();
	for (uint32_t i = 0; i < n && a; i++)
		json_array_append_new(a, json_pack("{s:I, s:o}", "tid", (json_int_t)v[i].tid,
						   "name", evr_mon_jstrn(v[i].name,
									 strnlen(v[i].name,
										 sizeof(v[i].name)))));
	free(v);
	return a;
}

enum MHD_Result evr_mon_route_process(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	const struct evr_process_info *pi;
	struct evr_client *c = NULL;
	enum MHD_Result ret = MHD_NO;
	json_t *o, *argv, *s, *t;
	char err[512], name[64];
	int r;

	if (connect_or_fail(q, pid, &c, &ret) < 0)
		return ret;
	pi = evr_client_process(c);
	evr_mon_proc_short_name(pi, name, sizeof(name));
	argv = json_array();
	for (uint32_t i = 0; i < pi->argc && argv; i++)
		json_array_append_new(argv, evr_mon_jstr(pi->argv[i] ? pi->argv[i] : ""));
	s = sessions_json(c, err, sizeof(err), &r);
	if (!s) {
		json_decref(argv);
		ret = evr_mon_send_error(q, r, err);
		goto out;
	}
	t = threads_json(c, err, sizeof(err), &r);
	/* The pid asked for: ours for it, not necessarily the one it knows (ns_pid). */
	o = json_pack("{s:i, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:i, s:I, s:o, s:o}",
		      "pid", (int)pid, "ppid", (int)pi->ppid, "uid", (int)pi->uid,
		      "name", evr_mon_jstr(name), "argv", argv, "exe", evr_mon_jstr(pi->exe),
		      "hostname", evr_mon_jstr(pi->hostname),
		      "evring_version", evr_mon_jstr(pi->evring_version),
		      "cpus", (int)pi->nr_cpus, "start_time_ns", (json_int_t)pi->start_realtime_ns,
		      "sessions", s, "threads", t ? t : json_null());
	if (o)
		set_pid_namespace(o, pid, pi->ns_pid);
	ret = evr_mon_send_json(q, 200, o);
out:
	evr_client_free(c);
	return ret;
}

enum MHD_Result evr_mon_route_sessions(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	struct evr_client *c = NULL;
	enum MHD_Result ret = MHD_NO;
	char err[512];
	json_t *s;
	int r;

	if (connect_or_fail(q, pid, &c, &ret) < 0)
		return ret;
	s = sessions_json(c, err, sizeof(err), &r);
	ret = s ? evr_mon_send_json(q, 200, s) : evr_mon_send_error(q, r, err);
	evr_client_free(c);
	return ret;
}

enum MHD_Result evr_mon_route_threads(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	struct evr_client *c = NULL;
	enum MHD_Result ret = MHD_NO;
	char err[512];
	json_t *t;
	int r;

	if (connect_or_fail(q, pid, &c, &ret) < 0)
		return ret;
	t = threads_json(c, err, sizeof(err), &r);
	ret = t ? evr_mon_send_json(q, 200, t) : evr_mon_send_error(q, r, err);
	evr_client_free(c);
	return ret;
}

enum MHD_Result evr_mon_route_schemas(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	const char *provider = evr_mon_query(q, "provider");
	struct evr_schema_set *set = NULL;
	struct evr_client *c = NULL;
	enum MHD_Result ret = MHD_NO;
	char err[512];
	json_t *a;
	int r;

	if (connect_or_fail(q, pid, &c, &ret) < 0)
		return ret;
	r = evr_schema_set_new(&set);
	if (r == 0)
		r = evr_client_list_events(c, set, err, sizeof(err));
	if (r < 0) {
		ret = evr_mon_send_error(q, r, r == -ENOMEM ? "out of memory" : err);
		goto out;
	}
	a = json_array();
	for (uint32_t i = 0; i < evr_schema_set_count(set) && a; i++) {
		const struct evr_schema_event *ev = evr_schema_set_at(set, i);
		json_t *f = json_array();

		if (provider && strcmp(provider, ev->provider))
			continue;
		for (uint32_t k = 0; k < ev->nfields && f; k++)
			json_array_append_new(f, json_pack("{s:o, s:s}", "name",
							   evr_mon_jstr(ev->fields[k].name),
							   "type",
							   evr_field_type_name(ev->fields[k].type)));
		json_array_append_new(a, json_pack("{s:o, s:o, s:i, s:i, s:i, s:s, s:o}",
			"provider", evr_mon_jstr(ev->provider), "name", evr_mon_jstr(ev->name),
			"id", (int)ev->id, "level", (int)ev->level, "opcode", (int)ev->opcode,
			"keywords", "", "fields", f));
		/* Keywords as hex text: 64-bit masks do not survive JSON doubles. */
		{
			char kw[24];

			snprintf(kw, sizeof(kw), "0x%" PRIx64, ev->keywords);
			json_object_set_new(json_array_get(a, json_array_size(a) - 1), "keywords",
					    json_string(kw));
		}
	}
	ret = evr_mon_send_json(q, 200, a);
out:
	evr_schema_set_free(set);
	evr_client_free(c);
	return ret;
}

/* ---- counters ---------------------------------------------------------------------- */

static int parse_history(struct evr_mon_req *q, uint32_t *ret)
{
	const char *s = evr_mon_query(q, "history");
	char *end;
	unsigned long v;

	*ret = 0;
	if (!s)
		return 0;
	if (!strcmp(s, "all")) {
		*ret = UINT32_MAX;
		return 0;
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > 1000000)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

/* Why the hub has no live session for @pid: answer with the precise cause. */
static enum MHD_Result hub_miss(struct evr_mon_req *q, pid_t pid, const struct evr_mon_proc *p)
{
	struct evr_client *c = NULL;
	enum MHD_Result ret = MHD_NO;

	if (p && p->state == EVR_MON_FAILED)
		return evr_mon_send_error(q, -p->errnum, p->err);
	if (p && p->state == EVR_MON_EXITED)
		return evr_mon_send_problem(q, 404, "Not Found", -ESRCH, "process %d exited",
					    (int)pid);
	if (connect_or_fail(q, pid, &c, &ret) < 0)
		return ret;
	evr_client_free(c);
	return evr_mon_send_problem(q, 503, "Service Unavailable", -EAGAIN, "process %d has no "
				    "counter samples yet; retry in a moment", (int)pid);
}

/* Counters sampled at the caller's interval: a session of our own, one interval's set. */
static enum MHD_Result counters_at(struct evr_mon_req *q, pid_t pid, uint64_t interval_ns,
				   const char *provider, const char *name)
{
	struct evr_attach_opts ao = { .ring_size = 64u * 1024u, .mode = EVR_MODE_DISCARD };
	uint64_t deadline, first_ts = 0;
	struct evr_client *c = NULL;
	enum MHD_Result ret = MHD_NO;
	json_t *a = NULL, *seen;
	char err[512], *spec = NULL;
	int r;

	if (interval_ns < 10000000ull || interval_ns > 60000000000ull)
		return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "interval: between "
					    "10ms and 60s");
	if (!evr_mon_op_get(q->m))
		return evr_mon_send_busy(q);
	ao.counter_interval_ms = (uint32_t)(interval_ns / 1000000u);
	if (connect_or_fail(q, pid, &c, &ret) < 0)
		goto out;
	r = evr_mon_counter_spec(c, &spec, err, sizeof(err));
	if (r == 0) {
		ao.providers = spec;
		r = evr_client_start(c, &ao, err, sizeof(err));
	}
	if (r < 0) {
		ret = evr_mon_send_error(q, r, err);
		goto out;
	}
	a = json_array();
	seen = json_object();
	/* One set: the samples of the first interval (they share its end time,
	 * within a millisecond); wait at most two intervals and a margin. */
	deadline = evr_mono_ns() + 2 * interval_ns + 3000000000ull;
	while (a && seen && evr_mono_ns() < deadline) {
		struct evr_counter_sample s;
		struct evr_event_view v;
		bool later = false;

		while ((r = evr_client_next(c, &v)) == 1) {
			char key[256];

			if (v.type != EVR_REC_EVENT || evr_counter_sample_from_view(&v, &s) != 1)
				continue;
			if (!first_ts)
				first_ts = s.ts_ns;
			if (s.ts_ns > first_ts + interval_ns / 2) {
				later = true;
				break;
			}
			if ((provider && strcmp(provider, s.provider)) ||
			    (name && (strlen(name) != s.name_len ||
				      memcmp(name, s.name, s.name_len))))
				continue;
			snprintf(key, sizeof(key), "%s/%.*s", s.provider, (int)s.name_len, s.name);
			json_object_set_new(seen, key, evr_mon_sample_json(pid, &s));
		}
		evr_client_release(c);
		if (r < 0 || later || evr_client_drained(c))
			break;
		/* The set is complete once the producer has had time to write it all. */
		if (first_ts && evr_mono_ns() > first_ts + 50000000u)
			break;
		evr_client_wait(c, 20);
	}
	if (a && seen) {
		const char *k;
		json_t *v;

		json_object_foreach(seen, k, v)
			json_array_append(a, v);
	}
	json_decref(seen);
	if (!first_ts) {
		json_decref(a);
		ret = evr_mon_send_problem(q, 504, "Gateway Timeout", -ETIMEDOUT, "process %d sent "
					   "no counter sample within two intervals", (int)pid);
		goto out;
	}
	if (name && json_array_size(a) == 0) {
		json_decref(a);
		ret = evr_mon_send_problem(q, 404, "Not Found", -ENOENT, "process %d has no counter "
					   "%s/%s", (int)pid, provider, name);
		goto out;
	}
	ret = evr_mon_send_json(q, 200, json_pack("{s:i, s:I, s:I, s:o}", "pid", (int)pid,
						 "interval_ms", (json_int_t)(interval_ns / 1000000u),
						 "ts", (json_int_t)first_ts, "counters", a));
out:
	free(spec);
	evr_client_free(c);
	evr_mon_op_put(q->m);
	return ret;
}

/* Both /counters and /counters/{provider}/{name} (one counter, with its history). */
enum MHD_Result evr_mon_route_counters(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	const char *provider = args->provider, *name = args->name;
	struct evr_mon_hub *h = &q->m->hub;
	const char *iv = evr_mon_query(q, "interval");
	const char *only = evr_mon_query(q, "provider");
	struct evr_mon_proc *p;
	uint32_t history;
	json_t *a, *o;
	uint64_t ns;

	if (parse_history(q, &history) < 0)
		return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "history: a number of "
					    "points, or 'all'");
	if (iv) {
		if (evr_mon_parse_duration(iv, &ns) < 0)
			return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "interval: '%s' "
						    "is not a duration (500ms, 2s, 1m)", iv);
		return counters_at(q, pid, ns, provider ? provider : only, name);
	}
	pthread_mutex_lock(&h->lock);
	p = evr_mon_hub_get_locked(h, pid, true,
				   (int)(2 * q->m->o.counter_interval_ms) + ATTACH_WAIT_MS);
	if (!p || p->state != EVR_MON_LIVE || !p->nctr) {
		struct evr_mon_proc copy;

		if (p)
			copy = *p;
		pthread_mutex_unlock(&h->lock);
		return hub_miss(q, pid, p ? &copy : NULL);
	}
	if (provider) {
		struct evr_mon_counter *c = evr_mon_proc_counter(p, provider, name);

		o = c ? evr_mon_counter_json(c, history) : NULL;
		pthread_mutex_unlock(&h->lock);
		if (!c)
			return evr_mon_send_problem(q, 404, "Not Found", -ENOENT, "process %d has no "
						    "counter %s/%s", (int)pid, provider, name);
		return evr_mon_send_json(q, 200, o);
	}
	a = json_array();
	for (uint32_t i = 0; i < p->nctr && a; i++)
		if (!only || !strcmp(only, p->ctr[i].provider))
			json_array_append_new(a, evr_mon_counter_json(&p->ctr[i], history));
	o = json_pack("{s:i, s:o, s:i, s:I, s:o}", "pid", (int)pid, "name", evr_mon_jstr(p->name),
		      "interval_ms", (int)q->m->o.counter_interval_ms, "lost",
		      (json_int_t)p->lost, "counters", a);
	pthread_mutex_unlock(&h->lock);
	return evr_mon_send_json(q, 200, o);
}

/* ---- the rest ---------------------------------------------------------------------------- */

enum MHD_Result evr_mon_route_metrics(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	bool om = evr_mon_accepts_openmetrics(evr_mon_header(q, MHD_HTTP_HEADER_ACCEPT));
	struct evr_strbuf sb = { 0 };
	struct MHD_Response *r;

	if (evr_mon_metrics(&q->m->hub, &sb, om) < 0) {
		free(sb.buf);
		return evr_mon_send_problem(q, 500, "Internal Server Error", -ENOMEM,
					    "out of memory");
	}
	r = MHD_create_response_from_buffer(sb.len, sb.buf ? sb.buf : "", MHD_RESPMEM_MUST_COPY);
	free(sb.buf);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				om ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
				"text/plain; version=0.0.4; charset=utf-8");
	/* The format depends on Accept: caches must keep them apart. */
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept");
	return evr_mon_send(q, 200, r);
}

json_t *evr_mon_info_json(struct evr_mon_req *q)
{
	const struct evr_mon *m = q->m;
	json_t *o;

	o = json_pack("{s:s, s:s, s:o, s:{s:b, s:b, s:s}, s:{s:i, s:i, s:i, s:I, s:I}, s:i, s:i, "
		      "s:i, s:i, s:I, s:I}",
		      "version", EVR_VERSION, "url", m->url,
		      "unix_socket", m->o.unix_path ? evr_mon_jstr(m->o.unix_path) : json_null(),
		      "auth", "no_auth", m->o.no_auth, "key", m->o.has_key, "local_user",
		      "a local process of this uid (or root) needs no key",
		      "limits", "max_connections", (int)m->o.max_connections, "max_sessions",
		      (int)m->o.max_sessions, "idle_timeout_s", (int)m->o.idle_timeout_s,
		      "max_body", (json_int_t)m->o.max_body, "max_duration_s",
		      (json_int_t)(m->o.max_duration_ns / 1000000000u),
		      "counter_interval_ms", (int)m->o.counter_interval_ms,
		      "history", (int)m->o.history, "uid", (int)geteuid(),
		      "operations", (int)atomic_load_explicit(&m->ops, memory_order_relaxed),
		      "requests", (json_int_t)atomic_load_explicit(&m->requests,
								   memory_order_relaxed),
		      "uptime_ns", (json_int_t)(evr_mono_ns() - m->started_ns));
	if (o) {
		struct evr_mon_conns *cs = &q->m->conns;
		json_t *l = json_object_get(o, "limits");

		json_object_set_new(l, "header_timeout_s", json_integer(m->o.header_timeout_s));
		json_object_set_new(l, "max_peer_connections",
				    json_integer(m->o.max_peer_connections));
		json_object_set_new(l, "max_trace_size", json_integer((json_int_t)m->o.max_trace_size));
		json_object_set_new(l, "trace_ttl_s",
				    json_integer((json_int_t)(m->o.trace_ttl_ns / 1000000000u)));
		json_object_set_new(l, "max_kept_bytes", json_integer((json_int_t)m->o.max_kept_bytes));
		pthread_mutex_lock(&cs->lock);
		json_object_set_new(o, "refused", json_pack(
			"{s:I, s:I, s:I, s:I, s:I, s:i}",
			"connections_per_peer", (json_int_t)cs->refused_peer,
			"connections_total", (json_int_t)cs->refused_total,
			"header_or_stream_timeouts", (json_int_t)cs->timed_out,
			"unauthorized", (json_int_t)atomic_load_explicit(&m->refused_auth,
									 memory_order_relaxed),
			"busy", (json_int_t)atomic_load_explicit(&m->refused_limit,
								 memory_order_relaxed),
			"strangers_connected", (int)cs->strangers));
		pthread_mutex_unlock(&cs->lock);
		json_object_set_new(o, "conversions_abandoned", json_integer((json_int_t)
			atomic_load_explicit(&m->conversions_abandoned, memory_order_relaxed)));
	}
	return o;
}
