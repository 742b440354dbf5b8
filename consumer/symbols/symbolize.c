// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Symbolization: program counters to function+offset, module and source line.
 *
 * ELF code goes through elfutils' libdwfl: a Dwfl of the process's modules,
 * either reported from a trace's module map (offline: the files are found at
 * their recorded paths and used only when their build ID matches) or read
 * from /proc/PID/maps (live). libdwfl's own dwfl_module_addrinfo() walks the
 * symbol table linearly on every call (146 us per lookup measured in
 * shared/research/stacks.md §3.1), so each module's function symbols are read
 * once into a sorted array and searched in O(log n), and every resolved
 * address is cached.
 *
 * JIT code has no file: its symbols come from perf maps (/tmp/perf-PID.map,
 * kept in the trace as PERF_MAP chunks), searched before the modules.
 *
 * libdw fetches debug information over the network when DEBUGINFOD_URLS is
 * set; a converter must not, so the symbolizer unsets it in this process.
 */
#include <errno.h>
#include <fcntl.h>
#include <dwarf.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/schema.h>
#include <evring/untrusted-file.h>

#include "symbols-internal.h"

struct fsym {
	uint64_t addr;
	uint64_t size;
	const char *name;		/* borrowed from the module's ELF data */
	uint32_t rank;			/* lower wins at one address: global, weak, local */
};

/* Per Dwfl_Module, kept in its userdata slot. */
struct modsyms {
	struct fsym *v;
	size_t n;
	const char *base;		/* basename of the module's name */
	uint64_t bias;
};

struct jsym {
	uint64_t start;
	uint64_t size;
	char *name;
	size_t seq;			/* order of addition: the later of equal starts wins */
};

struct cache_ent {
	uint64_t key;			/* looked-up address + 1; 0: empty slot */
	struct evr_sym sym;		/* sym.inlined: malloc'ed, or NULL */
	uint64_t func_start;
	int found;
};

/* Offline: one module file, reported once for all its mappings. */
struct offmod {
	const struct evr_module *mod;	/* in s->map */
	int state;			/* 0 not tried, 1 reported, -1 unusable, 2 no file */
};

struct evr_symbolizer {
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	char *debuginfo_path;
	bool offline;
	bool reported;
	struct evr_modmap *map;		/* offline: our sorted copy */
	struct offmod *offmods;
	struct modsyms **allsyms;	/* to free */
	size_t nallsyms, capallsyms;
	struct jsym *jit;
	size_t njit, capjit;
	bool jit_sorted;
	struct cache_ent *cache;
	size_t cache_cap, cache_n;
	struct evr_strbuf warnings;
	uint64_t unmapped;		/* distinct addresses in no module and no JIT symbol */
	uint64_t in_anon;		/* of them, in anonymous executable memory (offline) */
	uint64_t in_vdso;		/* of them, in the vDSO (offline) */
	bool map_has_nofile;		/* the module map records memory that is no file */
	bool have_perf_map;		/* evr_symbolizer_add_perf_map() was called */
};

Dwfl *evr_symbolizer_dwfl(struct evr_symbolizer *s)
{
	return s->dwfl;
}

const struct evr_modmap *evr_symbolizer_modmap(const struct evr_symbolizer *s)
{
	return s->offline ? s->map : NULL;
}

void evr_symbolizer_warn(struct evr_symbolizer *s, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	(void)evr_strbuf_printf(&s->warnings, "%s\n", line);
}

