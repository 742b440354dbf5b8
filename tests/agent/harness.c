// SPDX-License-Identifier: LGPL-2.1-or-later
/* The agent integration tests' harness (harness.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

const char *producer_path;

double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- the producer process ------------------------------------------------------------ */

void (*prod_before_exec)(void);

void prod_spawn_env(struct prod *p, const char *env1, const char *env2, const char *arg1,
		    const char *arg2)
{
	int to[2], from[2];

	CHECK(pipe2(to, O_CLOEXEC) == 0 && pipe2(from, O_CLOEXEC) == 0, "pipe");
	p->pid = fork();
	CHECK(p->pid >= 0, "fork");
	if (p->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		if (env1)
			putenv((char *)env1);
		if (env2)
			putenv((char *)env2);
		if (prod_before_exec)
			prod_before_exec();
		execl(producer_path, producer_path, arg1, arg2, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	p->in = fdopen(to[1], "w");
	p->out = fdopen(from[0], "r");
	CHECK(p->in && p->out, "fdopen");
	setvbuf(p->in, NULL, _IOLBF, 0);
}

void prod_line(struct prod *p, char *buf, size_t len)
{
	CHECK(fgets(buf, (int)len, p->out), "producer %d closed its output", (int)p->pid);
	buf[strcspn(buf, "\n")] = '\0';
}

void prod_expect(struct prod *p, const char *want)
{
	char line[256];

	prod_line(p, line, sizeof(line));
	CHECK(strcmp(line, want) == 0, "producer said '%s', expected '%s'", line, want);
}

__attribute__((format(printf, 2, 3))) void prod_cmd(struct prod *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(p->in, fmt, ap);
	va_end(ap);
	fputc('\n', p->in);
	fflush(p->in);
}

void prod_spawn(struct prod *p)
{
	char line[64], want[64];

	prod_spawn_env(p, NULL, NULL, NULL, NULL);
	prod_line(p, line, sizeof(line));
	snprintf(want, sizeof(want), "ready %d", (int)p->pid);
	CHECK(strcmp(line, want) == 0, "producer said '%s'", line);
}

void prod_end(struct prod *p)
{
	int st;

	prod_cmd(p, "exit");
	CHECK(waitpid(p->pid, &st, 0) == p->pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "producer status %d", st);
	fclose(p->in);
	fclose(p->out);
}

/* ---- reading ------------------------------------------------------------------------------- */

void got_init(struct got *g, uint64_t max)
{
	memset(g, 0, sizeof(*g));
	g->seen = calloc(max ? max : 1, 1);
	g->seen_max = max;
}

void got_event(struct got *g, const struct evr_event_view *v)
{
	struct evr_field_value vals[EVR_SCHEMA_MAX_FIELDS];

	if (!g->first_ms)
		g->first_ms = now_ms();
	if (v->type == EVR_REC_LOST) {
		g->lost += v->lost;
		return;
	}
	CHECK(v->schema, "event rid %u has no description", v->rid);
	if (strcmp(v->schema->name, "Seq") != 0) {
		g->other_events++;
		return;
	}
	CHECK(evr_decode_fields(v->schema, v->payload, v->len, vals) == 1, "Seq decode");
	g->seq_events++;
	if (vals[0].u < g->seen_max) {
		g->dup += g->seen[vals[0].u];
		g->seen[vals[0].u] = 1;
	}
}

/* Read until @want Seq events arrived (or the session is drained). */
void read_until(struct evr_client *c, struct got *g, uint64_t want)
{
	struct evr_event_view v;

	while (g->seq_events < want && !evr_client_drained(c)) {
		int n = evr_client_next(c, &v);

		CHECK(n >= 0, "evr_client_next: %d", n);
		if (n == 0) {
			CHECK(evr_client_wait(c, 1000) >= 0, "wait");
			continue;
		}
		got_event(g, &v);
	}
	evr_client_release(c);
}

/* Read everything until the session is drained (after ENDED or GONE). */
void read_all(struct evr_client *c, struct got *g)
{
	read_until(c, g, UINT64_MAX);
}

struct evr_client *attach(pid_t pid, const char *providers, uint64_t ring_size)
{
	struct evr_attach_opts o = { .providers = providers, .ring_size = ring_size };
	struct evr_client *c;
	char err[256];
	int ret;

	ret = evr_client_connect(pid, "agent-test", &c, err, sizeof(err));
	CHECK(ret == 0, "connect: %d %s", ret, err);
	ret = evr_client_start(c, &o, err, sizeof(err));
	CHECK(ret == 0, "start: %d %s", ret, err);
	return c;
}

/* Count the producer's open fds and the session memfd mappings. */
void resources(pid_t pid, int *ret_fds, int *ret_maps)
{
	char path[64], line[512];
	FILE *f;
	int fds = 0, maps = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	{
		DIR *d = opendir(path);
		struct dirent *e;

		CHECK(d, "opendir %s", path);
		while ((e = readdir(d)))
			fds += e->d_name[0] != '.';
		closedir(d);
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	CHECK(f, "maps");
	while (fgets(line, sizeof(line), f))
		maps += strstr(line, "memfd:evring-session") != NULL;
	fclose(f);
	*ret_fds = fds;
	*ret_maps = maps;
}

/* Ask the agent (a reply is the synchronization) until @want sessions remain. */
void wait_sessions(struct evr_client *checker, uint32_t want)
{
	for (int tries = 0;; tries++) {
		struct evr_session_info *si;
		uint32_t n;
		char err[256];

		CHECK(evr_client_list_sessions(checker, &si, &n, err, sizeof(err)) == 0, "%s", err);
		evr_session_info_free(si, n);
		if (n == want)
			return;
		CHECK(tries < 100000, "%u sessions remain, expected %u", n, want);
	}
}

/* Raw socket to the agent of @pid. */
int raw_connect(pid_t pid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *dir = getenv("EVR_RUNTIME_DIR");
	char proc[64];
	struct stat st;
	int fd;

	/* The producer's directory: named after its owner, not after us. */
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	CHECK(stat(proc, &st) == 0, "no process %d", (int)pid);
	if (dir)
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", dir, (int)pid);
	else
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/evring-%u/%d.sock",
			 (unsigned int)st.st_uid, (int)pid);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s",
	      sa.sun_path);
	return fd;
}
