// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target `monitor_request`: what evring monitor makes of a request before
 * and beside libmicrohttpd's parser (consumer/monitor/): the percent-decoding of
 * the path and of every query key and value (MHD's unescape callback), the
 * path's segments, the admission policy on the headers (Host, Origin, Fetch
 * Metadata, Content-Type, key, peer), the side-effect token rule, the route
 * matcher (router.c) on the method and segments, and a trace's parameters from
 * the query and from a JSON body, as the routes take them.
 *
 * Input: a control byte (bit 0 Unix socket, 1 loopback listener, 2 --no-auth,
 * 3 key given, 4 peer is our user; bits 5-7 pick the port), then a request as
 * text: "METHOD TARGET\n", header lines "Name: value\n", an empty line, the body.
 *
 * Properties: decoding never lengthens a string and leaves no control byte, and
 * reports one exactly when the raw text had one (raw or %-encoded); segments are
 * non-empty, slash-free, at most EVR_MON_MAX_SEGS, and join back to the path
 * without its empty segments; an admitted request without the key or --no-auth
 * comes from our user with a loopback Host (or the Unix socket); on a loopback
 * listener an admitted TCP request named a loopback Host; Origin: null, a
 * cross-site Sec-Fetch-Site and a POST not declared JSON are never admitted;
 * a matched route has the method (HEAD for GET) and its captures are segments
 * of the path, a 405's Allow names each method once and never the one asked,
 * a 404 names none, and HEAD is answered as GET;
 * a side-effect GET allowed from a browser without the key carried the token;
 * accepted parameters keep their limits (buffer_size <= 1G, max_size >= 4K),
 * and every refusal is one line naming what it refused.
 */
#include <errno.h>
#include <string.h>

#include "http.h"
#include "trace-internal.h"

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static const char token[2 * EVR_MON_KEY_BYTES + 1] =
	"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

static bool has_ctl(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

static int hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Does raw (undecoded) text @s hold a control byte, raw or %-encoded? */
static bool raw_has_ctl(const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '%' && hexv(s[1]) >= 0 && hexv(s[2]) >= 0) {
			ch = (unsigned char)(hexv(s[1]) << 4 | hexv(s[2]));
			s += 2;
		}
		if (ch < 0x20 || ch == 0x7f)
			return true;
	}
	return false;
}

/* Decode @s in place, checking the properties. Return: whether it was refused. */
static bool decode(char *s)
{
	size_t before = strlen(s), n;
	bool want = raw_has_ctl(s);
	int r = evr_mon_unescape(s, &n);

	fuzz_check(n <= before && n == strlen(s));
	fuzz_check(!has_ctl(s, n));
	fuzz_check((r == -EILSEQ) == want && (r == 0 || r == -EILSEQ));
	return r < 0;
}

static void check_one_line(const char *err)
{
	fuzz_check(err[0] != '\0' && !strchr(err, '\n'));
}

static void check_params(struct evr_mon_tparams *p)
{
	fuzz_check(p->buffer_size <= (1ull << 30));
	fuzz_check(p->max_size == 0 || p->max_size >= 4096);
	/* Every format the routes offer, the profiles (folded, speedscope, pprof) included. */
	fuzz_check(p->format <= EVR_MON_FMT_PPROF);
}

/* The monitor's table in shape (routes.c's needs its handlers): literals, captures, methods. */
static enum MHD_Result no_handler(struct evr_mon_req *q, const struct evr_mon_args *a)
{
	(void)q;
	(void)a;
	return MHD_NO;
}

static const char *const no_params[] = { NULL };