const char *evr_symbolizer_unmapped_note(const struct evr_symbolizer *s, uint32_t pid, char *buf,
					 size_t len)
{
	uint64_t none, anon;
	size_t o = 0;

	if (!s || !s->unmapped)
		return NULL;
	if (!s->map_has_nofile) {
		/* A trace that does not say where anonymous executable memory was (a
		 * live process's symbolizer, or an older recorder): JIT code, the vDSO
		 * and garbage look alike. With a perf map, what it leaves unnamed is
		 * mostly the vDSO: not worth a warning. */
		if (s->have_perf_map)
			return NULL;
		snprintf(buf, len, "%" PRIu64 " code addresses lie in no file (JIT code, or the "
			 "vDSO) and there is no perf map for them (none in the trace, "
			 "/tmp/perf-%u.map missing or not trusted here): they show as addresses",
			 s->unmapped, pid);
		return buf;
	}
	anon = s->have_perf_map ? 0 : s->in_anon;
	none = s->unmapped - s->in_anon - s->in_vdso;
	if (!anon && !none)
		return NULL;
	buf[0] = '\0';
	if (anon)
		o += (size_t)snprintf(buf, len, "%" PRIu64 " code addresses lie in anonymous "
				      "executable memory (JIT code) and there is no perf map for "
				      "them (none in the trace, /tmp/perf-%u.map missing or not "
				      "trusted here)", anon, pid);
	if (none && o < len)
		o += (size_t)snprintf(buf + o, len - o, "%s%" PRIu64 " code addresses lie in no "
				      "mapping of the process (a frame-pointer walk that crossed "
				      "code built without frame pointers read them from the stack)",
				      anon ? "; " : "", none);
	if (o < len)
		snprintf(buf + o, len - o, ": they show as addresses");
	return buf;
}

const char *evr_symbolizer_warnings(const struct evr_symbolizer *s)
{
	return s && s->warnings.buf ? s->warnings.buf : "";
}

