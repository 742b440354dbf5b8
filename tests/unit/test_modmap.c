// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Module maps (consumer/symbols/modmap.c): a process's executable mappings as
 * /proc/PID/maps has them, anonymous executable memory and the vDSO included
 * (so that a reader can tell JIT code from an address in no mapping), and their
 * MODULES chunk encoding.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modmap_read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
