// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A recorded trace into the format a client asked for, as a file the server
 * sends with sendfile: evring's own format as recorded; Chrome trace-event
 * JSON and JSON lines through libevring-export's converters; CTF 1.8 as a tar
 * (libarchive) of the directory the CTF converter writes.
 *
 * Every file is unnamed (O_TMPFILE) in the output directory, or unlinked at
 * once where the file system lacks O_TMPFILE: nothing is left behind when the
 * monitor dies. Nothing is held in memory but a converter's bounded state.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <evring/export.h>
#include <evring/symbols.h>
#include <evring/trace.h>

#include "http.h"
#include "trace-internal.h"

int evr_mon_tmpfile(const char *dir, char *err, size_t errlen)
{
	char path[4096];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0)
		return fd;
	/* No O_TMPFILE here (some file systems): a named file, unlinked at once. */
	snprintf(path, sizeof(path), "%s/evring-monitor-XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;

		snprintf(err, errlen, "cannot create a file in %s (--output-dir): %s", dir,
			 strerror(-e));
		return e;
	}
	unlink(path);
	return fd;
}

const char *evr_mon_format_ctype(enum evr_mon_format f)
{
	switch (f) {
	case EVR_MON_FMT_CHROME: return "application/json";
	case EVR_MON_FMT_JSONL: return "application/x-ndjson";
	case EVR_MON_FMT_CTF: return "application/x-tar";
	case EVR_MON_FMT_SPEEDSCOPE: return "application/json";
	case EVR_MON_FMT_FOLDED: return "text/plain; charset=utf-8";
	default: return "application/octet-stream";
	}
}

void evr_mon_trace_filename(pid_t pid, uint64_t realtime_ns, enum evr_mon_format f, char *buf,
			    size_t len)
{
	/* Indexed by enum evr_mon_format; the profiles' as `evring convert` names them. */
	static const char *const ext[] = { "evtrace", "json", "jsonl", "ctf.tar", "folded",
					   "speedscope.json", "pb.gz" };
	time_t t = (time_t)(realtime_ns / 1000000000u);
	struct tm tm;
	char when[32] = "trace";

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(buf, len, "%d-%s.%s", (int)pid, when, ext[f]);
}

/* ---- CTF as a tar --------------------------------------------------------------- */

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[4096];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int tar_dir(const char *dir, const char *top, int out, char *err, size_t errlen)
{
	struct archive *a = archive_write_new();
	struct archive_entry *ent = NULL;
	char buf[65536];
	DIR *d = NULL;
	struct dirent *e;
	int r = 0;

	if (!a)
		return -ENOMEM;
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_fd(a, out) != ARCHIVE_OK) {
		snprintf(err, errlen, "cannot write the tar: %s", archive_error_string(a));
		r = -EIO;
		goto out;
	}
	d = opendir(dir);
	if (!d) {
		r = -errno;
		snprintf(err, errlen, "cannot read %s: %s", dir, strerror(-r));
		goto out;
	}
	/* The metadata first: readers that stream a tar find it before the streams. */
	for (int pass = 0; pass < 2 && r == 0; pass++) {
		rewinddir(d);
		while (r == 0 && (e = readdir(d))) {
			char path[4096], name[512];
			struct stat st;
			ssize_t n;
			int fd;

			if (e->d_name[0] == '.' || (!strcmp(e->d_name, "metadata")) != (pass == 0))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || fstat(fd, &st) < 0) {
				r = -errno;
				snprintf(err, errlen, "cannot read %s: %s", path, strerror(-r));
				if (fd >= 0)
					close(fd);
				break;
			}
			ent = archive_entry_new();
			snprintf(name, sizeof(name), "%s/%s", top, e->d_name);
			archive_entry_set_pathname(ent, name);
			archive_entry_set_size(ent, st.st_size);
			archive_entry_set_filetype(ent, AE_IFREG);
			archive_entry_set_perm(ent, 0644);
			archive_entry_set_mtime(ent, st.st_mtime, 0);
			if (archive_write_header(a, ent) != ARCHIVE_OK)
				r = -EIO;
			while (r == 0 && (n = read(fd, buf, sizeof(buf))) > 0)
				if (archive_write_data(a, buf, (size_t)n) != n)
					r = -EIO;
			close(fd);
			archive_entry_free(ent);
			ent = NULL;
			if (r < 0)
				snprintf(err, errlen, "cannot write the tar: %s", archive_error_string(a));
		}
	}
	if (r == 0 && archive_write_close(a) != ARCHIVE_OK) {
		snprintf(err, errlen, "cannot write the tar: %s", archive_error_string(a));
		r = -EIO;
	}
