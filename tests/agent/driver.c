// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Integration tests of the agent and the consumer client: real producer
 * processes (evr-agent-producer), real sockets, real shared memory.
 * Synchronization is always on the thing itself: a line from the producer, a
 * reply of the agent, waitpid(), the client's own wait. No sleeps.
 *
 * Usage: evr-agent-driver TEST PRODUCER
 * Exit: 0 pass, 1 fail, 77 skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <evring/consumer.h>

#include "agent-test.h"
#include "harness.h"

/* ---- tests ------------------------------------------------------------------------------------ */

static void check_typed(const struct evr_event_view *v)
{
	struct evr_field_value f[EVR_SCHEMA_MAX_FIELDS];
	static const uint8_t blob[] = { 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01 };
	int n = evr_decode_fields(v->schema, v->payload, v->len, f);

	CHECK(strcmp(v->schema->provider, "AgentTest") == 0, "provider %s", v->schema->provider);
	if (strcmp(v->schema->name, "Ints") == 0) {
		CHECK(n == 8 && v->schema->id == 1 && v->schema->level == EVR_LEVEL_INFO &&
			      v->schema->keywords == 0x1, "Ints schema");
		CHECK(f[0].u == AT_U8 && f[1].u == AT_U16 && f[2].u == AT_U32 && f[3].u == AT_U64,
		      "unsigned fields");
		CHECK(f[4].i == AT_I8 && f[5].i == AT_I16 && f[6].i == AT_I32 && f[7].i == AT_I64,
		      "signed fields");
		CHECK(strcmp(v->schema->fields[3].name, "d") == 0 &&
			      v->schema->fields[3].type == EVR_FT_U64, "field desc");
	} else {
		CHECK(strcmp(v->schema->name, "Mixed") == 0 && n == 7, "Mixed: %d", n);
		CHECK(f[0].f == AT_F32 && f[1].f == AT_F64, "floats %g %g", f[0].f, f[1].f);
		CHECK(f[2].u == 1 && f[3].u == AT_PTR, "bool, ptr");
		CHECK(f[4].b.len == strlen(AT_STR) && memcmp(f[4].b.data, AT_STR, f[4].b.len) == 0,
		      "str");
		CHECK(f[5].b.len == sizeof(blob) && memcmp(f[5].b.data, blob, sizeof(blob)) == 0,
		      "bytes");
		CHECK(f[6].b.len == strlen(AT_JSON) && memcmp(f[6].b.data, AT_JSON, f[6].b.len) == 0,
		      "json");
	}
}

/* The session's next record, waiting for one as long as it takes (the test's timeout
 * ends a hang). */
static void next_record(struct evr_client *c, struct evr_event_view *v)
{
	int r;

	while ((r = evr_client_next(c, v)) == 0)
		CHECK(evr_client_wait(c, 1000) >= 0, "wait");
	CHECK(r > 0, "next");
}

/* The agent thread: named evring-agent, every signal blocked. */
static void check_agent_thread(pid_t pid)
{
	char path[64 + sizeof(((struct dirent *)0)->d_name)], line[256];
	struct dirent *e;
	int found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	CHECK(d, "opendir %s", path);
	while ((e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		f = fopen(path, "re");
		if (!f || !fgets(line, sizeof(line), f) || strcmp(line, "evring-agent\n") != 0) {
			if (f)
				fclose(f);
			continue;
		}
		fclose(f);
		found++;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, e->d_name);
		f = fopen(path, "re");
		CHECK(f, "status");
		while (fgets(line, sizeof(line), f)) {
			/* All but what cannot be blocked (SIGKILL, SIGSTOP) and glibc's
			 * two internal signals (32, 33). */
			if (strncmp(line, "SigBlk:", 7) == 0) {
				unsigned long long m = strtoull(line + 7, NULL, 16);

				m |= 1ull << (SIGKILL - 1) | 1ull << (SIGSTOP - 1) | 1ull << 31 |
				     1ull << 32;
				CHECK(m == ~0ull, "agent signal mask: %s", line);
			}
		}
		fclose(f);
	}
	closedir(d);
	CHECK(found == 1, "%d threads named evring-agent", found);
}

