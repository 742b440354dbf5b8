// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Traces over HTTP, recorded by libevring-recorder (the engine of
 * `evring record`), any number per process at once, each its own session:
 *
 *   GET    /processes/{pid}/trace?duration=5s&providers=SPEC&format=F
 *          profile for a while and answer with the trace. evring's format
 *          streams as it is recorded (chunked; a client that goes away stops
 *          the session at once); chrome, jsonl and ctf (a tar) are recorded to
 *          a file, converted, and sent whole with the right status
 *   POST   /processes/{pid}/traces  {"providers": ..., "duration": ...}
 *          start a trace kept in --output-dir: 201, Location /traces/{id}
 *   POST   /traces/{id}/stop        stop it; the answer is the trace
 *   GET    /traces, /traces/{id}    list, one
 *   GET    /traces/{id}/trace       the stopped trace again (any format)
 *   DELETE /traces/{id}             cancel a running one, forget a stopped one
 *
 * Threads: a trace's recorder belongs to one thread at a time: the HTTP
 * thread that creates it, then the recording thread (started traces, and the
 * streamed GET, whose HTTP thread reads the recorder's output from a pipe),
 * or the HTTP thread itself (the converted GET formats). Others see a trace
 * through the table: its state, stats and error are under the table's lock;
 * `stop` is an atomic flag the recording loop's tick reads (every 50 ms).
 * Whoever joins the recording thread claims it under the lock; the rest wait
 * on `done`. A trace is reference counted: the table holds one reference, and
 * so does each request using it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/export.h>
#include <evring/provider-spec.h>
#include <evring/recorder.h>

#include "http.h"
#include "trace-internal.h"

#define TICK_MS 50
#define MAX_KEPT 64			/* stopped traces kept at once */
#define PIPE_SIZE (1u << 20)

enum tstate { T_RECORDING, T_STOPPED, T_FAILED, T_CANCELLED };

static const char *const tstate_name[] = { "recording", "stopped", "failed", "cancelled" };


struct trace {
	struct evr_mon_traces *tab;
	uint64_t id;
	char ids[24];
	pid_t pid;
	char pname[64];
	char *providers;
	uint32_t mode;
	enum evr_mon_format format;
	bool streamed;			/* a GET: not kept once answered */
	uint64_t created_rt, started_mono, duration_ns;
	uint64_t max_size;		/* the trace stops when its file reaches it */
	atomic_bool truncated;		/* it did */
	int fd;				/* the trace file (kept traces), or -1 */
	/* Under tab->lock. */
	enum tstate state;
	struct evr_recorder_stats st;
	char err[512];
	char warning[512];		/* set once, before the trace is shared; "" if none */
	uint64_t stopped_rt;
	bool stop_answered;		/* POST .../stop answered once */
	bool has_thread, join_claimed, thread_done;
	/* The recording's, one thread at a time (see the top of the file). */
	struct evr_mon_sideband sb;	/* stacks / sample_cpu: modules, CPU samples */
	struct evr_client *c;
	struct evr_recorder *r;
	pthread_t thread;
	int pipe_r, pipe_w;		/* streamed evtrace */
	int client_fd;
	bool slot;			/* holds an operation slot until recorded */
	atomic_bool stop;
	atomic_int refs;
};

struct evr_mon_traces {
	struct evr_mon *m;
	pthread_mutex_t lock;
	pthread_cond_t done;		/* a recording thread was joined */
	struct trace **v;
	uint32_t n, cap;
	uint64_t next_id;
};

/* ---- the table ------------------------------------------------------------------ */

int evr_mon_traces_new(struct evr_mon *m, struct evr_mon_traces **ret)
{
	struct evr_mon_traces *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->m = m;
	t->next_id = 1;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->done, NULL);
	*ret = t;
	return 0;
}

static void trace_put(struct trace *t)
{
	/* Pairs with the other holders' fetch_sub: the last sees all their writes. */
	if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (t->slot)
		evr_mon_op_put(t->tab->m);
	evr_recorder_free(t->r);
	evr_mon_sideband_free(&t->sb);	/* after the recorder, which borrowed it */
	evr_client_free(t->c);
	if (t->fd >= 0)
		close(t->fd);
	if (t->pipe_r >= 0)
		close(t->pipe_r);
	if (t->pipe_w >= 0)
		close(t->pipe_w);
	free(t->providers);
	free(t);
}

