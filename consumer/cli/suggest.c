// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * "Did you mean ...?": the nearest of the words a command knows to one it does
 * not (an option, a process name, a profile, a format), as dotnet's and git's
 * tools answer a typo. The distance is Damerau-Levenshtein's (a swap of two
 * neighbours is one edit: "--durtaion"), and a word is only suggested when it is
 * near enough to be the one meant: a third of its length, at least one edit.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <evring/consumer.h>

#include "cli.h"

#define MAXW 64

size_t evr_cli_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[MAXW + 1][MAXW + 1];

	if (la > MAXW || lb > MAXW)
		return la > lb ? la : lb;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t v = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

const char *evr_cli_closest(const char *word, const char *const *cands, size_t n)
{
	size_t len = strlen(word), limit = len / 3 ? len / 3 : 1, best = limit + 1;
	const char *pick = NULL;

	for (size_t i = 0; i < n; i++) {
		size_t dist;

		if (!cands[i] || !strcmp(cands[i], word))
			continue;
		dist = evr_cli_edit_distance(word, cands[i]);
		if (dist < best) {
			best = dist;
			pick = cands[i];
		}
	}
	return pick;
}

/*
 * The long options a subcommand documents, from its --help text (the one list
 * that is sure to be current): every "--name" token in it.
 */
const char *evr_cli_suggest_option(const char *typed, void (*usage)(FILE *f), char *buf,
				   size_t len)
{
	const char *cands[128], *pick;
	char *text = NULL, *p;
	size_t tlen = 0, n = 0;
	char name[MAXW + 3];
	FILE *f;

	if (!usage || strncmp(typed, "--", 2) || !len)
		return NULL;
	f = open_memstream(&text, &tlen);
	if (!f)
		return NULL;
	usage(f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	/* The typed word without its "=value". */
	snprintf(name, sizeof(name), "%s", typed);
	name[strcspn(name, "=")] = '\0';
	for (p = text; (p = strstr(p, "--")) && n < 128;) {
		char *start = p;

		p += 2;
		if (!isalpha((unsigned char)*p))
			continue;
		while (isalnum((unsigned char)*p) || *p == '-')
			p++;
		if (*p)
			*p++ = '\0';	/* ends the token in place */
		cands[n++] = start;
	}
	pick = evr_cli_closest(name, cands, n);
	if (pick)
		snprintf(buf, len, "%s", pick);
	free(text);
	return pick ? buf : NULL;
}

/* /proc/PID/comm of @pid into @buf; false if gone. */
static bool read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return true;
}

const char *evr_cli_suggest_process(const char *name, char *buf, size_t len)
{
	pid_t *pids = NULL;
	uint32_t n = 0;
	char (*comm)[32];
	const char **cands;
	const char *pick = NULL;

	if (!len || evr_process_list(&pids, &n) < 0 || !n) {
		free(pids);
		return NULL;
	}
	comm = calloc(n, sizeof(*comm));
	cands = calloc(n, sizeof(*cands));
	if (comm && cands) {
		for (uint32_t i = 0; i < n; i++)
			if (read_comm(pids[i], comm[i], sizeof(comm[i])))
				cands[i] = comm[i];
		pick = evr_cli_closest(name, cands, n);
		for (uint32_t i = 0; pick && i < n; i++) {
			if (cands[i] != pick)
				continue;
			snprintf(buf, len, "%s (pid %d)", pick, (int)pids[i]);
			pick = buf;
			break;
		}
	}
	free(cands);
	free(comm);
	free(pids);
	return pick;
}