static int test_decode(void)
{
	const uint64_t n = 20000;
	struct evr_session_info *si;
	struct evr_schema_set *all;
	const struct evr_process_info *pi;
	struct evr_event_view v;
	struct prod p;
	struct got g;
	struct evr_client *c;
	double t0, t1, t2, t3;
	uint32_t ns, typed = 0;
	char err[256];

	prod_spawn(&p);
	t0 = now_ms();
	CHECK(evr_client_connect(p.pid, "agent-test", &c, err, sizeof(err)) == 0, "%s", err);
	t1 = now_ms();
	check_agent_thread(p.pid);
	CHECK(evr_client_state(c) == EVR_CLIENT_IDLE, "idle");
	pi = evr_client_process(c);
	CHECK(pi->pid == (uint32_t)p.pid && pi->ppid == (uint32_t)getpid(), "pid %u", pi->pid);
	CHECK(pi->argc == 1 && strcmp(pi->argv[0], producer_path) == 0, "argv");
	CHECK(pi->exe && strstr(pi->exe, "evr-agent-producer"), "exe %s", pi->exe);
	CHECK(pi->nr_cpus >= 1 && pi->pb && pi->pb_len > 0 && pi->evring_version, "info");
	CHECK(pi->start_realtime_ns > 0 && pi->sessions_active == 0, "start time, sessions");
	{
		struct evr_attach_opts o = { .providers = "AgentTest:0x3:4", .ring_size = 1 << 20 };

		CHECK(evr_client_start(c, &o, err, sizeof(err)) == 0, "start: %s", err);
		CHECK(evr_client_start(c, &o, err, sizeof(err)) == -EBUSY, "second start");
	}
	t2 = now_ms();
	CHECK(evr_client_state(c) == EVR_CLIENT_LIVE, "live");
	prod_cmd(&p, "typed");
	prod_expect(&p, "typed");
	t3 = now_ms();
	got_init(&g, n);
	while (typed < 2) {
		next_record(c, &v);
		if (!g.first_ms)
			g.first_ms = now_ms();
		CHECK(v.type == EVR_REC_EVENT && v.schema, "typed record");
		CHECK(v.tid != 0 && v.ts_ns > 0, "tid, ts");
		check_typed(&v);
		typed++;
	}
	printf("attach latency: connect+hello %.2f ms, start session %.2f ms, "
	       "first event %.2f ms after the producer wrote it\n",
	       t1 - t0, t2 - t1, g.first_ms - t3);
	prod_cmd(&p, "emit %" PRIu64, n);
	prod_expect(&p, "emitted 20000");
	read_until(c, &g, n);
	CHECK(g.seq_events == n && g.dup == 0 && g.lost == 0, "%" PRIu64 " events", g.seq_events);

	/* ListSessions shows us; ListEvents knows all three events. */
	CHECK(evr_client_list_sessions(c, &si, &ns, err, sizeof(err)) == 0, "%s", err);
	CHECK(ns == 1 && si[0].client_pid == (uint32_t)getpid() &&
		      strcmp(si[0].client, "agent-test") == 0 &&
		      strcmp(si[0].providers, "AgentTest:0x3:4") == 0 && si[0].ring_size == 1 << 20,
	      "sessions %u %s", ns, ns ? si[0].providers : "");
	evr_session_info_free(si, ns);
	/* In-process sessions are listed too. */
	prod_cmd(&p, "local");
	prod_expect(&p, "local started");
	CHECK(evr_client_list_sessions(c, &si, &ns, err, sizeof(err)) == 0, "%s", err);
	CHECK(ns == 2, "%u sessions", ns);
	for (uint32_t i = 0; i < ns; i++) {
		if (strcmp(si[i].client, "in-process") == 0)
			CHECK(si[i].client_pid == (uint32_t)p.pid && si[i].ring_size == 1 << 16,
			      "in-process session: pid %u", si[i].client_pid);
		else
			CHECK(strcmp(si[i].client, "agent-test") == 0, "client %s", si[i].client);
		CHECK(i == 0 || si[i].session_id != si[0].session_id, "ids");
	}
	evr_session_info_free(si, ns);
	prod_cmd(&p, "unlocal");
	prod_expect(&p, "local stopped");
	CHECK(evr_schema_set_new(&all) == 0, "set");
	CHECK(evr_client_list_events(c, all, err, sizeof(err)) == 0, "%s", err);
	CHECK(evr_schema_set_count(all) >= 5, "events %u", evr_schema_set_count(all));
	for (uint32_t i = 0, found = 0; i <= evr_schema_set_count(all); i++) {
		const struct evr_schema_event *e = evr_schema_set_at(all, i);

		if (!e) {
			CHECK(found == 1, "Seq listed");
			break;
		}
		found += strcmp(e->name, "Seq") == 0 && e->nfields == 1;
	}
	evr_schema_set_free(all);

	/* A second consumer, once the process is past its first clock calibration
	 * (the first Hello waits until 20 ms after libevring was loaded). */
	{
		struct evr_attach_opts o = { .providers = "AgentTest:0x2", .ring_size = 1 << 20 };
		struct evr_client *c2;
		struct got g2;

		t0 = now_ms();
		CHECK(evr_client_connect(p.pid, "second", &c2, err, sizeof(err)) == 0, "%s", err);
		t1 = now_ms();
		CHECK(evr_client_start(c2, &o, err, sizeof(err)) == 0, "start: %s", err);
		t2 = now_ms();
		prod_cmd(&p, "emit 1");
		prod_expect(&p, "emitted 1");
		t3 = now_ms();
		got_init(&g2, 1);
		read_until(c2, &g2, 1);
		printf("second attach: connect+hello %.2f ms, start session %.2f ms, "
		       "first event %.2f ms after the producer wrote it\n",
		       t1 - t0, t2 - t1, g2.first_ms - t3);
		evr_client_free(c2);
		free(g2.seen);
		read_until(c, &g, n + 1);
	}

	/* Stop: flushed and ended, drained to the end. */
	CHECK(evr_client_stop(c, err, sizeof(err)) == 0, "stop: %s", err);
	CHECK(evr_client_state(c) == EVR_CLIENT_ENDED, "ended");
	read_all(c, &g);
	CHECK(evr_client_drained(c), "drained");
	evr_client_free(c);
	prod_end(&p);
	free(g.seen);
	return 0;
}

static int test_late_event(void)
{
	struct evr_event_view v;
	struct prod p;
	struct evr_client *c;
	char line[64];
	uint32_t got = 0;
	int rid;

	prod_spawn(&p);
	c = attach(p.pid, "AgentTest", 256 << 10);
	prod_cmd(&p, "define");
	prod_line(&p, line, sizeof(line));
	CHECK(sscanf(line, "defined %d", &rid) == 1 && rid > 0, "%s", line);
	prod_cmd(&p, "late 10");
	prod_expect(&p, "late 10");
	while (got < 10) {
		struct evr_field_value f[2];

		next_record(c, &v);
		CHECK(v.type == EVR_REC_EVENT && v.rid == (uint32_t)rid, "rid %u", v.rid);
		CHECK(v.schema && strcmp(v.schema->name, "Late") == 0 && v.schema->id == 100,
		      "late schema");
		CHECK(evr_decode_fields(v.schema, v.payload, v.len, f) == 2, "decode");
		CHECK(f[0].u == got && f[1].b.len == 4 && memcmp(f[1].b.data, "late", 4) == 0,
		      "late fields");
		got++;
	}
	evr_client_free(c);
	prod_end(&p);
	return 0;
}

