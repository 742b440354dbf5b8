// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring providers: what a process offers, before recording it: its providers,
 * each provider's events (id, level, keywords, opcode, fields) and counters
 * (name, kind, unit, display name), as its agent describes them (ListEvents,
 * ListCounters). `dotnet-trace list-providers` and `dotnet-counters list`, for
 * one process. Confined once connected (the agent's answers are parsed in the
 * sandbox).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <evring/consumer.h>

#include "cli.h"

#define CMD "providers"

struct providers_opts {
	struct evr_cli_flags flags;	/* --json, --no-sandbox */
	pid_t pid;
	const char *name;
};

static const struct evr_cli_option longopts[] = {
	EVR_CLI_OPTIONS_PID("the process"),
	{ "name", required_argument, 'n', "NAME",
	  "the one process named NAME that runs libevring's agent" },
	{ "json", no_argument, 'j', NULL, "one JSON object" },
	EVR_CLI_OPTIONS_SANDBOX(EVR_OPT_NO_SANDBOX, EVR_OPT_SANDBOX_PROBE,
				"do not confine evring with seccomp"),
	EVR_CLI_OPTION_HELP,
	{ 0 },
};

static void usage(FILE *f)
{
	evr_cli_usage(f,
		"Usage: evring providers -p PID | -n NAME [--json] [--no-sandbox]\n"
		"List what a process offers: its providers, their events and counters.\n",
		longopts, "");
}

static int parse_argv(int argc, char **argv, struct providers_opts *o)
{
	struct evr_cli_getopt g;
	int c, r;

	evr_cli_getopt_init(&g, "+:", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case 'p':
			if (evr_cli_parse_pid(CMD, "--pid", optarg, &o->pid) < 0)
				return -EINVAL;
			break;
		case 'n':
			if (!*optarg) {
				evr_cli_error(CMD, "--name: empty process name");
				return -EINVAL;
			}
			o->name = optarg;
			break;
		default:
			r = evr_cli_common_opt(CMD, c, argv, usage, &o->flags);
			if (r <= 0)
				return r;
		}
	}
	if (evr_cli_no_operands(CMD, argc, argv) < 0)
		return -EINVAL;
	if (!o->pid == !o->name) {
		evr_cli_error(CMD, o->pid ? "-p and -n exclude each other"
				 : "say which process: -p PID or -n NAME (try --help)");
		return -EINVAL;
	}
	return 1;
}

static const char *level_name(uint8_t level)
{
	static const char *const names[] = { "always", "critical", "error", "warning", "info",
					     "verbose" };

	return level < sizeof(names) / sizeof(names[0]) ? names[level] : "?";
}

static const char *opcode_name(uint8_t op)
{
	return op == 1 ? "start" : op == 2 ? "stop" : "";
}

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = { "?", "mean", "incrementing", "gauge", "poll-rate",
					     "histogram" };

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

/*
 * Events every provider has, defined by libevring itself (dynamic and JSON
 * events, counter samples): their provider-local ids are at the top of the range.
 */
static bool builtin(const struct evr_schema_event *e)
{
	return e->id >= 0xffffff00u;
}

/* The providers in order of first appearance, among events and counters. */
struct names {
	const char **v;
	uint32_t n, cap;
};

static int names_add(struct names *ns, const char *name)
{
	for (uint32_t i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i], name) == 0)
			return 0;
	if (ns->n == ns->cap) {
		uint32_t cap = ns->cap ? 2 * ns->cap : 16;
		const char **nv = reallocarray(ns->v, cap, sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		ns->v = nv;
		ns->cap = cap;
	}
	ns->v[ns->n++] = name;
	return 0;
}

