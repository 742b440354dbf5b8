// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The agent's answers: one Reply per Request, queued on the connection (never
 * sent synchronously: the agent must not block on a consumer). Protocol in
 * proto/evring.proto and docs/protocol.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "agent-internal.h"
#include "counters-internal.h"
#include "registry-internal.h"

#ifndef EVR_VERSION
#define EVR_VERSION "unknown"
#endif

/* Queue @r with @nfds fds. A reply too big for a frame becomes an Error. */
static int queue_reply(struct evr_agent_conn *c, Evr__Reply *r, const int *fds, unsigned int nfds)
{
	uint8_t *frame;
	size_t len;
	int err;

	err = evr_frame_build(&r->base, &frame, &len);
	if (err == -EMSGSIZE)
		return evr_agent_error(c, EMSGSIZE, "the reply would exceed the %u-byte frame limit",
				       EVR_FRAME_MAX);
	if (err < 0)
		return err;
	return evr_frame_txq_push(&c->tx, frame, len, fds, nfds);
}

int evr_agent_error_vframe(int code, uint8_t **ret_frame, size_t *ret_len, const char *fmt,
			   va_list ap)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__Error e = EVR__ERROR__INIT;
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	e.code = code;
	e.message = msg;
	r.body_case = EVR__REPLY__BODY_ERROR;
	r.error = &e;
	return evr_frame_build(&r.base, ret_frame, ret_len);
}

int evr_agent_error(struct evr_agent_conn *c, int code, const char *fmt, ...)
{
	uint8_t *frame;
	size_t len;
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = evr_agent_error_vframe(code, &frame, &len, fmt, ap);
	va_end(ap);
	if (err < 0)
		return err;
	return evr_frame_txq_push(&c->tx, frame, len, NULL, 0);
}

/* ---- Hello: who we are ---------------------------------------------------------------- */

/* Read a small /proc file whole; NUL-terminated; malloc'ed. */
static char *read_small(const char *path, size_t max, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = malloc(max + 1);
	if (!buf) {
		fclose(f);
		return NULL;
	}
	n = fread(buf, 1, max, f);
	fclose(f);
	buf[n] = '\0';
	*ret_len = n;
	return buf;
}

/* Process start time, CLOCK_REALTIME ns: /proc/self/stat field 22 is in clock
 * ticks since boot. */
static uint64_t start_realtime_ns(void)
{
	unsigned long long ticks = (unsigned long long)evr_proc_stat_field(22);
	long hz = sysconf(_SC_CLK_TCK);

	if (!ticks || hz <= 0)
		return 0;
	return evr_clock_gettime_ns(CLOCK_REALTIME) - evr_clock_gettime_ns(CLOCK_BOOTTIME) +
	       ticks * (1000000000ull / (unsigned long long)hz);
}

static uint32_t sessions_active(void)
{
	uint32_t n;

	pthread_mutex_lock(&evr_registry_lock);
	n = (uint32_t)__builtin_popcountll(evr_session_table_get_rcu()->live);
	pthread_mutex_unlock(&evr_registry_lock);
	return n;
}