static int symbolizer_alloc(struct evr_symbolizer **ret)
{
	struct evr_symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	/* See the top of the file. */
	unsetenv("DEBUGINFOD_URLS");
	s->cache_cap = 1024;
	s->cache = calloc(s->cache_cap, sizeof(*s->cache));
	if (!s->cache) {
		free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

int evr_symbolizer_new_offline(const struct evr_modmap *m, struct evr_symbolizer **ret)
{
	struct evr_symbolizer *s;
	int err;

	err = symbolizer_alloc(&s);
	if (err < 0)
		return err;
	s->offline = true;
	/* Every module is reported with its fd (report_offline()): find_elf is a safe fallback. */
	s->cb.find_elf = evr_dwfl_find_elf;
	s->cb.find_debuginfo = evr_dwfl_find_debuginfo;
	s->cb.debuginfo_path = &s->debuginfo_path;
	s->dwfl = dwfl_begin(&s->cb);
	err = evr_modmap_new(&s->map);
	if (!s->dwfl || err < 0)
		goto fail;
	for (size_t i = 0; m && i < m->n; i++) {
		err = evr_modmap_add(s->map, &m->v[i]);
		if (err < 0)
			goto fail;
	}
	evr_modmap_sort(s->map);
	s->offmods = calloc(s->map->n ? s->map->n : 1, sizeof(*s->offmods));
	if (!s->offmods)
		goto fail;
	for (size_t i = 0; i < s->map->n; i++)
		s->offmods[i].mod = &s->map->v[i];
	*ret = s;
	return 0;
fail:
	evr_symbolizer_free(s);
	return -ENOMEM;
}

int evr_symbolizer_new_pid(pid_t pid, struct evr_symbolizer **ret, char *errbuf, size_t errlen)
{
	struct evr_symbolizer *s;
	char *map;
	ssize_t n;
	int err;

	err = symbolizer_alloc(&s);
	if (err < 0)
		return err;
	/* libdwfl's own callbacks open what the process names with a plain open(): dwfl-files.c. */
	s->cb.find_elf = evr_dwfl_find_elf;
	s->cb.find_debuginfo = evr_dwfl_find_debuginfo;
	s->cb.debuginfo_path = &s->debuginfo_path;
	s->dwfl = dwfl_begin(&s->cb);
	if (!s->dwfl) {
		evr_symbolizer_free(s);
		return -ENOMEM;
	}
	dwfl_report_begin(s->dwfl);
	err = dwfl_linux_proc_report(s->dwfl, pid);
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (err) {
		/* A positive errno value, or -1 for a libdwfl error. */
		err = err > 0 ? -err : -EIO;
		if (err == -ENOENT)
			err = -ESRCH;
		if (errbuf)
			snprintf(errbuf, errlen, "cannot read the memory map of process %d: %s",
				 (int)pid, err == -EIO ? dwfl_errmsg(-1) : strerror(-err));
		evr_symbolizer_free(s);
		return err;
	}
	s->reported = true;
	evr_dwfl_load_elfs(s->dwfl, pid);
	n = evr_perf_map_read(pid, &map);
	if (n >= 0) {
		evr_symbolizer_add_perf_map(s, map, (size_t)n);
		free(map);
	} else if (n == -EPERM) {
		evr_symbolizer_warn(s, "/tmp/perf-%d.map is not a regular file of the process's user: "
				    "not used", (int)pid);
	} else if (n == -EFBIG) {
		evr_symbolizer_warn(s, "/tmp/perf-%d.map is larger than %u MiB: not used", (int)pid,
				    EVR_PERF_MAP_MAX >> 20);
	}
	*ret = s;
	return 0;
}

void evr_symbolizer_free(struct evr_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nallsyms; i++) {
		free(s->allsyms[i]->v);
		free(s->allsyms[i]);
	}
	free(s->allsyms);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	for (size_t i = 0; i < s->njit; i++)
		free(s->jit[i].name);
	free(s->jit);
	for (size_t i = 0; s->cache && i < s->cache_cap; i++)
		free((void *)s->cache[i].sym.inlined);
	free(s->cache);
	free(s->offmods);
	evr_modmap_free(s->map);
	free(s->warnings.buf);
	free(s);
}

/* ---- perf maps ---------------------------------------------------------------- */

int evr_symbolizer_add_perf_map(struct evr_symbolizer *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int added = 0;

	s->have_perf_map = true;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		char line[1024], *q, *name;
		unsigned long long start, size;
		size_t l = (size_t)(le - p);

		if (l >= sizeof(line))
			l = sizeof(line) - 1;
		memcpy(line, p, l);
		line[l] = '\0';
		p = nl ? nl + 1 : end;
		errno = 0;
		start = strtoull(line, &q, 16);
		if (errno || q == line || *q != ' ')
			continue;
		size = strtoull(q + 1, &name, 16);
		if (errno || name == q + 1 || *name != ' ' || !size)
			continue;
		name++;
		if (!*name)
			continue;
		if (s->njit == s->capjit) {
			size_t cap = s->capjit ? s->capjit * 2 : 256;
			struct jsym *v = realloc(s->jit, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			s->jit = v;
			s->capjit = cap;
		}
		s->jit[s->njit].name = strdup(name);
		if (!s->jit[s->njit].name)
			return -ENOMEM;
		s->jit[s->njit].start = start;
		s->jit[s->njit].size = size;
		s->jit[s->njit].seq = s->njit;
		s->njit++;
		added++;
	}
	s->jit_sorted = false;
	/* Cached misses may now resolve. */
	memset(s->cache, 0, s->cache_cap * sizeof(*s->cache));
	s->cache_n = 0;
	return added;
}

static int cmp_jsym(const void *a, const void *b)
{
	const struct jsym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The last symbol covering @a: a later line for the same range wins (code replaced). */
static const struct jsym *jit_find(struct evr_symbolizer *s, uint64_t a)
{
	size_t lo = 0, hi;

	if (!s->njit)
		return NULL;
	if (!s->jit_sorted) {
		qsort(s->jit, s->njit, sizeof(*s->jit), cmp_jsym);
		s->jit_sorted = true;
	}
	hi = s->njit;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->jit[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && lo - i <= 16;)
		if (a - s->jit[i].start < s->jit[i].size)
			return &s->jit[i];
	return NULL;
}

ssize_t evr_perf_map_read(pid_t pid, char **ret)
{
	struct evr_untrusted_rules rules = { .max_size = EVR_PERF_MAP_MAX, .nofollow = true };
	char path[64];
	struct stat st;
	ssize_t n = 0;
	char *buf;
	int fd;

	/*
	 * As perf does: only a map written by the process's own user (or root) is
	 * trusted. A process that is gone (a trace converted later) has no owner to
	 * ask: then only our own user's maps are.
	 */
	if (evr_proc_uid(pid, &rules.owner) < 0)
		rules.owner = geteuid();
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	fd = evr_untrusted_open(AT_FDCWD, path, &rules, &st);
	if (fd < 0)
		return fd;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	/* A map still being written may have grown since: what fstat() saw is enough. */
	while (n < st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)(st.st_size - n));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += r;
	}
	close(fd);
	buf[n] = '\0';
	*ret = buf;
	return n;
}