static void trace_ref(struct trace *t)
{
	atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

static int table_add(struct evr_mon_traces *tab, struct trace *t)
{
	int r = 0;

	pthread_mutex_lock(&tab->lock);
	if (tab->n == tab->cap) {
		uint32_t cap = tab->cap ? tab->cap * 2 : 16;
		struct trace **nv = realloc(tab->v, cap * sizeof(*nv));

		if (!nv) {
			r = -ENOMEM;
			goto out;
		}
		tab->v = nv;
		tab->cap = cap;
	}
	t->id = tab->next_id++;
	snprintf(t->ids, sizeof(t->ids), "%" PRIu64, t->id);
	trace_ref(t);
	tab->v[tab->n++] = t;
out:
	pthread_mutex_unlock(&tab->lock);
	return r;
}

/* Remove @t from the table (dropping the table's reference), if it is there. */
static void table_remove(struct evr_mon_traces *tab, struct trace *t)
{
	bool found = false;

	pthread_mutex_lock(&tab->lock);
	for (uint32_t i = 0; i < tab->n; i++)
		if (tab->v[i] == t) {
			tab->v[i] = tab->v[--tab->n];
			found = true;
			break;
		}
	pthread_mutex_unlock(&tab->lock);
	if (found)
		trace_put(t);
}

/* The trace @ids, with a reference for the caller, or NULL. */
static struct trace *table_find(struct evr_mon_traces *tab, const char *ids)
{
	struct trace *t = NULL;

	pthread_mutex_lock(&tab->lock);
	for (uint32_t i = 0; i < tab->n && !t; i++)
		if (!strcmp(tab->v[i]->ids, ids)) {
			t = tab->v[i];
			trace_ref(t);
		}
	pthread_mutex_unlock(&tab->lock);
	return t;
}

static uint32_t kept_count_locked(struct evr_mon_traces *tab)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < tab->n; i++)
		n += !tab->v[i]->streamed;
	return n;
}

/* Wait until @t's recording thread has ended (joining it if nobody else does). */
static void wait_thread(struct trace *t)
{
	struct evr_mon_traces *tab = t->tab;

	pthread_mutex_lock(&tab->lock);
	if (t->has_thread && !t->join_claimed) {
		t->join_claimed = true;
		pthread_mutex_unlock(&tab->lock);
		pthread_join(t->thread, NULL);
		pthread_mutex_lock(&tab->lock);
		t->thread_done = true;
		pthread_cond_broadcast(&tab->done);
	}
	while (t->has_thread && !t->thread_done)
		pthread_cond_wait(&tab->done, &tab->lock);
	pthread_mutex_unlock(&tab->lock);
}

void evr_mon_traces_free(struct evr_mon_traces *tab)
{
	if (!tab)
		return;
	/* The daemons are stopped: only kept traces remain; stop their recordings. */
	for (uint32_t i = 0; i < tab->n; i++)
		atomic_store_explicit(&tab->v[i]->stop, true, memory_order_relaxed);
	for (uint32_t i = 0; i < tab->n; i++) {
		wait_thread(tab->v[i]);
		trace_put(tab->v[i]);
	}
	free(tab->v);
	pthread_cond_destroy(&tab->done);
	pthread_mutex_destroy(&tab->lock);
	free(tab);
}

/* ---- JSON ----------------------------------------------------------------------------- */

static json_t *trace_json_locked(const struct trace *t)
{
	static const char *const stop_name[] = { "running", "stopped", "duration", "ended",
						 "process gone", "error" };
	char self[64], stop[80], data[80];
	json_t *o;

	snprintf(self, sizeof(self), "/traces/%s", t->ids);
	snprintf(stop, sizeof(stop), "/traces/%s/stop", t->ids);
	snprintf(data, sizeof(data), "/traces/%s/trace", t->ids);
	o = json_pack("{s:s, s:i, s:o, s:o, s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:s}",
		      "id", t->ids, "pid", (int)t->pid, "process", evr_mon_jstr(t->pname),
		      "providers", evr_mon_jstr(t->providers),
		      "mode", t->mode ? "overwrite" : "discard",
		      "format", evr_mon_format_name(t->format), "state", tstate_name[t->state],
		      "streamed", t->streamed, "created_ns", (json_int_t)t->created_rt,
		      "duration_ns", (json_int_t)t->duration_ns,
		      "events", (json_int_t)t->st.events, "lost", (json_int_t)t->st.lost,
		      "bytes", (json_int_t)t->st.bytes,
		      "stop_reason", t->st.stop <= EVR_RECORDER_STOP_ERROR ? stop_name[t->st.stop] : "?");
	if (!o)
		return NULL;
	if (t->stopped_rt)
		json_object_set_new(o, "stopped_ns", json_integer((json_int_t)t->stopped_rt));
	json_object_set_new(o, "error", t->err[0] ? evr_mon_jstr(t->err) : json_null());
	json_object_set_new(o, "warnings", t->warning[0] ? json_pack("[o]", evr_mon_jstr(t->warning))
							  : json_array());
	json_object_set_new(o, "max_size", json_integer((json_int_t)t->max_size));
	json_object_set_new(o, "truncated",
			    json_boolean(atomic_load_explicit(&t->truncated, memory_order_relaxed)));
	json_object_set_new(o, "links", json_pack("{s:s, s:s, s:s}", "self", self, "stop", stop,
						  "trace", data));
	return o;
}

