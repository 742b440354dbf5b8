/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring monitor: an HTTP controller beside running programs (dotnet-monitor
 * for libevring processes). The header of the whole tool; its HTTP side
 * (a request, responses, the route table and the handlers) is in http.h:
 *
 *   main.c     options, start-up, the listening URL line, signals, shutdown
 *   server.c   libmicrohttpd glue: sockets, daemons, limits, the Host/Origin/
 *              auth gate and request bodies; each request goes to routes.c
 *   routes.c   the route table and its dispatch (router.c: the matcher)
 *   http.c     request values, responses, problem+json errors, admission glue
 *   auth.c     API keys (generated, stored hashed), the peer's uid
 *   conns.c    connections: per-peer limits, deadlines, the housekeeping thread
 *   hub.c      the counter hub: a counters-only session on every process,
 *              kept alive between requests, with history (a view of the
 *              watch, consumer/watch/)
 *   metrics.c  /metrics: the Prometheus text format from the hub
 *   api.c      JSON routes: processes, sessions, threads, counters
 *   stream.c   live streams (NDJSON or SSE): events and counters
 *   stacks.c   thread-stack snapshots (libevring-symbols), JSON and HTML
 *   trace.c    trace routes: profile for N seconds, start/stop/list/cancel
 *   pages.c    the browsable pages and their script and style
 *
 * Threads: libmicrohttpd runs one thread per connection, so a request may
 * block (waiting for a session's records, for a trace's duration) without
 * holding up others; the hub has one thread of its own. What they share is
 * behind the hub's mutex, the trace table's mutex, or atomics, each said
 * where it is declared.
 */
#ifndef EVR_MONITOR_H
#define EVR_MONITOR_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <evring/consumer.h>
#include <evring/counter-sample.h>
#include <evring/mono-time.h>
#include <evring/watch.h>

#define EVR_MON_NAME "evring monitor"		/* how it names itself, to people and agents */
#define EVR_MON_DEFAULT_PORT 52330
#define EVR_MON_KEY_BYTES 32
#define EVR_MON_HASH_BYTES 32			/* SHA-256 */
#define EVR_MON_MAX_SEGS 8			/* path segments of a request */

/* ---- options (main.c) ---------------------------------------------------- */

struct evr_mon_opts {
	char listen_host[256];		/* --listen HOST:PORT; "" with --no-tcp */
	uint16_t listen_port;
	bool listen_ipv6;
	const char *unix_path;		/* --unix PATH, or NULL */
	const char *agent_socket;	/* --agent-socket PATH (listen mode), or NULL */
	bool no_auth;			/* --no-auth */
	bool has_key;			/* --key-hash / --key-hash-file */
	uint8_t key_hash[EVR_MON_HASH_BYTES];
	unsigned max_connections;	/* --max-connections */
	unsigned max_sessions;		/* --max-sessions: traces and streams at once */
	unsigned idle_timeout_s;	/* --idle-timeout */
	unsigned header_timeout_s;	/* --header-timeout: a request's headers, in all */
	unsigned max_peer_connections;	/* --max-peer-connections: per stranger's address */
	uint64_t max_trace_size;	/* --max-trace-size: a trace's bytes, and max_size's default */
	uint64_t trace_ttl_ns;		/* --trace-ttl: a stopped kept trace is forgotten then */
	uint64_t max_kept_bytes;	/* --max-kept-bytes: stopped kept traces, in all */
	size_t max_body;		/* --max-body */
	uint32_t counter_interval_ms;	/* --counter-interval: the hub's sessions */
	uint32_t history;		/* --history: points kept per counter */
	uint64_t max_duration_ns;	/* --max-duration: longest trace */
	const char *output_dir;		/* --output-dir: started traces' files */
	bool no_sandbox;		/* --no-sandbox */
	bool sandbox_probe;		/* --debug-sandbox-probe */
};

/* ---- the counter hub (hub.c): a view of the watch (consumer/watch/) ----------- */

/* The hub's names for the watch's, so that the routes read the hub as before. */
#define evr_mon_point evr_watch_point
#define evr_mon_proc_state evr_watch_state
#define EVR_MON_ATTACHING EVR_WATCH_ATTACHING	/* an attach thread is connecting */
#define EVR_MON_LIVE EVR_WATCH_LIVE		/* its counters session runs */
#define EVR_MON_EXITED EVR_WATCH_EXITED		/* the process ended or stopped serving */
#define EVR_MON_FAILED EVR_WATCH_FAILED		/* could not attach: err, errnum */