static void print_text(const struct evr_process_info *pi, const struct names *ps,
		       const struct evr_schema_set *set, const struct evr_counter_info *ctr,
		       uint32_t nctr)
{
	uint32_t nev = evr_schema_set_count(set);

	printf("Process %u", pi->pid);
	for (uint32_t i = 0; i < pi->argc; i++)
		printf(i ? " %s" : " (%s", pi->argv[i]);
	printf("%s: %u providers, %u events, %u counters\n", pi->argc ? ")" : "", ps->n, nev,
	       nctr);
	for (uint32_t p = 0; p < ps->n; p++) {
		uint32_t ne = 0, nc = 0;

		for (uint32_t i = 0; i < nev; i++)
			ne += strcmp(evr_schema_set_at(set, i)->provider, ps->v[p]) == 0;
		for (uint32_t i = 0; i < nctr; i++)
			nc += strcmp(ctr[i].provider, ps->v[p]) == 0;
		printf("\nProvider %s: %u events, %u counters\n", ps->v[p], ne, nc);
		if (ne)
			printf("  %-32s %5s %-8s %-18s %-6s %s\n", "EVENT", "ID", "LEVEL", "KEYWORDS",
			       "OPCODE", "FIELDS");
		for (uint32_t i = 0; i < nev; i++) {
			const struct evr_schema_event *e = evr_schema_set_at(set, i);
			char kw[24], id[16];

			if (strcmp(e->provider, ps->v[p]) != 0)
				continue;
			snprintf(kw, sizeof(kw), "0x%" PRIx64, e->keywords);
			if (builtin(e))
				snprintf(id, sizeof(id), "-");
			else
				snprintf(id, sizeof(id), "%u", e->id);
			printf("  %-32s %5s %-8s %-18s %-6s", e->name, id, level_name(e->level), kw,
			       opcode_name(e->opcode));
			for (uint32_t f = 0; f < e->nfields; f++) {
				const char *t = evr_field_type_name(e->fields[f].type);

				printf(" %s:%s", e->fields[f].name, t ? t : "?");
			}
			putchar('\n');
		}
		if (nc)
			printf("  %-32s %-13s %-8s %s\n", "COUNTER", "KIND", "UNIT", "DISPLAY NAME");
		for (uint32_t i = 0; i < nctr; i++) {
			if (strcmp(ctr[i].provider, ps->v[p]) != 0)
				continue;
			printf("  %-32s %-13s %-8s %s\n", ctr[i].name, kind_name(ctr[i].kind),
			       *ctr[i].unit ? ctr[i].unit : "-", ctr[i].display_name);
		}
	}
}

static void print_json(const struct evr_process_info *pi, const struct names *ps,
		       const struct evr_schema_set *set, const struct evr_counter_info *ctr,
		       uint32_t nctr)
{
	uint32_t nev = evr_schema_set_count(set);

	printf("{\"pid\":%u,\"argv\":[", pi->pid);
	for (uint32_t i = 0; i < pi->argc; i++) {
		if (i)
			putchar(',');
		evr_json_fputs(stdout, pi->argv[i]);
	}
	printf("],\"providers\":[");
	for (uint32_t p = 0; p < ps->n; p++) {
		bool first = true;

		printf("%s{\"name\":", p ? "," : "");
		evr_json_fputs(stdout, ps->v[p]);
		printf(",\"events\":[");
		for (uint32_t i = 0; i < nev; i++) {
			const struct evr_schema_event *e = evr_schema_set_at(set, i);

			if (strcmp(e->provider, ps->v[p]) != 0)
				continue;
			printf("%s{\"name\":", first ? "" : ",");
			first = false;
			evr_json_fputs(stdout, e->name);
			printf(",\"id\":%u,\"rid\":%u,\"builtin\":%s,\"level\":%u,\"level_name\":"
			       "\"%s\",\"keywords\":\"0x%" PRIx64 "\",\"opcode\":%u,\"fields\":[",
			       e->id, e->rid, builtin(e) ? "true" : "false", e->level,
			       level_name(e->level), e->keywords, e->opcode);
			for (uint32_t f = 0; f < e->nfields; f++) {
				const char *t = evr_field_type_name(e->fields[f].type);

				printf("%s{\"name\":", f ? "," : "");
				evr_json_fputs(stdout, e->fields[f].name);
				printf(",\"type\":\"%s\"}", t ? t : "?");
			}
			printf("]}");
		}
		printf("],\"counters\":[");
		first = true;
		for (uint32_t i = 0; i < nctr; i++) {
			if (strcmp(ctr[i].provider, ps->v[p]) != 0)
				continue;
			printf("%s{\"name\":", first ? "" : ",");
			first = false;
			evr_json_fputs(stdout, ctr[i].name);
			printf(",\"display_name\":");
			evr_json_fputs(stdout, ctr[i].display_name);
			printf(",\"unit\":");
			evr_json_fputs(stdout, ctr[i].unit);
			printf(",\"kind\":\"%s\"}", kind_name(ctr[i].kind));
		}
		printf("]}");
	}
	printf("]}\n");
}

