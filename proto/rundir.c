// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The runtime directories where agents listen, and the check that one can be
 * trusted (rules in <evring/rundir.h>). Shared by the agent and the consumers
 * so that both sides always agree.
 */
#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/rundir.h>

__attribute__((format(printf, 4, 5)))
static int fail(char *errbuf, size_t errlen, int err, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

bool evr_rundir_is_default(void)
{
	const char *env = secure_getenv("EVR_RUNTIME_DIR");

	return !env || !*env;
}

size_t evr_rundir_decimal(char out[10], unsigned int v)
{
	char digits[10];
	size_t n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = digits[n - 1 - i];
	return n;
}

/* @prefix, @uid in decimal, @suffix into @buf (of EVR_RUNDIR_LEN bytes; the two
 * fixed strings here fit). */
static void uid_path(char *buf, const char *prefix, uid_t uid, const char *suffix)
{
	size_t pl = strlen(prefix), n;

	memcpy(buf, prefix, pl);
	n = evr_rundir_decimal(buf + pl, (unsigned int)uid);
	memcpy(buf + pl + n, suffix, strlen(suffix) + 1);
}

/* /run/user/@uid exists, is @uid's own and closed to everyone else. */
static bool xdg_runtime_ok(uid_t uid)
{
	char path[EVR_RUNDIR_LEN];
	struct stat st;

	uid_path(path, "/run/user/", uid, "");
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
	       (st.st_mode & 077) == 0;
}

int evr_rundir_candidates(uid_t uid, char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN],
			  unsigned int *ret_n)
{
	const char *env = secure_getenv("EVR_RUNTIME_DIR");
	unsigned int n = 0;
	size_t len;

	if (env && *env) {
		len = strlen(env);
		if (len >= EVR_RUNDIR_LEN)
			return -ENAMETOOLONG;
		memcpy(dirs[0], env, len + 1);
		*ret_n = 1;
		return 0;
	}
	if (xdg_runtime_ok(uid))
		uid_path(dirs[n++], "/run/user/", uid, "/evring");
	uid_path(dirs[n++], "/tmp/evring-", uid, "");
	*ret_n = n;
	return 0;
}

/* "uid 65534 (nobody)" into @buf. */
static const char *user_name(uid_t uid, char *buf, size_t len)
{
	char pwbuf[1024];
	struct passwd pw, *pwp = NULL;

	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 && pwp)
		snprintf(buf, len, "uid %u (%s)", (unsigned int)uid, pwp->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned int)uid);
	return buf;
}

int evr_rundir_check(const char *dir, uid_t uid, char *errbuf, size_t errlen)
{
	struct stat st;

	if (lstat(dir, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return -ENOENT;
		return fail(errbuf, errlen, -errno, "cannot examine %s: %s", dir, strerror(errno));
	}
	return evr_rundir_check_stat(&st, dir, uid, errbuf, errlen);
}

int evr_rundir_check_stat(const struct stat *stp, const char *dir, uid_t uid, char *errbuf,
			  size_t errlen)
{
	const struct stat st = *stp;
	char owner[96], want[96];

	if (!S_ISDIR(st.st_mode))
		return fail(errbuf, errlen, -EPERM,
			    "refusing %s: it is %s, not a directory; someone may have put it there "
			    "to impersonate evring agents: remove it, then restart the traced process",
			    dir, S_ISLNK(st.st_mode) ? "a symbolic link" : "a file");
	if (st.st_uid != uid)
		return fail(errbuf, errlen, -EPERM,
			    "refusing %s: it belongs to %s, not to %s whose agents it should hold "
			    "(mode %04o); another user may have created it to impersonate evring "
			    "agents: remove it (as root: rm -r %s), then restart the traced process",
			    dir, user_name(st.st_uid, owner, sizeof(owner)),
			    user_name(uid, want, sizeof(want)), (unsigned int)(st.st_mode & 07777),
			    dir);
	if (st.st_mode & 022)
		return fail(errbuf, errlen, -EPERM,
			    "refusing %s: its mode %04o lets other users create sockets in it "
			    "(evring needs 0700); run chmod 0700 %s, remove the sockets in it you "
			    "did not create, then restart the traced process",
			    dir, (unsigned int)(st.st_mode & 07777), dir);
	return 0;
}