static int handle_hello(struct evr_agent_conn *c, const Evr__Hello *h)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__HelloReply hr = EVR__HELLO_REPLY__INIT;
	Evr__ProcessInfo pi = EVR__PROCESS_INFO__INIT;
	Evr__ClockCalib ck = EVR__CLOCK_CALIB__INIT;
	Evr__ClockChoice cc = EVR__CLOCK_CHOICE__INIT;
	struct evr_clock_info ci;
	struct evr_clock_calib cal;
	char exe[4096], host[256];
	char *cmdline, **argv = NULL;
	size_t len = 0, argc = 0;
	ssize_t n;
	int ret;

	if (h->protocol_version != EVR_PROTOCOL_VERSION)
		return evr_agent_error(c, EPROTONOSUPPORT,
				       "protocol version %u is not supported (process %d speaks %u)",
				       h->protocol_version, (int)getpid(), EVR_PROTOCOL_VERSION);
	/* The slots are for consumers that said Hello; a repeated Hello keeps its own. */
	if (!c->hello && evr_agent_served() >= EVR_AGENT_MAX_CLIENTS) {
		c->closing = true;
		return evr_agent_error(c, EUSERS, "process %d already serves %u consumers, the maximum",
				       (int)getpid(), EVR_AGENT_MAX_CLIENTS);
	}
	free(c->client);
	c->client = h->client ? strndup(h->client, 256) : NULL;
	c->hello = true;

	cmdline = read_small("/proc/self/cmdline", 64 * 1024, &len);
	if (cmdline && len) {
		for (size_t i = 0; i < len; i++)
			argc += cmdline[i] == '\0';
		argc += cmdline[len - 1] != '\0';
		argv = calloc(argc, sizeof(*argv));
		if (argv) {
			char *p = cmdline;

			for (size_t i = 0; i < argc; i++) {
				argv[i] = p;
				p += strlen(p) + 1;
			}
		} else {
			argc = 0;
		}
	}
	pi.pid = (uint32_t)getpid();
	pi.has_ppid = true;
	pi.ppid = (uint32_t)getppid();
	pi.has_uid = true;
	pi.uid = (uint32_t)geteuid();
	pi.n_argv = argc;
	pi.argv = argv;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		pi.exe = exe;
	}
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		pi.hostname = host;
	}
	pi.has_start_realtime_ns = true;
	pi.start_realtime_ns = start_realtime_ns();
	pi.has_nr_cpus = true;
	pi.nr_cpus = evr_session_nr_rings();
	pi.evring_version = (char *)EVR_VERSION;
	evr_clock_calibrate(&cal);
	ck.kind = cal.kind;
	ck.shift = cal.shift;
	ck.mult = cal.mult;
	ck.ts_base = cal.ts_base;
	ck.mono_base = cal.mono_base;
	ck.real_base = cal.real_base;
	ck.has_ticks_per_sec = true;
	ck.ticks_per_sec = cal.ticks_per_sec;
	pi.clock = &ck;
	evr_clock_get_info(&ci);
	cc.kind = ci.kind;
	cc.source = ci.source;
	cc.reason = ci.reason;
	cc.has_tsc_hz = ci.tsc_hz != 0;
	cc.tsc_hz = ci.tsc_hz;
	cc.has_skew_bound_ns = ci.skew_pairs != 0;
	cc.skew_bound_ns = ci.skew_bound_ns;
	cc.has_skew_pairs = true;
	cc.skew_pairs = ci.skew_pairs;
	cc.has_rdtsc_ns = ci.rdtsc_ns != 0;
	cc.rdtsc_ns = ci.rdtsc_ns;
	cc.has_gettime_ns = ci.gettime_ns != 0;
	cc.gettime_ns = ci.gettime_ns;
	pi.clock_choice = &cc;
	pi.has_sessions_active = true;
	pi.sessions_active = sessions_active();
	pi.has_page_size = true;
	pi.page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	hr.protocol_version = EVR_PROTOCOL_VERSION;
	hr.process = &pi;
	r.body_case = EVR__REPLY__BODY_HELLO;
	r.hello = &hr;
	ret = queue_reply(c, &r, NULL, 0);
	free(argv);
	free(cmdline);
	return ret;
}

/* ---- sessions ----------------------------------------------------------------------------- */