/* ---- ELF modules ---------------------------------------------------------------- */

/*
 * The load bias of @fd's ELF when its file offset @pgoff is mapped at @start:
 * the PT_LOAD segment holding that offset tells which virtual address it has.
 */
static int elf_bias(Elf *elf, uint64_t start, uint64_t pgoff, uint64_t *ret_bias, bool *ret_exec)
{
	GElf_Ehdr eh;
	size_t n;

	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &n) < 0)
		return -ENOEXEC;
	*ret_exec = eh.e_type == ET_EXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		uint64_t off = ph.p_offset & ~(uint64_t)0xfff;

		if (pgoff >= off && pgoff < ph.p_offset + ph.p_filesz) {
			*ret_bias = start - ((ph.p_vaddr & ~(uint64_t)0xfff) + (pgoff - off));
			return 0;
		}
	}
	return -ENOEXEC;
}

/* Report every module of an offline map to libdwfl, once. */
static void report_offline(struct evr_symbolizer *s)
{
	dwfl_report_begin(s->dwfl);
	for (size_t i = 0; i < s->map->n; i++) {
		struct offmod *om = &s->offmods[i];
		const struct evr_module *mod = om->mod;
		uint8_t id[EVR_BUILD_ID_MAX];
		uint64_t bias = 0;
		bool exec = false;
		bool dup = false;
		Elf *elf;
		int fd, n;

		/* Executable memory that is no file: nothing to report or open. */
		if (mod->flags) {
			om->state = 2;
			s->map_has_nofile = true;
			continue;
		}
		/* A second mapping of a file already reported (same path and bias) adds nothing. */
		for (size_t j = 0; j < i && !dup; j++)
			dup = s->offmods[j].state == 1 && strcmp(s->offmods[j].mod->path, mod->path) == 0;
		if (dup)
			continue;
		om->state = -1;
		/* A path the trace names (the traced process's): see <evring/untrusted-file.h>. */
		fd = evr_untrusted_open(AT_FDCWD, mod->path, NULL, NULL);
		if (fd < 0) {
			evr_symbolizer_warn(s, "%s: %s: its frames are shown as module+offset",
					    mod->path, fd == -EPERM ? "not a regular file" :
					    strerror(-fd));
			continue;
		}
		n = evr_build_id_read(mod->path, id);
		if (mod->build_id_len && n > 0 &&
		    (n != mod->build_id_len || memcmp(id, mod->build_id, (size_t)n) != 0)) {
			char a[48], b[48];

			evr_symbolizer_warn(s,
					    "%s: build ID %s, the trace has %s (the file changed): its "
					    "frames are shown as module+offset",
					    mod->path, evr_build_id_hex(id, (size_t)n, a, sizeof(a)),
					    evr_build_id_hex(mod->build_id, mod->build_id_len, b,
							     sizeof(b)));
			close(fd);
			continue;
		}
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (!elf || elf_bias(elf, mod->start, mod->pgoff, &bias, &exec) < 0) {
			evr_symbolizer_warn(s, "%s: not an ELF file that maps as recorded", mod->path);
			elf_end(elf);
			close(fd);
			continue;
		}
		elf_end(elf);
		/* libdwfl takes the fd (and closes it). ET_EXEC ignores the base. */
		if (!dwfl_report_elf(s->dwfl, mod->path, mod->path, fd, exec ? 0 : bias, true)) {
			evr_symbolizer_warn(s, "%s: %s", mod->path, dwfl_errmsg(-1));
			close(fd);
			continue;
		}
		om->state = 1;
	}
	dwfl_report_end(s->dwfl, NULL, NULL);
	s->reported = true;
}

