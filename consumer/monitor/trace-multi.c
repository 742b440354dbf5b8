// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A trace of several processes over HTTP, in one file of format 2 (as `evring
 * record -p A -p B` or `--all` writes it, docs/trace-format.md):
 *
 *   GET /trace?pid=A,B&duration=5s&providers=SPEC&format=F
 *   GET /trace?all=1&duration=5s...
 *
 * pid= takes pids and names (a name: the one process of that name), all=1
 * every process with an agent when the trace starts (one that starts later is
 * not in it: `evring record --all` follows those). Each process is a stream of
 * its own, written by a recorder of its own on one file (evr_trace_mux), with
 * the process table in stream 0: the same engine as record-multi.c, one loop
 * on the request's thread stepping every recorder, then the file converted
 * (evtrace: sent as it is; chrome: a process track group per pid; jsonl: each
 * line with its "pid") and sent whole, as the per-process route sends its
 * converted formats. CTF and the profiles are of one process: 400.
 *
 * Admission as the per-process route: a side effect (token, same origin),
 * one operation of --max-sessions for the whole trace (429 when none is
 * free), duration at most --max-duration, the file at most max_size
 * (--max-trace-size). The trace ends at its duration, when every process has
 * ended, at max_size (X-Evring-Truncated), or when the client leaves. It is
 * not listed in GET /traces: like a streamed trace, it lives as long as its
 * request. stacks= and sample_cpu= are per process (a side band each): 400.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/recorder.h>
#include <evring/trace.h>

#include "http.h"
#include "monitor.h"
#include "trace-internal.h"

#define MAX_PROCS 64u
#define STEP_MS 10		/* the longest the loop sleeps between rounds */

const char *const evr_mon_trace_multi_params[] = { "pid", "all", "providers", "buffer_size",
						   "mode", "counter_interval", "duration",
						   "max_size", "format", "stacks", "sample_cpu",
						   NULL };

struct mproc {
	pid_t pid;
	char name[64];
	struct evr_client *c;
	struct evr_recorder *r;
	uint32_t stream;
	bool finished;
};

struct multi {
	struct evr_mon_req *q;
	struct evr_mon_tparams p;
	int fd;
	struct evr_trace_mux *mux;
	struct mproc v[MAX_PROCS];
	uint32_t n;
	char skipped[1024];	/* all=1: the processes that could not be recorded */
	int err;		/* the file could not be written */
	char why[600];
};

/* A line of the process table. */
static void table_line(struct multi *m, struct mproc *pr, enum evr_trace_proc_what what)
{
	const struct evr_process_info *pi = evr_client_process(pr->c);
	struct evr_trace_proc_rec rec = {
		.stream = pr->stream, .pid = (uint32_t)pr->pid, .what = (uint16_t)what,
		.time_ns = evr_mono_ns(),
	};
	int r;

	if (what == EVR_TRACE_PROC_ATTACHED) {
		rec.ppid = pi->ppid;
		rec.start_realtime_ns = pi->start_realtime_ns;
		r = evr_trace_mux_proc(m->mux, &rec, pr->name, pi->argc, pi->argv);
	} else {
		r = evr_trace_mux_proc(m->mux, &rec, pr->name, 0, NULL);
	}
	if (r < 0 && !m->err) {
		m->err = r;
		snprintf(m->why, sizeof(m->why), "cannot write the trace: %s", strerror(-r));
	}
}

/* The per-ring size for @total bytes over @nr_rings: a power of two, rounded down. */
static int ring_size_for(uint64_t total, uint32_t nr_rings, uint64_t *ret, char *err,
			 size_t errlen)
{
	uint64_t min = (uint64_t)EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN, per, p2 = 1;

	*ret = 0;
	if (!total)
		return 0;
	per = total / (nr_rings ? nr_rings : 1);
	if (per < min) {
		snprintf(err, errlen, "buffer_size: a process has %u rings and each needs at least "
			 "%" PRIu64 " bytes (use at least %" PRIu64 "K)", nr_rings, min,
			 min * (nr_rings ? nr_rings : 1) / 1024);
		return -EINVAL;
	}
	while (p2 <= per / 2)
		p2 *= 2;
	*ret = p2 < EVR_RING_SIZE_MAX ? p2 : EVR_RING_SIZE_MAX;
	return 0;
}

/* Attach to @pid and start its recorder on the file. Return: 0, or -errno with @err. */
static int proc_start(struct multi *m, pid_t pid, char *err, size_t errlen)
{
	struct evr_recorder_opts ro = {
		.client = EVR_MON_NAME,
		.flags = 0,
		.mux = m->mux,
	};
	struct mproc *pr = &m->v[m->n];
	int r;

	memset(pr, 0, sizeof(*pr));
	pr->pid = pid;
	r = evr_client_connect(pid, EVR_MON_NAME, &pr->c, err, errlen);
	if (r < 0)
		return r;
	evr_mon_proc_short_name(evr_client_process(pr->c), pr->name, sizeof(pr->name));
	r = ring_size_for(m->p.buffer_size, evr_client_process(pr->c)->nr_cpus,
			  &ro.attach.ring_size, err, errlen);
	ro.attach.providers = m->p.providers ? m->p.providers : "*";
	ro.attach.mode = m->p.mode;
	ro.attach.counter_interval_ms = m->p.counter_ms;
	if (r == 0)
		r = evr_recorder_new(pr->c, &ro, &pr->r, err, errlen);
	if (r == 0)
		r = evr_recorder_start(pr->r, -1, err, errlen);
	if (r < 0) {
		evr_recorder_free(pr->r);
		evr_client_free(pr->c);
		return r;
	}
	pr->stream = evr_recorder_stream(pr->r);
	m->n++;
	table_line(m, pr, EVR_TRACE_PROC_ATTACHED);
	return 0;
}

static void proc_finish(struct multi *m, struct mproc *pr, bool interrupted)
{
	struct evr_recorder_stats st;
	enum evr_trace_proc_what how;
	char err[512];

	if (pr->finished)
		return;
	pr->finished = true;
	if (evr_recorder_stop(pr->r, interrupted ? EVR_TRACE_END_INTERRUPTED : 0, err,
			      sizeof(err)) < 0 && !m->err) {
		evr_recorder_stats(pr->r, &st);
		if (st.write_failed) {
			m->err = -EIO;
			snprintf(m->why, sizeof(m->why), "process %d: %s", (int)pr->pid, err);
		}
	}
	evr_recorder_stats(pr->r, &st);
	how = st.stop == EVR_RECORDER_STOP_ENDED  ? EVR_TRACE_PROC_EXITED :
	      st.stop == EVR_RECORDER_STOP_GONE   ? EVR_TRACE_PROC_DIED :
	      st.stop == EVR_RECORDER_STOP_ERROR  ? EVR_TRACE_PROC_FAILED :
	      st.stop == EVR_RECORDER_RUNNING     ? EVR_TRACE_PROC_FAILED :
						    EVR_TRACE_PROC_DETACHED;
	if (!m->err)
		table_line(m, pr, how);
}

/* Step every live recorder once. Return: live ones; *@more: one stopped at its most. */
static uint32_t step_all(struct multi *m, bool *more)
{
	uint32_t live = 0;

	*more = false;
	for (uint32_t i = 0; i < m->n && !m->err; i++) {
		struct mproc *pr = &m->v[i];
		struct evr_recorder_stats st;
		char err[512];
		int k;

		if (pr->finished)
			continue;
		k = evr_recorder_step(pr->r, err, sizeof(err));
		evr_recorder_stats(pr->r, &st);
		if (k < 0 && st.write_failed) {
			m->err = k;
			snprintf(m->why, sizeof(m->why), "process %d: %s", (int)pr->pid, err);
		}
		if (k < 0 || st.stop != EVR_RECORDER_RUNNING) {
			proc_finish(m, pr, false);
			continue;
		}
		*more |= k >= (int)EVR_RECORDER_STEP_MAX;
		live++;
	}
	return live;
}

/*
 * Record until the duration, the end of every process, max_size, or the
 * client's leaving. Return: false when the client left (nobody to answer).
 */
static bool record_all(struct multi *m, bool *ret_truncated)
{
	uint64_t deadline = evr_mono_ns() + m->p.duration_ns;
	uint64_t max_size = m->p.max_size ? m->p.max_size : m->q->m->o.max_trace_size;
	int cfd = evr_mon_client_fd(m->q);
	bool gone = false, more = false;

	*ret_truncated = false;
	while (!m->err && evr_mono_ns() < deadline) {
		struct pollfd pfd = { .fd = cfd, .events = POLLRDHUP };
		uint64_t left;

		if (!step_all(m, &more))
			break;
		if (evr_trace_mux_bytes(m->mux) >= max_size) {
			/* Checked each round: the file ends within a round's worth past it. */
			*ret_truncated = true;
			break;
		}
		if (more)
			continue;
		left = (deadline - evr_mono_ns()) / 1000000u + 1;
		(void)poll(&pfd, 1, left < STEP_MS ? (int)left : STEP_MS);
		if (cfd >= 0 && evr_mon_client_gone(cfd)) {
			gone = true;
			break;
		}
	}
	for (uint32_t i = 0; i < m->n; i++)
		proc_finish(m, &m->v[i], gone);
	return !gone;
}

/* pid=A,B (pids or names) or all=1 into the pids to record. The error is answered. */
static bool select_pids(struct multi *m, pid_t *pids, uint32_t *n, bool *all,
			enum MHD_Result *ret)
{
	struct evr_mon_req *q = m->q;
	const char *list = evr_mon_query(q, "pid"), *a = evr_mon_query(q, "all");
	char err[512];

	*n = 0;
	*all = false;
	if (a && strcmp(a, "1") && strcmp(a, "true")) {
		*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "all: only all=1");
		return false;
	}
	if (a && list) {
		*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "pid= and all= exclude "
					    "each other");
		return false;
	}
	if (a) {
		pid_t *v = NULL;
		uint32_t k = 0;
		int r = evr_process_list(&v, &k);

		if (r < 0) {
			*ret = evr_mon_send_problem(q, 500, "Internal Server Error", r, "cannot "
						    "list the processes: %s", strerror(-r));
			return false;
		}
		for (uint32_t i = 0; i < k && *n < MAX_PROCS; i++)
			pids[(*n)++] = v[i];
		free(v);
		*all = true;
		if (!*n) {
			*ret = evr_mon_send_problem(q, 404, "Not Found", -ESRCH, "no process runs "
						    "libevring's agent");
			return false;
		}
		return true;
	}
	if (!list || !*list) {
		*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "say which processes: "
					    "pid=A,B (pids or names) or all=1");
		return false;
	}
	for (const char *s = list; *s;) {
		size_t len = strcspn(s, ",");
		char item[128];
		char *end;
		long v;
		int r;

		if (!len || len >= sizeof(item) || *n == MAX_PROCS) {
			*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "pid: a list of "
						    "at most %u pids or names, comma-separated",
						    MAX_PROCS);
			return false;
		}
		memcpy(item, s, len);
		item[len] = '\0';
		s += len + (s[len] == ',');
		v = strtol(item, &end, 10);
		if (!*end && v > 0 && v <= INT32_MAX) {
			pids[*n] = (pid_t)v;
		} else {
			r = evr_mon_pid_of_name(item, &pids[*n], err, sizeof(err));
			if (r < 0) {
				*ret = evr_mon_send_problem(q, r == -ENOTUNIQ ? 409 : 404,
							    r == -ENOTUNIQ ? "Conflict" : "Not Found",
							    r, "%s", err);
				return false;
			}
		}
		for (uint32_t i = 0; i < *n; i++)
			if (pids[i] == pids[*n])
				goto next;	/* named twice */
		(*n)++;
next:;
	}
	return true;
}

/* Parameters as the per-process route's; stacks= and sample_cpu= refused. */
static bool read_params(struct multi *m, enum MHD_Result *ret)
{
	struct evr_mon_req *q = m->q;
	char err[512];

	m->p = (struct evr_mon_tparams){ .duration_ns = 30000000000ull };
	for (const char *const *k = evr_mon_trace_multi_params; *k; k++) {
		const char *v = evr_mon_query(q, *k);

		if (!v || !strcmp(*k, "pid") || !strcmp(*k, "all"))
			continue;
		if (!strcmp(*k, "stacks") || !strcmp(*k, "sample_cpu")) {
			*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "%s: not over "
						    "several processes (a side band per process): "
						    "GET /processes/{pid}/trace takes it", *k);
			return false;
		}
		if (evr_mon_tparams_set(&m->p, *k, v, err, sizeof(err)) < 0) {
			*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "%s", err);
			return false;
		}
	}
	if (m->p.format != EVR_MON_FMT_EVTRACE && m->p.format != EVR_MON_FMT_CHROME &&
	    m->p.format != EVR_MON_FMT_JSONL) {
		*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "format: evtrace, "
					    "chrome or jsonl over several processes (a %s file is "
					    "of one process)", evr_mon_format_name(m->p.format));
		return false;
	}
	if (!m->p.duration_ns) {
		*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "duration: more than 0");
		return false;
	}
	if (m->p.duration_ns > q->m->o.max_duration_ns) {
		*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "duration: at most %"
					    PRIu64 " s (--max-duration)",
					    q->m->o.max_duration_ns / 1000000000u);
		return false;
	}
	if (m->p.max_size > q->m->o.max_trace_size) {
		*ret = evr_mon_send_problem(q, 400, "Bad Request", -EINVAL, "max_size: at most %"
					    PRIu64 " bytes (--max-trace-size)",
					    q->m->o.max_trace_size);
		return false;
	}
	return true;
}

/* The recorded file @m->fd as @m->p.format, answered. Consumes the operation slot. */
static enum MHD_Result answer(struct multi *m, bool truncated)
{
	struct evr_mon_req *q = m->q;
	uint64_t events = 0, lost = 0;
	struct MHD_Response *r;
	char err[512], name[96], top[96], disp[160], num[32];
	struct stat sb;
	int fd = -1, e;

	evr_mon_trace_filename(0, evr_mon_realtime_ns(), m->p.format, name, sizeof(name));
	/* "0-20260101T120000Z.evtrace" -> "processes-20260101T120000Z.evtrace" */
	snprintf(top, sizeof(top), "processes%s", strchr(name, '-') ? strchr(name, '-') : "");
	snprintf(name, sizeof(name), "%s", top);
	*strchrnul(top, '.') = '\0';
	e = evr_mon_trace_convert(m->fd, m->p.format, q->m->o.output_dir, top,
				  evr_mon_client_fd(q), &fd, err, sizeof(err));
	evr_mon_op_put(q->m);
	if (e == -ECONNABORTED) {
		atomic_fetch_add_explicit(&q->m->conversions_abandoned, 1, memory_order_relaxed);
		return MHD_NO;
	}
	if (e == -ENODATA)
		return evr_mon_send_problem(q, 422, "Unprocessable Content", e, "%s", err);
	if (e < 0)
		return evr_mon_send_problem(q, 500, "Internal Server Error", e, "cannot convert the "
					    "trace: %s", err);
	if (fstat(fd, &sb) < 0) {
		close(fd);
		return MHD_NO;
	}
	r = MHD_create_response_from_fd64((uint64_t)sb.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	for (uint32_t i = 0; i < m->n; i++) {
		struct evr_recorder_stats st;

		evr_recorder_stats(m->v[i].r, &st);
		events += st.events;
		lost += st.lost;
	}
	snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", name);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, evr_mon_format_ctype(m->p.format));
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
	snprintf(num, sizeof(num), "%" PRIu64, events);
	MHD_add_response_header(r, "X-Evring-Events", num);
	snprintf(num, sizeof(num), "%" PRIu64, lost);
	MHD_add_response_header(r, "X-Evring-Lost", num);
	snprintf(num, sizeof(num), "%u", m->n);
	MHD_add_response_header(r, "X-Evring-Processes", num);
	if (truncated)
		MHD_add_response_header(r, "X-Evring-Truncated", "max_size");
	if (m->skipped[0]) {
		char w[1100];

		snprintf(w, sizeof(w), "199 evring-monitor \"%s\"", m->skipped);
		MHD_add_response_header(r, "Warning", w);
		MHD_add_response_header(r, "X-Evring-Warning", m->skipped);
	}
	/* The request waited for the whole recording: count idle time from now. */
	MHD_set_connection_option(q->conn, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)q->m->o.idle_timeout_s);
	return evr_mon_send(q, 200, r);
}

enum MHD_Result evr_mon_route_trace_multi(struct evr_mon_req *q, const struct evr_mon_args *a)
{
	struct multi *m = calloc(1, sizeof(*m));
	enum MHD_Result ret = MHD_NO;
	pid_t pids[MAX_PROCS];
	bool all, truncated, slot = false;
	uint32_t n;
	char err[512];
	size_t sk = 0;
	int r;

	(void)a;
	if (!m)
		return MHD_NO;
	m->q = q;
	m->fd = -1;
	/* It starts sessions in the processes: not for a page elsewhere. */
	if (!evr_mon_side_effect_check(q, &ret) || !read_params(m, &ret) ||
	    !select_pids(m, pids, &n, &all, &ret))
		goto out;
	if (!evr_mon_op_get(q->m)) {
		ret = evr_mon_send_busy(q);
		goto out;
	}
	slot = true;
	m->fd = evr_mon_tmpfile(q->m->o.output_dir, err, sizeof(err));
	r = m->fd < 0 ? m->fd : evr_trace_mux_new(m->fd, &m->mux);
	if (r < 0) {
		if (m->fd >= 0)
			snprintf(err, sizeof(err), "%s", strerror(-r));
		ret = evr_mon_send_problem(q, 500, "Internal Server Error", r, "cannot start the "
					   "trace: %s", err);
		goto out;
	}
	for (uint32_t i = 0; i < n && !m->err; i++) {
		r = proc_start(m, pids[i], err, sizeof(err));
		if (r < 0 && !all) {
			/* A process named is the user's: as the per-process route answers. */
			ret = evr_mon_send_error(q, r, err);
			goto out;
		}
		if (r < 0 && sk < sizeof(m->skipped))
			sk += (size_t)snprintf(m->skipped + sk, sizeof(m->skipped) - sk,
					       "%sprocess %d not recorded: %s", sk ? "; " : "",
					       (int)pids[i], err);
	}
	if (!m->n && !m->err) {
		ret = evr_mon_send_problem(q, 404, "Not Found", -ESRCH, "no process could be "
					   "recorded: %s", m->skipped);
		goto out;
	}
	if (!record_all(m, &truncated))
		goto out;	/* the client left: nobody to answer */
	if (!m->err) {
		struct evr_trace_end e = { .end_realtime_ns = evr_mon_realtime_ns(),
					   .end_mono_ns = evr_mono_ns() };

		for (uint32_t i = 0; i < m->n; i++) {
			struct evr_recorder_stats st;

			evr_recorder_stats(m->v[i].r, &st);
			e.events += st.events;
			e.lost += st.lost;
		}
		r = evr_trace_mux_end(m->mux, &e);
		if (r < 0) {
			m->err = r;
			snprintf(m->why, sizeof(m->why), "cannot write the trace: %s", strerror(-r));
		}
	}
	if (m->err) {
		ret = evr_mon_send_problem(q, 500, "Internal Server Error", m->err, "the trace "
					   "failed: %s", m->why);
		goto out;
	}
	slot = false;	/* answer() gives it back once converted */
	ret = answer(m, truncated);
out:
	if (slot)
		evr_mon_op_put(q->m);
	for (uint32_t i = 0; i < m->n; i++) {
		evr_recorder_free(m->v[i].r);
		evr_client_free(m->v[i].c);
	}
	evr_trace_mux_free(m->mux);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
	return ret;
}
