// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring monitor: options, start-up, and the life of the process. Starts the
 * counter hub and the HTTP server, prints the URL it listens on as the first
 * line of stdout (scripts read it; with --listen HOST:0 the port is chosen by
 * the kernel), confines itself with seccomp, and waits for SIGINT or SIGTERM.
 *
 * `evring monitor ...` runs this program (the evring command finds it beside
 * itself), so the monitor's libraries stay out of the other subcommands.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <evring/cli-options.h>
#include <evring/sandbox.h>

#include "monitor.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

__attribute__((format(printf, 1, 2)))
static void error(const char *fmt, ...)
{
	va_list ap;

	fputs("evring monitor: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

enum { OPT_LISTEN = EVR_CLI_LONG_ONLY, OPT_UNIX, OPT_NO_TCP, OPT_KEY_HASH, OPT_KEY_FILE,
       OPT_GENKEY, OPT_NO_AUTH, OPT_MAX_CONN, OPT_MAX_SESS, OPT_IDLE, OPT_MAX_BODY, OPT_INTERVAL,
       OPT_HISTORY, OPT_MAX_DUR, OPT_OUTDIR, OPT_NO_SANDBOX, OPT_PROBE, OPT_HDR_TIMEOUT,
       OPT_MAX_PEER, OPT_MAX_TSIZE, OPT_TTL, OPT_MAX_KEPT, OPT_AGENT_SOCKET, OPT_VERSION };

#define STRINGIFY(x) #x
#define NUMBER_TEXT(x) STRINGIFY(x)

static const struct evr_cli_option longopts[] = {
	{ "listen", required_argument, OPT_LISTEN, "HOST:PORT",
	  "TCP address (default 127.0.0.1:" NUMBER_TEXT(EVR_MON_DEFAULT_PORT)
	  "; port 0: any free)" },
	{ "unix", required_argument, OPT_UNIX, "PATH",
	  "also (or with --no-tcp, only) a Unix socket, mode 0600" },
	{ "no-tcp", no_argument, OPT_NO_TCP, NULL, "no TCP listener (use with --unix)" },
	{ "agent-socket", required_argument, OPT_AGENT_SOCKET, "PATH",
	  "listen mode: programs started with\n"
	  "EVR_MONITOR_SOCKET=PATH connect to this socket (mode 0600)\n"
	  "and are served like the others" },
	{ "key-hash", required_argument, OPT_KEY_HASH, "sha256:HEX",
	  "require this API key (as a bearer token) from anyone but\n"
	  "local processes of your user; --generate-key makes one" },
	{ "key-hash-file", required_argument, OPT_KEY_FILE, "FILE", "the same, read from FILE" },
	{ "generate-key", no_argument, OPT_GENKEY, NULL, "print a new key and its hash, and exit" },
	{ "no-auth", no_argument, OPT_NO_AUTH, NULL,
	  "let anyone who reaches the address in (explicit only)" },
	{ "max-connections", required_argument, OPT_MAX_CONN, "N",
	  "open connections at once (default 512)" },
	{ "max-sessions", required_argument, OPT_MAX_SESS, "N",
	  "traces and streams at once (default 16; then 429)" },
	{ "idle-timeout", required_argument, OPT_IDLE, "TIME",
	  "close connections idle this long (default 30s)" },
	{ "header-timeout", required_argument, OPT_HDR_TIMEOUT, "TIME",
	  "the most time a request's headers may take, in all\n(default 30s)" },
	{ "max-peer-connections", required_argument, OPT_MAX_PEER, "N",
	  "connections per address of others than your\nlocal processes (default 16)" },
	{ "max-body", required_argument, OPT_MAX_BODY, "SIZE",
	  "largest request body (default 64K; then 413)" },
	{ "counter-interval", required_argument, OPT_INTERVAL, "TIME",
	  "sampling of the counters kept for every process\n(default 1s)" },
	{ "history", required_argument, OPT_HISTORY, "N",
	  "samples kept per counter (default 300)" },
	{ "max-duration", required_argument, OPT_MAX_DUR, "TIME",
	  "longest trace (default 1h; also the limit of a trace\nstarted without a duration)" },
	{ "max-trace-size", required_argument, OPT_MAX_TSIZE, "SIZE",
	  "largest trace, and max_size's default (default 1G)" },
	{ "trace-ttl", required_argument, OPT_TTL, "TIME",
	  "forget a stopped kept trace this long after (default 1h)" },
	{ "max-kept-bytes", required_argument, OPT_MAX_KEPT, "SIZE",
	  "stopped kept traces in all; the oldest go first\n(default 4G)" },
	{ "output-dir", required_argument, OPT_OUTDIR, "DIR",
	  "where started traces are kept (default $TMPDIR or /tmp)" },
	EVR_CLI_OPTIONS_SANDBOX(OPT_NO_SANDBOX, OPT_PROBE,
				"do not confine the monitor with seccomp"),
	EVR_CLI_OPTION_HELP,
	EVR_CLI_OPTION_VERSION(OPT_VERSION),
	{ 0 },
};

static void usage(FILE *f)
{
	evr_cli_usage(f,
		"Usage: evring monitor [OPTIONS]\n"
		"Serve the processes you can attach to over HTTP: traces, counters, /metrics,\n"
		"live events and browsable pages (docs/monitor.md).\n",
		longopts,
		"The first line on stdout is the URL it listens on.\n");
}

static int parse_uint(const char *opt, const char *s, unsigned lo, unsigned hi, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi) {
		error("%s: '%s' is not a number from %u to %u", opt, s, lo, hi);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

static int parse_dur(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *ret)
{
	if (evr_mon_parse_duration(s, ret) < 0 || *ret < lo || *ret > hi) {
		error("%s: '%s' is not a duration from %gs to %gs (500ms, 30s, 5m, 1h)", opt, s,
		      (double)lo / 1e9, (double)hi / 1e9);
		return -EINVAL;
	}
	return 0;
}

/* "HOST:PORT", "[V6]:PORT", ":PORT" (loopback), "PORT". */
static int parse_listen(const char *s, struct evr_mon_opts *o)
{
	const char *colon = strrchr(s, ':');
	char host[256];
	unsigned port;

	if (!colon) {
		snprintf(host, sizeof(host), "127.0.0.1");
		colon = s - 1;
	} else if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close + 1 != colon) {
			error("--listen: '%s' is not [IPV6]:PORT", s);
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(close - s - 1), s + 1);
	} else {
		if (colon - s >= (long)sizeof(host)) {
			error("--listen: the host name is too long");
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
		if (!host[0])
			snprintf(host, sizeof(host), "127.0.0.1");
	}
	if (parse_uint("--listen", colon + 1, 0, 65535, &port) < 0)
		return -EINVAL;
	snprintf(o->listen_host, sizeof(o->listen_host), "%s", host);
	o->listen_port = (uint16_t)port;
	return 0;
}

static bool host_is_loopback(const char *h)
{
	return !strcmp(h, "localhost") || !strncmp(h, "127.", 4) || !strcmp(h, "::1");
}

static int read_hash_file(const char *path, struct evr_mon_opts *o)
{
	char line[256], err[256];
	FILE *f = fopen(path, "re");

	if (!f) {
		error("--key-hash-file %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		error("--key-hash-file %s: the file is empty", path);
		return -EINVAL;
	}
	fclose(f);
	if (evr_mon_key_hash_parse(line, o->key_hash, err, sizeof(err)) < 0) {
		error("--key-hash-file %s: %s", path, err);
		return -EINVAL;
	}
	o->has_key = true;
	return 0;
}

static int generate_key(void)
{
	char key[2 * EVR_MON_KEY_BYTES + 1];
	uint8_t hash[EVR_MON_HASH_BYTES];
	int r = evr_mon_key_generate(key, hash);

	if (r < 0) {
		error("cannot get random bytes: %s", strerror(-r));
		return EXIT_FAIL;
	}
	/* Shell assignments: `eval "$(evring monitor --generate-key)"` works. */
	printf("EVRING_MONITOR_KEY=%s\nEVRING_MONITOR_KEY_HASH=sha256:", key);
	for (size_t i = 0; i < sizeof(hash); i++)
		printf("%02x", hash[i]);
	printf("\n");
	fprintf(stderr, "evring monitor: start the monitor with --key-hash "
		"\"$EVRING_MONITOR_KEY_HASH\" (it keeps only the hash); clients send "
		"'Authorization: Bearer $EVRING_MONITOR_KEY'\n");
	return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
}

/* What each option is without it (docs/monitor.md's table says the same). */
static const struct evr_mon_opts mon_defaults = {
	.listen_host = "127.0.0.1",
	.listen_port = EVR_MON_DEFAULT_PORT,
	.max_connections = 512,
	.max_sessions = 16,
	.idle_timeout_s = 30,
	.header_timeout_s = 30,
	.max_peer_connections = 16,
	.max_trace_size = 1ull << 30,		/* 1 GiB */
	.trace_ttl_ns = 3600ull * 1000000000,	/* an hour */
	.max_kept_bytes = 4ull << 30,
	.max_body = 64 * 1024,
	.counter_interval_ms = 1000,
	.history = 300,				/* five minutes at the default interval */
	.max_duration_ns = 3600ull * 1000000000,
};

/* Return: 1 run, 0 done (--help, --generate-key: *ret_exit), -EINVAL. */
static int parse_argv(int argc, char **argv, struct evr_mon_opts *o, int *ret_exit)
{
	struct evr_cli_getopt g;
	bool no_tcp = false, genkey = false;
	char err[256];
	uint64_t v;
	unsigned u;
	int c;

	*o = mon_defaults;
	o->output_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	evr_cli_getopt_init(&g, ":", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			if (parse_listen(optarg, o) < 0)
				return -EINVAL;
			break;
		case OPT_UNIX:
			if (!*optarg) {
				error("--unix: empty path");
				return -EINVAL;
			}
			o->unix_path = optarg;
			break;
		case OPT_NO_TCP:
			no_tcp = true;
			break;
		case OPT_AGENT_SOCKET:
			if (!*optarg) {
				error("--agent-socket: empty path");
				return -EINVAL;
			}
			o->agent_socket = optarg;
			break;
		case OPT_KEY_HASH:
			if (evr_mon_key_hash_parse(optarg, o->key_hash, err, sizeof(err)) < 0) {
				error("--key-hash: %s", err);
				return -EINVAL;
			}
			o->has_key = true;
			break;
		case OPT_KEY_FILE:
			if (read_hash_file(optarg, o) < 0)
				return -EINVAL;
			break;
		case OPT_GENKEY:
			genkey = true;
			break;
		case OPT_NO_AUTH:
			o->no_auth = true;
			break;
		case OPT_MAX_CONN:
			if (parse_uint("--max-connections", optarg, 1, 4096,
				       &o->max_connections) < 0)
				return -EINVAL;
			break;
		case OPT_MAX_SESS:
			if (parse_uint("--max-sessions", optarg, 1, 1024, &o->max_sessions) < 0)
				return -EINVAL;
			break;
		case OPT_IDLE:
			if (parse_dur("--idle-timeout", optarg, 1000000000ull, 86400000000000ull,
				      &v) < 0)
				return -EINVAL;
			o->idle_timeout_s = (unsigned)(v / 1000000000u);
			break;
		case OPT_HDR_TIMEOUT:
			if (parse_dur("--header-timeout", optarg, 1000000000ull, 3600000000000ull,
				      &v) < 0)
				return -EINVAL;
			o->header_timeout_s = (unsigned)(v / 1000000000u);
			break;
		case OPT_MAX_PEER:
			if (parse_uint("--max-peer-connections", optarg, 1, 4096,
				       &o->max_peer_connections) < 0)
				return -EINVAL;
			break;
		case OPT_MAX_TSIZE:
			if (evr_mon_parse_size(optarg, &v) < 0 || v < (64u << 10) || v > (1ull << 40)) {
				error("--max-trace-size: '%s' is not a size from 64K to 1T", optarg);
				return -EINVAL;
			}
			o->max_trace_size = v;
			break;
		case OPT_TTL:
			if (parse_dur("--trace-ttl", optarg, 1000000000ull, 604800000000000ull,
				      &o->trace_ttl_ns) < 0)
				return -EINVAL;
			break;
		case OPT_MAX_KEPT:
			if (evr_mon_parse_size(optarg, &v) < 0 || v < (64u << 10) || v > (1ull << 44)) {
				error("--max-kept-bytes: '%s' is not a size from 64K to 16T", optarg);
				return -EINVAL;
			}
			o->max_kept_bytes = v;
			break;
		case OPT_MAX_BODY:
			if (evr_mon_parse_size(optarg, &v) < 0 || v < 256 || v > (64u << 20)) {
				error("--max-body: '%s' is not a size from 256 to 64M", optarg);
				return -EINVAL;
			}
			o->max_body = (size_t)v;
			break;
		case OPT_INTERVAL:
			if (parse_dur("--counter-interval", optarg, 10000000ull, 3600000000000ull,
				      &v) < 0)
				return -EINVAL;
			o->counter_interval_ms = (uint32_t)(v / 1000000u);
			break;
		case OPT_HISTORY:
			if (parse_uint("--history", optarg, 0, 100000, &u) < 0)
				return -EINVAL;
			o->history = u;
			break;
		case OPT_MAX_DUR:
			if (parse_dur("--max-duration", optarg, 1000000000ull, 604800000000000ull,
				      &o->max_duration_ns) < 0)
				return -EINVAL;
			break;
		case OPT_OUTDIR:
			o->output_dir = optarg;
			break;
		case OPT_NO_SANDBOX:
			o->no_sandbox = true;
			break;
		case OPT_PROBE:
			o->sandbox_probe = true;
			break;
		case 'h':
			usage(stdout);
			*ret_exit = EXIT_OK;
			return 0;
		case OPT_VERSION:
			printf("evring monitor %s\n", EVR_VERSION);
			*ret_exit = EXIT_OK;
			return 0;
		case ':':
			error("option %s needs a value", argv[optind - 1]);
			return -EINVAL;
		default:
			error("unknown option '%s' (try evring monitor --help)", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		error("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (genkey) {
		*ret_exit = generate_key();
		return 0;
	}
	if (no_tcp) {
		if (!o->unix_path) {
			error("--no-tcp leaves nothing to listen on: add --unix PATH");
			return -EINVAL;
		}
		o->listen_host[0] = '\0';
	}
	if (o->no_auth && o->has_key) {
		error("--no-auth and --key-hash exclude each other");
		return -EINVAL;
	}
	if (o->listen_host[0] && !host_is_loopback(o->listen_host) && !o->has_key && !o->no_auth) {
		error("--listen %s is not a loopback address: require a key (--key-hash, made by "
		      "--generate-key) or allow everyone explicitly with --no-auth", o->listen_host);
		return -EINVAL;
	}
	return 1;
}

/*
 * The hidden --debug-sandbox-probe: try what the sandbox forbids, harmlessly
 * (executing a file that does not exist, an Internet socket), and say on
 * stderr what happened. Without the sandbox: ENOENT and a socket.
 */
static void sandbox_probe(void)
{
	char *const argv[] = { "evring-probe", NULL };
	int fd;

	execv("/nonexistent/evring-probe", argv);
	fprintf(stderr, "evring monitor: sandbox probe: execve: %s\n", strerror(errno));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fprintf(stderr, "evring monitor: sandbox probe: socket(AF_INET): %s\n",
		fd >= 0 ? "allowed" : strerror(errno));
	if (fd >= 0)
		close(fd);
}

/*
 * Confine the monitor (libevring-sandbox). Unlike `evring record`, it keeps
 * opening things after start-up: it attaches to processes that start later
 * (/proc, the agent sockets, the session memory), accepts connections, starts
 * threads, writes the traces it was asked to keep and snapshots thread stacks.
 * What it gives up is everything else: executing a program, new listening or
 * Internet sockets, writing into other processes, executable mappings,
 * credentials, namespaces, mounts, modules, BPF, perf events, keyrings. A
 * parser bug an attacker exploits through a request or a producer's message
 * cannot turn into a shell, a port scan or a write into another process.
 */
static int sandbox_enter(char *err, size_t errlen)
{
	const struct evr_sandbox_opts so = {
		.allow = EVR_SANDBOX_WAIT | EVR_SANDBOX_SOCKETS | EVR_SANDBOX_THREADS |
			 EVR_SANDBOX_SESSIONS | EVR_SANDBOX_FILES | EVR_SANDBOX_SERVER |
			 EVR_SANDBOX_PTRACE_READ,
	};

	/* The user database is read once now: a later getpwuid() (naming the
	 * owner of a process we may not attach to) then needs no NSS module load,
	 * which would map code. */
	(void)getpwuid(0);
	return evr_sandbox_enter(&so, err, errlen);
}

/* Listen mode's news (a peer refused or arrived), from its thread: one line each. */
static void dialin_log(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "evring monitor: %s\n", line);
}

/* The housekeeping thread's chore (conns.c): kept traces past their time or the bytes. */
static void expire_traces(struct evr_mon *m)
{
	if (m->traces)
		evr_mon_traces_expire(m->traces);
}

static int run(struct evr_mon *m)
{
	sigset_t set;
	char err[512];
	int sig, r;

	/*
	 * Every thread (MHD's, the hub's, attaches) starts with these blocked: only
	 * sigwait() below takes them. SIGPIPE: a client or producer gone is an
	 * error return, not a death.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	m->started_ns = evr_mono_ns();
	evr_mon_hub_init(&m->hub, &m->o);
	r = evr_mon_traces_new(m, &m->traces);
	if (r < 0) {
		error("cannot set up traces: %s", strerror(-r));
		goto out;
	}
	m->conns.chore = expire_traces;
	/* Before the hub's first scan, which then lists those processes too; and
	 * before the sandbox, which allows no new listening socket. */
	if (m->o.agent_socket) {
		r = evr_client_dialin_start(m->o.agent_socket, dialin_log, NULL, err, sizeof(err));
		if (r < 0) {
			error("--agent-socket: %s", err);
			goto out;
		}
	}
	r = evr_mon_hub_start(&m->hub);
	if (r < 0) {
		error("cannot start the counter hub: %s", strerror(-r));
		goto out;
	}
	r = evr_mon_server_start(m, err, sizeof(err));
	if (r < 0) {
		error("%s", err);
		goto out;
	}
	if (!m->o.no_sandbox) {
		r = sandbox_enter(err, sizeof(err));
		if (r < 0) {
			error("%s", err);
			goto out;
		}
	}
	/* The first line: what scripts wait for, once everything is in place. */
	printf("%s\n", m->url);
	fflush(stdout);
	fprintf(stderr, "evring monitor: listening on %s%s%s; %s\n", m->url,
		m->o.unix_path && m->o.listen_host[0] ? " and unix:" : "",
		m->o.unix_path && m->o.listen_host[0] ? m->o.unix_path : "",
		m->o.no_auth ? "no authentication (--no-auth)" :
		m->o.has_key ? "API key required except for local processes of this user" :
		"only local processes of this user may connect");
	if (m->o.sandbox_probe)
		sandbox_probe();
	do {
		r = sigwait(&set, &sig);
	} while (r == EINTR);
	fprintf(stderr, "evring monitor: %s: stopping\n", strsignal(sig));
	r = 0;
out:
	evr_mon_server_stop(m);
	evr_mon_traces_free(m->traces);
	evr_mon_hub_fini(&m->hub);
	evr_client_dialin_stop();
	return r;
}

int main(int argc, char **argv)
{
	static struct evr_mon m;
	int ret, code = EXIT_OK;

	/* `evring monitor` execs us with argv[0] "evring monitor"; direct use is the same. */
	ret = parse_argv(argc, argv, &m.o, &code);
	if (ret <= 0)
		return ret < 0 ? EXIT_USAGE : code;
	return run(&m) < 0 ? EXIT_FAIL : EXIT_OK;
}