/* Prometheus types, as metrics.c maps counter kinds. */
enum evr_mon_mtype { EVR_MON_M_NONE, EVR_MON_M_COUNTER, EVR_MON_M_GAUGE, EVR_MON_M_SUMMARY };

/* A counter: the watch's fields (name, latest sample, history), then the hub's. */
struct evr_mon_counter {
	union {
		struct evr_watch_counter w;
		struct { EVR_WATCH_COUNTER_FIELDS };
	};
	double total;			/* RATE: sum of the increments since attached */
	double sum, count;		/* MEAN: sum of count*mean and of count; HISTOGRAM: sums */
	uint64_t skipped;		/* samples left out of those sums (evr_mon_counter_fold()) */
	/* The Prometheus family (metrics.c), decided at the first sample. */
	char metric[192];		/* "" when it cannot be exposed */
	enum evr_mon_mtype mtype;
	double scale;			/* value * scale: the base unit (seconds, bytes, ratio) */
};

/* A process: the watch's fields (pid, state, session, counters), then the hub's. */
struct evr_mon_proc {
	union {
		struct evr_watch_proc w;
		struct { EVR_WATCH_PROC_FIELDS(struct evr_mon_counter) };
	};
	char *command;			/* argv joined by spaces; NULL until attached */
	char *exe;
	char version[32];		/* the process's evring version */
	uint32_t uid, nr_cpus;
	uint64_t start_realtime_ns;
};

struct evr_mon_hub {
	const struct evr_mon_opts *o;
	pthread_t thread;
	bool started;
	/*
	 * Everything below is protected by lock. The hub thread holds it while it
	 * scans and reads the sessions through the watch (short: a bounded number
	 * of records); HTTP threads hold it while they copy what they show.
	 */
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* the hub thread sleeps on it: stop, rescan now */
	pthread_cond_t changed;		/* broadcast after a round that changed something */
	bool stop, rescan_now;
	struct evr_watch w;		/* the processes, their sessions and counters */
	struct evr_mon_proc **procs;	/* w's processes as the hub's, rebuilt after scans */
	uint32_t n, cap;
	uint64_t attaches, attach_failures;
};

/*
 * evr_mon_counter_fold() - take sample @s as @c's latest and add it to @c's sums.
 * They feed Prometheus counters and summaries, which only go up: a RATE increment
 * that is negative (a polled total that went back: the process reset it) or not
 * finite, and a MEAN or HISTOGRAM whose mean or sum is not finite, are left out
 * (counted in c->skipped) instead of taking the sum down or making it NaN for good.
 * The sample is still the latest value and joins the history.
 */
void evr_mon_counter_fold(struct evr_mon_counter *c, const struct evr_counter_sample *s);

int evr_mon_hub_init(struct evr_mon_hub *h, const struct evr_mon_opts *o);
int evr_mon_hub_start(struct evr_mon_hub *h);
void evr_mon_hub_fini(struct evr_mon_hub *h);

/**
 * evr_mon_hub_get_locked() - the process @pid, waiting for the hub to know it.
 * A pid the hub has not seen triggers a rescan; an attach in progress is
 * waited for; with @want_samples, a live process's first samples too. Waits
 * at most @timeout_ms in all.
 * Return: the process (borrowed while the lock is held), or NULL.
 * Context: an HTTP thread holding h->lock (released while waiting).
 */
struct evr_mon_proc *evr_mon_hub_get_locked(struct evr_mon_hub *h, pid_t pid, bool want_samples,
					    int timeout_ms);

/*
 * evr_mon_hub_refresh_locked() - scan now, and wait (at most 1.5 s) for the
 * first attaches the scan started, so that a listing includes a process that
 * just started. Context: an HTTP thread holding h->lock (released while waiting).
 */
void evr_mon_hub_refresh_locked(struct evr_mon_hub *h);

/*
 * evr_mon_pid_of_name() - the one process named @name, as `-n NAME` finds it
 * (evr_process_find(): its comm, or the base name of its executable or of its
 * argv[0]). Return: 0; -ESRCH none, -ENOTUNIQ several (@err lists their pids),
 * -errno; with one line in @err. Context: any thread, no lock held.
 */
