// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring ps: the processes the caller may attach to, with the number of
 * sessions each has and its command line, as its agent reports them. A process
 * in a pid namespace of its own shows both pids: "12678 (ns 1)".
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/consumer.h>
#include <evring/sandbox.h>

#include "cli.h"

#define CMD "ps"

struct ps_opts {
	struct evr_cli_flags flags;	/* --json */
	bool sessions;
	bool clock;
};

static const struct evr_cli_option longopts[] = {
	{ "json", no_argument, 'j', NULL, "one JSON object per process and line" },
	{ "sessions", no_argument, 's', NULL, "also list each process's sessions" },
	{ "clock", no_argument, 'c', NULL, "also say why each process uses its clock" },
	EVR_CLI_OPTIONS_SANDBOX(EVR_OPT_NO_SANDBOX, EVR_OPT_SANDBOX_PROBE,
				"do not confine evring with seccomp"),
	EVR_CLI_OPTION_HELP,
	{ 0 },
};

static void usage(FILE *f)
{
	evr_cli_usage(f,
		"Usage: evring ps [--json] [--sessions] [--clock] [--no-sandbox]\n"
		"List the processes running libevring's agent that you may attach to.\n"
		"CLOCK is what events carry: tsc (raw TSC ticks) or mono (CLOCK_MONOTONIC).\n",
		longopts, "");
}

static int parse_argv(int argc, char **argv, struct ps_opts *o)
{
	struct evr_cli_getopt g;
	int c, r;

	evr_cli_getopt_init(&g, "+:", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
		if (c == 's') {
			o->sessions = true;
			continue;
		}
		if (c == 'c') {
			o->clock = true;
			continue;
		}
		r = evr_cli_common_opt(CMD, c, argv, usage, &o->flags);
		if (r <= 0)
			return r;
	}
	if (evr_cli_no_operands(CMD, argc, argv) < 0)
		return -EINVAL;
	return 1;
}

static const char *mode_name(uint32_t mode)
{
	return mode == EVR_MODE_OVERWRITE ? "overwrite" : "discard";
}

static const char *clock_name(const struct evr_process_info *pi)
{
	if (!pi->clock_choice.known)
		return pi->clock.kind == EVR_CLOCK_TSC ? "tsc" : "mono";
	return pi->clock_choice.kind == EVR_CLOCK_TSC ? "tsc" : "mono";
}

/* The --clock line: why, and what was measured. */
static void print_clock(const struct evr_process_info *pi)
{
	const struct evr_process_clock *k = &pi->clock_choice;

	if (!k->known) {
		printf("%7s   clock: %s (the process's libevring does not say why)\n", "",
		       clock_name(pi));
		return;
	}
	printf("%7s   clock: %s: %s (clocksource %s", "", clock_name(pi), k->reason,
	       k->source[0] ? k->source : "unknown");
	if (k->tsc_hz)
		printf(", TSC %.3f GHz", (double)k->tsc_hz / 1e9);
	if (k->rdtsc_ns)
		printf(", rdtsc %u ns", k->rdtsc_ns);
	if (k->gettime_ns)
		printf(", clock_gettime %u ns", k->gettime_ns);
	printf(")\n");
}

/* @ns is 0 without --sessions. */
static void print_text(const struct evr_process_info *pi, const struct evr_session_info *s,
		       uint32_t ns, bool clock)
{
	/* A process in a pid namespace of its own: ours, then its own (docs/cli.md). */
	if (pi->ns_pid)
		printf("%7u (ns %u) %4u %-5s ", pi->pid, pi->ns_pid, pi->sessions_active,
		       clock_name(pi));
	else
		printf("%7u %4u %-5s ", pi->pid, pi->sessions_active, clock_name(pi));
	for (uint32_t i = 0; i < pi->argc; i++)
		printf(i ? " %s" : "%s", pi->argv[i]);
	if (pi->argc == 0)
		printf("[%s]", pi->exe ? pi->exe : "?");
	putchar('\n');
	if (clock)
		print_clock(pi);
	for (uint32_t i = 0; i < ns; i++) {
		char mem[32], cpid[48];

		/* The agent names its clients by the pids it sees: 0 for one outside its
		 * pid namespace (a consumer on the host, for a process in a container). */
		if (s[i].client_pid || !pi->ns_pid)
			snprintf(cpid, sizeof(cpid), "pid %u", s[i].client_pid);
		else
			snprintf(cpid, sizeof(cpid), "outside its pid namespace");
		printf("%7s   session %u: %s, %s, %llu KiB/ring, %s in all, client %s (%s)\n",
		       "", s[i].session_id, s[i].providers ? s[i].providers : "",
		       mode_name(s[i].mode), (unsigned long long)(s[i].ring_size >> 10),
		       evr_fmt_bytes(s[i].shm_size, mem, sizeof(mem)),
		       s[i].client && *s[i].client ? s[i].client : "in-process", cpid);
	}
}

