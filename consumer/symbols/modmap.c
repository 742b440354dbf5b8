// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Module maps: which file is mapped where in a process, with its build ID, so
 * that addresses can be symbolized later and elsewhere (pprof's Mapping,
 * perf's MMAP2 + build-id cache, LTTng's bin_info do the same). Read from
 * /proc/PID/maps when recording starts; kept in MODULES chunks of the trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include <evring/symbols.h>
#include <evring/untrusted-file.h>

#include "symbols-internal.h"

/* One MODULES chunk record: this header, then path_len bytes, zero-padded to 8. */
struct modules_rec {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff;
	uint64_t time_ns;
	uint32_t pid;
	uint16_t path_len;
	uint8_t build_id_len;
	uint8_t flags;			/* EVR_MODULE_ANON, EVR_MODULE_VDSO */
	uint8_t build_id[EVR_BUILD_ID_MAX];
	uint32_t reserved;		/* 0 */
};
_Static_assert(sizeof(struct modules_rec) == 64, "MODULES record layout");

#define MODULES_MAX_BYTES (16u << 20)

int evr_modmap_new(struct evr_modmap **ret)
{
	struct evr_modmap *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	*ret = m;
	return 0;
}

void evr_modmap_free(struct evr_modmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	free(m);
}

int evr_modmap_add(struct evr_modmap *m, const struct evr_module *mod)
{
	struct evr_module *d;

	if (!m || !mod || !mod->path || mod->end <= mod->start ||
	    mod->build_id_len > EVR_BUILD_ID_MAX)
		return -EINVAL;
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 32;
		struct evr_module *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	d = &m->v[m->n];
	*d = *mod;
	d->path = strdup(mod->path);
	if (!d->path)
		return -ENOMEM;
	m->n++;
	return 0;
}

int evr_build_id_read(const char *path, uint8_t ret[EVR_BUILD_ID_MAX])
{
	const void *id;
	ssize_t n;
	Elf *elf;
	int fd, err;

	elf_version(EV_CURRENT);
	/* The name comes from the process (its maps, or a trace of it): see <evring/untrusted-file.h>. */
	fd = evr_untrusted_open(AT_FDCWD, path, NULL, NULL);
	if (fd == -EPERM)
		return -ENOEXEC;
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	n = dwelf_elf_gnu_build_id(elf, &id);
	if (n <= 0) {
		err = 0;
	} else {
		if (n > (ssize_t)EVR_BUILD_ID_MAX)
			n = EVR_BUILD_ID_MAX;
		memcpy(ret, id, (size_t)n);
		err = (int)n;
	}
out:
	elf_end(elf);
	close(fd);
	return err;
}

const char *evr_build_id_hex(const uint8_t *id, size_t len, char *buf, size_t buflen)
{
	size_t o = 0;

	if (!buflen)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < len && o + 3 <= buflen; i++, o += 2)
		snprintf(buf + o, buflen - o, "%02x", id[i]);
	return buf;
}

int evr_module_kind(const char *name)
{
	/* Anonymous memory: unnamed in /proc/PID/maps, "//anon" in perf records,
	 * "[anon:NAME]" once named with prctl(PR_SET_VMA_ANON_NAME). */
	if (name[0] == '\0' || strcmp(name, "//anon") == 0 || strncmp(name, "[anon:", 6) == 0)
		return EVR_MODULE_ANON;
	if (name[0] == '/')
		return 0;
	if (strcmp(name, "[vdso]") == 0)
		return EVR_MODULE_VDSO;
	return -1;	/* [vsyscall], [stack]...: no code of the process's own */
}

int evr_modmap_read_pid(struct evr_modmap *m, pid_t pid, uint64_t time_ns)
{
	char path[64], line[4608], root[4200];
	int added = 0, ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[8], dev[16];
		unsigned long long ino;
		struct evr_module mod = { 0 };
		int pos = 0, kind;
		char *file;
		size_t l;

		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %n", &start, &end, perms, &off, dev,
			   &ino, &pos) < 6 || !pos)
			continue;
		file = line + pos;
		l = strlen(file);
		while (l && (file[l - 1] == '\n' || file[l - 1] == ' '))
			file[--l] = '\0';
		kind = evr_module_kind(file);
		if (perms[2] != 'x' || kind < 0)
			continue;
		if (!kind && l > 10 && strcmp(file + l - 10, " (deleted)") == 0)
			continue;
		mod.start = start;
		mod.end = end;
		mod.time_ns = time_ns;
		mod.pid = (uint32_t)pid;
		mod.flags = (uint8_t)kind;
		mod.path = kind == EVR_MODULE_ANON ? (char *)"[anon]" : file;
		if (!kind) {
			mod.pgoff = off;
			snprintf(root, sizeof(root), "/proc/%d/root%s", (int)pid, file);
			ret = evr_build_id_read(root, mod.build_id);
			mod.build_id_len = ret > 0 ? (uint8_t)ret : 0;
		}
		ret = evr_modmap_add(m, &mod);
		if (ret < 0)
			break;
		added++;
	}
	fclose(f);
	if (ret < 0 && ret != -ENOENT && ret != -EACCES && ret != -ENOEXEC)
		return ret;
	return added;
}