int evr_mon_pid_of_name(const char *name, pid_t *ret, char *err, size_t errlen);

/* The counter @provider/@name of @p, or NULL. Context: h->lock held. */
struct evr_mon_counter *evr_mon_proc_counter(struct evr_mon_proc *p, const char *provider,
					     const char *name);

/* "attaching", "live", "exited", "failed": evr_watch_state_name(). */
const char *evr_mon_proc_state_name(enum evr_mon_proc_state s);

/* The short name of a process: evr_watch_short_name(). */
void evr_mon_proc_short_name(const struct evr_process_info *pi, char *buf, size_t len);

/* The counters-only provider list of @c's process: evr_watch_counter_spec(). */
int evr_mon_counter_spec(struct evr_client *c, char **ret, char *err, size_t errlen);

/* ---- Prometheus (metrics.c) ---------------------------------------------- */

/*
 * Decide @c's family name, type and scale from its provider, name, unit and
 * kind (docs/monitor.md has the rules). Context: any thread.
 */
void evr_mon_metric_init(struct evr_mon_counter *c);

/*
 * The whole /metrics body into @sb: the Prometheus text format 0.0.4, or with
 * @openmetrics OpenMetrics 1.0.0. Return: 0, -ENOMEM. Context: h->lock not held.
 */
int evr_mon_metrics(struct evr_mon_hub *h, struct evr_strbuf *sb, bool openmetrics);

/*
 * Does an Accept header prefer OpenMetrics 1.0.0 (application/openmetrics-text,
 * no version or version=1.0.0) at least as much as the text format (text/plain
 * of version 0.0.4 or none, text/star, star/star)? NULL: no.
 */
bool evr_mon_accepts_openmetrics(const char *accept);

/* ---- auth (auth.c) --------------------------------------------------------- */

/* A new random key (hex, NUL-terminated) and its hash. Return: 0, -errno. */
int evr_mon_key_generate(char ret_key[2 * EVR_MON_KEY_BYTES + 1],
			 uint8_t ret_hash[EVR_MON_HASH_BYTES]);
void evr_mon_key_hash(const char *key, size_t len, uint8_t ret[EVR_MON_HASH_BYTES]);
/* "sha256:HEX" into @ret. Return: 0, -EINVAL naming what is wrong in @err. */
int evr_mon_key_hash_parse(const char *s, uint8_t ret[EVR_MON_HASH_BYTES], char *err,
			   size_t errlen);
/* Does @key hash to @hash? Compared in constant time. */
bool evr_mon_key_check(const uint8_t hash[EVR_MON_HASH_BYTES], const char *key, size_t len);

/*
 * Is the peer of connected socket @fd a local process of our user (or root)?
 * Unix sockets: SO_PEERCRED. TCP: the peer address must be loopback, and the
 * kernel (sock_diag) must say its socket belongs to that uid.
 * Return: 1 yes, 0 no, -errno when it cannot be told (then: no).
 */
int evr_mon_peer_is_local_user(int fd);

/*
 * Is @sa (@len bytes) an IP address on loopback (127/8, ::1, ::ffff:127/104)? Only
 * such a TCP peer can be a local process (evr_mon_peer_is_local_user()).
 */
bool evr_mon_addr_is_loopback(const struct sockaddr *sa, socklen_t len);

/*
 * What the admission policy looks at: one request, as the server sees it.
 * Strings are the request's headers (NULL: absent), borrowed.
 */
struct evr_mon_admit_in {
	bool is_unix;			/* over the Unix socket (mode 0600) */
	bool listen_loopback;		/* the TCP listener's address is a loopback one */
	uint16_t port;			/* the TCP port we listen on */
	bool no_auth;			/* --no-auth */
	bool key_ok;			/* Authorization: Bearer carries the key */
	int local_user;			/* the peer is a local process of our user: 1, else 0 */
	const char *method, *host, *origin, *referer, *user_agent;
	const char *sec_fetch_site, *sec_fetch_mode, *content_type;
};