static json_t *trace_json(struct trace *t)
{
	json_t *o;

	pthread_mutex_lock(&t->tab->lock);
	o = trace_json_locked(t);
	pthread_mutex_unlock(&t->tab->lock);
	return o;
}

/* ---- parameters (trace-params.c) ---------------------------------------------------------- */

static int params_from_query(struct evr_mon_req *q, struct evr_mon_tparams *p, char *err, size_t errlen)
{
	for (const char *const *k = evr_mon_trace_params; *k; k++) {
		const char *v = evr_mon_query(q, *k);

		if (v && evr_mon_tparams_set(p, *k, v, err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}

/* The per-ring size for @total bytes over @nr_rings: a power of two, rounded down. */
static int ring_size_for(uint64_t total, uint32_t nr_rings, uint64_t *ret, char *err,
			 size_t errlen)
{
	uint64_t min = (uint64_t)EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN, per, p2 = 1;

	if (!total) {
		*ret = 0;
		return 0;
	}
	per = total / (nr_rings ? nr_rings : 1);
	if (per < min) {
		snprintf(err, errlen, "buffer_size: the process has %u rings and each needs at "
			 "least %" PRIu64 " bytes (use at least %" PRIu64 "K)", nr_rings, min,
			 min * (nr_rings ? nr_rings : 1) / 1024);
		return -EINVAL;
	}
	while (p2 <= per / 2)
		p2 *= 2;
	*ret = p2 < EVR_RING_SIZE_MAX ? p2 : EVR_RING_SIZE_MAX;
	return 0;
}

/* ---- creating a trace -------------------------------------------------------------------- */

/*
 * Attach to @pid and start the session. On failure the error is answered
 * (*ret_mhd) and NULL returned. The new trace holds an operation slot.
 */
static struct trace *trace_create(struct evr_mon_req *q, pid_t pid, const struct evr_mon_tparams *p,
				  bool streamed, enum MHD_Result *ret_mhd)
{
	struct evr_recorder_opts ro = { .client = EVR_MON_NAME };
	struct trace *t;
	char err[512];
	int r;

	if (p->duration_ns > q->m->o.max_duration_ns) {
		*ret_mhd = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "duration: at most "
						"%" PRIu64 " s (--max-duration)",
						q->m->o.max_duration_ns / 1000000000u);
		return NULL;
	}
	if (p->max_size > q->m->o.max_trace_size) {
		*ret_mhd = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "max_size: at most "
						"%" PRIu64 " bytes (--max-trace-size)",
						q->m->o.max_trace_size);
		return NULL;
	}
	if (!evr_mon_op_get(q->m)) {
		*ret_mhd = evr_mon_send_busy(q);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		evr_mon_op_put(q->m);
		*ret_mhd = MHD_NO;
		return NULL;
	}
	atomic_init(&t->refs, 1);
	atomic_init(&t->stop, false);
	t->tab = q->m->traces;
	t->slot = true;
	t->fd = t->pipe_r = t->pipe_w = t->client_fd = -1;
	t->pid = pid;
	t->mode = p->mode;
	t->format = p->format;
	t->streamed = streamed;
	t->duration_ns = p->duration_ns;
	t->max_size = p->max_size ? p->max_size : q->m->o.max_trace_size;
	atomic_init(&t->truncated, false);
	t->created_rt = evr_mon_realtime_ns();
	t->providers = strdup(p->providers ? p->providers : "*");
	if (!t->providers) {
		r = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	/* Stacks and CPU samples read /proc/PID/maps and sample PID: not through an id of ours. */
	if ((p->stack_depth || p->sample_hz) && evr_client_dialin_foreign(pid)) {
		*ret_mhd = evr_mon_send_problem(q, 409, "Conflict", -EOPNOTSUPP, "process %d is "
						"in a pid namespace the monitor cannot see (it came "
						"in listen mode): stacks= and sample_cpu= need its "
						"pid; trace it without them, or run the monitor in "
						"its pid namespace", (int)pid);
		trace_put(t);
		return NULL;
	}
	r = evr_client_connect(pid, EVR_MON_NAME, &t->c, err, sizeof(err));
	if (r < 0)
		goto fail;
	evr_mon_proc_short_name(evr_client_process(t->c), t->pname, sizeof(t->pname));
	evr_mon_providers_warning(t->c, t->providers, pid, t->warning, sizeof(t->warning));
	r = ring_size_for(p->buffer_size, evr_client_process(t->c)->nr_cpus, &ro.attach.ring_size,
			  err, sizeof(err));
	if (r < 0)
		goto fail;
	ro.attach.providers = t->providers;
	ro.attach.mode = p->mode;
	ro.attach.counter_interval_ms = p->counter_ms;
	ro.attach.stack_depth = p->stack_depth;
	r = evr_recorder_new(t->c, &ro, &t->r, err, sizeof(err));
	if (r < 0)
		goto fail;
	err[0] = '\0';
	r = evr_mon_sideband_open(&t->sb, pid, p->stack_depth, p->sample_hz, err, sizeof(err));
	if (r < 0)
		goto fail;
	return t;
fail:
	*ret_mhd = evr_mon_send_error(q, r, err);
	trace_put(t);		/* gives the operation slot back */
	return NULL;
}

/* The recording loop's tick: publish the figures, stop when asked or the client left. */
static int tick(struct evr_recorder *r, void *arg)
{
	struct trace *t = arg;
	struct evr_recorder_stats st;

	evr_recorder_stats(r, &st);
	pthread_mutex_lock(&t->tab->lock);
	t->st = st;
	pthread_mutex_unlock(&t->tab->lock);
	if (atomic_load_explicit(&t->stop, memory_order_relaxed))
		return 1;
	if (st.bytes >= t->max_size) {
		/* Checked each tick: the file ends within a tick's worth past it. */
		atomic_store_explicit(&t->truncated, true, memory_order_relaxed);
		return 1;
	}
	if (t->client_fd >= 0 && evr_mon_client_gone(t->client_fd))
		return 1;
	return 0;
}

/*
 * Record until the duration, a stop request, the process's end or (for a
 * request-bound trace) the client's leaving; then stop the session and write
 * the END chunk. Frees the recorder and the client: the producer's session is
 * gone when this returns.
 */
static void record(struct trace *t)
{
	struct evr_recorder_run_opts ro = { .tick = tick, .tick_arg = t, .tick_ms = TICK_MS };
	struct evr_recorder_stats st;
	char err[512] = "", err2[512] = "";
	int r1, r2;

	/* Without a duration: until stopped, but never past --max-duration. */
	ro.deadline_ns = t->started_mono + (t->duration_ns ? t->duration_ns
							   : t->tab->m->o.max_duration_ns);
	r1 = evr_recorder_run(t->r, &ro, err, sizeof(err));
	r2 = evr_recorder_stop(t->r, 0, err2, sizeof(err2));
	evr_recorder_stats(t->r, &st);
	evr_recorder_free(t->r);
	t->r = NULL;
	evr_client_free(t->c);
	t->c = NULL;
	pthread_mutex_lock(&t->tab->lock);
	t->st = st;
	t->stopped_rt = evr_mon_realtime_ns();
	if (t->state == T_RECORDING) {
		if (r1 < 0 || r2 < 0) {
			t->state = T_FAILED;
			snprintf(t->err, sizeof(t->err), "%s", r1 < 0 ? err : err2);
		} else {
			t->state = T_STOPPED;
		}
	}
	pthread_mutex_unlock(&t->tab->lock);
	if (t->slot) {
		t->slot = false;
		evr_mon_op_put(t->tab->m);
	}
}

static void *record_thread(void *arg)
{
	struct trace *t = arg;

	record(t);
	if (t->pipe_w >= 0) {
		/* The reader sees the end of the stream once the END chunk is read. */
		close(t->pipe_w);
		t->pipe_w = -1;
	}
	return NULL;
}

static int start_thread(struct trace *t)
{
	int r;

	pthread_mutex_lock(&t->tab->lock);
	t->has_thread = true;
	pthread_mutex_unlock(&t->tab->lock);
	r = pthread_create(&t->thread, NULL, record_thread, t);
	if (r) {
		pthread_mutex_lock(&t->tab->lock);
		t->has_thread = false;
		pthread_mutex_unlock(&t->tab->lock);
		return -r;
	}
	return 0;
}

/* ---- answering with a trace -------------------------------------------------------------- */

/* The trace's warning, as Warning (RFC 9111's 199, "miscellaneous") and in plain text. */
static void add_warning(struct MHD_Response *r, const char *warning)
{
	char w[600];

	if (!warning[0])
		return;
	snprintf(w, sizeof(w), "199 evring-monitor \"%s\"", warning);
	MHD_add_response_header(r, "Warning", w);
	MHD_add_response_header(r, "X-Evring-Warning", warning);
}

static void add_trace_headers(struct MHD_Response *r, const struct trace *t,
			      enum evr_mon_format f)
{
	char name[96], disp[160], loc[64];

	evr_mon_trace_filename(t->pid, t->created_rt, f, name, sizeof(name));
	snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", name);
	snprintf(loc, sizeof(loc), "/traces/%s", t->ids);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, evr_mon_format_ctype(f));
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
	MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, loc);
	add_warning(r, t->warning);
}

