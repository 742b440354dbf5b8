// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * main() for a fuzz target without libFuzzer: run it once on every file named,
 * or in the directories named (not recursively), in name order.
 *   fuzz_replay_TARGET DIR|FILE...
 * Exit status 0 when every input ran (a finding aborts), 1 on an I/O error,
 * 77 when a directory holds no input at all (nothing was checked).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static size_t ninputs;

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *buf = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto fail;
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		goto fail;
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	ninputs++;
	return 0;
fail:
	fprintf(stderr, "replay: %s: %s\n", path, strerror(errno ? errno : EIO));
	if (f)
		fclose(f);
	free(buf);
	return -1;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_dir(const char *dir)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, by_name), ret = 0;

	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    run_file(path) < 0)
			ret = -1;
		free(ents[i]);
	}
	free(ents);
	return ret;
}

int main(int argc, char **argv)
{
	int ret = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			ret = -1;
		} else if (S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i])) {
			ret = -1;
		}
	}
	printf("replay: %zu inputs\n", ninputs);
	if (ret < 0)
		return 1;
	return ninputs ? 0 : 77;
}