/*
 * evr_mon_admit() - may this request go on to its route (docs/monitor.md,
 * "Who may do what")? The Host is checked on every listener; without the key
 * only a local process of our user that named a loopback Host (or came over
 * the Unix socket) gets in; cross-site browser requests and `Origin: null` are
 * refused; POST bodies must be declared JSON.
 * Return: 0 admitted, else the HTTP status (421, 403, 401, 415) with a reason
 * in *@ret_why (NULL for 401, whose answer says what to send).
 * Context: any thread; pure.
 */
unsigned evr_mon_admit(const struct evr_mon_admit_in *in, const char **ret_why);

/* Does the request come from a web browser (Fetch Metadata, Origin, Referer, or a
 * browser's User-Agent)? Context: any thread; pure. */
bool evr_mon_from_browser(const struct evr_mon_admit_in *in);

/*
 * evr_mon_side_effect_ok() - may this GET have side effects (start a trace,
 * stop threads for their stacks)? Yes with the key, or from a tool that is not
 * a browser; from a browser only with @token_given equal to the monitor's page
 * token @token (compared in constant time), which only its own pages carry.
 */
bool evr_mon_side_effect_ok(const struct evr_mon_admit_in *in, const char *token_given,
			    const char token[2 * EVR_MON_KEY_BYTES + 1]);

/* Is @h (@n bytes, no port) "localhost", a 127.x.y.z dotted quad, "::1" or "[::1]"? */
bool evr_mon_name_is_loopback(const char *h, size_t n);
/* Is @host a loopback name (or 0.0.0.0, [::]) followed by ":@port"? */
bool evr_mon_host_is_loopback(const char *host, uint16_t port);

/*
 * evr_mon_unescape() - percent-decode @s in place (the path, a query key or
 * value: MHD's unescape callback). Control bytes (NUL included) are replaced
 * by '?' and reported. Return: 0, or -EILSEQ when there was one; *@ret_len the
 * new length.
 */
int evr_mon_unescape(char *s, size_t *ret_len);

/* ---- connections (conns.c) ---------------------------------------------------- */

/* One connection: MHD's socket context. Fields under evr_mon_conns.lock but
 * local_user, fd and peer, set before it is published. */
struct evr_mon_conn {
	struct evr_mon_conn *prev, *next;
	int fd;				/* a dup of the socket, to shut it down from elsewhere */
	bool local_user;		/* a local process of our user (auth.c) */
	bool stranger;			/* counts against the strangers' limits */
	bool refused;			/* over a limit: shut down at once */
	bool bad_bytes;			/* the request's path or query had a control byte */
	uint8_t peer[16];		/* the peer's address (4 or 16 bytes), for the per-peer limit */
	uint8_t peer_len;
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC; shut down then; 0: none */
};

enum evr_mon_refusal { EVR_MON_REFUSED_PEER, EVR_MON_REFUSED_TOTAL, EVR_MON_TIMED_OUT,
		       EVR_MON_NR_REFUSALS };

struct evr_mon_ratelog {
	uint64_t last_s, pending;
};

struct evr_mon;
typedef void evr_mon_chore_fn(struct evr_mon *m);

struct evr_mon_conns {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool inited, started, stop;
	struct evr_mon_conn *head;
	unsigned strangers;
	uint64_t refused_peer, refused_total, timed_out;
	struct evr_mon_ratelog log[EVR_MON_NR_REFUSALS];
	/*
	 * Run by the housekeeping thread each tick, without the lock: the owner's
	 * periodic work (main.c: kept traces' expiry), so that conns.c, below the
	 * routes, calls none of them. Set before evr_mon_conns_start(); NULL: none.
	 */
	evr_mon_chore_fn *chore;
};

/*
 * Before a connection from @sa (@len bytes) is taken at all (MHD's accept policy, in
 * its listening thread, before it gives the connection a thread): false for a peer
 * that can only be a stranger (an IP address not on loopback) when evr_mon_conn_open()
 * would refuse it, counted and logged as that refusal. Loopback and Unix peers are
 * told apart by their socket, at evr_mon_conn_open(). A filter only: the open decides.
 */
bool evr_mon_conn_admit(struct evr_mon *m, const struct sockaddr *sa, socklen_t len);
/* A new connection on socket @fd: classified, counted, refused (shut down) when over a
 * limit, given its header deadline. Return: its context, or NULL (no memory). */
