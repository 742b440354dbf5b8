// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The heap provider's interposer: rewriting GOT slots of loaded modules, and
 * putting them back (shared/research/memory.md §2).
 *
 * What is patched: the relocations R_X86_64_JUMP_SLOT (DT_JMPREL: calls through
 * the PLT) and R_X86_64_GLOB_DAT (DT_RELA: -fno-plt calls, and &malloc taken as
 * a value) whose symbol is one of the hooked names, in every module that
 * dl_iterate_phdr() lists except libevring (its own allocations are not the
 * program's, and its hooks call through it), liburcu-bp (the tracer's too: it
 * maps a thread's reader area at that thread's first read-side lock, holding its
 * registry mutex; a sampled mapping there would write an event, whose read-side
 * lock registers the same thread under the same mutex, and hang), libc (its internal callers, which
 * glibc routes through RELRO GLOB_DAT slots, are left out on purpose: strdup,
 * fopen and qsort then count where the program called them, not inside libc),
 * ld.so (no such relocations; heaptrack skips it for crashes) and the vDSO.
 * JUMP_SLOTs go first, then GLOB_DATs: a program that sees its &malloc changed
 * knows its calls are routed too (tests/heap/dlopen.c relies on it).
 *
 * How: each slot is one aligned 8-byte word, written with one atomic store, so
 * a thread calling through it at that moment jumps to either the old or the
 * new function, both of which work. A slot inside PT_GNU_RELRO (read-only after
 * relocation: full RELRO, -fno-plt) is made writable for the store and
 * read-only again. What each slot held is kept (the lazy-binding stub included)
 * and put back on restore. A hook never goes away (libevring stays mapped), so
 * a thread still inside one after the restore finishes normally.
 *
 * Safety with dlclose(): every write happens inside a dl_iterate_phdr()
 * callback, which holds the loader's write lock, on a module that is in the
 * list at that moment; restoring matches the remembered slots to the listed
 * modules by base address and name, so a slot of an unloaded module is
 * forgotten, never written.
 *
 * One patcher at a time (patch_lock, a flag rather than a mutex: the patcher
 * may be a hook, which must never wait). In a child after fork() the flag may
 * have been held by a thread that does not exist there: it is reset when the
 * process id changed.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <urcu/urcu-bp.h>

#include "heap-internal.h"

#define MAX_SLOTS 4096u

struct patched {
	uintptr_t *slot;
	uintptr_t orig, hook;
	uintptr_t base;		/* the module's dlpi_addr */
	uint64_t name_hash;	/* of its dlpi_name */
};

static struct patched slots[MAX_SLOTS];
static uint32_t nslots;
static _Atomic int patch_lock;
static pid_t patch_pid;
static unsigned long long seen_adds, seen_subs;
/* A pass met a module not relocated yet (a dlopen() on another thread): look again. */
static bool pending;

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; s && *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static bool lock_patcher(bool block)
{
	int z = 0;

	if (patch_pid != getpid()) {
		/* A forked child: whoever held it is not here. */
		atomic_store(&patch_lock, 0);
		patch_pid = getpid();
	}
	while (!atomic_compare_exchange_weak(&patch_lock, &z, 1)) {
		if (!block)
			return false;
		z = 0;
		sched_yield();
	}
	return true;
}

static void unlock_patcher(void)
{
	/* Pairs with the acquire of the compare-exchange in lock_patcher(). */
	atomic_store_explicit(&patch_lock, 0, memory_order_release);
}

/* A module's dynamic tables, relocated. */
struct dyn {
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const ElfW(Rela) *rela, *jmprel;
	size_t relasz, jmprelsz;
	uintptr_t relro_lo, relro_hi;	/* read-only pages after relocation */
	uintptr_t span;			/* the end of its highest segment, unrelocated */
};

/* Whether @info is the module whose code holds @addr (libevring: found by its own
 * code, not with dladdr(), which takes the loader's other lock, the one dlopen()
 * takes before that which dl_iterate_phdr() holds). */
static bool module_holds(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= lo && addr - lo < ph->p_memsz)
			return true;
	}
	return false;
}

static bool module_skipped(const struct dl_phdr_info *info)
{
	const char *n = info->dlpi_name, *b;

	if (module_holds(info, (uintptr_t)evr_heap_got_patch) ||
	    module_holds(info, (uintptr_t)urcu_bp_register_thread))
		return true;
	if (!n || !*n)
		return false;	/* the executable */
	b = strrchr(n, '/');
	b = b ? b + 1 : n;
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "ld-linux", 8) ||
	       !strncmp(b, "linux-vdso", 10) || !strncmp(b, "linux-gate", 10);
}

static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
	/* glibc relocates these d_ptr entries in place; the vDSO's it would not. */
	return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