out:
	if (d)
		closedir(d);
	archive_write_free(a);
	return r;
}

/* ---- conversion -------------------------------------------------------------------- */

/* The converters' output: the file, as long as the client that wants it is there. */
struct conv_out {
	int fd, client_fd;
	bool gone;
};

static ssize_t conv_write(void *cookie, const char *buf, size_t n)
{
	struct conv_out *o = cookie;
	size_t done = 0;

	if (evr_mon_client_gone(o->client_fd)) {
		/* A failed write: the converter stops with an error at once. */
		o->gone = true;
		errno = ECONNABORTED;
		return -1;
	}
	while (done < n) {
		ssize_t w = write(o->fd, buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

/*
 * folded, speedscope, pprof: the profile of the trace's CPU samples (or, without
 * them, of its events' stacks), symbolized from the binaries its module map
 * names, as `evring convert` writes them (consumer/symbols/).
 */
static int write_profile(struct evr_trace_reader *rd, enum evr_mon_format f, const char *name,
			 FILE *out, char *err, size_t errlen)
{
	struct evr_symbolizer *sym = NULL;
	struct evr_samples *ss = NULL;
	struct evr_profile *p = NULL;
	uint64_t stacks;
	int r;

	r = evr_symbolizer_from_trace(rd, &sym);
	if (r == 0)
		r = evr_samples_load(rd, &ss);
	if (r == -EBADMSG)	/* a malformed SAMPLES chunk: its samples left out */
		r = 0;
	if (r < 0) {
		snprintf(err, errlen, "cannot read the trace's stacks: %s", strerror(-r));
		goto out;
	}
	if (f == EVR_MON_FMT_PPROF) {
		r = evr_pprof_write(rd, sym, ss, false, name, out, &stacks);
	} else {
		r = evr_profile_from_trace(rd, sym, ss, false, &p);
		if (r == 0 && !evr_profile_total(p))
			r = -ENODATA;
		if (r == 0)
			r = f == EVR_MON_FMT_FOLDED ? evr_profile_write_folded(p, out)
						    : evr_profile_write_speedscope(p, name, out);
	}
	if (r == -ENODATA)
		snprintf(err, errlen, "the trace has no CPU samples or event stacks to profile "
			 "(record with sample_cpu or stacks)");
	else if (r < 0)
		snprintf(err, errlen, "cannot write the profile: %s", strerror(-r));
out:
	evr_profile_free(p);
	evr_samples_free(ss);
	evr_symbolizer_free(sym);
	return r;
}

/*
 * A file of several processes (@rd read it: its process table) as chrome or
 * jsonl: a reader per process. Other formats are of one process (the multi
 * route refuses them before recording). Return: 0, -errno with @err.
 */
static int convert_procs(int trace_fd, struct evr_trace_reader *rd, enum evr_mon_format f,
			 FILE *out, char *err, size_t errlen)
{
	const struct evr_trace_proc *procs;
	struct evr_trace_reader **rs;
	struct evr_convert_stats cs = { 0 };
	uint32_t n, k = 0, *pids;
	int r = 0;

	(void)evr_trace_reader_procs(rd, &procs, &n);
	if (f != EVR_MON_FMT_CHROME && f != EVR_MON_FMT_JSONL) {
		snprintf(err, errlen, "a %s file is of one process", evr_mon_format_name(f));
		return -EINVAL;
	}
	rs = calloc(n ? n : 1, sizeof(*rs));
	pids = calloc(n ? n : 1, sizeof(*pids));
	if (!rs || !pids) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < n && r == 0; i++) {
		if (procs[i].end == EVR_TRACE_PROC_FAILED && !procs[i].attach_ns)
			continue;	/* never recorded: nothing to read */
		r = evr_trace_reader_open_fd_stream(trace_fd, procs[i].stream, &rs[k], err,
						    errlen);
		if (r == 0)
			pids[k++] = procs[i].pid;
	}
	if (r == 0)
		r = f == EVR_MON_FMT_CHROME
			    ? evr_convert_chrome_procs(rs, pids, k, out, &cs, err, errlen)
			    : evr_convert_jsonl_procs(rs, pids, k, out, &cs, err, errlen);
out:
	for (uint32_t i = 0; rs && i < k; i++)
		evr_trace_reader_free(rs[i]);
	free(rs);
	free(pids);
	return r;
}

int evr_mon_trace_convert(int trace_fd, enum evr_mon_format f, const char *outdir,
			  const char *top, int client_fd, int *ret_fd, char *err, size_t errlen)
{
	struct conv_out co = { .fd = -1, .client_fd = client_fd };
	struct evr_convert_stats cs;
	struct evr_trace_reader *rd = NULL;
	char dir[4096];
	FILE *out = NULL;
	int fd = -1, r;

	if (f == EVR_MON_FMT_EVTRACE) {
		fd = fcntl(trace_fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		*ret_fd = fd;
		return 0;
	}
	r = evr_trace_reader_open_fd(trace_fd, &rd, err, errlen);
	if (r < 0)
		return r;
	fd = evr_mon_tmpfile(outdir, err, errlen);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	if (f == EVR_MON_FMT_CTF) {
		snprintf(dir, sizeof(dir), "%s/evring-monitor-ctf-XXXXXX", outdir);
		if (!mkdtemp(dir)) {
			r = -errno;
			snprintf(err, errlen, "cannot create a directory in %s: %s", outdir,
				 strerror(-r));
			goto out;
		}
		/* The converter wants an empty directory it may create: one inside. */
		snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/ctf");
		r = evr_convert_ctf(rd, dir, &cs, err, errlen);
		if (r == 0)
			r = tar_dir(dir, top, fd, err, errlen);
		remove_tree(dir);
		*strrchr(dir, '/') = '\0';
		rmdir(dir);
		if (r < 0)
			goto out;
	} else {
		co.fd = fd;
		out = fopencookie(&co, "w", (cookie_io_functions_t){ .write = conv_write });
		if (!out) {
			r = -errno;
			goto out;
		}
		setvbuf(out, NULL, _IOFBF, 1u << 16);
		if (evr_trace_reader_procs(rd, &(const struct evr_trace_proc *){ NULL },
					   &(uint32_t){ 0 }))
			r = convert_procs(trace_fd, rd, f, out, err, errlen);
		else if (f == EVR_MON_FMT_CHROME)
			r = evr_convert_chrome(rd, out, &cs, err, errlen);
		else if (f == EVR_MON_FMT_JSONL)
			r = evr_convert_jsonl(rd, out, &cs, err, errlen);
		else
			r = write_profile(rd, f, top, out, err, errlen);
		if (fclose(out) != 0 && r == 0) {
			r = -errno;
			snprintf(err, errlen, "cannot write the converted trace: %s", strerror(-r));
		}
		if (co.gone) {
			r = -ECONNABORTED;
			snprintf(err, errlen, "the client went away");
		}
		if (r < 0)
			goto out;
	}
	*ret_fd = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	evr_trace_reader_free(rd);
	return r;
}