struct evr_mon_conn *evr_mon_conn_open(struct evr_mon *m, int fd);
void evr_mon_conn_close(struct evr_mon *m, struct evr_mon_conn *c);
/* @c presented the key: it no longer counts as a stranger's. */
void evr_mon_conn_authenticated(struct evr_mon *m, struct evr_mon_conn *c);
/* End @c at @ns (CLOCK_MONOTONIC), or never with 0. */
void evr_mon_conn_set_deadline(struct evr_mon *m, struct evr_mon_conn *c, uint64_t ns);
/* The housekeeping thread: deadlines, and conns.chore. Return: 0, -errno. */
int evr_mon_conns_start(struct evr_mon *m);
void evr_mon_conns_stop(struct evr_mon *m);

/* ---- the monitor (its state; server.c serves it) --------------------------------- */

struct evr_mon {
	struct evr_mon_opts o;
	struct evr_mon_hub hub;
	struct MHD_Daemon *tcp, *unx;
	uint16_t port;			/* the TCP port bound (port 0 picks one) */
	char url[300];			/* http://HOST:PORT */
	int unix_fd;
	/* Operations running now (traces, streams): at most o.max_sessions. */
	atomic_uint ops;
	atomic_uint_fast64_t requests, refused_auth, refused_limit;
	atomic_uint_fast64_t conversions_abandoned;	/* the client left during one */
	struct evr_mon_traces *traces;	/* trace.c */
	uint64_t started_ns;
	bool listen_loopback;		/* the TCP address is a loopback one */
	char token[2 * EVR_MON_KEY_BYTES + 1];	/* the page token (random, per run) */
	struct evr_mon_conns conns;	/* conns.c */
};

/* The query parameters of GET /processes/{pid}/trace (trace-params.c), NULL-ended. */
extern const char *const evr_mon_trace_params[];

/* Start and stop the daemons. Return: 0, or -errno with one line in @err. */
int evr_mon_server_start(struct evr_mon *m, char *err, size_t errlen);
void evr_mon_server_stop(struct evr_mon *m);

/* ---- parameters shared by the routes (api.c) --------------------------------- */

/* "2s", "500ms", "1m", "1h", or seconds. Return: 0, -EINVAL. */
int evr_mon_parse_duration(const char *s, uint64_t *ret_ns);
/* "4096", "64K", "16M", "1G". Return: 0, -EINVAL. */
int evr_mon_parse_size(const char *s, uint64_t *ret);
/*
 * evr_mon_split_path() - the segments of path @url (empty ones, as a trailing '/'
 * makes, are dropped), each allocated into @segs. Return: 0 with *@ret_n set;
 * -E2BIG past EVR_MON_MAX_SEGS, -ENOMEM (nothing allocated then).
 */
int evr_mon_split_path(const char *url, char *segs[EVR_MON_MAX_SEGS], unsigned *ret_n);
void evr_mon_segs_free(char *segs[EVR_MON_MAX_SEGS], unsigned n);
/* The pid in path segment @s, or -EINVAL. */
int evr_mon_parse_pid(const char *s, pid_t *ret);

/* A JSON string of @s, invalid UTF-8 replaced by U+FFFD (jansson wants valid UTF-8). */
json_t *evr_mon_jstr(const char *s);
json_t *evr_mon_jstrn(const char *s, size_t n);
/* A JSON number, or null for NaN and infinities. */
json_t *evr_mon_jreal(double v);
/* A counter as JSON: latest values, and the last @history points. Context: hub lock. */
json_t *evr_mon_counter_json(const struct evr_mon_counter *c, uint32_t history);
/* A counter sample as JSON (the counter stream's records). */
json_t *evr_mon_sample_json(pid_t pid, const struct evr_counter_sample *s);

/* trace.c */
struct evr_mon_traces;
int evr_mon_traces_new(struct evr_mon *m, struct evr_mon_traces **ret);
void evr_mon_traces_free(struct evr_mon_traces *t);
/* Forget stopped kept traces past --trace-ttl, and the oldest past --max-kept-bytes. */
void evr_mon_traces_expire(struct evr_mon_traces *t);

/* CLOCK_REALTIME in ns (CLOCK_MONOTONIC: evr_mono_ns()). */
uint64_t evr_mon_realtime_ns(void);

#endif /* EVR_MONITOR_H */
