// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: a process by name (`-n NAME`, as the dotnet tools have it),
 * among those one may attach to (evr_process_list()). A process is named NAME
 * when NAME is its comm (/proc/PID/comm, the kernel's 15 characters), or the
 * last component of its executable (/proc/PID/exe) or of its argv[0]: so a
 * program with a long name is found by its full name too, and an interpreter's
 * script by what it was started as.
 *
 * Ambiguity is an error that lists the candidates, and no match says whether a
 * process of that name exists without the agent, so that the user knows which.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client-internal.h"

#define fail evr_client_fail

/* At most this many candidates are named in a message. */
#define NAMES_SHOWN 5

/* Read /proc/@pid/@what whole (NUL-terminated, at most @len - 1 bytes). */
static ssize_t proc_read(pid_t pid, const char *what, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Is process @pid named @name? */
static bool named(pid_t pid, const char *name)
{
	char buf[PATH_MAX], path[64];
	ssize_t n;
	int r = evr_client_dialin_named(pid, name);

	/* Listen mode's id of a process in another pid namespace: no /proc entry here. */
	if (r >= 0)
		return r == 1;
	n = proc_read(pid, "comm", buf, sizeof(buf));
	if (n > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, name) == 0)
			return true;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		/* A deleted (replaced) executable still has its name. */
		if (n > 10 && strcmp(buf + n - 10, " (deleted)") == 0)
			buf[n - 10] = '\0';
		if (strcmp(base_of(buf), name) == 0)
			return true;
	}
	/* argv[0] is the first string of cmdline. */
	n = proc_read(pid, "cmdline", buf, sizeof(buf));
	return n > 0 && strcmp(base_of(buf), name) == 0;
}

/* "4242 (./app --port 80)" into @buf: the command line, cut short. */
static void describe(pid_t pid, char *buf, size_t len)
{
	char cmd[96];
	ssize_t n = proc_read(pid, "cmdline", cmd, sizeof(cmd));

	for (ssize_t i = 0; i < n - 1; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	if (n <= 0)
		snprintf(cmd, sizeof(cmd), "?");
	snprintf(buf, len, "%d (%s%s)", (int)pid, cmd, n == (ssize_t)sizeof(cmd) - 1 ? "..." : "");
}

int evr_process_find(const char *name, pid_t **ret, uint32_t *ret_n)
{
	pid_t *all = NULL;
	uint32_t n = 0, k = 0;
	int err;

	if (!name || !*name || !ret || !ret_n)
		return -EINVAL;
	err = evr_process_list(&all, &n);
	if (err < 0)
		return err;
	for (uint32_t i = 0; i < n; i++)
		if (named(all[i], name))
			all[k++] = all[i];
	*ret = all;
	*ret_n = k;
	return 0;
}

/* Processes named @name that run no agent we may use: how many, and the first. */
static uint32_t others_named(const char *name, const pid_t *agents, uint32_t nagents,
			     pid_t *ret_first)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	uint32_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		bool agent = false;

		if (*end || pid <= 0 || pid == getpid())
			continue;
		for (uint32_t i = 0; i < nagents && !agent; i++)
			agent = agents[i] == pid;
		if (agent || !named((pid_t)pid, name))
			continue;
		if (n++ == 0)
			*ret_first = (pid_t)pid;
	}
	closedir(d);
	return n;
}

int evr_process_resolve_name(const char *name, pid_t *ret_pid, char *errbuf, size_t errlen)
{
	char list[NAMES_SHOWN * 120 + 64], one[120];
	pid_t *v = NULL, first = 0;
	uint32_t n = 0, others;
	size_t used = 0;
	int err;

	if (!name || !*name || !ret_pid)
		return fail(errbuf, errlen, -EINVAL, "an empty process name");
	err = evr_process_find(name, &v, &n);
	if (err < 0)
		return fail(errbuf, errlen, err, "cannot list processes: %s", strerror(-err));
	if (n == 1) {
		*ret_pid = v[0];
		free(v);
		return 0;
	}
	if (n == 0) {
		free(v);
		v = NULL;
		if (evr_process_list(&v, &n) < 0)
			n = 0;
		others = others_named(name, v, n, &first);
		free(v);
		if (others == 1)
			return fail(errbuf, errlen, -ESRCH,
				    "no process named %s runs libevring's agent (process %d of that "
				    "name does not; evring ps lists those that do)", name, (int)first);
		if (others > 1)
			return fail(errbuf, errlen, -ESRCH,
				    "no process named %s runs libevring's agent (%u processes of that "
				    "name do not; evring ps lists those that do)", name, others);
		return fail(errbuf, errlen, -ESRCH,
			    "no process named %s runs libevring's agent (evring ps lists those that do)",
			    name);
	}
	list[0] = '\0';
	for (uint32_t i = 0; i < n && i < NAMES_SHOWN; i++) {
		describe(v[i], one, sizeof(one));
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 one);
	}
	if (n > NAMES_SHOWN)
		snprintf(list + used, sizeof(list) - used, " and %u more", n - NAMES_SHOWN);
	free(v);
	return fail(errbuf, errlen, -ENOTUNIQ,
		    "%u processes named %s run libevring's agent: %s; choose one with -p PID", n,
		    name, list);
}