static int test_sessions64(void)
{
	struct evr_attach_opts o = { .providers = "AgentTest", .ring_size = 64 << 10,
				     .meta_size = 4096 };
	struct evr_client *c[65];
	struct prod p;
	char err[256];
	int ret;

	prod_spawn(&p);
	for (int i = 0; i < 64; i++)
		c[i] = attach(p.pid, "AgentTest", 64 << 10);
	CHECK(evr_client_connect(p.pid, "65th", &c[64], err, sizeof(err)) == 0, "%s", err);
	ret = evr_client_start(c[64], &o, err, sizeof(err));
	CHECK(ret == -EBUSY, "65th start: %d", ret);
	CHECK(strcmp(err, "the process already has 64 sessions, the maximum") == 0, "'%s'", err);
	printf("65th session: %s\n", err);
	prod_cmd(&p, "emit 10");
	prod_expect(&p, "emitted 10");
	for (int i = 0; i < 64; i++) {
		struct got g;

		got_init(&g, 10);
		read_until(c[i], &g, 10);
		CHECK(g.seq_events == 10 && g.dup == 0, "session %d: %" PRIu64, i, g.seq_events);
		free(g.seen);
		evr_client_free(c[i]);
	}
	/*
	 * The slots come free as the agent handles the 64 closed connections, which
	 * it may do after answering requests on c[64]: ask it until it lists no
	 * session (every answer is a pass through its event loop), then start.
	 */
	for (int tries = 0;; tries++) {
		struct evr_session_info *si;
		uint32_t n;

		CHECK(evr_client_list_sessions(c[64], &si, &n, err, sizeof(err)) == 0, "%s", err);
		evr_session_info_free(si, n);
		if (n == 0)
			break;
		CHECK(tries < 10000, "%u sessions still listed after their clients closed", n);
	}
	CHECK(evr_client_start(c[64], &o, err, sizeof(err)) == 0, "%s", err);
	evr_client_free(c[64]);
	prod_end(&p);
	return 0;
}

static int test_consumer_killed(void)
{
	struct evr_client *checker;
	int fds0, maps0, fds1, maps1, st, sync[2];
	struct prod p;
	pid_t child;
	char err[256], c;

	prod_spawn(&p);
	CHECK(evr_client_connect(p.pid, "checker", &checker, err, sizeof(err)) == 0, "%s", err);
	resources(p.pid, &fds0, &maps0);
	CHECK(pipe2(sync, O_CLOEXEC) == 0, "pipe");
	child = fork();
	CHECK(child >= 0, "fork");
	if (child == 0) {
		struct evr_client *cc = attach(p.pid, "AgentTest", 1 << 20);

		(void)cc;
		c = 's';
		CHECK(write(sync[1], &c, 1) == 1, "write");
		for (;;)
			pause();
	}
	close(sync[1]);
	CHECK(read(sync[0], &c, 1) == 1, "consumer child did not start its session");
	wait_sessions(checker, 1);
	resources(p.pid, &fds1, &maps1);
	CHECK(fds1 == fds0 + 3 && maps1 > maps0, "with a session: fds %d -> %d, maps %d -> %d",
	      fds0, fds1, maps0, maps1);
	kill(child, SIGKILL);
	CHECK(waitpid(child, &st, 0) == child, "waitpid");
	wait_sessions(checker, 0);
	resources(p.pid, &fds1, &maps1);
	printf("producer fds %d, session mappings %d; after the consumer's death %d, %d\n", fds0,
	       maps0, fds1, maps1);
	CHECK(fds1 == fds0 && maps1 == maps0, "fds %d -> %d, maps %d -> %d", fds0, fds1, maps0,
	      maps1);
	prod_cmd(&p, "enabled");
	prod_expect(&p, "enabled 0");
	evr_client_free(checker);
	prod_end(&p);
	return 0;
}

static int test_producer_killed(void)
{
	const uint64_t n = 5000;
	struct evr_client *c;
	struct prod p;
	struct got g;
	int st;

	prod_spawn(&p);
	c = attach(p.pid, "AgentTest", 1 << 20);
	prod_cmd(&p, "emit %" PRIu64, n);
	prod_expect(&p, "emitted 5000");
	kill(p.pid, SIGKILL);
	CHECK(waitpid(p.pid, &st, 0) == p.pid && WIFSIGNALED(st), "waitpid");
	got_init(&g, n);
	read_all(c, &g);
	CHECK(evr_client_state(c) == EVR_CLIENT_GONE, "state %d", evr_client_state(c));
	CHECK(evr_client_drained(c), "drained");
	CHECK(g.seq_events == n && g.dup == 0 && g.lost == 0, "read %" PRIu64 " lost %" PRIu64,
	      g.seq_events, g.lost);
	printf("producer killed after %" PRIu64 " events: read %" PRIu64 ", state GONE\n", n,
	       g.seq_events);
	evr_client_free(c);
	free(g.seen);
	fclose(p.in);
	fclose(p.out);
	return 0;
}