static const struct evr_mon_route routes[] = {
	{ "GET", "/", no_handler, no_params, NULL },
	{ "GET", "/processes/{pid}", no_handler, no_params, NULL },
	{ "POST", "/processes/{pid}/traces", no_handler, no_params, NULL },
	{ "GET", "/processes/{pid}/counters/{provider}/{name}", no_handler, no_params, NULL },
	{ "GET", "/processes/{pid}/counters/stream", no_handler, no_params, NULL },
	{ "GET", "/traces/{id}", no_handler, no_params, NULL },
	{ "DELETE", "/traces/{id}", no_handler, no_params, NULL },
	{ "POST", "/traces/{id}/stop", no_handler, no_params, NULL },
	{ "GET", "/ui/processes/{pid}", no_handler, no_params, NULL },
	{ "GET", "/ui/{asset}", no_handler, no_params, NULL },
};

static bool is_seg(const char *s, char *const *segs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (s == segs[i])
			return true;
	return false;
}

/* A 405's Allow: known methods, each once, not @method (HEAD asks as GET). */
static void check_allow(const char *allow, const char *method)
{
	char copy[EVR_MON_ALLOW_MAX], *tok, *save = NULL;
	const char *seen[8];
	unsigned n = 0;

	fuzz_check(allow[0] && strlen(allow) < sizeof(copy));
	memcpy(copy, allow, strlen(allow) + 1);
	for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		fuzz_check(!strcmp(tok, "GET") || !strcmp(tok, "HEAD") || !strcmp(tok, "POST") ||
			   !strcmp(tok, "DELETE"));
		fuzz_check(strcmp(tok, method) && (strcmp(method, "HEAD") || strcmp(tok, "GET")));
		for (unsigned i = 0; i < n; i++)
			fuzz_check(strcmp(seen[i], tok));
		fuzz_check(n < 8);
		seen[n++] = tok;
	}
}

static void check_route(const char *method, char *const *segs, unsigned n)
{
	const size_t nr = sizeof(routes) / sizeof(routes[0]);
	struct evr_mon_match mt, head;
	unsigned st = evr_mon_route_match(routes, nr, method, segs, n, &mt);
	const struct evr_mon_args *a = &mt.args;

	if (st == 0) {
		fuzz_check(mt.route && !mt.allow[0]);
		fuzz_check(!strcmp(mt.route->method, method) ||
			   (!strcmp(method, "HEAD") && !strcmp(mt.route->method, "GET")));
		fuzz_check(!a->pid_name || (is_seg(a->pid_name, segs, n) && a->pid == 0));
		fuzz_check(!a->id || is_seg(a->id, segs, n));
		fuzz_check(!a->provider || is_seg(a->provider, segs, n));
		fuzz_check(!a->name || is_seg(a->name, segs, n));
		fuzz_check(!a->asset || is_seg(a->asset, segs, n));
	} else if (st == 405) {
		fuzz_check(!mt.route);
		check_allow(mt.allow, method);
	} else {
		fuzz_check(st == 404 && !mt.route && !mt.allow[0]);
	}
	if (!strcmp(method, "GET")) {
		fuzz_check(evr_mon_route_match(routes, nr, "HEAD", segs, n, &head) == st);
		fuzz_check(head.route == mt.route && !strcmp(head.allow, mt.allow));
	}
}

