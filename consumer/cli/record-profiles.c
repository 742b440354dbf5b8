// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record's dotnet-trace habits, kept apart from the recording itself:
 *
 * - named profiles (--profile cpu-sampling,gc-verbose): provider specs and
 *   sampling options under a name, as dotnet-trace's --profile; `evring
 *   profiles` lists them;
 * - a default output name that does not overwrite an earlier trace:
 *   PROCNAME_YYYYMMDD_HHMMSS.evtrace (dotnet-trace's), with _2, _3... if taken;
 * - --format FORMAT: the trace converted when the recording ends (the .evtrace
 *   is kept: a converter can run again on it, a profile cannot be recorded
 *   again), by a helper process forked before the sandbox, since the confined
 *   recorder may neither exec nor create files.
 *
 * Profiles name providers by '*' and the runtime keywords every runtime-like
 * provider here shares with .NET's (GC 0x1, Loader 0x8, JIT 0x10, Contention
 * 0x4000, Exception 0x8000, ThreadPool 0x10000; examples/minirt/events.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <evring/export.h>

#include "cli.h"
#include "record.h"

#define CMD "record"

struct record_profile {
	const char *name;
	const char *providers;
	uint32_t sample_hz;		/* 0: no CPU sampling */
	uint32_t counter_interval_ms;	/* 0: no counters */
	const char *what;
};

static const struct record_profile profiles[] = {
	{ "cpu-sampling", "*:0xffffffffffffffff:4", 999, 0,
	  "CPU samples of every thread (999 Hz, with stacks), events at Informational" },
	{ "gc-verbose", "*:0x8001:5", 0, 0,
	  "GC and exception events (keywords 0x1, 0x8000) at Verbose: allocation ticks too" },
	{ "gc-collect", "*:0x1:4", 0, 0,
	  "GC collections only (keyword 0x1, Informational): low overhead" },
	{ "counters", "*:0x0:0", 0, 1000, "every provider's counters each second, no events" },
};

#define NPROFILES (sizeof(profiles) / sizeof(profiles[0]))

static const struct record_profile *profile_find(const char *name, size_t len)
{
	for (size_t i = 0; i < NPROFILES; i++)
		if (strlen(profiles[i].name) == len && !strncmp(profiles[i].name, name, len))
			return &profiles[i];
	return NULL;
}

void evr_record_profiles_print(FILE *f, const char *indent)
{
	for (size_t i = 0; i < NPROFILES; i++)
		fprintf(f, "%s%-13s %s\n%s%-13s   (--providers '%s'%s)\n", indent, profiles[i].name,
			profiles[i].what, indent, "", profiles[i].providers,
			profiles[i].sample_hz ? " --sample-cpu" :
			profiles[i].counter_interval_ms ? " --counter-interval 1s" : "");
}

int evr_record_profiles_apply(struct record_opts *o)
{
	size_t need = 1;
	char *spec;

	if (!o->profile)
		return 0;
	need += strlen(o->providers_arg ? o->providers_arg : "") + 1;
	for (const char *p = o->profile;; p++) {
		size_t len = strcspn(p, ",");
		const struct record_profile *rp = profile_find(p, len);

		if (!rp) {
			const char *names[NPROFILES], *near;
			char word[64];

			snprintf(word, sizeof(word), "%.*s", (int)len, p);
			for (size_t i = 0; i < NPROFILES; i++)
				names[i] = profiles[i].name;
			near = evr_cli_closest(word, names, NPROFILES);
			if (near)
				evr_cli_error(CMD, "--profile: no profile '%s'; did you mean %s? "
					      "(evring profiles lists them)", word, near);
			else
				evr_cli_error(CMD, "--profile: no profile '%s' (evring profiles "
					      "lists them)", word);
			return -EINVAL;
		}
		need += strlen(rp->providers) + 1;
		/* Explicit options win over the profile's. */
		if (rp->sample_hz && !o->sample_hz)
			o->sample_hz = rp->sample_hz;
		if (rp->counter_interval_ms && !o->counter_interval_ms)
			o->counter_interval_ms = rp->counter_interval_ms;
		p += len;
		if (!*p)
			break;
	}
	spec = malloc(need);
	if (!spec)
		return -ENOMEM;
	spec[0] = '\0';
	for (const char *p = o->profile;; p++) {
		size_t len = strcspn(p, ",");

		strcat(strcat(spec, spec[0] ? "," : ""), profile_find(p, len)->providers);
		p += len;
		if (!*p)
			break;
	}
	/* --providers adds to the profiles' (dotnet-trace merges them the same way). */
	if (o->providers_arg)
		strcat(strcat(spec, ","), o->providers_arg);
	free(o->owned_providers);
	o->owned_providers = spec;
	o->providers = spec;
	return 0;
}

int evr_record_format_parse(const char *s, struct record_opts *o)
{
	const struct evr_export_format *ef = evr_export_format_find(s);
	char names[128];

	if (!ef) {
		const char *cands[16], *near;
		size_t n = 0;

		for (size_t i = 0; i < evr_export_nformats && n < 16; i++)
			cands[n++] = evr_export_formats[i].name;
		near = evr_cli_closest(s, cands, n);
		evr_cli_error(CMD, "--format: unknown format '%s'%s%s%s (%s)", s,
			      near ? "; did you mean " : "", near ? near : "", near ? "?" : "",
			      evr_export_format_names(names, sizeof(names)));
		return -EINVAL;
	}
	o->format = ef;
	return 0;
}

/* The name of what is recorded: the program's, the process's comm, or -n's. */
static void process_name(const struct record_opts *o, char *buf, size_t len)
{
	const char *s = NULL;
	char comm[64] = "";

	if (o->all) {
		s = "all";
	} else if (o->npids + o->nnames > 1) {
		s = "processes";
	} else if (o->program) {
		s = strrchr(o->program[0], '/');
		s = s ? s + 1 : o->program[0];
	} else if (o->name) {
		s = o->name;
	} else if (o->pid) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)o->pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, comm, sizeof(comm) - 1);

			close(fd);
			comm[n > 0 ? n : 0] = '\0';
			comm[strcspn(comm, "\n")] = '\0';
			s = comm;
		}
	}
	snprintf(buf, len, "%s", s && *s ? s : "trace");
	/* A file name: no slash, nothing that needs quoting in a shell. */
	for (char *p = buf; *p; p++)
		if (*p == '/' || *p == ' ' || (unsigned char)*p < 0x20)
			*p = '_';
}

int evr_record_default_output(struct record_opts *o)
{
	char name[64], stamp[32], path[PATH_MAX];
	time_t now = time(NULL);
	struct stat st;
	struct tm tm;

	if (o->output)
		return 0;
	process_name(o, name, sizeof(name));
	if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &tm))
		snprintf(stamp, sizeof(stamp), "%lld", (long long)now);
	snprintf(path, sizeof(path), "%s_%s.evtrace", name, stamp);
	/* Two recordings within a second: the next free name, never the earlier file. */
	for (unsigned k = 2; stat(path, &st) == 0 && k < 1000; k++)
		snprintf(path, sizeof(path), "%s_%s_%u.evtrace", name, stamp, k);
	free(o->owned_output);
	o->owned_output = strdup(path);
	if (!o->owned_output)
		return -ENOMEM;
	o->output = o->owned_output;
	o->output_name = o->output;
	return 0;
}

/* The converted file's name: the trace's, its .evtrace replaced by the format's suffix. */
static void converted_name(const struct record_opts *o, char *buf, size_t len)
{
	size_t n = strlen(o->output);

	if (n > 8 && !strcmp(o->output + n - 8, ".evtrace"))
		n -= 8;
	snprintf(buf, len, "%.*s%s", (int)n, o->output, o->format->suffix);
}

int evr_record_convert_prepare(struct record_opts *o)
{
	char out[PATH_MAX], exe[PATH_MAX];
	int fds[2];
	pid_t pid;

	if (!o->format)
		return 0;
	if (!strcmp(o->output, "-")) {
		evr_cli_error(CMD, "--format converts the trace file when the recording ends: "
			      "name a file with -o, not stdout");
		return -EINVAL;
	}
	converted_name(o, out, sizeof(out));
	/* This program, for the helper's exec: it is evring itself. */
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0) {
		evr_cli_error(CMD, "--format: cannot find evring's own program: %s",
			      strerror(errno));
		return -errno;
	}
	exe[n] = '\0';
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		evr_cli_error(CMD, "--format: cannot start the converter: %s", strerror(err));
		return -err;
	}
	if (pid == 0) {
		char go = 0;
		char *argv[] = { exe, "convert", (char *)o->output, "--format",
				 (char *)o->format->name, "-o", out, NULL };

		/* Ctrl-C stops the recording, not the conversion that follows it. */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		close(fds[1]);
		if (read(fds[0], &go, 1) != 1 || go != 'g')
			_exit(0);	/* nothing was recorded: nothing to convert */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execv(exe, argv);
		fprintf(stderr, "evring record: cannot run evring convert: %s\n", strerror(errno));
		_exit(1);
	}
	close(fds[0]);
	o->convert_pid = pid;
	o->convert_fd = fds[1];
	return 0;
}

int evr_record_convert_finish(struct record_opts *o, bool recorded)
{
	int status = 0;

	if (!o->convert_pid)
		return 0;
	if (recorded && write(o->convert_fd, "g", 1) != 1)
		recorded = false;
	close(o->convert_fd);
	o->convert_fd = -1;
	while (waitpid(o->convert_pid, &status, 0) < 0 && errno == EINTR)
		;
	o->convert_pid = 0;
	if (!recorded)
		return 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		evr_cli_error(CMD, "the conversion to %s failed; the trace is in %s (evring "
			      "convert can try again)", o->format->name, o->output);
		return -EIO;
	}
	return 0;
}

/* The list, for evr_cli_main(). */
static int profiles_run(void *opts)
{
	(void)opts;
	printf("Profiles of evring record --profile NAME[,NAME...] (options given too win;\n"
	       "--providers adds to them):\n");
	evr_record_profiles_print(stdout, "  ");
	return 0;
}

int evr_cmd_profiles(int argc, char **argv)
{
	static const struct evr_cli_steps steps = { .run = profiles_run };
	int parsed = 1;

	/* No options: --help is the list itself. */
	if (argc > 1 && strcmp(argv[1], "--help") && strcmp(argv[1], "-h")) {
		evr_cli_error("profiles", "takes no arguments (evring profiles)");
		parsed = -EINVAL;
	}
	return evr_cli_main(parsed, &steps, NULL);
}