/* Send @len bytes, then expect an Error frame with EPROTO followed by EOF. */
static void garbage_case(pid_t pid, const void *bytes, size_t len, const char *what)
{
	uint8_t buf[4096];
	size_t got = 0;
	ssize_t n;
	int fd = raw_connect(pid);

	CHECK(write(fd, bytes, len) == (ssize_t)len, "write");
	/* Read to EOF: the agent answers, then closes. */
	while ((n = read(fd, buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)n;
	CHECK(got > 4, "%s: no Error frame before close (%zu bytes, errno %d)", what, got, errno);
	{
		uint32_t flen = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
				(uint32_t)buf[3] << 24;

		CHECK(flen + 4 == got, "%s: one frame expected (%u + 4 != %zu)", what, flen, got);
		/* Reply.error (field 15, length-delimited) holding code = EPROTO. */
		CHECK(buf[4] == (15 << 3 | 2) && memchr(buf + 4, EPROTO, flen), "%s: not an Error",
		      what);
		printf("%s: agent said \"%.*s\"\n", what, (int)(got - 10), (const char *)buf + 10);
	}
	close(fd);
}

static int test_garbage(void)
{
	static const char http[] = "GET / HTTP/1.0\r\n\r\n";
	static const uint8_t bad_pb[] = { 4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };
	/* A well-formed StopSession request before any Hello. */
	static const uint8_t no_hello[] = { 2, 0, 0, 0, 0x1a, 0x00 };
	struct evr_client *c;
	struct prod p;
	struct got g;

	prod_spawn(&p);
	garbage_case(p.pid, http, sizeof(http) - 1, "HTTP request");
	garbage_case(p.pid, bad_pb, sizeof(bad_pb), "bad protobuf");
	garbage_case(p.pid, no_hello, sizeof(no_hello), "no Hello");
	/* A consumer that sends requests and never reads the replies is dropped. */
	{
		static const uint8_t hello[] = { 4, 0, 0, 0, 0x0a, 0x02, 0x08, 0x01 };
		uint8_t burst[6 * 1000];
		int fd = raw_connect(p.pid), sent = 0;
		ssize_t n = 0;

		for (size_t i = 0; i < sizeof(burst); i += 6)
			memcpy(burst + i, (const uint8_t[]){ 2, 0, 0, 0, 0x22, 0x00 }, 6);
		CHECK(write(fd, hello, sizeof(hello)) == (ssize_t)sizeof(hello), "hello");
		/* Blocking sends: they fail only once the agent closed the connection. */
		for (; sent < 10000; sent++) {
			n = send(fd, burst, sizeof(burst), MSG_NOSIGNAL);
			if (n < 0)
				break;
		}
		CHECK(n < 0 && (errno == EPIPE || errno == ECONNRESET),
		      "not disconnected after %d000 unread ListEvents", sent);
		printf("a consumer that does not read was dropped after ~%d000 requests\n", sent);
		close(fd);
	}
	/* The process carries on and serves a new client. */
	c = attach(p.pid, "AgentTest", 256 << 10);
	prod_cmd(&p, "emit 5");
	prod_expect(&p, "emitted 5");
	got_init(&g, 5);
	read_until(c, &g, 5);
	CHECK(g.seq_events == 5, "after garbage: %" PRIu64, g.seq_events);
	free(g.seen);
	evr_client_free(c);
	prod_end(&p);
	return 0;
}

/* The description of @name listed in @set, or NULL. */
static const struct evr_schema_event *listed(struct evr_schema_set *set, const char *name)
{
	for (uint32_t i = 0; i < evr_schema_set_count(set); i++) {
		const struct evr_schema_event *e = evr_schema_set_at(set, i);

		if (e && strcmp(e->provider, "AgentTest") == 0 && strcmp(e->name, name) == 0)
			return e;
	}
	return NULL;
}

/* ListEvents of @pid's agent, from a connection of its own: every AgentTest event
 * with all its fields, "Late" (defined at run time) and the built-ins included. */
static void check_listed(pid_t pid)
{
	const struct evr_schema_event *e;
	struct evr_schema_set *all;
	struct evr_client *c;
	char err[256];

	CHECK(evr_client_connect(pid, "lazy-meta", &c, err, sizeof(err)) == 0, "%s", err);
	CHECK(evr_schema_set_new(&all) == 0, "set");
	CHECK(evr_client_list_events(c, all, err, sizeof(err)) == 0, "%s", err);
	e = listed(all, "Ints");
	CHECK(e && e->id == 1 && e->level == EVR_LEVEL_INFO && e->keywords == 0x1 &&
		      e->nfields == 8 && strcmp(e->fields[3].name, "d") == 0 &&
		      e->fields[3].type == EVR_FT_U64, "pid %d: Ints", (int)pid);
	e = listed(all, "Mixed");
	CHECK(e && e->id == 2 && e->nfields == 7 && strcmp(e->fields[6].name, "doc") == 0,
	      "pid %d: Mixed", (int)pid);
	e = listed(all, "Seq");
	CHECK(e && e->id == 3 && e->keywords == 0x2 && e->nfields == 1 &&
		      strcmp(e->fields[0].name, "seq") == 0, "pid %d: Seq", (int)pid);
	e = listed(all, "Late");
	CHECK(e && e->id == 100 && e->nfields == 2 && strcmp(e->fields[1].name, "s") == 0,
	      "pid %d: Late", (int)pid);
	CHECK(listed(all, "Dynamic") && listed(all, "Json"), "pid %d: the built-ins", (int)pid);
	evr_schema_set_free(all);
	evr_client_free(c);
}

/*
 * A session in the fork child @cpid of @p, which fires 100 events once attached:
 * all of them read, none twice. Return: the child's client, for more checks.
 */
static struct evr_client *child_session(struct prod *p, pid_t cpid, struct got *gc)
{
	struct evr_client *cc = attach(cpid, "AgentTest", 256 << 10);
	char line[128];

	prod_line(p, line, sizeof(line));
	CHECK(strcmp(line, "child emitted 100") == 0, "'%s'", line);
	got_init(gc, 100);
	read_all(cc, gc);
	CHECK(gc->seq_events == 100 && gc->dup == 0, "child session: %" PRIu64, gc->seq_events);
	return cc;
}

/*
 * Ask the producer to fork; return: the child's pid. The child speaks first (it
 * prints before fork() returns to the parent's next printf), but the order is
 * not guaranteed: both lines are taken, and the child must not have inherited
 * an enabled event.
 */
static int prod_fork(struct prod *p)
{
	char line[128];
	int cpid = 0;

	prod_cmd(p, "fork");
	for (int i = 0; i < 2; i++) {
		int en = -1;

		prod_line(p, line, sizeof(line));
		if (sscanf(line, "child %d enabled=%d", &cpid, &en) == 2)
			CHECK(en == 0, "the child inherited an enabled event");
		else
			CHECK(strcmp(line, "forked") == 0, "'%s'", line);
	}
	CHECK(cpid > 0, "no child line");
	return cpid;
}

/*
 * Descriptions are packed by their first reader, not when a provider registers
 * (producer/metadata.c; docs/protocol.md, "What a program pays at start-up"). A
 * producer that no consumer ever saw, and its fork child, must still describe every
 * event, the run-time one included, to the first consumer: in ListEvents (the
 * child's first reader) and in a session's metadata area (the parent's), so that
 * every record decodes.
 */
static int test_lazy_meta(void)
{
	struct evr_client *pc, *cc;
	struct evr_event_view v;
	struct prod p;
	struct got gc;
	char line[128];
	uint32_t typed = 0, late = 0;
	int cpid = 0, rid;

	prod_spawn(&p);
	prod_cmd(&p, "define");
	prod_line(&p, line, sizeof(line));
	CHECK(sscanf(line, "defined %d", &rid) == 1 && rid > 0, "%s", line);
	cpid = prod_fork(&p);

	/* The child: ListEvents first, then a session, whose records all decode. */
	check_listed((pid_t)cpid);
	cc = child_session(&p, (pid_t)cpid, &gc);
	evr_client_free(cc);

	/* The parent: a session first (its metadata area is the first reader). */
	pc = attach(p.pid, "AgentTest", 256 << 10);
	prod_cmd(&p, "typed");
	prod_expect(&p, "typed");
	prod_cmd(&p, "late 3");
	prod_expect(&p, "late 3");
	while (typed < 2 || late < 3) {
		struct evr_field_value f[2];

		next_record(pc, &v);
		CHECK(v.type == EVR_REC_EVENT && v.schema, "rid %u described", v.rid);
		if (v.rid == (uint32_t)rid) {
			CHECK(strcmp(v.schema->name, "Late") == 0 &&
				      evr_decode_fields(v.schema, v.payload, v.len, f) == 2 &&
				      f[0].u == late, "Late %u", late);
			late++;
		} else {
			check_typed(&v);
			typed++;
		}
	}
	check_listed(p.pid);
	evr_client_free(pc);
	prod_end(&p);
	free(gc.seen);
	return 0;
}

static int test_fork(void)
{
	struct evr_client *pc, *cc;
	struct prod p;
	struct got g, gc;
	char line[128];
	int cpid;

	prod_spawn(&p);
	pc = attach(p.pid, "AgentTest", 256 << 10);
	cpid = prod_fork(&p);
	cc = child_session(&p, (pid_t)cpid, &gc);
	CHECK(evr_client_state(cc) == EVR_CLIENT_ENDED, "child exited normally: ended, not %d",
	      evr_client_state(cc));
	evr_client_free(cc);
	/* The parent's session saw none of the child's events. */
	prod_cmd(&p, "emit 7");
	prod_expect(&p, "emitted 7");
	got_init(&g, 7);
	read_until(pc, &g, 7);
	CHECK(evr_client_stop(pc, line, sizeof(line)) == 0, "stop");
	read_all(pc, &g);
	CHECK(g.seq_events == 7, "parent session: %" PRIu64 " events", g.seq_events);
	evr_client_free(pc);
	prod_end(&p);
	free(g.seen);
	free(gc.seen);
	return 0;
}

static int test_reverse(void)
{
	struct evr_attach_opts o = { .providers = "AgentTest", .ring_size = 1 << 20 };
	struct evr_client *c;
	char *path, *path2, env[300], err[256], line[64], want[64];
	struct prod p;
	struct got g;
	int lfd;

	CHECK(evr_client_listen(&lfd, &path, err, sizeof(err)) == 0, "listen: %s", err);
	snprintf(env, sizeof(env), "EVR_CONNECT=%s", path);
	prod_spawn_env(&p, env, NULL, "--emit-at-start", "300");
	CHECK(evr_client_accept(lfd, 10000, "agent-test", &c, err, sizeof(err)) == 0, "accept: %s",
	      err);
	CHECK(evr_client_process(c)->pid == (uint32_t)p.pid, "pid");
	CHECK(evr_client_start(c, &o, err, sizeof(err)) == 0, "start: %s", err);
	CHECK(evr_client_resume(c, err, sizeof(err)) == 0, "resume: %s", err);
	prod_line(&p, line, sizeof(line));
	snprintf(want, sizeof(want), "ready %d", (int)p.pid);
	CHECK(strcmp(line, want) == 0, "'%s'", line);
	got_init(&g, 300);
	read_until(c, &g, 300);
	CHECK(g.seq_events == 300 && g.dup == 0, "events from the first: %" PRIu64, g.seq_events);
	/* EVR_CONNECT is not inherited by what the program starts. */
	prod_cmd(&p, "getenv EVR_CONNECT");
	prod_expect(&p, "env EVR_CONNECT unset");
	evr_client_free(c);
	prod_end(&p);

	/* The consumer closes without Resume: the program runs at once. */
	prod_spawn_env(&p, env, NULL, NULL, NULL);
	CHECK(evr_client_accept(lfd, 10000, "agent-test", &c, err, sizeof(err)) == 0, "accept: %s",
	      err);
	evr_client_free(c);
	snprintf(want, sizeof(want), "ready %d", (int)p.pid);
	prod_expect(&p, want);
	prod_end(&p);
	close(lfd);
	unlink(path);
	/* Nothing listens there any more: the program runs at once. */
	prod_spawn_env(&p, env, NULL, NULL, NULL);
	snprintf(want, sizeof(want), "ready %d", (int)p.pid);
	prod_expect(&p, want);
	prod_end(&p);
	/* The accept side times out with a clear message. */
	CHECK(evr_client_listen(&lfd, &path2, err, sizeof(err)) == 0, "listen: %s", err);
	CHECK(evr_client_accept(lfd, 50, NULL, &c, err, sizeof(err)) == -ETIMEDOUT &&
		      strstr(err, "did not connect"), "accept timeout: %s", err);
	/* Nobody answers: the program runs after EVR_CONNECT_TIMEOUT_MS. */
	snprintf(env, sizeof(env), "EVR_CONNECT=%s", path2);
	prod_spawn_env(&p, env, "EVR_CONNECT_TIMEOUT_MS=200", NULL, NULL);
	snprintf(want, sizeof(want), "ready %d", (int)p.pid);
	prod_expect(&p, want);
	prod_end(&p);
	close(lfd);
	unlink(path2);
	free(path2);
	free(path);
	free(g.seen);
	return 0;
}

static int test_errors(void)
{
	struct evr_attach_opts o = { .providers = "AgentTest", .ring_size = 1 << 20 };
	struct evr_client *c;
	char err[256], want[128], line[64];
	struct prod p, noagent;
	pid_t pid, child;
	int ret, st;

	/* No such process. */
	for (pid = 4000000; kill(pid, 0) == 0 || errno != ESRCH; pid++)
		;
	ret = evr_client_connect(pid, NULL, &c, err, sizeof(err));
	snprintf(want, sizeof(want), "no process %d", (int)pid);
	CHECK(ret == -ESRCH && strcmp(err, want) == 0, "%d '%s'", ret, err);

	/* A process without the agent. */
	prod_spawn_env(&noagent, "EVR_AGENT=0", NULL, NULL, NULL);
	prod_line(&noagent, line, sizeof(line));
	ret = evr_client_connect(noagent.pid, NULL, &c, err, sizeof(err));
	snprintf(want, sizeof(want), "process %d (evr-agent-produ) does not run libevring's agent",
		 (int)noagent.pid);
	CHECK(ret == -ENOENT && strcmp(err, want) == 0, "%d '%s'", ret, err);
	printf("%s\n", err);
	prod_end(&noagent);

	/* Bad options: an Error naming the cause; the connection carries on. */
	prod_spawn(&p);
	CHECK(evr_client_connect(p.pid, NULL, &c, err, sizeof(err)) == 0, "%s", err);
	o.providers = "Agent Test";
	ret = evr_client_start(c, &o, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "Agent Test"), "%d '%s'", ret, err);
	printf("bad provider: %s\n", err);
	o.providers = "AgentTest";
	o.ring_size = 1000;
	ret = evr_client_start(c, &o, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "ring size 1000"), "%d '%s'", ret, err);
	printf("bad ring size: %s\n", err);
	o.ring_size = 1 << 20;
	o.mode = 7;
	ret = evr_client_start(c, &o, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "mode"), "%d '%s'", ret, err);
	o.mode = EVR_MODE_DISCARD;
	ret = evr_client_resume(c, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "reverse"), "resume: %d '%s'", ret, err);
	CHECK(evr_client_start(c, &o, err, sizeof(err)) == 0, "valid start after errors: %s", err);
	evr_client_free(c);

	/* Another user's process: refused before the socket is touched. */
	child = fork();
	CHECK(child >= 0, "fork");
	if (child == 0) {
		pid_t target = p.pid;

		if (geteuid() == 0) {
			if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0) {
				perror("setresuid(65534)");
				_exit(1);
			}
		} else {
			target = 1;	/* init, owned by root */
		}
		ret = evr_client_connect(target, NULL, &c, err, sizeof(err));
		if (ret != -EACCES || !strstr(err, "belongs to user") ||
		    !strstr(err, "(uid 0); you can attach only to your own processes")) {
			fprintf(stderr, "other user: %d '%s'\n", ret, err);
			_exit(1);
		}
		printf("other user: %s\n", err);
		fflush(stdout);
		_exit(0);
	}
	CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st), "waitpid");
	CHECK(WEXITSTATUS(st) == 0, "other-user check failed");

	/* A stopped process: the kernel accepts the connection, nobody answers. */
	kill(p.pid, SIGSTOP);
	CHECK(waitpid(p.pid, &st, WUNTRACED) == p.pid && WIFSTOPPED(st), "stop");
	ret = evr_client_connect(p.pid, NULL, &c, err, sizeof(err));
	snprintf(want, sizeof(want), "process %d did not answer (stopped?)", (int)p.pid);
	CHECK(ret == -ETIMEDOUT && strcmp(err, want) == 0, "%d '%s'", ret, err);
	printf("%s\n", err);
	kill(p.pid, SIGCONT);
	prod_end(&p);
	return 0;
}

