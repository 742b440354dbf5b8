// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The monitor's pure parts (consumer/monitor/metrics.c, auth.c, util.c, router.c): Prometheus
 * family names and types from counter names, units and kinds (what promtool's lint would
 * reject never comes out); API key hashing and checking; request parameter parsers; the
 * route matcher (404, 405 and its Allow, typed captures) and the table check.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"

static void name_is(const char *provider, const char *name, const char *unit, uint32_t kind,
		    const char *want, enum evr_mon_mtype type, double scale)
{
	struct evr_mon_counter c;

	memset(&c, 0, sizeof(c));
	snprintf(c.provider, sizeof(c.provider), "%s", provider);
	snprintf(c.name, sizeof(c.name), "%s", name);
	snprintf(c.unit, sizeof(c.unit), "%s", unit);
	c.kind = kind;
	evr_mon_metric_init(&c);
	assert_string_equal(c.metric, want);
	assert_int_equal(c.mtype, type);
	assert_true(c.scale == scale);
}

static void test_evr_mon_metric_init_names(void **state)
{
	(void)state;
	name_is("System.Runtime", "gc-heap-size", "MB", EVR_SAMPLE_GAUGE,
		"evring_system_runtime_gc_heap_size_bytes", EVR_MON_M_GAUGE, 1048576);
	name_is("System.Runtime", "gen-0-gc-count", "", EVR_SAMPLE_RATE,
		"evring_system_runtime_gen_0_gc_count_total", EVR_MON_M_COUNTER, 1);
	name_is("System.Runtime", "alloc-rate", "B", EVR_SAMPLE_RATE,
		"evring_system_runtime_alloc_rate_bytes_total", EVR_MON_M_COUNTER, 1);
	name_is("Process", "cpu-usage", "%", EVR_SAMPLE_RATE, "evring_process_cpu_usage_ratio",
		EVR_MON_M_GAUGE, 0.01);
	name_is("System.Runtime", "work-item-latency", "us", EVR_SAMPLE_HISTOGRAM,
		"evring_system_runtime_work_item_latency_seconds", EVR_MON_M_SUMMARY, 1e-6);
	name_is("MyApp", "requestDuration", "ms", EVR_SAMPLE_MEAN,
		"evring_myapp_requestduration_seconds", EVR_MON_M_SUMMARY, 1e-3);
	name_is("Process", "threads", "", EVR_SAMPLE_GAUGE, "evring_process_threads",
		EVR_MON_M_GAUGE, 1);
}

static void test_evr_mon_metric_init_reserved_and_banned(void **state)
{
	(void)state;
	/* A gauge may not end in a suffix the format reserves. */
	name_is("System.Runtime", "threadpool-thread-count", "", EVR_SAMPLE_GAUGE,
		"evring_system_runtime_threadpool_thread_count_current", EVR_MON_M_GAUGE, 1);
	name_is("X", "bytes-sum", "", EVR_SAMPLE_GAUGE, "evring_x_bytes_sum_current",
		EVR_MON_M_GAUGE, 1);
	/* A counter gets _total once. */
	name_is("X", "sent_total", "", EVR_SAMPLE_RATE, "evring_x_sent_total", EVR_MON_M_COUNTER,
		1);
	/* Abbreviated units and type words are left out; the unit suffix once. */
	name_is("X", "latency-ms", "ms", EVR_SAMPLE_MEAN, "evring_x_latency_seconds",
		EVR_MON_M_SUMMARY, 1e-3);
	name_is("X", "request-counter", "", EVR_SAMPLE_RATE, "evring_x_request_total",
		EVR_MON_M_COUNTER, 1);
	name_is("X", "wait_seconds", "s", EVR_SAMPLE_GAUGE, "evring_x_wait_seconds",
		EVR_MON_M_GAUGE, 1);
	/* Bytes outside [A-Za-z0-9] separate parts; nothing usable: no family. */
	name_is("Odd Provider!", "a\xc3\xa9::c", "", EVR_SAMPLE_GAUGE, "evring_odd_provider_a_c",
		EVR_MON_M_GAUGE, 1);
	name_is("X", "---", "", EVR_SAMPLE_GAUGE, "", EVR_MON_M_NONE, 1);
}