static bool dyn_read(const struct dl_phdr_info *info, struct dyn *d)
{
	const ElfW(Dyn) *dyn = NULL;
	long pg = sysconf(_SC_PAGESIZE);

	memset(d, 0, sizeof(*d));
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && ph->p_vaddr + ph->p_memsz > d->span)
			d->span = ph->p_vaddr + ph->p_memsz;
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			/* ld.so protects whole pages: from the start's page to the end's. */
			d->relro_lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)(pg - 1);
			d->relro_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) &
				      ~(uintptr_t)(pg - 1);
		}
	}
	if (!dyn)
		return false;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			d->symtab = (const ElfW(Sym) *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			d->strtab = (const char *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_STRSZ:
			d->strsz = dyn->d_un.d_val;
			break;
		case DT_RELA:
			d->rela = (const ElfW(Rela) *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			d->relasz = dyn->d_un.d_val;
			break;
		case DT_JMPREL:
			d->jmprel = (const ElfW(Rela) *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			d->jmprelsz = dyn->d_un.d_val;
			break;
		default:
			break;
		}
	}
	return d->symtab && d->strtab;
}

/* Store @v into @slot, making a RELRO page writable for the store. Return: 0 or -errno. */
static int slot_store(const struct dyn *d, uintptr_t *slot, uintptr_t v)
{
	uintptr_t a = (uintptr_t)slot;
	long pg = sysconf(_SC_PAGESIZE);
	void *page = (void *)(a & ~(uintptr_t)(pg - 1));
	bool ro = a >= d->relro_lo && a < d->relro_hi;

	if (ro && mprotect(page, (size_t)pg, PROT_READ | PROT_WRITE) < 0)
		return -errno;
	__atomic_store_n(slot, v, __ATOMIC_RELEASE);
	if (ro)
		(void)mprotect(page, (size_t)pg, PROT_READ);
	return 0;
}

struct patch_ctx {
	const struct evr_heap_sym *syms;
	uint32_t n;
	int patched;
	bool full, unrelocated;
};

static const struct evr_heap_sym *match(const struct patch_ctx *c, const struct dyn *d,
					const ElfW(Rela) *r)
{
	uint32_t type = ELF64_R_TYPE(r->r_info), si = ELF64_R_SYM(r->r_info);
	const char *name;

	if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !si)
		return NULL;
	if (d->strsz && d->symtab[si].st_name >= d->strsz)
		return NULL;
	name = d->strtab + d->symtab[si].st_name;
	for (uint32_t i = 0; i < c->n; i++)
		if (!strcmp(name, c->syms[i].name))
			return &c->syms[i];
	return NULL;
}

static void patch_table(struct patch_ctx *c, const struct dl_phdr_info *info,
			const struct dyn *d, const ElfW(Rela) *tab, size_t bytes, uint64_t nh)
{
	for (size_t k = 0; tab && k < bytes / sizeof(*tab); k++) {
		const struct evr_heap_sym *s = match(c, d, &tab[k]);
		uintptr_t *slot;

		if (!s)
			continue;
		slot = (uintptr_t *)(info->dlpi_addr + tab[k].r_offset);
		if (__atomic_load_n(slot, __ATOMIC_RELAXED) == s->hook)
			continue;
		/*
		 * A module another thread's dlopen() has listed but not relocated yet
		 * holds link-time values (below its size): the loader will write the
		 * slot (adding the base to a lazy one) and protect its RELRO after us.
		 * Left for a later pass.
		 */
		if (info->dlpi_addr && *slot < d->span) {
			c->unrelocated = true;
			continue;
		}
		if (nslots == MAX_SLOTS) {
			c->full = true;
			return;
		}
		slots[nslots] = (struct patched){ slot, *slot, s->hook, info->dlpi_addr, nh };
		if (slot_store(d, slot, s->hook) == 0) {
			nslots++;
			c->patched++;
		}
	}
}

static int patch_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct patch_ctx *c = arg;
	struct dyn d;
	uint64_t nh;

	(void)size;
	seen_adds = info->dlpi_adds;
	seen_subs = info->dlpi_subs;
	if (module_skipped(info) || !dyn_read(info, &d))
		return 0;
	nh = hash_name(info->dlpi_name);
	patch_table(c, info, &d, d.jmprel, d.jmprelsz, nh);
	patch_table(c, info, &d, d.rela, d.relasz, nh);
	return 0;
}

int evr_heap_got_patch(const struct evr_heap_sym *syms, uint32_t n, bool block)
{
	struct patch_ctx c = { .syms = syms, .n = n };

	if (!lock_patcher(block))
		return -EBUSY;
	dl_iterate_phdr(patch_cb, &c);
	pending = c.unrelocated;
	unlock_patcher();
	return c.full ? -ENOSPC : c.patched;
}

static int restore_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	int *restored = arg;
	uint64_t nh = 0;
	bool hashed = false;
	struct dyn d;

	(void)size;
	seen_adds = info->dlpi_adds;
	seen_subs = info->dlpi_subs;
	for (uint32_t i = 0; i < nslots; i++) {
		struct patched *p = &slots[i];

		if (!p->slot || p->base != info->dlpi_addr)
			continue;
		if (!hashed) {
			nh = hash_name(info->dlpi_name);
			hashed = true;
			if (!dyn_read(info, &d))
				memset(&d, 0, sizeof(d));
		}
		if (p->name_hash != nh)
			continue;
		if (__atomic_load_n(p->slot, __ATOMIC_RELAXED) == p->hook &&
		    slot_store(&d, p->slot, p->orig) == 0)
			(*restored)++;
		p->slot = NULL;
	}
	return 0;
}

int evr_heap_got_restore(void)
{
	int restored = 0;

	lock_patcher(true);
	dl_iterate_phdr(restore_cb, &restored);
	/* What was not matched belonged to unloaded modules. */
	nslots = 0;
	unlock_patcher();
	return restored;
}

static int first_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	bool *changed = arg;

	(void)size;
	*changed = info->dlpi_adds != seen_adds || info->dlpi_subs != seen_subs;
	return 1;
}

bool evr_heap_got_modules_changed(void)
{
	bool changed = false;

	if (pending)
		return true;
	dl_iterate_phdr(first_cb, &changed);
	return changed;
}