/*
 * A test of its own, so that where it cannot run it is reported skipped, not
 * folded into a passing test_errors.
 */
static int test_peer_uid(void)
{
	struct prod p;
	pid_t child;
	int st;

	if (geteuid() != 0) {
		printf("SKIP: only root can reach an agent's socket as another uid\n");
		return 77;
	}
	prod_spawn(&p);
	/*
	 * The agent's own check (SO_PEERCRED), for a peer of another uid that can
	 * reach the socket anyway (here: root's CAP_DAC_OVERRIDE kept across
	 * setuid). Only root can set this up: root that cannot is a failure (a
	 * security boundary left unchecked must not pass); others skipped, above.
	 */
	child = fork();
	CHECK(child >= 0, "fork");
	if (child == 0) {
		struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct data[2] = { { 0 } };
		uint8_t buf[512];
		size_t got = 0;
		ssize_t k;
		int fd;

		if (prctl(PR_SET_KEEPCAPS, 1) < 0 || setresuid(65534, 65534, 65534) < 0) {
			perror("as uid 65534 keeping capabilities");
			_exit(1);
		}
		data[0].effective = data[0].permitted = 1u << CAP_DAC_OVERRIDE;
		if (syscall(SYS_capset, &hdr, data) < 0) {
			perror("capset CAP_DAC_OVERRIDE");
			_exit(1);
		}
		fd = raw_connect(p.pid);
		{
			static const uint8_t hello[] = { 4, 0, 0, 0, 0x0a, 0x02, 0x08, 0x01 };

			(void)!write(fd, hello, sizeof(hello));
		}
		while (got < sizeof(buf) && (k = read(fd, buf + got, sizeof(buf) - got)) > 0)
			got += (size_t)k;
		buf[got < sizeof(buf) ? got : sizeof(buf) - 1] = '\0';
		if (got < 10 || !memmem(buf, got, "uid 65534 may not attach to process", 35) ||
		    !memchr(buf + 4, EACCES, got - 4)) {
			fprintf(stderr, "agent-side uid check: %zu bytes\n", got);
			_exit(1);
		}
		printf("agent refused: %s\n", (const char *)buf + 10);
		fflush(stdout);
		_exit(0);
	}
	CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st), "waitpid");
	CHECK(WEXITSTATUS(st) == 0, "agent-side uid check failed");

	prod_end(&p);
	return 0;
}