/*
 * Send the stopped trace @t as format @f (its file converted). A conversion is
 * an operation (one of --max-sessions): @have_slot says the caller holds one
 * for it, else one is taken here (429 when none is free). It stops when the
 * client goes away.
 */
static enum MHD_Result send_trace_file(struct evr_mon_req *q, struct trace *t,
				       enum evr_mon_format f, bool have_slot)
{
	struct MHD_Response *r;
	char err[512], top[96], num[32];
	struct stat st;
	int fd = -1, e;

	if (!have_slot && f != EVR_MON_FMT_EVTRACE && !evr_mon_op_get(q->m))
		return evr_mon_send_busy(q);
	evr_mon_trace_filename(t->pid, t->created_rt, EVR_MON_FMT_EVTRACE, top, sizeof(top));
	*strrchr(top, '.') = '\0';
	e = evr_mon_trace_convert(t->fd, f, q->m->o.output_dir, top, evr_mon_client_fd(q), &fd,
				  err, sizeof(err));
	if (have_slot || f != EVR_MON_FMT_EVTRACE)
		evr_mon_op_put(q->m);
	if (e == -ECONNABORTED) {
		atomic_fetch_add_explicit(&q->m->conversions_abandoned, 1, memory_order_relaxed);
		return MHD_NO;	/* the client left: nobody to answer */
	}
	if (e == -ENODATA)	/* a profile of a trace without stacks: the request's fault */
		return evr_mon_send_problem(q, 422, "Unprocessable Content", e, "%s", err);
	if (e < 0)
		return evr_mon_send_problem(q, 500, "Internal Server Error", e, "cannot convert the "
					    "trace: %s", err);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return MHD_NO;
	}
	/* MHD sends it with sendfile from offset 0 and closes it when done. */
	r = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	add_trace_headers(r, t, f);
	pthread_mutex_lock(&t->tab->lock);
	snprintf(num, sizeof(num), "%" PRIu64, t->st.events);
	MHD_add_response_header(r, "X-Evring-Events", num);
	snprintf(num, sizeof(num), "%" PRIu64, t->st.lost);
	MHD_add_response_header(r, "X-Evring-Lost", num);
	pthread_mutex_unlock(&t->tab->lock);
	/* The request may have waited for the whole recording: count idle time from now. */
	MHD_set_connection_option(q->conn, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)q->m->o.idle_timeout_s);
	return evr_mon_send(q, 200, r);
}