static void check_path(const char *method, const char *path)
{
	char *segs[EVR_MON_MAX_SEGS], *copy = strdup(path), *tok, *save = NULL;
	unsigned n = 0, want = 0;
	int r = evr_mon_split_path(path, segs, &n);

	fuzz_check(copy != NULL);
	if (r < 0) {
		fuzz_check(r == -E2BIG || r == -ENOMEM);
		free(copy);
		return;
	}
	fuzz_check(n <= EVR_MON_MAX_SEGS);
	/* The same segments as strtok's split, in order. */
	for (tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		fuzz_check(want < n && !strcmp(tok, segs[want]));
		want++;
	}
	fuzz_check(want == n);
	check_route(method, segs, n);
	free(copy);
	evr_mon_segs_free(segs, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t ports[] = { 52330, 80, 8080, 1, 65535, 0, 443, 3000 };
	struct evr_mon_admit_in in = { 0 };
	struct evr_mon_tparams p = { 0 };
	char *text, *line, *save = NULL, *target, *query, *body, err[512];
	const char *why, *tok = NULL;
	unsigned status;
	uint8_t ctl;

	if (size < 1 || size > 65536)
		return 0;
	ctl = data[0];
	text = malloc(size);
	fuzz_check(text != NULL);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	in.is_unix = ctl & 1;
	in.listen_loopback = ctl & 2;
	in.no_auth = ctl & 4;
	in.key_ok = ctl & 8;
	in.local_user = (ctl & 16) ? 1 : 0;
	in.port = ports[ctl >> 5];

	/* The body: after the first empty line. */
	body = strstr(text, "\n\n");
	if (body) {
		*body = '\0';
		body += 2;
	}
	line = strtok_r(text, "\n", &save);
	if (!line)
		goto out;
	target = strchr(line, ' ');
	in.method = line;
	if (target) {
		*target++ = '\0';
		query = strchr(target, '?');
		if (query)
			*query++ = '\0';
		decode(target);
		check_path(in.method, target);
		/* The query: key=value&..., each decoded, the trace's parameters taken. */
		for (char *kv, *qs = NULL; query && (kv = strtok_r(query, "&", &qs)); query = NULL) {
			char *val = strchr(kv, '=');

			if (val)
				*val++ = '\0';
			decode(kv);
			if (!val)
				continue;
			decode(val);
			if (!strcmp(kv, "token"))
				tok = val;
			else if (evr_mon_tparams_set(&p, kv, val, err, sizeof(err)) < 0)
				check_one_line(err);
			check_params(&p);
		}
	}
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		*v++ = '\0';
		while (*v == ' ')
			v++;
		if (!strcasecmp(line, "Host"))
			in.host = v;
		else if (!strcasecmp(line, "Origin"))
			in.origin = v;
		else if (!strcasecmp(line, "Referer"))
			in.referer = v;
		else if (!strcasecmp(line, "User-Agent"))
			in.user_agent = v;
		else if (!strcasecmp(line, "Sec-Fetch-Site"))
			in.sec_fetch_site = v;
		else if (!strcasecmp(line, "Sec-Fetch-Mode"))
			in.sec_fetch_mode = v;
		else if (!strcasecmp(line, "Content-Type"))
			in.content_type = v;
	}

	status = evr_mon_admit(&in, &why);
	fuzz_check(status == 0 || status == 401 || status == 403 || status == 415 || status == 421);
	if (status && status != 401)
		check_one_line(why);
	if (status == 0) {
		bool loopback_host = in.is_unix || evr_mon_host_is_loopback(in.host, in.port);

		if (!in.no_auth && !in.key_ok)
			fuzz_check(in.local_user == 1 && loopback_host);
		if (in.listen_loopback && !in.is_unix)
			fuzz_check(loopback_host);
		fuzz_check(!in.origin || strcmp(in.origin, "null"));
		fuzz_check(!in.sec_fetch_site || !strcmp(in.sec_fetch_site, "same-origin") ||
			   !strcmp(in.sec_fetch_site, "none"));
		if (!strcmp(in.method, "POST"))
			fuzz_check(in.content_type &&
				   !strncasecmp(in.content_type, "application/json", 16));
	}
	if (evr_mon_side_effect_ok(&in, tok, token) && !in.key_ok && evr_mon_from_browser(&in))
		fuzz_check(tok && !strcmp(tok, token));

	if (body && *body) {
		json_error_t jerr;
		json_t *j = json_loads(body, 0, &jerr);
		struct evr_mon_tparams jp = { 0 };

		if (j) {
			if (evr_mon_tparams_from_json(j, &jp, err, sizeof(err)) < 0)
				check_one_line(err);
			check_params(&jp);
			json_decref(j);
		}
	}
out:
	free(text);
	return 0;
}