static int test_max_clients(void)
{
	struct evr_client *c[257];
	struct prod p;
	char err[256];
	int ret;

	prod_spawn(&p);
	for (int i = 0; i < 256; i++) {
		ret = evr_client_connect(p.pid, NULL, &c[i], err, sizeof(err));
		CHECK(ret == 0, "client %d: %s", i, err);
	}
	ret = evr_client_connect(p.pid, NULL, &c[256], err, sizeof(err));
	CHECK(ret == -EUSERS && strstr(err, "256 consumers"), "257th: %d '%s'", ret, err);
	printf("257th client: %s\n", err);
	evr_client_free(c[0]);
	/* Once one left, a new one is served (the agent may see the close late:
	 * retry on its answer, boundedly). */
	for (int tries = 0;; tries++) {
		ret = evr_client_connect(p.pid, NULL, &c[0], err, sizeof(err));
		if (ret == 0)
			break;
		CHECK(ret == -EUSERS && tries < 10000, "%d '%s'", ret, err);
	}
	for (int i = 0; i < 256; i++)
		evr_client_free(c[i]);
	prod_end(&p);
	return 0;
}

/* A ring too small for what is emitted: every event is read or counted lost. */
static int test_loss(void)
{
	const uint64_t n = 20000;
	struct evr_client *c;
	struct prod p;
	struct got g;
	char err[256];

	prod_spawn(&p);
	c = attach(p.pid, "AgentTest", 64 << 10);
	prod_cmd(&p, "emit %" PRIu64, n);
	prod_expect(&p, "emitted 20000");
	CHECK(evr_client_stop(c, err, sizeof(err)) == 0, "stop: %s", err);
	got_init(&g, n);
	read_all(c, &g);
	CHECK(evr_client_drained(c), "drained");
	CHECK(g.lost > 0 && g.dup == 0, "lost %" PRIu64, g.lost);
	CHECK(g.seq_events + g.lost == n, "%" PRIu64 " read + %" PRIu64 " lost != %" PRIu64,
	      g.seq_events, g.lost, n);
	printf("small ring: %" PRIu64 " read + %" PRIu64 " lost = %" PRIu64 " emitted\n",
	       g.seq_events, g.lost, n);
	evr_client_free(c);
	prod_end(&p);
	free(g.seen);
	return 0;
}