static int handle_start(struct evr_agent_conn *c, const Evr__StartSession *m)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__StartSessionReply sr = EVR__START_SESSION_REPLY__INIT;
	struct evr_session_opts o = { 0 };
	struct evr_session *s;
	char err[512] = "";
	int fds[2], ret;

	if (c->session)
		return evr_agent_error(c, EBUSY, "this connection already has a session");
	if (m->has_stack_depth && m->stack_depth > EVR_STACK_MAX_FRAMES)
		return evr_agent_error(c, EINVAL, "stack depth %u is over 127 frames", m->stack_depth);
	o.providers = m->providers;
	o.ring_size = m->has_ring_size ? m->ring_size : 0;
	o.packet_size = m->has_packet_size ? m->packet_size : 0;
	o.mode = m->has_mode ? m->mode : EVR_MODE_DISCARD;
	o.meta_size = m->has_meta_size ? m->meta_size : 0;
	o.interval_ms = m->has_counter_interval_ms ? m->counter_interval_ms : 0;
	if (m->has_stacks && m->stacks)
		o.stack_depth = m->has_stack_depth && m->stack_depth ? m->stack_depth : 64;
	ret = evr_session_start_owned(&o, c->client ? c->client : "consumer", c->peer_pid, &s, err,
				      sizeof(err));
	if (ret < 0)
		return evr_agent_error(c, -ret, "%s", err[0] ? err : strerror(-ret));
	c->session = s;
	/* Backed a slice at a time by the agent's loop, between other requests. */
	evr_memory_populate_init(&c->populate, s);
	sr.session_id = s->slot;
	sr.serial = s->serial;
	sr.shm_size = evr_session_shm(s)->total_size;
	sr.has_ring_size = true;
	sr.ring_size = evr_session_shm(s)->ring_size;
	sr.has_nr_rings = true;
	sr.nr_rings = evr_session_shm(s)->nr_rings;
	r.body_case = EVR__REPLY__BODY_START;
	r.start = &sr;
	fds[0] = evr_session_memfd(s);
	fds[1] = evr_session_doorbell_fd(s);
	return queue_reply(c, &r, fds, 2);
}

static int handle_stop(struct evr_agent_conn *c)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__StopSessionReply sr = EVR__STOP_SESSION_REPLY__INIT;

	if (!c->session)
		return evr_agent_error(c, ENOENT, "no session on this connection");
	/* Unpublish, grace period, flush, ended = 1: the consumer drains it all. */
	evr_session_stop(c->session);
	r.body_case = EVR__REPLY__BODY_STOP;
	r.stop = &sr;
	return queue_reply(c, &r, NULL, 0);
}

static int handle_list_events(struct evr_agent_conn *c)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__ListEventsReply lr = EVR__LIST_EVENTS_REPLY__INIT;
	Evr__EventDesc **v = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	pthread_mutex_lock(&evr_registry_lock);
	for (struct evr_provider *p = evr_registry_providers_locked(); p && !ret;
	     p = p->priv->next) {
		struct evr_provider_priv *pp = p->priv;

		for (uint32_t i = 0; i < pp->nr; i++) {
			ProtobufCMessage *m;

			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				Evr__EventDesc **nv = realloc(v, sizeof(*nv) * nc);

				if (!nv) {
					ret = -ENOMEM;
					break;
				}
				v = nv;
				cap = nc;
			}
			/* The packed description is what sessions get; unpack our own
			 * (packed here if no session needed it yet). */
			ret = evr_meta_event_packed_locked(p, i);
			if (ret == 0)
				ret = evr_pb_unpack(&evr__event_desc__descriptor, pp->meta[i].pb,
						    pp->meta[i].pb_len, &m);
			if (ret < 0)
				break;
			v[n++] = (Evr__EventDesc *)m;
		}
	}
	pthread_mutex_unlock(&evr_registry_lock);
	if (ret == 0) {
		lr.n_events = n;
		lr.events = v;
		r.body_case = EVR__REPLY__BODY_LIST_EVENTS;
		r.list_events = &lr;
		ret = queue_reply(c, &r, NULL, 0);
	} else {
		ret = evr_agent_error(c, -ret, "cannot list events: %s", strerror(-ret));
	}
	for (size_t i = 0; i < n; i++)
		evr_pb_free(&v[i]->base);
	free(v);
	return ret;
}

