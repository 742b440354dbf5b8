// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The lttng sink: each event fires an evring:<level> LTTng-UST tracepoint
 * (lttng/evring-tp.h), so LTTng users see evring events beside their kernel
 * and userspace events, with babeltrace2 or Trace Compass:
 *
 *   lttng create s && lttng enable-event -u 'evring:*' && lttng start
 *   evring forward -p PID --to lttng
 *
 * The tracepoints live in a module, evring-forward-lttng.so, built where
 * liblttng-ust-dev is installed and loaded here only for --to lttng (the
 * evring command itself never links liblttng-ust, whose constructor would
 * register every evring invocation with a session daemon). The module is
 * looked for in $EVR_FORWARD_LTTNG_PLUGIN, then next to the evring binary
 * (BINDIR/../lib), then in the installed plugin directory.
 *
 * No queue: a tracepoint is an in-process call that never blocks (LTTng's own
 * buffers drop, and LTTng counts, what its consumer daemon cannot keep up
 * with: `lttng list SESSION` shows discarded events). An event whose
 * tracepoint no LTTng session enables is counted as dropped for that reason.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward.h"
#include "lttng-plugin.h"

struct lttng {
	void *dl;
	const struct evr_fwd_lttng_plugin *p;
	struct evr_strbuf json;
};

#ifdef EVR_FORWARD_HAVE_LTTNG
/* dlopen() @path; on failure keep the first error in @why. */
static void *try_load(const char *path, char *why, size_t whylen)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!dl && !*why)
		snprintf(why, whylen, "%s", dlerror());
	return dl;
}

static void *load_plugin(char *why, size_t whylen)
{
	const char *env = getenv("EVR_FORWARD_LTTNG_PLUGIN");
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n;
	void *dl;

	*why = 0;
	if (env && *env)
		return try_load(env, why, whylen);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(path, sizeof(path), "%s/../lib/%s", exe, EVR_FWD_LTTNG_PLUGIN_FILE);
			if (access(path, R_OK) == 0 && (dl = try_load(path, why, whylen)))
				return dl;
		}
	}
	snprintf(path, sizeof(path), "%s/%s", EVR_FORWARD_PLUGIN_DIR, EVR_FWD_LTTNG_PLUGIN_FILE);
	return try_load(path, why, whylen);
}
#endif

static int lttng_check(struct evr_fwd_sink *s, char *err, size_t errlen)
{
#ifndef EVR_FORWARD_HAVE_LTTNG
	snprintf(err, errlen, "--to %s: this evring was built without LTTng-UST "
		 "(liblttng-ust-dev was not installed; scripts/setup --optional installs it)",
		 s->spec.text);
	return -EINVAL;
#else
	if (s->spec.arg && *s->spec.arg) {
		snprintf(err, errlen, "--to %s: lttng takes no argument (the LTTng session "
			 "decides where events go)", s->spec.text);
		return -EINVAL;
	}
	return 0;
#endif
}

static int lttng_open(struct evr_fwd_sink *s, char *err, size_t errlen)
{
#ifdef EVR_FORWARD_HAVE_LTTNG
	struct lttng *t = calloc(1, sizeof(*t));
	char why[512];

	if (!t)
		return -ENOMEM;
	t->dl = load_plugin(why, sizeof(why));
	if (t->dl)
		t->p = dlsym(t->dl, EVR_FWD_LTTNG_PLUGIN_SYMBOL);
	if (!t->p || t->p->version != EVR_FWD_LTTNG_PLUGIN_VERSION) {
		snprintf(err, errlen, "--to %s: cannot load the LTTng tracepoints (%s): %s",
			 s->spec.text, EVR_FWD_LTTNG_PLUGIN_FILE,
			 t->dl ? "not the module of this evring" : why);
		if (t->dl)
			dlclose(t->dl);
		free(t);
		return -ENOENT;
	}
	s->priv = t;
	s->st.dropped_why = "no LTTng session enabled their evring:* event";
	return 0;
#else
	return lttng_check(s, err, errlen);
#endif
}

/* The "fields" member of evr_event_to_json()'s object (its last), or "{}". */
static const char *fields_json(struct lttng *t, const struct evr_event_view *v)
{
	static const char key[] = ",\"fields\":";
	char *at;

	t->json.len = 0;
	if (evr_event_to_json(v, &t->json) < 0 || !t->json.len ||
	    evr_strbuf_append(&t->json, "", 1) < 0)
		return "{}";
	/* Inside JSON strings every '"' is escaped: the first match is the member. */
	at = strstr(t->json.buf, key);
	if (!at)
		return "{}";
	t->json.buf[t->json.len - 2] = 0;	/* the object's closing brace */
	return at + sizeof(key) - 1;
}

static void lttng_event(struct evr_fwd_sink *s, const struct evr_fwd_event *e)
{
	struct lttng *t = s->priv;
	const struct evr_schema_event *ev = e->v->schema;
	struct evr_fwd_lttng_event le;
	uint8_t level = ev ? ev->level : 5;

	if (!t->p->enabled(level)) {
		s->st.dropped++;
		return;
	}
	le = (struct evr_fwd_lttng_event){
		.provider = ev ? ev->provider : "?",
		.event = ev ? ev->name : "?",
		.id = ev ? ev->id : 0,
		.level = level,
		.keywords = ev ? ev->keywords : 0,
		.pid = (int32_t)e->src->pid,
		.tid = (int32_t)e->v->tid,
		.ts_ns = e->v->ts_ns,
		.fields = fields_json(t, e->v),
	};
	t->p->emit(&le);
	s->st.sent++;
}

static void lttng_counter(struct evr_fwd_sink *s, const struct evr_fwd_counter *c)
{
	lttng_event(s, c->e);
}

static void lttng_close(struct evr_fwd_sink *s, uint64_t deadline_ns)
{
	struct lttng *t = s->priv;

	if (!t)
		return;
	/* The module stays loaded: LTTng-UST's threads and its atexit work are
	 * in it. */
	free(t->json.buf);
	free(t);
	s->priv = NULL;
}

const struct evr_fwd_sink_ops evr_fwd_sink_lttng = {
	.kind = "lttng",
	.what = EVR_FWD_ALL,
	.default_level = -1,
	.check = lttng_check,
	.open = lttng_open,
	.event = lttng_event,
	.counter = lttng_counter,
	.close = lttng_close,
};
