// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Integration: attach by PID with StartSession.counter_interval_ms = 100 to a
 * producer process (attach-producer.c) and read, decoded with the session's
 * own metadata, 3 CounterMean samples of its counter (mean, min and max all 2,
 * interval_ms 100) and a Process "threads" gauge. Ends the producer by closing
 * its stdin and checks its exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/schema.h>

#define CHECK(c, ...)                                                     \
	do {                                                              \
		if (!(c)) {                                               \
			fprintf(stderr, "counters_attach: " __VA_ARGS__); \
			fputc('\n', stderr);                              \
			exit(1);                                          \
		}                                                         \
	} while (0)

static void str_field(const struct evr_field_value *v, char *out, size_t cap)
{
	size_t n = v->b.len < cap - 1 ? v->b.len : cap - 1;

	memcpy(out, v->b.data, n);
	out[n] = 0;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/evr-counters-XXXXXX", line[64], want[64], err[256] = "";
	struct evr_attach_opts o = {.providers = "AttachCtr,Process",
				    .mode = EVR_MODE_DISCARD,
				    .ring_size = 256u << 10,
				    .counter_interval_ms = 100};
	struct evr_field_value vals[16];
	struct evr_event_view v;
	struct evr_client *c;
	int to[2], from[2], st, means = 0, gauges = 0;
	FILE *out;
	pid_t pid;

	CHECK(argc == 2, "usage: %s PRODUCER", argv[0]);
	signal(SIGPIPE, SIG_IGN);
	CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	setenv("EVR_RUNTIME_DIR", dir, 1);
	CHECK(pipe2(to, O_CLOEXEC) == 0 && pipe2(from, O_CLOEXEC) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		execl(argv[1], argv[1], (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	out = fdopen(from[0], "r");
	CHECK(out && fgets(line, sizeof(line), out), "producer said nothing");
	snprintf(want, sizeof(want), "ready %d\n", (int)pid);
	CHECK(strcmp(line, want) == 0, "producer said '%s'", line);

	CHECK(evr_client_connect(pid, "counters-test", &c, err, sizeof(err)) == 0, "connect: %s",
	      err);
	CHECK(evr_client_start(c, &o, err, sizeof(err)) == 0, "start: %s", err);
	while (means < 3 || gauges < 1) {
		int r = evr_client_next(c, &v);
		char name[64];

		CHECK(r >= 0, "read: %s", strerror(-r));
		if (r == 0) {
			evr_client_release(c);
			CHECK(evr_client_wait(c, 100) >= 0, "wait");
			continue;
		}
		if (v.type != EVR_REC_EVENT || !v.schema)
			continue;
		if (strcmp(v.schema->name, "CounterMean") && strcmp(v.schema->name, "CounterGauge"))
			continue;
		CHECK(v.schema->nfields <= 16 &&
			      evr_decode_fields(v.schema, v.payload, v.len, vals) >= 0,
		      "undecodable %s", v.schema->name);
		str_field(&vals[0], name, sizeof(name));
		CHECK(vals[3].u == 100, "%s %s interval_ms %llu", v.schema->name, name,
		      (unsigned long long)vals[3].u);
		if (strcmp(v.schema->provider, "AttachCtr") == 0 && strcmp(name, "attach") == 0) {
			CHECK(strcmp(v.schema->name, "CounterMean") == 0, "attach is %s",
			      v.schema->name);
			if (!vals[4].u)
				continue; /* an interval without records */
			/* min and max are exact; mean and stddev within what the
			 * records in flight at a tick can move (see counters.c). */
			CHECK(fabs(vals[5].f - 2) < 1e-4 && vals[6].f == 2 && vals[7].f == 2 &&
				      vals[8].f < 0.05,
			      "mean %g min %g max %g stddev %g", vals[5].f, vals[6].f, vals[7].f,
			      vals[8].f);
			means++;
		} else if (strcmp(v.schema->provider, "Process") == 0 &&
			   strcmp(name, "threads") == 0) {
			CHECK(vals[4].f >= 2, "threads %g", vals[4].f);
			gauges++;
		}
	}
	evr_client_free(c);
	close(to[1]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "producer status %d", st);
	fclose(out);
	rmdir(dir);
	printf("ok: %d CounterMean samples, %d Process threads gauges\n", means, gauges);
	return 0;
}