static int handle_list_sessions(struct evr_agent_conn *c)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__ListSessionsReply lr = EVR__LIST_SESSIONS_REPLY__INIT;
	Evr__SessionInfo info[EVR_MAX_SESSIONS], *v[EVR_MAX_SESSIONS];
	char *prov[EVR_MAX_SESSIONS] = { 0 };
	char *client[EVR_MAX_SESSIONS] = { 0 };
	const struct evr_session_table *t;
	size_t n = 0;
	int ret;

	pthread_mutex_lock(&evr_registry_lock);
	t = evr_session_table_get_rcu();
	for (uint64_t live = t->live; live; live &= live - 1) {
		uint32_t slot = (uint32_t)__builtin_ctzll(live);
		const struct evr_session *s = t->slot[slot];
		int len = evr_provider_spec_list_format(s->cfg.providers, NULL, 0);
		uint32_t pid = 0;
		const char *cl = evr_session_client_locked(slot, &pid);

		evr__session_info__init(&info[n]);
		if (len >= 0 && (prov[n] = malloc((size_t)len + 1)))
			evr_provider_spec_list_format(s->cfg.providers, prov[n], (size_t)len + 1);
		client[n] = cl ? strdup(cl) : NULL;
		info[n].session_id = slot;
		info[n].has_serial = true;
		info[n].serial = s->serial;
		info[n].providers = prov[n];
		info[n].client = client[n];
		info[n].has_mode = true;
		info[n].mode = s->cfg.mode;
		info[n].has_ring_size = true;
		info[n].ring_size = s->cfg.ring_size;
		info[n].has_client_pid = true;
		info[n].client_pid = pid;
		info[n].has_shm_size = true;
		info[n].shm_size = s->shm->total_size;
		v[n] = &info[n];
		n++;
	}
	pthread_mutex_unlock(&evr_registry_lock);
	lr.n_sessions = n;
	lr.sessions = v;
	r.body_case = EVR__REPLY__BODY_LIST_SESSIONS;
	r.list_sessions = &lr;
	ret = queue_reply(c, &r, NULL, 0);
	for (size_t i = 0; i < n; i++) {
		free(prov[i]);
		free(client[i]);
	}
	return ret;
}

/* Enough for any real process, and the reply stays far below EVR_FRAME_MAX. */
#define LIST_THREADS_MAX 16384u

/* @tid's name from /proc/self/task/TID/comm into @buf (16 bytes), "" if it is gone. */
static void thread_comm(int taskfd, uint32_t tid, char buf[16])
{
	char path[32];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%u/comm", tid);
	fd = openat(taskfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, 15);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

static int handle_list_threads(struct evr_agent_conn *c)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__ListThreadsReply lr = EVR__LIST_THREADS_REPLY__INIT;
	Evr__ThreadInfo *info = NULL, **v = NULL;
	char (*names)[16] = NULL;
	struct dirent *de;
	size_t n = 0, cap = 0;
	int taskfd, ret;
	DIR *d;

	taskfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (taskfd < 0)
		return evr_agent_error(c, errno, "cannot list the process's threads: %s",
				       strerror(errno));
	d = fdopendir(taskfd);
	if (!d) {
		close(taskfd);
		return evr_agent_error(c, ENOMEM, "out of memory");
	}
	while ((de = readdir(d)) && n < LIST_THREADS_MAX) {
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);

		if (*end || !tid || tid > UINT32_MAX)
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			void *ni = reallocarray(info, ncap, sizeof(*info));
			void *nn = ni ? reallocarray(names, ncap, sizeof(*names)) : NULL;

			if (ni)
				info = ni;
			if (!nn) {
				ret = evr_agent_error(c, ENOMEM, "out of memory");
				goto out;
			}
			names = nn;
			cap = ncap;
		}
		thread_comm(dirfd(d), (uint32_t)tid, names[n]);
		evr__thread_info__init(&info[n]);
		info[n].tid = (uint32_t)tid;
		info[n].name = names[n];
		n++;
	}
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		ret = evr_agent_error(c, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = &info[i];
	lr.n_threads = n;
	lr.threads = v;
	r.body_case = EVR__REPLY__BODY_LIST_THREADS;
	r.list_threads = &lr;
	ret = queue_reply(c, &r, NULL, 0);
out:
	closedir(d);
	free(v);
	free(info);
	free(names);
	return ret;
}

/* The counters collected for ListCounters; strings borrowed until the reply is queued. */
struct counter_list {
	Evr__CounterInfo *info;
	Evr__CounterInfo **v;
	char **strs;			/* 4 copies per counter */
	size_t n, cap;
};