static int cmp_fsym(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->size > y->size ? -1 : x->size < y->size;
}

/* The module's function symbols, sorted (built on first use). */
static struct modsyms *module_syms(struct evr_symbolizer *s, Dwfl_Module *mod)
{
	void **ud;
	const char *name;
	struct modsyms *ms;
	Dwarf_Addr bias = 0;
	int n;

	name = dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	if (*ud)
		return *ud;
	ms = calloc(1, sizeof(*ms));
	if (!ms)
		return NULL;
	if (s->nallsyms == s->capallsyms) {
		size_t cap = s->capallsyms ? s->capallsyms * 2 : 32;
		struct modsyms **v = realloc(s->allsyms, cap * sizeof(*v));

		if (!v) {
			free(ms);
			return NULL;
		}
		s->allsyms = v;
		s->capallsyms = cap;
	}
	s->allsyms[s->nallsyms++] = ms;
	*ud = ms;
	ms->base = name ? strrchr(name, '/') : NULL;
	ms->base = ms->base ? ms->base + 1 : name;
	(void)dwfl_module_getelf(mod, &bias);
	ms->bias = bias;
	n = dwfl_module_getsymtab(mod);
	if (n <= 0)
		return ms;
	ms->v = calloc((size_t)n, sizeof(*ms->v));
	if (!ms->v)
		return ms;
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *sn = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);

		if (!sn || !*sn || sym.st_shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		ms->v[ms->n].addr = addr;
		ms->v[ms->n].size = sym.st_size;
		ms->v[ms->n].name = sn;
		ms->v[ms->n].rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
		ms->n++;
	}
	qsort(ms->v, ms->n, sizeof(*ms->v), cmp_fsym);
	return ms;
}

static const struct fsym *fsym_find(const struct modsyms *ms, uint64_t a)
{
	size_t lo = 0, hi = ms->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ms->v[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* The first (best ranked) of the symbols at that address. */
	size_t i = lo - 1;
	uint64_t at = ms->v[i].addr;

	while (i > 0 && ms->v[i - 1].addr == at)
		i--;
	/* A sized symbol must cover the address; an unsized one covers up to the next. */
	if (ms->v[i].size && a - at >= ms->v[i].size)
		return NULL;
	return &ms->v[i];
}

int evr_symbolizer_preload(struct evr_symbolizer *s)
{
	int bad = 0;

	if (!s->reported)
		report_offline(s);
	if (s->offline) {
		for (size_t i = 0; i < s->map->n; i++) {
			Dwfl_Module *m;

			if (s->offmods[i].state != 1) {
				bad += s->offmods[i].state < 0;
				continue;
			}
			m = dwfl_addrmodule(s->dwfl, s->offmods[i].mod->start);
			if (m) {
				Dwarf_Addr bias;

				module_syms(s, m);
				/* Line tables too: they are read at the first lookup otherwise. */
				(void)dwfl_module_getdwarf(m, &bias);
			}
		}
	}
	return bad;
}

/* ---- lookups ------------------------------------------------------------------- */

static struct cache_ent *cache_slot(struct evr_symbolizer *s, uint64_t key)
{
	size_t mask = s->cache_cap - 1;
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & mask;

	while (s->cache[i].key && s->cache[i].key != key)
		i = (i + 1) & mask;
	return &s->cache[i];
}

static void cache_grow(struct evr_symbolizer *s)
{
	struct cache_ent *old = s->cache;
	size_t oldcap = s->cache_cap;
	struct cache_ent *n = calloc(oldcap * 2, sizeof(*n));

	if (!n)
		return;
	s->cache = n;
	s->cache_cap = oldcap * 2;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].key)
			*cache_slot(s, old[i].key) = old[i];
	free(old);
}

