// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The files libdwfl opens for the symbolizer, opened by us instead.
 *
 * libdwfl's standard callbacks open what a process names with a plain open():
 * dwfl_linux_proc_find_elf() stat()s a mapped file's name then opens it (a
 * FIFO swapped in between blocks the open forever), and
 * dwfl_standard_find_debuginfo() opens the .gnu_debuglink name in the module's
 * own directory and its .debug/ subdirectory, which are the user's when the
 * binary is. These replacements open every such file with
 * evr_untrusted_open(), and accept a debug file only when it matches its
 * module (build ID, or the debuglink CRC for a module without one), as
 * libdwfl does.
 *
 * What they leave to libdwfl opens no file: the vDSO and deleted files are
 * read from the process's memory by dwfl_linux_proc_find_elf() given a
 * "[vdso: PID]" name. libdwfl still opens, itself, a dwz alternate debug
 * file (.gnu_debugaltlink) by build ID under /usr/lib/debug/.build-id, a
 * directory only root writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <elfutils/libdwelf.h>

#include <evring/untrusted-file.h>

#include "symbols-internal.h"

#define DEBUG_DIR "/usr/lib/debug"

/* The process find_elf() may read deleted files from, set by evr_dwfl_load_elfs(). */
static __thread pid_t live_pid;

static const char deleted_suffix[] = " (deleted)";

static bool is_deleted(const char *name)
{
	size_t l = strlen(name), s = sizeof(deleted_suffix) - 1;

	return l > s && strcmp(name + l - s, deleted_suffix) == 0;
}

int evr_dwfl_find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		      char **file_name, Elf **elfp)
{
	char mem[32];
	int fd;

	if (name[0] != '/')	/* [vdso: PID] and the like: from memory, no file */
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	if (is_deleted(name)) {
		if (live_pid <= 0)
			return -1;
		/* The image in the process's memory, as libdwfl reads a deleted file. */
		snprintf(mem, sizeof(mem), "[vdso: %d]", (int)live_pid);
		return dwfl_linux_proc_find_elf(mod, userdata, mem, base, file_name, elfp);
	}
	fd = evr_untrusted_open(AT_FDCWD, name, NULL, NULL);
	if (fd < 0)
		return -1;
	*file_name = strdup(name);
	if (!*file_name) {
		close(fd);
		return -1;
	}
	return fd;
}

static int load_one(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
		    void *arg)
{
	Dwarf_Addr bias;

	(void)userdata;
	(void)name;
	(void)start;
	(void)arg;
	(void)dwfl_module_getelf(mod, &bias);
	return DWARF_CB_OK;
}

void evr_dwfl_load_elfs(Dwfl *dwfl, pid_t pid)
{
	/*
	 * libdwfl calls find_elf lazily, from whatever lookup first needs a module,
	 * where the process is not known: load them all now, while it is. A stack
	 * snapshot touches most modules anyway.
	 */
	live_pid = pid;
	(void)dwfl_getmodules(dwfl, load_one, NULL, 0);
	live_pid = 0;
}

/* ---- debug files ----------------------------------------------------------- */

/* Whether the ELF file @fd has build ID @id. */
static bool build_id_matches(int fd, const unsigned char *id, int len)
{
	const void *got = NULL;
	ssize_t n = -1;
	bool same;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (elf && elf_kind(elf) == ELF_K_ELF)
		n = dwelf_elf_gnu_build_id(elf, &got);
	/* @got points into the ELF's mapping: compare before elf_end(). */
	same = n == len && memcmp(got, id, (size_t)len) == 0;
	elf_end(elf);
	return same;
}

/* Whether the CRC-32 of @fd's contents is @crc (the .gnu_debuglink check). */
static bool crc_matches(int fd, GElf_Word crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0L, Z_NULL, 0);
	off_t off = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		if (n == 0)
			break;
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	return (GElf_Word)c == crc;
}

/*
 * Open @path as the debug file of a module with build ID @id (@idlen > 0) or,
 * without one, whose debuglink CRC is @crc: the fd, with @ret_name set, or -1.
 */
static int try_debug_file(const char *path, const unsigned char *id, int idlen, GElf_Word crc,
			  char **ret_name)
{
	int fd = evr_untrusted_open(AT_FDCWD, path, NULL, NULL);

	if (fd < 0)
		return -1;
	if (idlen > 0 ? !build_id_matches(fd, id, idlen) : !crc_matches(fd, crc)) {
		close(fd);
		return -1;
	}
	*ret_name = strdup(path);
	if (!*ret_name) {
		close(fd);
		return -1;
	}
	return fd;
}

int evr_dwfl_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			    Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			    GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const unsigned char *id = NULL;
	GElf_Addr vaddr;
	char path[4096], dir[4096];
	const char *slash;
	int idlen, fd;

	(void)userdata;
	(void)modname;
	(void)base;
	idlen = dwfl_module_build_id(mod, &id, &vaddr);
	/* By build ID, where distributions install debug files. */
	if (idlen > 1) {
		int o = snprintf(path, sizeof(path), DEBUG_DIR "/.build-id/%02x/", id[0]);

		for (int i = 1; i < idlen && o + 3 < (int)sizeof(path); i++)
			o += snprintf(path + o, sizeof(path) - (size_t)o, "%02x", id[i]);
		if (o + 7 < (int)sizeof(path)) {
			memcpy(path + o, ".debug", 7);
			fd = try_debug_file(path, id, idlen, 0, debuginfo_file_name);
			if (fd >= 0)
				return fd;
		}
	}
	/* By .gnu_debuglink: beside the file, in its .debug/, under DEBUG_DIR (gdb's places). */
	if (!debuglink_file || !*debuglink_file || strchr(debuglink_file, '/') || !file_name ||
	    file_name[0] != '/')
		return -1;
	slash = strrchr(file_name, '/');
	if ((size_t)(slash - file_name) >= sizeof(dir))
		return -1;
	memcpy(dir, file_name, (size_t)(slash - file_name));
	dir[slash - file_name] = '\0';
	for (int i = 0; i < 3; i++) {
		int n = i == 0 ? snprintf(path, sizeof(path), "%s/%s", dir, debuglink_file) :
			i == 1 ? snprintf(path, sizeof(path), "%s/.debug/%s", dir, debuglink_file) :
			snprintf(path, sizeof(path), DEBUG_DIR "%s/%s", dir, debuglink_file);

		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		/* The module itself is no debug file of its own: libdwfl already looked in it. */
		if (strcmp(path, file_name) == 0)
			continue;
		fd = try_debug_file(path, id, idlen, debuglink_crc, debuginfo_file_name);
		if (fd >= 0)
			return fd;
	}
	return -1;
}