/* ---- GET /processes/{pid}/trace ----------------------------------------------------------- */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct trace *t = cls;

	(void)pos;
	for (;;) {
		struct pollfd p[2] = { { .fd = t->pipe_r, .events = POLLIN },
				       { .fd = t->client_fd, .events = POLLRDHUP } };
		ssize_t n = read(t->pipe_r, buf, max);

		if (n > 0)
			return n;
		if (n == 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (errno != EAGAIN && errno != EINTR)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		poll(p, 2, 1000);
		if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			/* The client left: stop now rather than at the next tick. */
			atomic_store_explicit(&t->stop, true, memory_order_relaxed);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
}

static void stream_done(void *cls)
{
	struct trace *t = cls;

	atomic_store_explicit(&t->stop, true, memory_order_relaxed);
	/* A recorder blocked writing a full pipe gets EPIPE and stops the session. */
	close(t->pipe_r);
	t->pipe_r = -1;
	wait_thread(t);
	table_remove(t->tab, t);
	trace_put(t);
}

static enum MHD_Result trace_stream(struct evr_mon_req *q, struct trace *t)
{
	struct MHD_Response *r;
	char err[512];
	int fds[2], e;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		e = -errno;
		goto fail;
	}
	t->pipe_r = fds[0];
	t->pipe_w = fds[1];
	/* A bigger pipe: fewer wake-ups at high rates (best effort). */
	fcntl(t->pipe_w, F_SETPIPE_SZ, PIPE_SIZE);
	fcntl(t->pipe_r, F_SETFL, O_NONBLOCK);
	/* The first chunks go into the pipe before the response starts: they fit. */
	e = evr_mon_recorder_start(t->r, &t->sb, t->pipe_w, err, sizeof(err));
	if (e < 0)
		goto fail_msg;
	t->client_fd = evr_mon_client_fd(q);
	t->started_mono = evr_mono_ns();
	e = start_thread(t);
	if (e < 0)
		goto fail;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 256 * 1024, stream_read, t,
					      stream_done);
	if (!r) {
		stream_done(t);
		return MHD_NO;
	}
	add_trace_headers(r, t, EVR_MON_FMT_EVTRACE);
	/* Long and maybe quiet: our reader notices a client that leaves. One that
	 * stays but does not read is cut an idle timeout after the duration. */
	MHD_set_connection_option(q->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0);
	evr_mon_req_deadline(q, t->started_mono + t->duration_ns +
			     (uint64_t)q->m->o.idle_timeout_s * 1000000000u);
	return evr_mon_send(q, 200, r);
