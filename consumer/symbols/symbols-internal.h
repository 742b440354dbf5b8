/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private to libevring-symbols: what its files share. */
#ifndef EVR_SYMBOLS_INTERNAL_H
#define EVR_SYMBOLS_INTERNAL_H

#include <elfutils/libdwfl.h>

#include <evring/symbols.h>

/* The symbolizer's Dwfl (a live one for evr_symbolizer_new_pid()); borrowed. */
Dwfl *evr_symbolizer_dwfl(struct evr_symbolizer *s);

/* The module map of an offline symbolizer (sorted), NULL for a live one; borrowed. */
const struct evr_modmap *evr_symbolizer_modmap(const struct evr_symbolizer *s);

/* Add one line to the symbolizer's warnings. */
void evr_symbolizer_warn(struct evr_symbolizer *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * What an executable mapping's name (from /proc/PID/maps or a perf MMAP2
 * record) says it is: 0 a file, EVR_MODULE_ANON, EVR_MODULE_VDSO, or -1
 * nothing a module map keeps.
 */
int evr_module_kind(const char *name);

/* Owner uid of /proc/@pid: 0 and the uid, or -ESRCH. */
int evr_proc_uid(pid_t pid, uid_t *ret);

/*
 * libdwfl callbacks that open files with evr_untrusted_open() (dwfl-files.c):
 * find_elf for live and offline symbolizers, find_debuginfo for both.
 */
int evr_dwfl_find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		      char **file_name, Elf **elfp);
int evr_dwfl_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			    Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			    GElf_Word debuglink_crc, char **debuginfo_file_name);

/*
 * Open the ELF file of every module of @dwfl, reported from process @pid: the
 * deleted files' images are read from its memory only during this call.
 */
void evr_dwfl_load_elfs(Dwfl *dwfl, pid_t pid);

#endif /* EVR_SYMBOLS_INTERNAL_H */