/* Raw spans through the client: counts add up, also after the producer died. */
static int test_spans(void)
{
	const uint64_t n = 30000;
	struct evr_event_view v;
	struct evr_client *c;
	struct evr_span sp;
	struct prod p;
	uint64_t events = 0, lost = 0, spans = 0;
	char err[256];
	int st, ret;

	prod_spawn(&p);
	/* Room for all (24 bytes a record): once the producer is killed, losses it
	 * had not yet published with a packet switch could not be known. */
	c = attach(p.pid, "AgentTest", 1 << 20);
	prod_cmd(&p, "emit %" PRIu64, n);
	prod_expect(&p, "emitted 30000");
	kill(p.pid, SIGKILL);
	CHECK(waitpid(p.pid, &st, 0) == p.pid, "waitpid");
	for (;;) {
		uint64_t e, l;

		ret = evr_client_span_next(c, &sp);
		CHECK(ret >= 0, "span_next %d", ret);
		if (ret == 0) {
			if (evr_client_drained(c))
				break;
			CHECK(evr_client_wait(c, 1000) >= 0, "wait");
			continue;
		}
		CHECK(evr_span_count(&sp, &e, &l) == 0, "span_count");
		CHECK(sp.len > 0 && sp.data, "span");
		events += e;
		lost += l;
		spans++;
		CHECK(evr_client_span_done(c, &sp) == 0, "span_done");
	}
	CHECK(evr_client_state(c) == EVR_CLIENT_GONE, "state");
	/* One way of reading per client. */
	CHECK(evr_client_next(c, &v) == -EINVAL, "records after spans");
	for (uint32_t r = 0; r < evr_client_shm(c)->nr_rings; r++) {
		uint64_t fl;

		CHECK(evr_client_span_final_lost(c, r, &fl) == 0, "final lost");
		lost += fl;
	}
	CHECK(events == n && lost == 0, "spans: %" PRIu64 " events, %" PRIu64 " lost", events,
	      lost);
	printf("%" PRIu64 " events in %" PRIu64 " spans\n", events, spans);
	(void)err;
	evr_client_free(c);
	fclose(p.in);
	fclose(p.out);
	return 0;
}