fail:
	snprintf(err, sizeof(err), "%s", strerror(-e));
fail_msg:
	table_remove(t->tab, t);
	trace_put(t);
	return evr_mon_send_problem(q, 500, "Internal Server Error", e, "cannot start the trace: %s",
				    err);
}

/* Other formats: record to a file on this thread, convert, answer whole. */
static enum MHD_Result trace_whole(struct evr_mon_req *q, struct trace *t)
{
	enum MHD_Result ret;
	char err[512];
	int e;

	t->fd = evr_mon_tmpfile(q->m->o.output_dir, err, sizeof(err));
	if (t->fd < 0) {
		e = t->fd;
		goto fail;
	}
	e = evr_mon_recorder_start(t->r, &t->sb, t->fd, err, sizeof(err));
	if (e < 0)
		goto fail;
	t->client_fd = evr_mon_client_fd(q);
	t->started_mono = evr_mono_ns();
	/* The recording's operation slot goes on to the conversion: one operation. */
	t->slot = false;
	record(t);
	if (evr_mon_client_gone(t->client_fd)) {
		evr_mon_op_put(q->m);
		table_remove(t->tab, t);
		trace_put(t);
		return MHD_NO;	/* nobody to answer */
	}
	pthread_mutex_lock(&t->tab->lock);
	e = t->state == T_FAILED ? -EIO : 0;
	snprintf(err, sizeof(err), "%s", t->err);
	pthread_mutex_unlock(&t->tab->lock);
	if (e < 0) {
		evr_mon_op_put(q->m);
		goto fail;
	}
	ret = send_trace_file(q, t, t->format, true);
	table_remove(t->tab, t);
	trace_put(t);
	return ret;
fail:
	table_remove(t->tab, t);
	trace_put(t);
	return evr_mon_send_problem(q, 500, "Internal Server Error", e, "the trace failed: %s", err);
}

enum MHD_Result evr_mon_route_trace_get(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	struct evr_mon_tparams p = { .duration_ns = 30000000000ull };
	char err[512];

	if (params_from_query(q, &p, err, sizeof(err)) < 0)
		return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "%s", err);
	return evr_mon_trace_answer(q, pid, &p);
}

enum MHD_Result evr_mon_trace_answer(struct evr_mon_req *q, pid_t pid,
				     const struct evr_mon_tparams *p)
{
	enum MHD_Result ret = MHD_NO;
	struct trace *t;

	/* It starts a session in the process: not for a page elsewhere. */
	if (!evr_mon_side_effect_check(q, &ret))
		return ret;
	if (!p->duration_ns)
		return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "duration: more than 0 "
					    "(POST /processes/%d/traces starts one without end)",
					    (int)pid);
	t = trace_create(q, pid, p, true, &ret);
	if (!t)
		return ret;
	/* Listed while it runs (GET /traces, DELETE cancels it); the request
	 * keeps its own reference and takes it off the list when answered. */
	if (table_add(q->m->traces, t) < 0) {
		trace_put(t);
		return MHD_NO;
	}
	return p->format == EVR_MON_FMT_EVTRACE ? trace_stream(q, t) : trace_whole(q, t);
}

/* ---- kept traces -------------------------------------------------------------------------- */

