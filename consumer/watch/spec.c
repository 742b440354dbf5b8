// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Which providers a counters-only session asks for: the ones whose schemas have
 * Counter* events, from the process's ListEvents. Context: any thread (an
 * attach thread, mostly); @c is that thread's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/watch.h>

/*
 * Each provider of @c's process with Counter* events, once, into @sb: its name
 * and @suffix, after @sep from the second on.
 */
static int each_counter_provider(struct evr_client *c, struct evr_strbuf *sb, const char *sep,
				 const char *suffix, char *err, size_t errlen)
{
	struct evr_schema_set *set = NULL;
	uint32_t cnt;
	int r;

	r = evr_schema_set_new(&set);
	if (r < 0)
		return r;
	r = evr_client_list_events(c, set, err, errlen);
	cnt = r < 0 ? 0 : evr_schema_set_count(set);
	for (uint32_t i = 0; i < cnt && r == 0; i++) {
		const struct evr_schema_event *ev = evr_schema_set_at(set, i);
		bool seen = false;

		if (strncmp(ev->name, "Counter", 7) != 0)
			continue;
		/* Each provider once: earlier ones are in the list already. */
		for (uint32_t j = 0; j < i && !seen; j++) {
			const struct evr_schema_event *e = evr_schema_set_at(set, j);

			seen = !strncmp(e->name, "Counter", 7) && !strcmp(e->provider, ev->provider);
		}
		if (!seen)
			r = evr_strbuf_printf(sb, "%s%s%s", sb->len ? sep : "", ev->provider, suffix);
	}
	evr_schema_set_free(set);
	return r;
}

int evr_watch_counter_providers(struct evr_client *c, char **ret, char *err, size_t errlen)
{
	struct evr_strbuf sb = { 0 };
	int r = each_counter_provider(c, &sb, ", ", "", err, errlen);

	if (r == 0 && !sb.buf)
		r = evr_strbuf_append(&sb, "", 0);
	if (r < 0) {
		free(sb.buf);
		return r;
	}
	*ret = sb.buf;
	return 0;
}

int evr_watch_counter_spec(struct evr_client *c, char **ret, char *err, size_t errlen)
{
	struct evr_strbuf sb = { 0 };
	/* Keywords 0, level LogAlways: the counter events only. */
	int r = each_counter_provider(c, &sb, ",", ":0x0:0", err, errlen);

	/* Every process has the built-in Process provider; never an empty spec. */
	if (r == 0 && !sb.len)
		r = evr_strbuf_printf(&sb, "Process:0x0:0");
	if (r < 0) {
		free(sb.buf);
		if (r == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		return r;
	}
	*ret = sb.buf;
	return 0;
}