static int counter_collect(void *ctx, const struct evr_counter_view *cv)
{
	struct counter_list *l = ctx;
	Evr__CounterInfo *ci;
	char **s;

	/* Far below the frame limit: a counter's description is at most ~1 KiB. */
	if (l->n == 512)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		void *ni = reallocarray(l->info, cap, sizeof(*l->info));
		void *ns;

		if (!ni)
			return -ENOMEM;
		l->info = ni;
		ns = reallocarray(l->strs, cap * 4, sizeof(*l->strs));
		if (!ns)
			return -ENOMEM;
		l->strs = ns;
		l->cap = cap;
	}
	s = &l->strs[l->n * 4];
	s[0] = strndup(cv->provider, 256);
	s[1] = strndup(cv->name, 256);
	s[2] = strndup(cv->display, 256);
	s[3] = strndup(cv->unit, 64);
	ci = &l->info[l->n++];
	evr__counter_info__init(ci);
	if (!s[0] || !s[1] || !s[2] || !s[3])
		return -ENOMEM;
	ci->provider = s[0];
	ci->name = s[1];
	ci->display_name = s[2];
	ci->unit = s[3];
	ci->has_kind = true;
	ci->kind = cv->kind;
	return 0;
}

static int handle_list_counters(struct evr_agent_conn *c)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__ListCountersReply lr = EVR__LIST_COUNTERS_REPLY__INIT;
	struct counter_list l = { 0 };
	int ret;

	ret = evr_counters_foreach(counter_collect, &l);
	if (ret == 0 && l.n)
		l.v = calloc(l.n, sizeof(*l.v));
	if (ret == 0 && l.n && !l.v)
		ret = -ENOMEM;
	if (ret == 0) {
		for (size_t i = 0; i < l.n; i++)
			l.v[i] = &l.info[i];
		lr.n_counters = l.n;
		lr.counters = l.v;
		r.body_case = EVR__REPLY__BODY_LIST_COUNTERS;
		r.list_counters = &lr;
		ret = queue_reply(c, &r, NULL, 0);
	} else {
		ret = evr_agent_error(c, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < l.n * 4; i++)
		free(l.strs[i]);
	free(l.strs);
	free(l.info);
	free(l.v);
	return ret;
}

static int handle_resume(struct evr_agent_conn *c)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__ResumeReply rr = EVR__RESUME_REPLY__INIT;

	if (!c->reverse)
		return evr_agent_error(c, EINVAL,
				       "Resume is only for the reverse connection (EVR_CONNECT)");
	evr_agent_resume_constructor();
	r.body_case = EVR__REPLY__BODY_RESUME;
	r.resume = &rr;
	return queue_reply(c, &r, NULL, 0);
}

int evr_agent_handle(struct evr_agent_conn *c, const Evr__Request *req)
{
	if (req->body_case == EVR__REQUEST__BODY_HELLO)
		return handle_hello(c, req->hello);
	if (!c->hello) {
		c->closing = true;
		return evr_agent_error(c, EPROTO, "expected Hello first; closing the connection");
	}
	switch (req->body_case) {
	case EVR__REQUEST__BODY_START:
		return handle_start(c, req->start);
	case EVR__REQUEST__BODY_STOP:
		return handle_stop(c);
	case EVR__REQUEST__BODY_LIST_EVENTS:
		return handle_list_events(c);
	case EVR__REQUEST__BODY_LIST_SESSIONS:
		return handle_list_sessions(c);
	case EVR__REQUEST__BODY_RESUME:
		return handle_resume(c);
	case EVR__REQUEST__BODY_LIST_THREADS:
		return handle_list_threads(c);
	case EVR__REQUEST__BODY_LIST_COUNTERS:
		return handle_list_counters(c);
	default:
		/* A newer consumer's request, or an empty one: answer, keep going. */
		return evr_agent_error(c, EOPNOTSUPP, "unknown request");
	}
}

int evr_agent_conn_input(struct evr_agent_conn *c, const char **ret_violation)
{
	const uint8_t *payload;
	uint32_t len;
	int ret;

	while (!c->closing) {
		Evr__Request *req;

		ret = evr_frame_rx_next(&c->rx, &payload, &len);
		if (ret == 0)
			return 0;
		if (ret < 0) {
			*ret_violation = "malformed frame (length over 1 MiB)";
			return 1;
		}
		ret = evr_pb_unpack_request(payload, len, &req);
		evr_frame_rx_pop(&c->rx);
		if (ret < 0) {
			*ret_violation = "malformed request (not an evr.Request)";
			return 1;
		}
		ret = evr_agent_handle(c, req);
		evr_pb_request_free(req);
		if (ret < 0)
			return ret;
	}
	return 0;
}