static void test_evr_mon_key_check_hash(void **state)
{
	char key[2 * EVR_MON_KEY_BYTES + 1], hex[80], err[128];
	uint8_t h[EVR_MON_HASH_BYTES], parsed[EVR_MON_HASH_BYTES];

	(void)state;
	assert_int_equal(evr_mon_key_generate(key, h), 0);
	assert_int_equal(strlen(key), 64);
	assert_true(evr_mon_key_check(h, key, strlen(key)));
	key[5] ^= 1;
	assert_false(evr_mon_key_check(h, key, strlen(key)));
	assert_false(evr_mon_key_check(h, key, 10));
	/* SHA-256("abc"), the FIPS 180-2 example. */
	evr_mon_key_hash("abc", 3, h);
	strcpy(hex, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(evr_mon_key_hash_parse(hex, parsed, err, sizeof(err)), 0);
	assert_memory_equal(parsed, h, sizeof(h));
	assert_true(evr_mon_key_check(parsed, "abc", 3));
	assert_int_equal(evr_mon_key_hash_parse("md5:00", parsed, err, sizeof(err)), -EINVAL);
	assert_int_equal(evr_mon_key_hash_parse("sha256:abc", parsed, err, sizeof(err)), -EINVAL);
	hex[10] = 'g';
	assert_int_equal(evr_mon_key_hash_parse(hex, parsed, err, sizeof(err)), -EINVAL);
}

static void test_evr_mon_parse_duration_forms(void **state)
{
	uint64_t ns = 0, n = 0;
	pid_t pid = 0;

	(void)state;
	assert_int_equal(evr_mon_parse_duration("2s", &ns), 0);
	assert_true(ns == 2000000000ull);
	assert_int_equal(evr_mon_parse_duration("500ms", &ns), 0);
	assert_true(ns == 500000000ull);
	assert_int_equal(evr_mon_parse_duration("1.5", &ns), 0);
	assert_true(ns == 1500000000ull);
	assert_int_equal(evr_mon_parse_duration("2m", &ns), 0);
	assert_true(ns == 120000000000ull);
	assert_int_equal(evr_mon_parse_duration("-1s", &ns), -EINVAL);
	assert_int_equal(evr_mon_parse_duration("s", &ns), -EINVAL);
	assert_int_equal(evr_mon_parse_duration("1x", &ns), -EINVAL);
	assert_int_equal(evr_mon_parse_duration("1e300s", &ns), -EINVAL);
	assert_int_equal(evr_mon_parse_duration("nan", &ns), -EINVAL);
	assert_int_equal(evr_mon_parse_size("64K", &n), 0);
	assert_true(n == 65536);
	assert_int_equal(evr_mon_parse_size("16M", &n), 0);
	assert_true(n == 16u << 20);
	assert_int_equal(evr_mon_parse_size("99999999999999999999G", &n), -EINVAL);
	assert_int_equal(evr_mon_parse_pid("4242", &pid), 0);
	assert_int_equal(pid, 4242);
	assert_int_equal(evr_mon_parse_pid("0", &pid), -EINVAL);
	assert_int_equal(evr_mon_parse_pid("12a", &pid), -EINVAL);
	assert_int_equal(evr_mon_parse_pid("-3", &pid), -EINVAL);
	/* Listen mode's ids of processes in another pid namespace (EVR_DIALIN_ID_MIN up). */
	assert_int_equal(evr_mon_parse_pid("1073741824", &pid), 0);
	assert_int_equal(pid, EVR_DIALIN_ID_MIN);
	assert_int_equal(evr_mon_parse_pid("2147483647", &pid), 0);
	assert_int_equal(evr_mon_parse_pid("2147483648", &pid), -EINVAL);
}

static void test_evr_mon_jstr_invalid_utf8(void **state)
{
	json_t *j;
	char *s;

	(void)state;
	j = evr_mon_jstr("caf\xc3\xa9 \xff\xfe end");
	assert_non_null(j);
	s = json_dumps(j, JSON_ENCODE_ANY);
	assert_string_equal(s, "\"caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd end\"");
	free(s);
	json_decref(j);
}

static void test_evr_mon_accepts_openmetrics_negotiation(void **state)
{
	static const struct {
		const char *accept;
		bool om;
	} cases[] = {
		{ NULL, false },
		{ "", false },
		{ "*/*", false },
		{ "text/plain", false },
		{ "application/openmetrics-text", true },
		{ "application/openmetrics-text; version=1.0.0; charset=utf-8", true },
		/* What Prometheus 2.x sends. */
		{ "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
		  "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", true },
		{ "text/plain;version=0.0.4;q=0.9, application/openmetrics-text;q=0.5", false },
		{ "application/openmetrics-text;q=0", false },
		{ "application/openmetrics-text;q=bad", false },
		{ "application/openmetrics-text;version=2.0.0", false },
		{ "Application/OpenMetrics-Text ; Q=0.5 , text/plain;q=0.5", true },
		{ ";;,,", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool got = evr_mon_accepts_openmetrics(cases[i].accept);

		if (got != cases[i].om)
			fail_msg("Accept: %s: got %d", cases[i].accept ? cases[i].accept : "(none)",
				 got);
	}
}

static void add_counter(struct evr_mon_proc *p, const char *name, const char *display,
			const char *unit, uint32_t kind)
{
	struct evr_mon_counter *c = &p->ctr[p->nctr++];

	memset(c, 0, sizeof(*c));
	snprintf(c->provider, sizeof(c->provider), "App");
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->display, sizeof(c->display), "%s", display);
	snprintf(c->unit, sizeof(c->unit), "%s", unit);
	c->kind = kind;
	c->nsamples = 1;
	evr_mon_metric_init(c);
}

/*
 * A rate whose polled total went back (the process reset it) and samples that are
 * not numbers: the counter's total only goes up and stays a number, the mean's sums
 * too; the latest value is still the latest sample.
 */
static void test_evr_mon_counter_fold_monotonic(void **state)
{
	static const double incs[] = { 5, 3, -8, NAN, 2, INFINITY, 0 };
	struct evr_mon_counter rate = { .kind = EVR_SAMPLE_RATE }, mean = { .kind = EVR_SAMPLE_MEAN };

	(void)state;
	for (size_t i = 0; i < sizeof(incs) / sizeof(incs[0]); i++) {
		struct evr_counter_sample s = { .kind = EVR_SAMPLE_RATE, .increment = incs[i],
						.value = incs[i] };

		evr_mon_counter_fold(&rate, &s);
	}
	assert_true(rate.total == 10.0);
	assert_int_equal(rate.skipped, 3);
	assert_int_equal(rate.nsamples, 7);
	assert_true(rate.last.increment == 0.0);

	evr_mon_counter_fold(&mean, &(struct evr_counter_sample){ .kind = EVR_SAMPLE_MEAN,
								  .mean = 4, .count = 2 });
	evr_mon_counter_fold(&mean, &(struct evr_counter_sample){ .kind = EVR_SAMPLE_MEAN,
								  .mean = NAN, .count = 0 });
	evr_mon_counter_fold(&mean, &(struct evr_counter_sample){ .kind = EVR_SAMPLE_MEAN,
								  .mean = 1, .count = 1 });
	assert_true(mean.sum == 9.0 && mean.count == 3.0);
	assert_int_equal(mean.skipped, 1);
}

/* One live process with a rate in ms, a gauge in bytes, a count gauge and a mean. */
static void test_evr_mon_metrics_openmetrics(void **state)
{
	struct evr_mon_counter ctr[4];
	struct evr_mon_proc p = { .pid = 42, .name = "app", .state = EVR_MON_LIVE, .ctr = ctr,
				  .cap = 4 };
	struct evr_mon_proc *procs[] = { &p };
	struct evr_mon_hub h = { .procs = procs, .n = 1, .attaches = 1 };
	struct evr_strbuf text = { 0 }, om = { 0 };

	(void)state;
	pthread_mutex_init(&h.lock, NULL);
	add_counter(&p, "paused", "Time \"paused\"", "ms", EVR_SAMPLE_RATE);
	p.ctr[0].total = 1500;
	add_counter(&p, "heap", "Heap", "B", EVR_SAMPLE_GAUGE);
	p.ctr[1].last.value = 4096;
	add_counter(&p, "items-count", "Items", "", EVR_SAMPLE_GAUGE);
	p.ctr[2].last.value = 3;
	add_counter(&p, "duration", "Duration", "us", EVR_SAMPLE_MEAN);
	p.ctr[3].sum = 2e6;
	p.ctr[3].count = 4;
	assert_int_equal(evr_mon_metrics(&h, &text, false), 0);
	assert_int_equal(evr_mon_metrics(&h, &om, true), 0);
	/* The text format: counter families named with _total, no UNIT, no EOF. */
	assert_non_null(strstr(text.buf, "# TYPE evring_app_paused_seconds_total counter\n"
				"evring_app_paused_seconds_total{pid=\"42\",process=\"app\","
				"provider=\"App\"} 1.5\n"));
	assert_null(strstr(text.buf, "# UNIT"));
	assert_null(strstr(text.buf, "# EOF"));
	assert_non_null(strstr(text.buf, "# HELP evring_app_paused_seconds_total Time \"paused\""));
	/* OpenMetrics: the family without _total, its samples with it; UNIT where the name
	 * ends in the unit; '"' escaped in HELP; # EOF last. */
	assert_non_null(strstr(om.buf, "# HELP evring_app_paused_seconds Time \\\"paused\\\" "
			       "(App/paused, ms)\n# TYPE evring_app_paused_seconds counter\n"
			       "# UNIT evring_app_paused_seconds seconds\n"
			       "evring_app_paused_seconds_total{pid=\"42\",process=\"app\","
			       "provider=\"App\"} 1.5\n"));
	assert_non_null(strstr(om.buf, "# TYPE evring_app_heap_bytes gauge\n"
			       "# UNIT evring_app_heap_bytes bytes\n"));
	assert_non_null(strstr(om.buf, "# TYPE evring_app_items_count_current gauge\n"
			       "evring_app_items_count_current{"));
	assert_non_null(strstr(om.buf, "# TYPE evring_app_duration_seconds summary\n"
			       "# UNIT evring_app_duration_seconds seconds\n"
			       "evring_app_duration_seconds_sum{pid=\"42\",process=\"app\","
			       "provider=\"App\"} 2\n"));
	assert_non_null(strstr(om.buf, "# TYPE evring_monitor_attaches counter\n"
			       "evring_monitor_attaches_total 1\n"));
	assert_non_null(strstr(om.buf, "# TYPE evring_session_lost_events counter\n"));
	assert_null(strstr(om.buf, "_total counter"));
	assert_true(om.len > 6 && !strcmp(om.buf + om.len - 6, "# EOF\n"));
	free(text.buf);
	free(om.buf);
	pthread_mutex_destroy(&h.lock);
}

/* The admission policy (issue 26): a rebound Host, Origin: null, typeless POSTs. */
static void test_evr_mon_admit_rebinding_and_csrf(void **state)
{
	struct evr_mon_admit_in in = { .listen_loopback = true, .port = 52330, .local_user = 1,
				       .method = "GET", .host = "127.0.0.1:52330" };
	const char *why;

	(void)state;
	assert_int_equal(evr_mon_admit(&in, &why), 0);
	in.host = "127.0.0.2:52330";
	assert_int_equal(evr_mon_admit(&in, &why), 0);
	in.host = "evil.example:52330";
	assert_int_equal(evr_mon_admit(&in, &why), 421);
	in.host = "127.0.0.1:52331";
	assert_int_equal(evr_mon_admit(&in, &why), 421);
	/* Everywhere with a key: a foreign Host from our own user needs the key. */
	in.listen_loopback = false;
	in.host = "evil.example:52330";
	assert_int_equal(evr_mon_admit(&in, &why), 401);
	in.key_ok = true;
	assert_int_equal(evr_mon_admit(&in, &why), 0);
	in.key_ok = false;
	in.host = "0.0.0.0:52330";
	assert_int_equal(evr_mon_admit(&in, &why), 0);
	in.local_user = 0;
	assert_int_equal(evr_mon_admit(&in, &why), 401);
	in.local_user = 1;
	in.origin = "null";
	assert_int_equal(evr_mon_admit(&in, &why), 403);
	in.origin = "http://0.0.0.0:52330";
	assert_int_equal(evr_mon_admit(&in, &why), 0);
	in.method = "POST";
	assert_int_equal(evr_mon_admit(&in, &why), 415);
	in.content_type = "application/jsonx";
	assert_int_equal(evr_mon_admit(&in, &why), 415);
	in.content_type = "application/json; charset=utf-8";
	assert_int_equal(evr_mon_admit(&in, &why), 0);
}

static void test_evr_mon_unescape_control_bytes(void **state)
{
	char a[] = "/processes/1/stacks%00/counters", b[] = "/a%20b%2fc", c[] = "x%0ay", d[] = "%zz%4";
	size_t n;

	(void)state;
	assert_int_equal(evr_mon_unescape(a, &n), -EILSEQ);
	assert_string_equal(a, "/processes/1/stacks?/counters");
	assert_int_equal(evr_mon_unescape(b, &n), 0);
	assert_string_equal(b, "/a b/c");
	assert_int_equal(evr_mon_unescape(c, &n), -EILSEQ);
	assert_int_equal(evr_mon_unescape(d, &n), 0);
	assert_string_equal(d, "%zz%4");
}

/* Handlers only to be told apart: the matcher never calls them. */
static enum MHD_Result h_a(struct evr_mon_req *q, const struct evr_mon_args *a)
{
	(void)q;
	(void)a;
	return MHD_YES;
}

static enum MHD_Result h_b(struct evr_mon_req *q, const struct evr_mon_args *a)
{
	(void)q;
	(void)a;
	return MHD_NO;
}

static const char *const no_params[] = { NULL };

static const struct evr_mon_route tab[] = {
	{ "GET", "/", h_a, no_params, NULL },
	{ "GET", "/processes/{pid}", h_a, no_params, NULL },
	{ "POST", "/processes/{pid}/traces", h_b, no_params, NULL },
	{ "GET", "/processes/{pid}/counters/{provider}/{name}", h_a, no_params, NULL },
	{ "GET", "/processes/{pid}/counters/stream", h_b, no_params, NULL },
	{ "GET", "/traces/{id}", h_a, no_params, NULL },
	{ "DELETE", "/traces/{id}", h_b, no_params, NULL },
	{ "GET", "/traces/{id}", h_b, no_params, NULL },	/* never reached: the first fits */
	{ "GET", "/ui/{asset}", h_a, no_params, NULL },
};

/* The last match's segments: its captures point into them until the next match. */
static char *kept[EVR_MON_MAX_SEGS];
static unsigned nkept;

/* Match @method against @path, split as the server splits it. */
static unsigned match(const char *method, const char *path, struct evr_mon_match *mt)
{
	evr_mon_segs_free(kept, nkept);
	nkept = 0;
	assert_int_equal(evr_mon_split_path(path, kept, &nkept), 0);
	return evr_mon_route_match(tab, sizeof(tab) / sizeof(tab[0]), method, kept, nkept, mt);
}

static void test_evr_mon_route_match_405_allow(void **state)
{
	struct evr_mon_match mt;

	(void)state;
	/* Found, HEAD as GET, typed {pid}: a number, or a name left for the caller. */
	assert_int_equal(match("GET", "/", &mt), 0);
	assert_ptr_equal(mt.route, &tab[0]);
	assert_int_equal(match("HEAD", "/processes/42", &mt), 0);
	assert_ptr_equal(mt.route, &tab[1]);
	assert_int_equal(mt.args.pid, 42);
	assert_null(mt.args.pid_name);
	assert_int_equal(match("GET", "/processes/minirt/", &mt), 0);
	assert_int_equal(mt.args.pid, 0);
	assert_string_equal(mt.args.pid_name, "minirt");
	assert_int_equal(match("GET", "/processes/7/counters/Process/threads", &mt), 0);
	assert_ptr_equal(mt.route, &tab[3]);
	assert_int_equal(mt.args.pid, 7);
	assert_string_equal(mt.args.provider, "Process");
	assert_string_equal(mt.args.name, "threads");
	assert_int_equal(match("GET", "/processes/7/counters/stream", &mt), 0);
	assert_ptr_equal(mt.route, &tab[4]);
	assert_null(mt.args.provider);
	assert_int_equal(match("DELETE", "/traces/t1", &mt), 0);
	assert_ptr_equal(mt.route, &tab[6]);
	assert_string_equal(mt.args.id, "t1");
	assert_string_equal(mt.allow, "");	/* the GET line before it: no Allow when found */
	assert_int_equal(match("GET", "/traces/t1", &mt), 0);
	assert_ptr_equal(mt.route, &tab[5]);
	assert_int_equal(match("GET", "/ui/app.js", &mt), 0);
	assert_string_equal(mt.args.asset, "app.js");

	/* A path with routes but not this method: 405, Allow each of its methods once. */
	assert_int_equal(match("POST", "/processes/7/counters/Process/threads", &mt), 405);
	assert_null(mt.route);
	assert_string_equal(mt.allow, "GET, HEAD");
	assert_int_equal(match("GET", "/processes/7/traces", &mt), 405);
	assert_string_equal(mt.allow, "POST");
	assert_int_equal(match("HEAD", "/processes/7/traces", &mt), 405);
	assert_string_equal(mt.allow, "POST");
	assert_int_equal(match("PUT", "/traces/t1", &mt), 405);
	assert_string_equal(mt.allow, "GET, HEAD, DELETE");
	assert_int_equal(match("DELETE", "/processes/minirt", &mt), 405);
	assert_string_equal(mt.allow, "GET, HEAD");

	/* No pattern fits the path: 404 whatever the method, an empty Allow. */
	assert_int_equal(match("GET", "/processes/7/nothing", &mt), 404);
	assert_string_equal(mt.allow, "");
	assert_int_equal(match("POST", "/processes/7/nothing", &mt), 404);
	assert_int_equal(match("GET", "/processes", &mt), 404);
	assert_int_equal(match("GET", "/processes/7/counters/Process", &mt), 404);
	assert_int_equal(match("GET", "/processes/7/counters/Process/threads/x", &mt), 404);
	assert_int_equal(match("GET", "/ui", &mt), 404);
	evr_mon_segs_free(kept, nkept);
	nkept = 0;
}

static void test_evr_mon_routes_check_malformed(void **state)
{
	static const struct evr_mon_route bad_cap[] = {
		{ "GET", "/processes/{pid}/heap/{what}", h_a, no_params, NULL } };
	static const struct evr_mon_route bad_method[] = { { "FETCH", "/x", h_a, no_params, NULL } };
	static const struct evr_mon_route no_slash[] = { { "GET", "x", h_a, no_params, NULL } };
	static const struct evr_mon_route no_handler[] = { { "GET", "/x", NULL, no_params, NULL } };
	static const struct evr_mon_route too_long[] = {
		{ "GET", "/1/2/3/4/5/6/7/8/9", h_a, no_params, NULL } };
	static const struct evr_mon_route brace[] = { { "GET", "/a{pid}", h_a, no_params, NULL } };
	char err[256];

	(void)state;
	assert_int_equal(evr_mon_routes_check(tab, sizeof(tab) / sizeof(tab[0]), err,
					      sizeof(err)), 0);
	assert_int_equal(evr_mon_routes_check(bad_cap, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "route 0 (GET /processes/{pid}/heap/{what}): a capture"));
	assert_int_equal(evr_mon_routes_check(bad_method, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown method"));
	assert_int_equal(evr_mon_routes_check(no_slash, 1, err, sizeof(err)), -EINVAL);
	assert_int_equal(evr_mon_routes_check(no_handler, 1, err, sizeof(err)), -EINVAL);
	assert_int_equal(evr_mon_routes_check(too_long, 1, err, sizeof(err)), -EINVAL);
	assert_int_equal(evr_mon_routes_check(brace, 1, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evr_mon_metric_init_names),
		cmocka_unit_test(test_evr_mon_metric_init_reserved_and_banned),
		cmocka_unit_test(test_evr_mon_key_check_hash),
		cmocka_unit_test(test_evr_mon_parse_duration_forms),
		cmocka_unit_test(test_evr_mon_jstr_invalid_utf8),
		cmocka_unit_test(test_evr_mon_accepts_openmetrics_negotiation),
		cmocka_unit_test(test_evr_mon_metrics_openmetrics),
		cmocka_unit_test(test_evr_mon_counter_fold_monotonic),
		cmocka_unit_test(test_evr_mon_admit_rebinding_and_csrf),
		cmocka_unit_test(test_evr_mon_unescape_control_bytes),
		cmocka_unit_test(test_evr_mon_route_match_405_allow),
		cmocka_unit_test(test_evr_mon_routes_check_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