static void print_json(const struct evr_process_info *pi, const struct evr_session_info *s,
		       uint32_t ns, bool with_sessions)
{
	printf("{\"pid\":%u,", pi->pid);
	if (pi->ns_pid)
		printf("\"ns_pid\":%u,", pi->ns_pid);
	printf("\"ppid\":%u,\"uid\":%u,\"sessions\":%u,\"exe\":", pi->ppid, pi->uid,
	       pi->sessions_active);
	evr_json_fputs(stdout, pi->exe ? pi->exe : "");
	printf(",\"argv\":[");
	for (uint32_t i = 0; i < pi->argc; i++) {
		if (i)
			putchar(',');
		evr_json_fputs(stdout, pi->argv[i]);
	}
	printf("],\"evring_version\":");
	evr_json_fputs(stdout, pi->evring_version ? pi->evring_version : "");
	printf(",\"clock\":{\"kind\":\"%s\"", clock_name(pi));
	if (pi->clock_choice.known) {
		const struct evr_process_clock *k = &pi->clock_choice;

		printf(",\"source\":");
		evr_json_fputs(stdout, k->source);
		printf(",\"reason\":");
		evr_json_fputs(stdout, k->reason);
		printf(",\"tsc_hz\":%llu,\"skew_bound_ns\":%llu,\"skew_pairs\":%u,"
		       "\"rdtsc_ns\":%u,\"gettime_ns\":%u", (unsigned long long)k->tsc_hz,
		       (unsigned long long)k->skew_bound_ns, k->skew_pairs, k->rdtsc_ns,
		       k->gettime_ns);
	}
	putchar('}');
	if (with_sessions) {
		printf(",\"session_list\":[");
		for (uint32_t i = 0; i < ns; i++) {
			printf("%s{\"id\":%u,\"mode\":\"%s\",\"ring_size\":%llu,\"shm_size\":%llu,"
			       "\"client_pid\":%u,\"providers\":",
			       i ? "," : "", s[i].session_id, mode_name(s[i].mode),
			       (unsigned long long)s[i].ring_size, (unsigned long long)s[i].shm_size,
			       s[i].client_pid);
			evr_json_fputs(stdout, s[i].providers ? s[i].providers : "");
			printf(",\"client\":");
			evr_json_fputs(stdout, s[i].client ? s[i].client : "");
			putchar('}');
		}
		putchar(']');
	}
	printf("}\n");
}

/* A process that exited or stopped serving between listing and asking. */
static bool vanished(int err)
{
	return err == -ESRCH || err == -ENOENT || err == -ECONNREFUSED || err == -ECONNRESET ||
	       err == -EPIPE || err == -ETIMEDOUT;
}

/* The work, as evr_cli_main()'s run step. */
static int run(void *arg)
{
	const struct ps_opts *o = arg;
	struct evr_broker *b;
	pid_t *pids = NULL;
	uint32_t n = 0;
	char err[512];
	int ret;

	/* Confined from here on: the broker lists and connects, we parse. */
	ret = evr_cli_attach_confine(CMD, &o->flags, &b);
	if (ret < 0)
		return ret;
	ret = evr_cli_process_list(b, &pids, &n, err, sizeof(err));
	if (ret < 0) {
		evr_cli_error(CMD, "%s", err);
		evr_broker_free(b);
		return ret;
	}
	/* A directory we cannot trust: its processes are not shown, say why. */
	if (ret == 1)
		evr_cli_warn(CMD, "%s", err);
	else if (ret > 1)
		evr_cli_warn(CMD, "%s (and %d more directories refused)", err, ret - 1);
	if (!o->flags.json)
		printf("%7s %4s %-5s %s\n", "PID", "SESS", "CLOCK", "COMMAND");
	for (uint32_t i = 0; i < n; i++) {
		struct evr_session_info *sessions = NULL;
		struct evr_client *c = NULL;
		uint32_t ns = 0;
		int r;

		r = evr_cli_connect(b, pids[i], "evring ps", &c, err, sizeof(err));
		if (r == 0 && o->sessions)
			r = evr_client_list_sessions(c, &sessions, &ns, err, sizeof(err));
		if (r < 0) {
			if (!vanished(r))
				evr_cli_warn(CMD, "%s", err);
			evr_client_free(c);
			continue;
		}
		if (o->flags.json)
			print_json(evr_client_process(c), sessions, ns, o->sessions);
		else
			print_text(evr_client_process(c), sessions, ns, o->clock);
		evr_session_info_free(sessions, ns);
		evr_client_free(c);
	}
	free(pids);
	evr_broker_free(b);
	if (fflush(stdout) != 0) {
		evr_cli_error(CMD, "cannot write the list: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}

int evr_cmd_ps(int argc, char **argv)
{
	static const struct evr_cli_steps steps = { .run = run };
	struct ps_opts o = { 0 };

	return evr_cli_main(parse_argv(argc, argv, &o), &steps, &o);
}
