// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target `provider_spec`: provider lists as users and consumers send them
 * (`--providers`, StartSession.providers): Name[:KEYWORDS[:LEVEL[:k=v;...]]],...
 *
 * Properties: a rejection says why in one line; an accepted list has entries
 * whose names, keys and values keep the documented character rules; it renders
 * (evr_provider_spec_list_format) to text that parses back to an equal list
 * and renders to the same text again; a lookup of each name finds its entry;
 * the level name of each entry parses back to its level.
 */
#include <errno.h>
#include <string.h>

#include <evring/provider-spec.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void same_list(const struct evr_provider_spec_list *a, const struct evr_provider_spec_list *b)
{
	fuzz_check(a->n == b->n);
	for (size_t i = 0; i < a->n; i++) {
		const struct evr_provider_spec *x = &a->v[i], *y = &b->v[i];

		fuzz_check(strcmp(x->name, y->name) == 0);
		fuzz_check(x->keywords == y->keywords && x->level == y->level);
		fuzz_check(x->nargs == y->nargs);
		for (size_t j = 0; j < x->nargs; j++) {
			fuzz_check(strcmp(x->args[j].key, y->args[j].key) == 0);
			fuzz_check(strcmp(x->args[j].value, y->args[j].value) == 0);
		}
	}
}

static char *render(const struct evr_provider_spec_list *l)
{
	int n = evr_provider_spec_list_format(l, NULL, 0);
	char *s;

	fuzz_check(n >= 0);
	s = malloc((size_t)n + 1);
	fuzz_check(s != NULL);
	fuzz_check(evr_provider_spec_list_format(l, s, (size_t)n + 1) == n);
	fuzz_check(strlen(s) == (size_t)n);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evr_provider_spec_list *l = NULL, *again = NULL;
	char *text, *out, *out2, err[256];
	int r;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	r = evr_provider_spec_parse(text, &l, err, sizeof(err));
	if (r < 0) {
		fuzz_check(r == -EINVAL || r == -ENOMEM);
		fuzz_check(err[0] != '\0' && !strchr(err, '\n'));
		fuzz_check(l == NULL);
		free(text);
		return 0;
	}
	fuzz_check(l && l->n >= 1 && err[0] == '\0');
	for (size_t i = 0; i < l->n; i++) {
		const struct evr_provider_spec *s = &l->v[i];
		const char *lname = evr_level_name(s->level);
		uint8_t lv = 0xff;

		fuzz_check(s->name[0] && !strpbrk(s->name, ":,\" \t\n\v\f\r"));
		fuzz_check(lname && evr_level_parse(lname, &lv) == 0 && lv == s->level);
		fuzz_check(evr_provider_spec_list_find(l, s->name) == s);
		for (size_t j = 0; j < s->nargs; j++) {
			fuzz_check(s->args[j].key[0] && !strpbrk(s->args[j].key, "\"=;, \t\n\v\f\r"));
			fuzz_check(!strchr(s->args[j].value, '"'));
			fuzz_check(evr_provider_spec_arg(s, s->args[j].key) == s->args[j].value);
		}
	}
	out = render(l);
	r = evr_provider_spec_parse(out, &again, err, sizeof(err));
	if (r != 0)
		fprintf(stderr, "rendered '%s' does not parse: %s\n", out, err);
	fuzz_check(r == 0);
	same_list(l, again);
	out2 = render(again);
	fuzz_check(strcmp(out, out2) == 0);
	free(out2);
	free(out);
	evr_provider_spec_list_free(again);
	evr_provider_spec_list_free(l);
	free(text);
	return 0;
}
