// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Module maps (consumer/symbols/modmap.c): a process's executable mappings as
 * /proc/PID/maps has them, anonymous executable memory and the vDSO included
 * (so that a reader can tell JIT code from an address in no mapping), and their
 * MODULES chunk encoding; and the functions inlined at an address.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "evr-unit.h"

#include <evring/symbols.h>

static const struct evr_module *find_flag(const struct evr_modmap *m, uint8_t flag)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].flags & flag)
			return &m->v[i];
	return NULL;
}

static void test_modmap_read_self(void **state)
{
	struct evr_modmap *m, *back;
	const struct evr_module *mod;
	size_t len, page = (size_t)sysconf(_SC_PAGESIZE);
	void *jit, *buf;

	(void)state;
	/* JIT code: anonymous, executable. */
	jit = mmap(NULL, 4 * page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(jit != MAP_FAILED);
	assert_int_equal(evr_modmap_new(&m), 0);
	assert_true(evr_modmap_read_pid(m, getpid(), 0) > 0);
	evr_modmap_sort(m);
	mod = evr_modmap_find(m, (uint64_t)(uintptr_t)jit + page);
	assert_non_null(mod);
	assert_int_equal(mod->flags, EVR_MODULE_ANON);
	assert_string_equal(mod->path, "[anon]");
	assert_int_equal(mod->build_id_len, 0);
	/* The vDSO, under its name. */
	mod = find_flag(m, EVR_MODULE_VDSO);
	assert_non_null(mod);
	assert_string_equal(mod->path, "[vdso]");
	/* This program's own code is a file, with its build ID. */
	mod = evr_modmap_find(m, (uint64_t)(uintptr_t)&test_modmap_read_self);
	assert_non_null(mod);
	assert_int_equal(mod->flags, 0);
	assert_true(mod->path[0] == '/');

	/* The MODULES payload keeps the flags. */
	assert_int_equal(evr_modmap_encode(m, &buf, &len), 0);
	assert_int_equal(evr_modmap_new(&back), 0);
	assert_int_equal(evr_modmap_decode(back, buf, len), (int)m->n);
	for (size_t i = 0; i < m->n; i++) {
		assert_int_equal(back->v[i].flags, m->v[i].flags);
		assert_string_equal(back->v[i].path, m->v[i].path);
		assert_true(back->v[i].start == m->v[i].start && back->v[i].end == m->v[i].end);
	}
	/* A flag of a later version: memory that is no file, all the same. */
	((uint8_t *)buf)[39] = 0x80;
	evr_modmap_free(back);
	assert_int_equal(evr_modmap_new(&back), 0);
	assert_int_equal(evr_modmap_decode(back, buf, len), (int)m->n);
	assert_int_equal(back->v[0].flags, EVR_MODULE_ANON);
	free(buf);
	evr_modmap_free(back);
	evr_modmap_free(m);
	munmap(jit, 4 * page);
}

#if defined(__x86_64__)
/* The address of the instruction at this line (the lea itself, not the next
 * one), inside a function that is always inlined: debug information says the
 * address belongs to pc_in_inlined(), inlined into its caller. */
enum { PC_LINE = __LINE__ + 4 };
static inline __attribute__((always_inline)) uint64_t pc_in_inlined(void)
{
	uint64_t pc;
	__asm__ volatile("1: leaq 1b(%%rip), %0" : "=r"(pc));
	return pc;
}

__attribute__((noinline)) static uint64_t pc_in_caller(void)
{
	return pc_in_inlined();
}
#endif

/*
 * A function inlined at an address: the symbolizer names the function that
 * holds it and, innermost first, what is inlined there with the line, and
 * evr_sym_format_inlined() writes each as the text of a stack shows it.
 */
static void test_symbolizer_names_inlined_functions(void **state)
{
#if defined(__x86_64__)
	struct evr_symbolizer *s;
	struct evr_sym sym;
	char err[256], buf[512], want[64];
	uint64_t pc = pc_in_caller();

	(void)state;
	assert_int_equal(evr_symbolizer_new_pid(getpid(), &s, err, sizeof(err)), 0);
	assert_int_equal(evr_symbolizer_lookup(s, pc, false, &sym), 1);
	assert_string_equal(sym.func, "pc_in_caller");
	if (!sym.file) {
		/* Seen with clang 14's DWARF 5 and libdw 0.188: eu-addr2line finds no
		 * line either. Without line tables there is no inline information. */
		evr_symbolizer_free(s);
		EVR_SKIP("libdw reads no line information from this build "
			 "(eu-addr2line -i -e test_modmap shows the same)");
	}
	assert_int_equal(sym.ninlined, 1);
	assert_string_equal(sym.inlined[0].func, "pc_in_inlined");
	assert_non_null(strstr(sym.inlined[0].file, "test_modmap.c"));
	assert_int_equal(sym.inlined[0].line, PC_LINE);
	assert_string_equal(evr_sym_format_inlined(&sym, 0, false, buf, sizeof(buf)),
			    "pc_in_inlined (inlined)");
	snprintf(want, sizeof(want), "test_modmap.c:%d", PC_LINE);
	evr_sym_format_inlined(&sym, 0, true, buf, sizeof(buf));
	assert_non_null(strstr(buf, "pc_in_inlined (inlined) at "));
	assert_string_equal(buf + strlen(buf) - strlen(want), want);
	/* Past the last one: nothing. */
	assert_string_equal(evr_sym_format_inlined(&sym, 1, true, buf, sizeof(buf)), "");
	/* The frame's own line: the function the symbol table names. */
	assert_non_null(strstr(evr_sym_format(&sym, pc, false, buf, sizeof(buf)), "pc_in_caller+0x"));
	evr_symbolizer_free(s);
#else
	(void)state;
	EVR_SKIP("the test's inlined function is laid out for x86-64 only");
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modmap_read_self),
		cmocka_unit_test(test_symbolizer_names_inlined_functions),
	};

	return evr_unit_run(tests);
}
