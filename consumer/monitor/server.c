// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The HTTP side of evring monitor, on libmicrohttpd (no parser of our own):
 * the glue alone. What a request is answered with is below (http.c), which
 * route answers it beside (routes.c); nothing there calls back here.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "http.h"

#define HEADER_POOL (64u * 1024u)	/* per connection: request line and headers */
#define THREAD_STACK (512u * 1024u)

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
	status = evr_mon_req_admit(q, ci && ci->daemon == m->unx, cc->local_user, &why);
	if (status == 401)
		return evr_mon_send_unauthorized(q);
	if (status)
		return evr_mon_send_problem(q, status, evr_mon_status_title(status),
					    status == 403 ? -EPERM : 0, "%s", why);
	if (q->admit.key_ok)
		evr_mon_conn_authenticated(m, cc);
	if (q->body_too_big)
		return too_big(q);
	if (bad_bytes)
		return evr_mon_send_problem(q, 400, "Bad Request", -EILSEQ, "the path or a "
					    "parameter has a control byte (%%00-%%1F, %%7F)");
	return evr_mon_route(q);
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

/* MHD's accept policy: strangers over their limits refused before they get a thread. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	return evr_mon_conn_admit(cls, addr, addrlen) ? MHD_YES : MHD_NO;
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
				0, on_accept, m, on_request, m,
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
	/* A malformed line of the route table is the build's fault: say so, serve nothing. */
	r = evr_mon_routes_valid(err, errlen);
	if (r < 0)
		return r;
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
