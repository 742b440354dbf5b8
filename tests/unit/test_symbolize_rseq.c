// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A CPU sample taken in one of libevring's rseq abort handlers (the
 * __rseq_failure section: a signature, then a jmp back into the writing
 * function) is symbolized as that function, not left a bare [libevring.so]
 * address (issue 28, item 5). The handler's address is read from the loaded
 * libevring.so's own section table, so the test needs no recording and no
 * luck: the kernel moves a preempted thread there only now and then.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "evr-unit.h"

#include <evring/evring.h>
#include <evring/symbols.h>

struct lib {
	char path[4096];
	uint64_t bias;
};

static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct lib *l = arg;

	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libevring.so"))
		return 0;
	snprintf(l->path, sizeof(l->path), "%s", info->dlpi_name);
	l->bias = info->dlpi_addr;
	return 1;
}

/* The __rseq_failure section's address and bytes, from the file's section headers. */
static int rseq_section(const char *path, uint64_t *ret_addr, uint8_t **ret_bytes,
			size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *f;
	int ret = -1;

	if (fd < 0 || fstat(fd, &st) < 0)
		goto out;
	f = malloc((size_t)st.st_size);
	if (!f || read(fd, f, (size_t)st.st_size) != st.st_size) {
		free(f);
		goto out;
	}
	const Elf64_Ehdr *eh = (const void *)f;
	const Elf64_Shdr *sh = (const void *)(f + eh->e_shoff);
	const char *names = (const char *)f + sh[eh->e_shstrndx].sh_offset;

	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (strcmp(names + sh[i].sh_name, "__rseq_failure"))
			continue;
		*ret_addr = sh[i].sh_addr;
		*ret_len = sh[i].sh_size;
		*ret_bytes = malloc(sh[i].sh_size);
		memcpy(*ret_bytes, f + sh[i].sh_offset, sh[i].sh_size);
		ret = 0;
		break;
	}
	free(f);
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

static void test_symbolizer_lookup_rseq_abort(void **state)
{
	static const uint8_t sig[] = { 0x0f, 0xb9, 0x3d, 0x53, 0x30, 0x05, 0x53 };
	struct evr_symbolizer *s = NULL;
	struct lib l = { 0 };
	uint8_t *b = NULL;
	uint64_t addr = 0;
	size_t len = 0, stubs = 0;
	char err[256];

	(void)state;
#if defined(__SANITIZE_THREAD__)
	/* <evring/ring-rseq.h> leaves the rseq path out of a TSan build: such a
	 * libevring writes through the try-lock path and has no abort handlers. */
	EVR_SKIP("a TSan build of libevring has no rseq abort handlers");
#endif
	/* A reference, so that the program loads libevring.so. */
	assert_non_null(&evr_provider_register);
	/* The test links libevring.so (the evring target is always shared). */
	assert_true(dl_iterate_phdr(find_lib, &l));
	assert_int_equal(rseq_section(l.path, &addr, &b, &len), 0);
	assert_int_equal(evr_symbolizer_new_pid(getpid(), &s, err, sizeof(err)), 0);
	/* Every handler: the signature, then jmp rel32 back into its function. */
	for (size_t off = 0; off + sizeof(sig) + 5 <= len; off++) {
		struct evr_sym sym = { 0 };
		uint64_t pc = l.bias + addr + off + sizeof(sig);

		if (memcmp(b + off, sig, sizeof(sig)) || b[off + sizeof(sig)] != 0xe9)
			continue;
		stubs++;
		struct evr_sym to = { 0 };
		int32_t rel;

		memcpy(&rel, b + off + sizeof(sig) + 1, 4);
		assert_true(evr_symbolizer_lookup(s, pc, false, &sym));
		assert_non_null(sym.func);
		/* The function the handler jumps back into, found on its own. */
		assert_true(evr_symbolizer_lookup(s, pc + 5 + (uint64_t)(int64_t)rel, false, &to));
		print_message("0x%zx: %s (jumps into %s)\n", (size_t)(addr + off + sizeof(sig)),
			      sym.func, to.func);
		assert_string_equal(sym.func, to.func);
		assert_int_equal(sym.offset, 0);
	}
	assert_true(stubs > 0);
	free(b);
	evr_symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbolizer_lookup_rseq_abort),
	};

	return evr_unit_run(tests);
}