/* The name of an inlined subroutine: its abstract origin's. */
static const char *inline_name(Dwarf_Die *die)
{
	Dwarf_Attribute at;

	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &at));
}

/*
 * The functions debug info says are inlined at @a in @mod, innermost first
 * (dwarf_getscopes(): the scopes holding @a, innermost first, up to the
 * function the symbol table names): each is where the previous one was
 * called, the first is at @a's own line. e->sym.file and line then become the
 * call of the outermost, a position in the containing function.
 */
static void resolve_inlined(Dwfl_Module *mod, uint64_t a, struct cache_ent *e)
{
	struct evr_sym_inline *v;
	Dwarf_Die *cu, *scopes = NULL;
	Dwarf_Files *files = NULL;
	const char *file = e->sym.file;
	uint32_t line = e->sym.line, k = 0;
	size_t nfiles = 0;
	Dwarf_Addr bias;
	int n;

	cu = dwfl_module_addrdie(mod, a, &bias);
	if (!cu || (n = dwarf_getscopes(cu, a - bias, &scopes)) <= 0)
		return;
	v = calloc((size_t)n, sizeof(*v));	/* at most one per scope */
	if (v)
		(void)dwarf_getsrcfiles(cu, &files, &nfiles);
	for (int i = 0; v && i < n && dwarf_tag(&scopes[i]) != DW_TAG_subprogram; i++) {
		Dwarf_Attribute at;
		Dwarf_Word cf, cl;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;	/* a lexical block */
		v[k].func = inline_name(&scopes[i]);
		if (!v[k].func)
			v[k].func = "[inlined]";
		v[k].file = file;
		v[k].line = line;
		k++;
		/* The caller's position: where this one was inlined. */
		file = NULL;
		line = 0;
		if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &at), &cf) == 0 &&
		    cf < nfiles)
			file = dwarf_filesrc(files, cf, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &at), &cl) == 0 &&
		    cl <= UINT32_MAX)
			line = (uint32_t)cl;
	}
	free(scopes);
	if (!k) {
		free(v);
		return;
	}
	e->sym.inlined = v;
	e->sym.ninlined = k;
	e->sym.file = line ? file : NULL;
	e->sym.line = file ? line : 0;
}

/*
 * Where an rseq abort handler at @a goes. libevring's rseq critical sections
 * put their abort handlers (the signature, then one `jmp` back into the writing
 * function) in the __rseq_failure section, which has no function symbols; a
 * thread preempted in a critical section is sampled there, its leaf frame then
 * shown as a bare [libevring.so] address. The target of that jmp is the
 * function the thread was writing from. Return: true and *@ret_target.
 */
static bool rseq_abort_target(Dwfl_Module *mod, uint64_t a, uint64_t *ret_target)
{
	GElf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;
		uint64_t off;
		int32_t rel;

		if (!gelf_getshdr(scn, &sh) || a - bias < sh.sh_addr ||
		    a - bias >= sh.sh_addr + sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, "__rseq_failure") || sh.sh_type != SHT_PROGBITS)
			return false;
		d = elf_getdata(scn, NULL);
		off = a - bias - sh.sh_addr;
		if (!d || !d->d_buf || off + 5 > d->d_size ||
		    ((const uint8_t *)d->d_buf)[off] != 0xe9)	/* jmp rel32 */
			return false;
		memcpy(&rel, (const uint8_t *)d->d_buf + off + 1, 4);
		*ret_target = a + 5 + (uint64_t)(int64_t)rel;
		return true;
	}
	return false;
}