/* Bind a socket at @path and close it: what a killed process leaves behind. */
static void leave_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s", path);
	close(fd);
}

static char own_dir[128];

/* prod_before_exec: what a dead process of the producer's pid left behind. */
static void leave_own_socket(void)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/%d.sock", own_dir, (int)getpid());
	leave_socket(path);
}

static int test_runtime_dir(void)
{
	char base[] = "/tmp/evr-agent-test-XXXXXX";
	char dir[128], env[160], stale[192], live[192], link[128], err[256];
	struct evr_client *c;
	struct prod p;
	pid_t dead;
	int ret;

	CHECK(mkdtemp(base), "mkdtemp");
	/* A directory that does not exist yet is created, mode 0700. */
	snprintf(dir, sizeof(dir), "%s/run", base);
	snprintf(env, sizeof(env), "EVR_RUNTIME_DIR=%s", dir);
	CHECK(putenv(env) == 0, "putenv");
	prod_spawn(&p);
	{
		struct stat st;

		CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700,
		      "runtime directory not created 0700");
	}
	c = attach(p.pid, "AgentTest", 256 << 10);
	evr_client_free(c);
	prod_end(&p);
	snprintf(stale, sizeof(stale), "%s/%d.sock", dir, (int)p.pid);
	CHECK(access(stale, F_OK) < 0, "the socket outlived a normal exit");

	/* Stale sockets of dead processes go once a consumer connects (not at start:
	 * a program nobody traces does not read the directory); those of live
	 * processes stay. */
	for (dead = 4000000; kill(dead, 0) == 0 || errno != ESRCH; dead++)
		;
	snprintf(stale, sizeof(stale), "%s/%d.sock", dir, (int)dead);
	snprintf(live, sizeof(live), "%s/%d.sock", dir, (int)getpid());
	leave_socket(stale);
	leave_socket(live);
	prod_spawn(&p);
	CHECK(access(stale, F_OK) == 0, "stale socket %s removed at start, before any consumer",
	      stale);
	c = attach(p.pid, "AgentTest", 256 << 10);
	evr_client_free(c);
	CHECK(access(stale, F_OK) < 0, "stale socket %s not removed", stale);
	CHECK(access(live, F_OK) == 0, "live process's socket removed");
	{
		pid_t *v;
		uint32_t n, found = 0;

		CHECK(evr_process_list(&v, &n) == 0, "process list");
		for (uint32_t i = 0; i < n; i++) {
			found += v[i] == p.pid;
			CHECK(i == 0 || v[i] > v[i - 1], "sorted");
		}
		CHECK(found == 1, "the producer is not listed (%u pids)", n);
		free(v);
	}
	prod_end(&p);
	unlink(live);

	/* A socket that a dead process of the producer's pid left (a pid used again):
	 * the agent binds, finds the address in use, removes that file and binds again
	 * (it no longer unlinks first at every start). */
	snprintf(own_dir, sizeof(own_dir), "%s", dir);
	prod_before_exec = leave_own_socket;
	prod_spawn(&p);
	prod_before_exec = NULL;
	c = attach(p.pid, "AgentTest", 256 << 10);
	evr_client_free(c);
	prod_end(&p);

	/* A directory others can enter, or a symlink: no agent, and no socket. */
	CHECK(chmod(dir, 0755) == 0, "chmod");
	prod_spawn(&p);
	ret = evr_client_connect(p.pid, NULL, &c, err, sizeof(err));
	CHECK(ret == -ENOENT && strstr(err, "does not run libevring's agent") &&
		      strstr(err, "has mode 0755"), "0755: %d %s", ret, err);
	prod_end(&p);
	CHECK(chmod(dir, 0700) == 0, "chmod");
	snprintf(link, sizeof(link), "%s/link", base);
	CHECK(symlink(dir, link) == 0, "symlink");
	snprintf(env, sizeof(env), "EVR_RUNTIME_DIR=%s", link);
	prod_spawn(&p);
	ret = evr_client_connect(p.pid, NULL, &c, err, sizeof(err));
	CHECK(ret == -EPERM && strstr(err, "is a symbolic link"), "symlinked directory: %d %s", ret,
	      err);
	snprintf(stale, sizeof(stale), "%s/%d.sock", dir, (int)p.pid);
	CHECK(access(stale, F_OK) < 0, "a socket was created through the symlink");
	prod_end(&p);
	unlink(link);
	rmdir(dir);
	rmdir(base);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} tests[] = {
		{ "decode", test_decode },
		{ "late_event", test_late_event },
		{ "sessions64", test_sessions64 },
		{ "consumer_killed", test_consumer_killed },
		{ "producer_killed", test_producer_killed },
		{ "garbage", test_garbage },
		{ "fork", test_fork },
		{ "lazy_meta", test_lazy_meta },
		{ "reverse", test_reverse },
		{ "errors", test_errors },
		{ "peer_uid", test_peer_uid },
		{ "max_clients", test_max_clients },
		{ "runtime_dir", test_runtime_dir },
		{ "spans", test_spans },
		{ "loss", test_loss },
	};

	if (argc != 3) {
		fprintf(stderr, "usage: %s TEST PRODUCER\n", argv[0]);
		return 2;
	}
	producer_path = argv[2];
	signal(SIGPIPE, SIG_IGN);
	/* Line by line: children forked by the tests must not repeat our output. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (strcmp(argv[1], tests[i].name) == 0)
			return tests[i].fn();
	}
	fprintf(stderr, "unknown test %s\n", argv[1]);
	return 2;
}