enum MHD_Result evr_mon_route_trace_start(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	pid_t pid = args->pid;
	struct evr_mon_tparams p = { 0 };
	enum MHD_Result ret = MHD_NO;
	struct MHD_Response *r;
	json_error_t jerr;
	struct trace *t;
	json_t *body = NULL, *o;
	char err[512], loc[64], warning[512];
	uint32_t kept;
	int e;

	if (q->body_len) {
		body = json_loadb(q->body, q->body_len, 0, &jerr);
		if (!body)
			return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "the body is not "
						    "JSON: %s (line %d, column %d)", jerr.text,
						    jerr.line, jerr.column);
		if (evr_mon_tparams_from_json(body, &p, err, sizeof(err)) < 0) {
			json_decref(body);
			return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "%s", err);
		}
	}
	pthread_mutex_lock(&q->m->traces->lock);
	kept = kept_count_locked(q->m->traces);
	pthread_mutex_unlock(&q->m->traces->lock);
	if (kept >= MAX_KEPT) {
		json_decref(body);
		return evr_mon_send_problem(q, 429, "Too Many Requests", -EBUSY, "%u traces are kept "
					    "already: DELETE /traces/{id} the ones you downloaded",
					    MAX_KEPT);
	}
	t = trace_create(q, pid, &p, false, &ret);
	json_decref(body);	/* trace_create() copied what it keeps */
	if (!t)
		return ret;
	t->fd = evr_mon_tmpfile(q->m->o.output_dir, err, sizeof(err));
	if (t->fd < 0) {
		e = t->fd;
		goto fail;
	}
	e = evr_mon_recorder_start(t->r, &t->sb, t->fd, err, sizeof(err));
	if (e < 0)
		goto fail;
	t->started_mono = evr_mono_ns();
	e = table_add(q->m->traces, t);
	if (e < 0)
		goto fail_errno;
	e = start_thread(t);
	if (e < 0) {
		table_remove(q->m->traces, t);
		goto fail_errno;
	}
	o = trace_json(t);
	snprintf(loc, sizeof(loc), "/traces/%s", t->ids);
	snprintf(warning, sizeof(warning), "%s", t->warning);
	trace_put(t);	/* the table keeps it */
	{
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

		json_decref(o);
		if (!s)
			return MHD_NO;
		r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
		if (!r) {
			free(s);
			return MHD_NO;
		}
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, loc);
	add_warning(r, warning);
	return evr_mon_send(q, 201, r);
fail_errno:
	snprintf(err, sizeof(err), "%s", strerror(-e));
fail:
	trace_put(t);
	return evr_mon_send_problem(q, 500, "Internal Server Error", e, "cannot start the trace: %s",
				    err);
}

enum MHD_Result evr_mon_route_trace_list(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	struct evr_mon_traces *tab = q->m->traces;
	json_t *a = json_array();

	if (!a)
		return MHD_NO;
	pthread_mutex_lock(&tab->lock);
	for (uint32_t i = 0; i < tab->n; i++)
		json_array_append_new(a, trace_json_locked(tab->v[i]));
	pthread_mutex_unlock(&tab->lock);
	return evr_mon_send_json(q, 200, a);
}

static enum MHD_Result unknown(struct evr_mon_req *q, const char *id)
{
	return evr_mon_send_problem(q, 404, "Not Found", -ENOENT, "no trace '%s' (GET /traces "
				    "lists them)", id);
}

enum MHD_Result evr_mon_route_trace_one(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	const char *id = args->id;
	struct trace *t = table_find(q->m->traces, id);
	json_t *o;

	if (!t)
		return unknown(q, id);
	o = trace_json(t);
	trace_put(t);
	return evr_mon_send_json(q, 200, o);
}

/* The format asked for with ?format=, else the trace's own. Return: 0, -EINVAL. */
static int answer_format(struct evr_mon_req *q, const struct trace *t, enum evr_mon_format *ret)
{
	const char *f = evr_mon_query(q, "format");

	*ret = t->format;
	return f ? evr_mon_format_parse(f, ret) : 0;
}

static enum MHD_Result send_kept(struct evr_mon_req *q, struct trace *t)
{
	enum evr_mon_format f;
	enum tstate st;
	char err[512], names[128];

	if (answer_format(q, t, &f) < 0)
		return evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "format: evtrace or %s",
					    evr_export_format_names(names, sizeof(names)));
	pthread_mutex_lock(&t->tab->lock);
	st = t->state;
	snprintf(err, sizeof(err), "%s", t->err);
	pthread_mutex_unlock(&t->tab->lock);
	if (st == T_RECORDING)
		return evr_mon_send_problem(q, 409, "Conflict", -EBUSY, "trace %s is still recording: "
					    "POST /traces/%s/stop first", t->ids, t->ids);
	if (st == T_FAILED && t->fd < 0)
		return evr_mon_send_problem(q, 500, "Internal Server Error", -EIO, "trace %s failed: "
					    "%s", t->ids, err);
	return send_trace_file(q, t, f, false);
}