/* The work, as evr_cli_main()'s run step. */
static int run(void *arg)
{
	const struct providers_opts *o = arg;
	struct evr_schema_set *set = NULL;
	struct evr_counter_info *ctr = NULL;
	struct evr_client *c = NULL;
	struct names ps = { 0 };
	uint32_t nctr = 0;
	char err[1024];
	int ret, sock, pidfd;

	/* Connected (every check on the socket made) before confinement; the
	 * agent's words are read after it. */
	ret = evr_client_open_socket(o->pid, &sock, &pidfd, err, sizeof(err));
	if (ret < 0) {
		evr_cli_error(CMD, "%s", err);
		return ret;
	}
	setvbuf(stdout, NULL, _IOFBF, 1u << 16);
	ret = evr_cli_sandbox_enter(CMD, EVR_SANDBOX_ATTACHED, &o->flags);
	if (ret < 0) {
		close(sock);
		if (pidfd >= 0)
			close(pidfd);
		return ret;
	}
	if (o->flags.sandbox_probe)
		evr_cli_sandbox_probe(CMD);
	ret = evr_client_adopt(o->pid, sock, pidfd, "evring providers", &c, err, sizeof(err));
	if (ret == 0)
		ret = evr_schema_set_new(&set) < 0 ? -ENOMEM : 0;
	if (ret == 0)
		ret = evr_client_list_events(c, set, err, sizeof(err));
	if (ret == 0) {
		ret = evr_client_list_counters(c, &ctr, &nctr, err, sizeof(err));
		/* An older producer: events only. */
		if (ret == -EOPNOTSUPP) {
			evr_cli_warn(CMD, "process %d cannot list its counters (an older libevring)",
				     (int)o->pid);
			ret = 0;
		}
	}
	if (ret < 0) {
		evr_cli_error(CMD, "%s", ret == -ENOMEM && !*err ? "out of memory" : err);
		goto out;
	}
	for (uint32_t i = 0; i < evr_schema_set_count(set) && ret == 0; i++)
		ret = names_add(&ps, evr_schema_set_at(set, i)->provider);
	for (uint32_t i = 0; i < nctr && ret == 0; i++)
		ret = names_add(&ps, ctr[i].provider);
	if (ret < 0) {
		evr_cli_error(CMD, "out of memory");
		goto out;
	}
	if (o->flags.json)
		print_json(evr_client_process(c), &ps, set, ctr, nctr);
	else
		print_text(evr_client_process(c), &ps, set, ctr, nctr);
	if (fflush(stdout) != 0) {
		evr_cli_error(CMD, "cannot write the list: %s", strerror(errno));
		ret = -EIO;
	}
out:
	free(ps.v);
	evr_counter_info_free(ctr, nctr);
	evr_schema_set_free(set);
	evr_client_free(c);
	return ret;
}

/* -n NAME: its pid, for evr_cli_main(). */
static int cli_prepare(void *arg)
{
	struct providers_opts *o = arg;

	return o->name ? evr_cli_pid_of_name(CMD, o->name, &o->pid) : 0;
}

int evr_cmd_providers(int argc, char **argv)
{
	static const struct evr_cli_steps steps = { .prepare = cli_prepare, .run = run };
	struct providers_opts o = { 0 };

	return evr_cli_main(parse_argv(argc, argv, &o), &steps, &o);
}