static int resolve(struct evr_symbolizer *s, uint64_t a, struct cache_ent *e)
{
	const struct jsym *j;
	Dwfl_Module *mod;
	struct modsyms *ms;
	const struct fsym *f;
	Dwfl_Line *line;
	bool abort_stub = false;
	uint64_t at = a;

	memset(&e->sym, 0, sizeof(e->sym));
	/*
	 * The kernel's half of the address space (system-wide samples, record
	 * --system): no file of the process holds it, and it is no garbage either.
	 */
	if (a >> 63) {
		e->sym.module = "[kernel]";
		e->sym.module_offset = a;	/* kernel symbols are not read yet */
		return 0;
	}
	j = jit_find(s, a);
	if (j) {
		e->sym.func = j->name;
		e->sym.module = "[jit]";
		e->sym.jit = true;
		e->func_start = j->start;
		return 1;
	}
	if (!s->reported)
		report_offline(s);
	mod = dwfl_addrmodule(s->dwfl, a);
	if (!mod) {
		const struct evr_module *m = s->offline ? evr_modmap_find(s->map, a) : NULL;

		/* A file that could not be read was warned about already. */
		if (!m || m->flags) {
			s->unmapped++;
			s->in_anon += m && (m->flags & EVR_MODULE_ANON);
			s->in_vdso += m && (m->flags & EVR_MODULE_VDSO);
		}
		return 0;
	}
	ms = module_syms(s, mod);
	if (!ms)
		return 0;
	e->sym.module = ms->base;
	e->sym.module_offset = a - ms->bias;
	/* An rseq abort handler: named as the function (and line) it jumps back to. */
	if (!fsym_find(ms, a) && rseq_abort_target(mod, a, &at) && fsym_find(ms, at))
		abort_stub = true;
	else
		at = a;
	line = dwfl_module_getsrc(mod, at);
	if (line) {
		int lineno = 0;
		const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);

		if (file && lineno > 0) {
			e->sym.file = file;
			e->sym.line = (uint32_t)lineno;
		}
	}
	f = fsym_find(ms, at);
	if (!f)
		return 0;
	e->sym.func = f->name;
	e->func_start = abort_stub ? a : f->addr;	/* the stub's own offset: 0 */
	resolve_inlined(mod, at, e);
	return 1;
}

int evr_symbolizer_lookup(struct evr_symbolizer *s, uint64_t pc, bool is_return,
			  struct evr_sym *ret)
{
	uint64_t a = is_return && pc ? pc - 1 : pc;
	struct cache_ent *e;

	e = cache_slot(s, a + 1);
	if (!e->key) {
		e->key = a + 1;
		e->found = resolve(s, a, e);
		if (++s->cache_n * 2 > s->cache_cap) {
			cache_grow(s);
			e = cache_slot(s, a + 1);
		}
	}
	*ret = e->sym;
	/* The offset of the pc itself, as eu-stack and perf print it. */
	ret->offset = e->found ? pc - e->func_start : 0;
	if (ret->module && !ret->jit)
		ret->module_offset = e->sym.module_offset + (pc - a);
	return e->found;
}

const char *evr_sym_format_inlined(const struct evr_sym *sym, uint32_t k, bool with_line,
				   char *buf, size_t len)
{
	const struct evr_sym_inline *in;
	int n;

	if (!len)
		return buf;
	buf[0] = 0;
	if (k >= sym->ninlined)
		return buf;
	in = &sym->inlined[k];
	n = snprintf(buf, len, "%s (inlined)", in->func ? in->func : "??");
	if (with_line && in->file && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " at %s:%u", in->file, in->line);
	return buf;
}

const char *evr_sym_format(const struct evr_sym *sym, uint64_t pc, bool with_line, char *buf,
			   size_t len)
{
	int n;

	if (sym->func && sym->module)
		n = snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", sym->func, sym->offset, sym->module);
	else if (sym->func)
		n = snprintf(buf, len, "%s+0x%" PRIx64, sym->func, sym->offset);
	else if (sym->module)
		n = snprintf(buf, len, "%s+0x%" PRIx64, sym->module, sym->module_offset);
	else
		n = snprintf(buf, len, "0x%" PRIx64, pc);
	if (with_line && sym->file && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " at %s:%u", sym->file, sym->line);
	return buf;
}