enum MHD_Result evr_mon_route_trace_stop(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	const char *id = args->id;
	struct trace *t = table_find(q->m->traces, id);
	enum MHD_Result ret;
	bool again;

	if (!t)
		return unknown(q, id);
	if (t->streamed) {
		trace_put(t);
		return evr_mon_send_problem(q, 409, "Conflict", -EINVAL, "trace %s is being sent to "
					    "the client that asked for it; DELETE /traces/%s ends "
					    "it", id, id);
	}
	pthread_mutex_lock(&t->tab->lock);
	again = t->stop_answered;
	t->stop_answered = true;
	pthread_mutex_unlock(&t->tab->lock);
	if (again) {
		trace_put(t);
		return evr_mon_send_problem(q, 409, "Conflict", -EALREADY, "trace %s was stopped "
					    "already: GET /traces/%s/trace downloads it again", id,
					    id);
	}
	atomic_store_explicit(&t->stop, true, memory_order_relaxed);
	wait_thread(t);
	ret = send_kept(q, t);
	trace_put(t);
	return ret;
}

enum MHD_Result evr_mon_route_trace_download(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	const char *id = args->id;
	struct trace *t = table_find(q->m->traces, id);
	enum MHD_Result ret;

	if (!t)
		return unknown(q, id);
	if (t->streamed) {
		trace_put(t);
		return evr_mon_send_problem(q, 409, "Conflict", -EINVAL, "trace %s is sent to the "
					    "client that asked for it, and not kept", id);
	}
	ret = send_kept(q, t);
	trace_put(t);
	return ret;
}

enum MHD_Result evr_mon_route_trace_delete(struct evr_mon_req *q, const struct evr_mon_args *args)
{
	const char *id = args->id;
	struct trace *t = table_find(q->m->traces, id);
	struct MHD_Response *r;

	if (!t)
		return unknown(q, id);
	pthread_mutex_lock(&t->tab->lock);
	if (t->state == T_RECORDING)
		t->state = T_CANCELLED;
	pthread_mutex_unlock(&t->tab->lock);
	atomic_store_explicit(&t->stop, true, memory_order_relaxed);
	if (!t->streamed) {
		/* A kept trace is forgotten, its file with it; a streamed one ends its
		 * response (with a complete trace) and leaves the table then. */
		wait_thread(t);
		table_remove(q->m->traces, t);
	}
	trace_put(t);
	r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	return evr_mon_send(q, 204, r);
}

/* ---- expiry ----------------------------------------------------------------------------- */

/*
 * Stopped kept traces are files in --output-dir: forgotten --trace-ttl after
 * they stopped, and the oldest first while they take more than --max-kept-bytes
 * together. A recording one is bounded by its max_size and --max-duration.
 */
void evr_mon_traces_expire(struct evr_mon_traces *tab)
{
	const struct evr_mon_opts *o = &tab->m->o;
	struct trace *drop[MAX_KEPT];
	uint64_t now, total = 0;
	uint32_t nd = 0;

	pthread_mutex_lock(&tab->lock);
	/* Read under the lock: a trace stopped since would be "stopped in the future". */
	now = evr_mon_realtime_ns();
	for (uint32_t i = 0; i < tab->n; i++) {
		struct trace *t = tab->v[i];

		if (t->streamed || t->state == T_RECORDING)
			continue;
		if (t->stopped_rt && now >= t->stopped_rt && now - t->stopped_rt >= o->trace_ttl_ns &&
		    nd < MAX_KEPT) {
			trace_ref(t);
			drop[nd++] = t;
		} else {
			total += t->st.bytes;
		}
	}
	while (total > o->max_kept_bytes && nd < MAX_KEPT) {
		struct trace *old = NULL;

		for (uint32_t i = 0; i < tab->n; i++) {
			struct trace *t = tab->v[i];
			bool dropped = false;

			if (t->streamed || t->state == T_RECORDING)
				continue;
			for (uint32_t k = 0; k < nd; k++)
				dropped |= drop[k] == t;
			if (!dropped && (!old || t->stopped_rt < old->stopped_rt))
				old = t;
		}
		if (!old)
			break;
		trace_ref(old);
		drop[nd++] = old;
		total -= old->st.bytes < total ? old->st.bytes : total;
	}
	pthread_mutex_unlock(&tab->lock);
	for (uint32_t k = 0; k < nd; k++) {
		wait_thread(drop[k]);
		table_remove(tab, drop[k]);
		trace_put(drop[k]);
	}
}