static int cmp_start(const void *a, const void *b)
{
	const struct evr_module *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* Stable: the later one last, so that it wins in evr_modmap_find(). */
	return x < y ? -1 : x > y;
}

void evr_modmap_sort(struct evr_modmap *m)
{
	if (m && m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), cmp_start);
}

const struct evr_module *evr_modmap_find(const struct evr_modmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m ? m->n : 0;

	/* The last mapping starting at or below addr, then back over overlaps. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {
		if (addr < m->v[i].end)
			return &m->v[i];
		/* Mappings rarely nest; a few steps back cover re-mapped ranges. */
		if (lo - i > 8)
			break;
	}
	return NULL;
}

int evr_modmap_encode(const struct evr_modmap *m, void **ret, size_t *ret_len)
{
	size_t len = 0, o = 0;
	uint8_t *buf;

	for (size_t i = 0; i < m->n; i++) {
		size_t pl = strlen(m->v[i].path);

		if (pl > UINT16_MAX)
			pl = UINT16_MAX;
		len += sizeof(struct modules_rec) + ((pl + 7) & ~(size_t)7);
	}
	if (len > MODULES_MAX_BYTES)
		return -E2BIG;
	buf = calloc(1, len ? len : 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		const struct evr_module *mod = &m->v[i];
		struct modules_rec r = { 0 };
		size_t pl = strlen(mod->path);

		if (pl > UINT16_MAX)
			pl = UINT16_MAX;
		r.start = mod->start;
		r.end = mod->end;
		r.pgoff = mod->pgoff;
		r.time_ns = mod->time_ns;
		r.pid = mod->pid;
		r.path_len = (uint16_t)pl;
		r.build_id_len = mod->build_id_len;
		r.flags = mod->flags;
		memcpy(r.build_id, mod->build_id, mod->build_id_len);
		memcpy(buf + o, &r, sizeof(r));
		o += sizeof(r);
		memcpy(buf + o, mod->path, pl);
		o += (pl + 7) & ~(size_t)7;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

int evr_modmap_decode(struct evr_modmap *m, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t o = 0, first = m->n;
	int n = 0, err;

	/* Check the whole chunk before adding anything. */
	while (o < len) {
		struct modules_rec r;

		if (len - o < sizeof(r))
			return -EBADMSG;
		memcpy(&r, p + o, sizeof(r));
		if (r.end <= r.start || r.build_id_len > EVR_BUILD_ID_MAX || r.path_len == 0 ||
		    len - o - sizeof(r) < (((size_t)r.path_len + 7) & ~(size_t)7))
			return -EBADMSG;
		o += sizeof(r) + (((size_t)r.path_len + 7) & ~(size_t)7);
	}
	for (o = 0; o < len;) {
		struct modules_rec r;
		struct evr_module mod = { 0 };
		char *path;

		memcpy(&r, p + o, sizeof(r));
		path = strndup((const char *)p + o + sizeof(r), r.path_len);
		if (!path) {
			err = -ENOMEM;
			goto undo;
		}
		mod.start = r.start;
		mod.end = r.end;
		mod.pgoff = r.pgoff;
		mod.time_ns = r.time_ns;
		mod.pid = r.pid;
		mod.build_id_len = r.build_id_len;
		/* Flags of later versions mean nothing here: such a record is no file. */
		mod.flags = r.flags & (EVR_MODULE_ANON | EVR_MODULE_VDSO);
		if (r.flags && !mod.flags)
			mod.flags = EVR_MODULE_ANON;
		memcpy(mod.build_id, r.build_id, r.build_id_len);
		mod.path = path;
		err = evr_modmap_add(m, &mod);
		free(path);
		if (err < 0)
			goto undo;
		n++;
		o += sizeof(r) + (((size_t)r.path_len + 7) & ~(size_t)7);
	}
	return n;
undo:
	while (m->n > first)
		free(m->v[--m->n].path);
	return err;
}
