// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring dump: every event of a trace file in timestamp order, one per line,
 * each field decoded by name; or, with --json, exactly evr_event_to_json() per
 * line (the JSON lines format of <evring/schema.h>).
 *
 * A truncated file (recorder killed, disk full) is dumped up to its last
 * complete chunk with a warning on stderr, and the exit status is 0: what the
 * file holds was dumped. A file that is not a trace, or is corrupt before its
 * first events, is a one-line error and exit status 1.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <evring/symbols.h>
#include <evring/syscalls.h>
#include <evring/trace.h>

#include "cli.h"
#include "report-syscalls.h"

#define CMD "dump"

struct dump_opts {
	const char *path;
	struct evr_cli_flags flags;	/* --json, --no-sandbox */
	bool absolute;
	pid_t pid;			/* --pid: that process only; 0: every one */
};

enum { OPT_ABSOLUTE = EVR_OPT_FIRST_OWN, OPT_PID };

static const struct evr_cli_option longopts[] = {
	{ "json", no_argument, 'j', NULL, "one JSON object per line (see docs/cli.md)" },
	{ "pid", required_argument, OPT_PID, "PID",
	  "only process PID's events (a trace of several processes:\n"
	  "record --all, or several -p)" },
	{ "absolute", no_argument, OPT_ABSOLUTE, NULL,
	  "wall-clock time (seconds.nanoseconds since the epoch) instead of\n"
	  "the time since the first event" },
	EVR_CLI_OPTIONS_SANDBOX(EVR_OPT_NO_SANDBOX, EVR_OPT_SANDBOX_PROBE,
				"do not confine evring with seccomp once the file is open"),
	EVR_CLI_OPTION_HELP,
	{ 0 },
};

static void usage(FILE *f)
{
	evr_cli_usage(f,
		"Usage: evring dump [--json] [--absolute] [--pid PID] [--no-sandbox] FILE\n"
		"Print every event of trace FILE in timestamp order.\n",
		longopts, "");
}

static int parse_argv(int argc, char **argv, struct dump_opts *o)
{
	struct evr_cli_getopt g;
	int c, r;

	evr_cli_getopt_init(&g, "+:", longopts);
	while ((c = evr_cli_getopt(&g, argc, argv)) != -1) {
		if (c == OPT_ABSOLUTE) {
			o->absolute = true;
			continue;
		}
		if (c == OPT_PID) {
			if (evr_cli_parse_pid(CMD, "--pid", optarg, &o->pid) < 0)
				return -EINVAL;
			continue;
		}
		r = evr_cli_common_opt(CMD, c, argv, usage, &o->flags);
		if (r <= 0)
			return r;
	}
	if (evr_cli_file_operand(CMD, "evring dump FILE", argc, argv, &o->path) < 0)
		return -EINVAL;
	return 1;
}

static void put_hex(FILE *f, const void *data, uint32_t len)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = data;

	for (uint32_t i = 0; i < len; i++) {
		putc(digits[p[i] >> 4], f);
		putc(digits[p[i] & 15], f);
	}
}

/* Bytes of a str or json field, escaped so that one event stays one line. */
static void put_escaped(FILE *f, const void *data, uint32_t len)
{
	const unsigned char *p = data;

	for (uint32_t i = 0; i < len; i++) {
		if (p[i] == '"' || p[i] == '\\')
			fprintf(f, "\\%c", p[i]);
		else if (p[i] == '\n')
			fputs("\\n", f);
		else if (p[i] == '\t')
			fputs("\\t", f);
		else if (p[i] < 0x20 || p[i] == 0x7f)
			fprintf(f, "\\x%02x", p[i]);
		else
			putc(p[i], f);
	}
}

/* Shortest of %.15g / %.17g that reads back exactly. */
static void put_double(FILE *f, double v)
{
	char buf[40];

	if (isnan(v) || isinf(v)) {
		fputs(isnan(v) ? "nan" : v < 0 ? "-inf" : "inf", f);
		return;
	}
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	fputs(buf, f);
}

static void put_value(FILE *f, const struct evr_field_value *v)
{
	switch (v->type) {
	case EVR_FT_U8: case EVR_FT_U16: case EVR_FT_U32: case EVR_FT_U64:
		fprintf(f, "%" PRIu64, v->u);
		break;
	case EVR_FT_I8: case EVR_FT_I16: case EVR_FT_I32: case EVR_FT_I64:
		fprintf(f, "%" PRId64, v->i);
		break;
	case EVR_FT_F32: case EVR_FT_F64:
		put_double(f, v->f);
		break;
	case EVR_FT_BOOL:
		fputs(v->u ? "true" : "false", f);
		break;
	case EVR_FT_PTR:
		fprintf(f, "0x%" PRIx64, v->u);
		break;
	case EVR_FT_STR:
		putc('"', f);
		put_escaped(f, v->b.data, v->b.len);
		putc('"', f);
		break;
	case EVR_FT_JSON:
		put_escaped(f, v->b.data, v->b.len);
		break;
	case EVR_FT_BYTES:
		put_hex(f, v->b.data, v->b.len);
		break;
	default:
		fputs("?", f);
		break;
	}
}

static void put_time(FILE *f, const struct dump_opts *o, const struct evr_event_view *v,
		     uint64_t t0, int64_t mono_to_real)
{
	uint64_t t = o->absolute ? v->ts_ns + (uint64_t)mono_to_real : v->ts_ns - t0;

	fprintf(f, "%" PRIu64 ".%09" PRIu64, t / 1000000000u, t % 1000000000u);
}

static void put_text(FILE *f, const struct evr_event_view *v)
{
	struct evr_field_value vals[EVR_SCHEMA_MAX_FIELDS];
	const struct evr_schema_event *s = v->schema;
	int n;

	if (v->type == EVR_REC_LOST) {
		fprintf(f, " cpu=%u LOST %" PRIu64 " events\n", v->ring, v->lost);
		return;
	}
	fprintf(f, " cpu=%u tid=%u ", v->ring, v->tid);
	if (!s) {
		fprintf(f, "?/? rid=%u payload=", v->rid);
		put_hex(f, v->payload, v->len);
		putc('\n', f);
		return;
	}
	fprintf(f, "%s/%s", s->provider, s->name);
	n = s->nfields <= EVR_SCHEMA_MAX_FIELDS ? evr_decode_fields(s, v->payload, v->len, vals)
						: -EBADMSG;
	if (n < 0) {
		fprintf(f, " <payload does not match the schema> payload=");
		put_hex(f, v->payload, v->len);
		putc('\n', f);
		return;
	}
	for (int i = 0; i < n; i++) {
		fprintf(f, " %s=", s->fields[i].name);
		put_value(f, &vals[i]);
	}
	putc('\n', f);
}

/* Frame @i of a stack: frame 0 of a CPU sample is where the thread was, every other a return address. */
static void put_frame_text(FILE *f, struct evr_symbolizer *sym, uint64_t pc, bool is_return)
{
	char buf[512];
	struct evr_sym s = { 0 };

	if (sym) {
		evr_symbolizer_lookup(sym, pc, is_return, &s);
		/* Functions inlined at the address first, innermost first. */
		for (uint32_t k = 0; k < s.ninlined; k++)
			fprintf(f, "    at %s\n", evr_sym_format_inlined(&s, k, false, buf, sizeof(buf)));
		fprintf(f, "    at %s\n", evr_sym_format(&s, pc, false, buf, sizeof(buf)));
	} else {
		fprintf(f, "    at 0x%" PRIx64 "\n", pc);
	}
}

static void put_frame_json(struct evr_strbuf *sb, struct evr_symbolizer *sym, uint64_t pc,
			   bool is_return, bool first)
{
	char buf[512];
	struct evr_sym s = { 0 };

	evr_strbuf_printf(sb, "%s{\"pc\":\"0x%" PRIx64 "\"", first ? "" : ",", pc);
	if (sym && evr_symbolizer_lookup(sym, pc, is_return, &s) >= 0 && (s.func || s.module)) {
		evr_strbuf_printf(sb, ",\"frame\":");
		evr_sym_format(&s, pc, false, buf, sizeof(buf));
		evr_strbuf_json_string(sb, buf, strlen(buf));
		/* The functions inlined at the address, innermost first. */
		if (s.ninlined) {
			evr_strbuf_printf(sb, ",\"inlined\":[");
			for (uint32_t k = 0; k < s.ninlined; k++) {
				const char *fn = s.inlined[k].func ? s.inlined[k].func : "??";

				if (k)
					evr_strbuf_printf(sb, ",");
				evr_strbuf_json_string(sb, fn, strlen(fn));
			}
			evr_strbuf_printf(sb, "]");
		}
	}
	evr_strbuf_printf(sb, "}");
}

static uint64_t frame_at(const void *frames, uint32_t i)
{
	uint64_t pc;

	memcpy(&pc, (const uint8_t *)frames + 8u * i, 8);
	return pc;
}

static const char *const sample_names[] = {
	[EVR_SAMPLE_CPU] = "cpu_sample",
	[EVR_SAMPLE_SWITCH_OUT] = "switch_out",
	[EVR_SAMPLE_SWITCH_IN] = "switch_in",
	[EVR_SAMPLE_LOST] = "samples_lost",
	[EVR_SAMPLE_COUNTER] = "counter",
};

/* One record of the CPU sampler, in the same forms as events. */
static void put_sample(const struct dump_opts *o, const struct evr_samples *ss, size_t i,
		       struct evr_symbolizer *sym, uint32_t own_pid, uint64_t t0,
		       int64_t mono_to_real, struct evr_strbuf *sb)
{
	const struct evr_sample_rec *r = &ss->v[i];
	const uint64_t *fr = ss->frames + ss->frame_off[i];
	const char *name = r->type < sizeof(sample_names) / sizeof(sample_names[0]) &&
					   sample_names[r->type] ? sample_names[r->type] : "sample";
	uint64_t t = o->absolute ? r->time_ns + (uint64_t)mono_to_real : r->time_ns - t0;
	/* A system-wide recording: samples of every process, switches with both sides. */
	bool system = ss->has_sampler && (ss->sampler.event & EVR_SAMPLER_SYSTEM);
	/* Which source took a CPU sample: said for the timer-tick one (cpu-clock's is the default). */
	bool tick = ss->has_sampler &&
		    EVR_SAMPLER_EVENT(ss->sampler.event) == EVR_SAMPLER_TIMER_TICK;

	/* Only the recorded process's binaries are known: other processes' frames stay addresses. */
	if (system && r->pid != own_pid)
		sym = NULL;

	if (r->type == EVR_SAMPLE_COUNTER) {
		/* A thread's count, every CPU's: the field that names a CPU names the counter. */
		const char *cn = evr_perf_counter_name((uint16_t)r->cpu);
		char nb[16];

		if (!cn) {
			snprintf(nb, sizeof(nb), "%u", r->cpu);
			cn = nb;
		}
		if (o->flags.json)
			printf("{\"type\":\"counter\",\"ts\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,"
			       "\"counter\":\"%s\",\"value\":%" PRIu64 "}\n", r->time_ns, r->pid,
			       r->tid, cn, r->value);
		else
			printf("%" PRIu64 ".%09" PRIu64 " pid=%u tid=%u COUNTER %s +%" PRIu64 "\n",
			       t / 1000000000u, t % 1000000000u, r->pid, r->tid, cn, r->value);
		return;
	}
	if (o->flags.json) {
		sb->len = 0;
		evr_strbuf_printf(sb, "{\"type\":\"%s\",\"ts\":%" PRIu64 ",\"cpu\":%u", name,
				  r->time_ns, r->cpu);
		if (r->type != EVR_SAMPLE_LOST)
			evr_strbuf_printf(sb, ",\"tid\":%u", r->tid);
		if (r->type == EVR_SAMPLE_CPU)
			evr_strbuf_printf(sb, ",\"period_ns\":%" PRIu64 "%s", r->value,
					  tick ? ",\"source\":\"timer-tick\"" : "");
		if (r->type != EVR_SAMPLE_LOST && system)
			evr_strbuf_printf(sb, ",\"pid\":%u", r->pid);
		if (r->type == EVR_SAMPLE_SWITCH_OUT)
			evr_strbuf_printf(sb, ",\"preempted\":%s",
					  r->value & EVR_SAMPLE_SWITCH_PREEMPTED ? "true" : "false");
		if ((r->type == EVR_SAMPLE_SWITCH_OUT || r->type == EVR_SAMPLE_SWITCH_IN) && system)
			evr_strbuf_printf(sb, ",\"%s_tid\":%u",
					  r->type == EVR_SAMPLE_SWITCH_OUT ? "next" : "prev",
					  EVR_SAMPLE_SWITCH_OTHER(r->value));
		else if (r->type == EVR_SAMPLE_LOST)
			evr_strbuf_printf(sb, ",\"count\":%" PRIu64, r->value);
		if (r->nframes) {
			evr_strbuf_printf(sb, ",\"stack\":[");
			for (uint32_t k = 0; k < r->nframes; k++)
				put_frame_json(sb, sym, fr[k], k > 0, k == 0);
			evr_strbuf_printf(sb, "]");
		}
		evr_strbuf_printf(sb, "}\n");
		fwrite(sb->buf, 1, sb->len, stdout);
		return;
	}
	printf("%" PRIu64 ".%09" PRIu64 " cpu=%u", t / 1000000000u, t % 1000000000u, r->cpu);
	switch (r->type) {
	case EVR_SAMPLE_CPU:
		if (system)
			printf(" pid=%u", r->pid);
		printf(" tid=%u CPU-SAMPLE %speriod=%" PRIu64 "ns\n", r->tid,
		       tick ? "timer-tick " : "", r->value);
		break;
	case EVR_SAMPLE_SWITCH_OUT:
		printf(" tid=%u SWITCH-OUT %s", r->tid,
		       r->value & EVR_SAMPLE_SWITCH_PREEMPTED ? "preempted" : "blocked");
		if (system)
			printf(" next=%u", EVR_SAMPLE_SWITCH_OTHER(r->value));
		putchar('\n');
		break;
	case EVR_SAMPLE_SWITCH_IN:
		printf(" tid=%u SWITCH-IN", r->tid);
		if (system)
			printf(" prev=%u", EVR_SAMPLE_SWITCH_OTHER(r->value));
		putchar('\n');
		break;
	case EVR_SAMPLE_LOST:
		printf(" LOST %" PRIu64 " samples\n", r->value);
		break;
	default:
		printf(" tid=%u sample of type %u\n", r->tid, r->type);
	}
	for (uint32_t k = 0; k < r->nframes; k++)
		put_frame_text(stdout, sym, fr[k], k > 0);
}

/* One system call (record --syscalls): name, arguments, result, duration. */
static void put_syscall(const struct dump_opts *o, const struct evr_syscall_set *sys, size_t i,
			uint64_t t0, int64_t mono_to_real)
{
	const struct evr_syscall_rec *r = &sys->v[i];
	uint32_t machine = sys->has_info ? sys->info.machine : evr_syscall_machine();
	char nb[32], eb[16];
	const char *name = evr_syscall_name_or_nr(r->nr, machine, nb, sizeof(nb));
	bool err = r->ret < 0 && r->ret >= -4095 && !(r->flags & EVR_SYSCALL_NO_EXIT);
	uint64_t t = o->absolute ? r->time_ns + (uint64_t)mono_to_real : r->time_ns - t0;

	if (o->flags.json) {
		printf("{\"type\":\"syscall\",\"ts\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,"
		       "\"name\":\"%s\",\"dur_ns\":%" PRIu64, r->time_ns, r->pid, r->tid, name,
		       r->dur_ns);
		if (!(r->flags & EVR_SYSCALL_NO_EXIT))
			printf(",\"ret\":%" PRId64, r->ret);
		if (err)
			printf(",\"errno\":\"%s\"", evr_errno_name((int)-r->ret, eb, sizeof(eb)));
		if (!(r->flags & EVR_SYSCALL_NO_ENTER))
			printf(",\"args\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
			       r->args[0], r->args[1], r->args[2], r->args[3]);
		if (r->flags & (EVR_SYSCALL_NO_ENTER | EVR_SYSCALL_NO_EXIT))
			printf(",\"incomplete\":\"%s\"",
			       r->flags & EVR_SYSCALL_NO_ENTER ? "no entry" : "no exit");
		fputs("}\n", stdout);
		return;
	}
	printf("%" PRIu64 ".%09" PRIu64 " pid=%u tid=%u SYSCALL %s", t / 1000000000u,
	       t % 1000000000u, r->pid, r->tid, name);
	if (r->flags & EVR_SYSCALL_NO_ENTER)
		printf("(?)");
	else
		printf("(0x%" PRIx64 ", 0x%" PRIx64 ", 0x%" PRIx64 ", 0x%" PRIx64 ")", r->args[0],
		       r->args[1], r->args[2], r->args[3]);
	if (r->flags & EVR_SYSCALL_NO_EXIT)
		printf(" = ? (no exit)\n");
	else if (err)
		printf(" = %" PRId64 " %s %" PRIu64 "ns\n", r->ret,
		       evr_errno_name((int)-r->ret, eb, sizeof(eb)), r->dur_ns);
	else
		printf(" = %" PRId64 " %" PRIu64 "ns\n", r->ret, r->dur_ns);
}

static int cmp_syscall(const void *a, const void *b)
{
	const struct evr_syscall_rec *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* ---- several processes ---------------------------------------------------------- */

/* One process of a trace of several, its next view waiting to be merged. */
struct dproc {
	struct evr_trace_reader *r;
	uint32_t pid;
	int64_t mono_to_real;
	struct evr_event_view v;
	int st;			/* of the last next(): 1 v is waiting, 0 done, < 0 error */
};

/*
 * Every process's events merged in time order (each reader gives its own in
 * order; the smallest head goes next: a linear pick, as processes are few
 * next to events), each line with its pid. Samples and symbols belong to a
 * single process's side bands, which a recording of several does not have.
 */
static int dump_procs(const struct dump_opts *o, struct dproc *d, uint32_t n)
{
	struct evr_strbuf sb = { 0 };
	uint64_t t0 = UINT64_MAX;
	int ret = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct evr_trace_session *sess = evr_trace_reader_session(d[i].r);

		if (sess)
			d[i].mono_to_real = (int64_t)(sess->clock.real_base - sess->clock.mono_base);
		d[i].st = evr_trace_reader_next(d[i].r, &d[i].v);
		if (d[i].st == 1 && d[i].v.ts_ns < t0)
			t0 = d[i].v.ts_ns;
	}
	for (;;) {
		struct dproc *p = NULL;

		for (uint32_t i = 0; i < n; i++) {
			if (d[i].st < 0) {
				fflush(stdout);
				evr_cli_error(CMD, "%s: process %u: %s", evr_cli_trace_name(o->path),
					      d[i].pid, d[i].st == -ENOMEM ? "out of memory" :
					      evr_trace_reader_errmsg(d[i].r));
				ret = d[i].st;
				goto out;
			}
			if (d[i].st == 1 && (!p || d[i].v.ts_ns < p->v.ts_ns))
				p = &d[i];
		}
		if (!p)
			break;
		if (o->flags.json) {
			sb.len = 0;
			ret = evr_event_to_json(&p->v, &sb);
			if (ret < 0)
				goto out;
			/* The process first, as a field of the object. */
			if (sb.len && sb.buf[0] == '{')
				printf("{\"pid\":%u,%.*s\n", p->pid, (int)(sb.len - 1), sb.buf + 1);
		} else {
			put_time(stdout, o, &p->v, t0, p->mono_to_real);
			printf(" pid=%u", p->pid);
			put_text(stdout, &p->v);
		}
		p->st = evr_trace_reader_next(p->r, &p->v);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		ret = errno ? -errno : -EIO;
		evr_cli_error(CMD, "cannot write the output: %s", strerror(-ret));
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		evr_cli_trace_warnings(CMD, o->path, d[i].r);
		evr_cli_trace_unchecked(CMD, o->path, d[i].r);
	}
out:
	free(sb.buf);
	return ret;
}

static int run_procs(const struct dump_opts *o, struct evr_trace_reader *r0)
{
	struct evr_trace_reader **rs = NULL;
	struct dproc *d = NULL;
	uint32_t n = 0;
	int ret;

	ret = evr_cli_trace_procs(CMD, o->path, r0, 0, o->pid, &rs, &n);
	if (ret < 0)
		return ret;
	d = calloc(n ? n : 1, sizeof(*d));
	if (!d) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		d[i].r = rs[i];
		d[i].pid = evr_cli_trace_pid(rs[i]);
	}
	setvbuf(stdout, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, 1u << 16);
	ret = evr_cli_sandbox_enter(CMD, EVR_SANDBOX_DUMP, &o->flags);
	if (ret == 0)
		ret = dump_procs(o, d, n);
out:
	evr_cli_trace_procs_free(rs, n, r0);
	free(d);
	return ret;
}

/* The work, as evr_cli_main()'s run step. */
static int run(void *arg)
{
	const struct dump_opts *o = arg;
	struct evr_trace_reader *r = NULL;
	const struct evr_trace_session *sess;
	struct evr_strbuf sb = { 0 };
	struct evr_trace_stats st;
	struct evr_event_view v;
	struct evr_symbolizer *sym = NULL;
	struct evr_samples *ss = NULL;
	struct evr_syscall_set *sys = NULL;
	const struct evr_process_info *own;
	int64_t mono_to_real = 0;
	uint32_t own_pid;
	uint64_t t0 = 0;
	size_t si = 0, yi = 0;
	bool first = true;
	int ret;

	ret = evr_cli_trace_open(CMD, o->path, 0, &r);
	if (ret < 0)
		return ret;
	own = evr_trace_reader_process(r);
	own_pid = own ? own->pid : 0;
	if (evr_trace_reader_procs(r, NULL, NULL)) {
		ret = run_procs(o, r);
		goto out;
	}
	if (o->pid && evr_cli_trace_pid(r) != (uint32_t)o->pid) {
		evr_cli_error(CMD, "%s: no process %d: the trace is of process %u",
			      evr_cli_trace_name(o->path), (int)o->pid, evr_cli_trace_pid(r));
		ret = -ESRCH;
		goto out;
	}
	evr_trace_reader_stats(r, &st);
	/* A stream is read once, as it comes: the module maps and CPU samples that
	 * a file offers up front go by (said at the end if there were any). */
	if (!st.stream) {
		/* Before the sandbox: the binaries the stacks point into are opened now. */
		ret = evr_symbolizer_from_trace(r, &sym);
		if (ret == -ENOMEM)
			goto out;
		if (sym && *evr_symbolizer_warnings(sym))
			fprintf(stderr, "%s", evr_symbolizer_warnings(sym));
		ret = evr_samples_load(r, &ss);
		if (ret == -EBADMSG)
			evr_cli_warn(CMD, "%s: a SAMPLES chunk is malformed; its samples are left "
				     "out", o->path);
		else if (ret < 0)
			goto out;
		ret = evr_cli_syscalls_load(CMD, o->path, r, &sys);
		if (ret < 0)
			goto out;
		if (sys && sys->n > 1)
			qsort(sys->v, sys->n, sizeof(*sys->v), cmp_syscall);
	}
	/* Decided now: stdio would ask the terminal (ioctl) at the first write, in the sandbox. */
	setvbuf(stdout, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, 1u << 16);
	ret = evr_cli_sandbox_enter(CMD, EVR_SANDBOX_DUMP, &o->flags);
	if (ret < 0)
		goto out;
	if (o->flags.sandbox_probe)
		evr_cli_sandbox_probe(CMD);
	sess = evr_trace_reader_session(r);
	if (sess)
		mono_to_real = (int64_t)(sess->clock.real_base - sess->clock.mono_base);

	while ((ret = evr_trace_reader_next(r, &v)) == 1) {
		if (first) {
			t0 = v.ts_ns;
			if (ss && ss->n && ss->v[0].time_ns < t0)
				t0 = ss->v[0].time_ns;
			if (sys && sys->n && sys->v[0].time_ns < t0)
				t0 = sys->v[0].time_ns;
			first = false;
		}
		/* CPU samples and system calls on the same timeline (all CLOCK_MONOTONIC). */
		for (;;) {
			bool s_ok = ss && si < ss->n && ss->v[si].time_ns <= v.ts_ns;
			bool y_ok = sys && yi < sys->n && sys->v[yi].time_ns <= v.ts_ns;

			if (s_ok && (!y_ok || ss->v[si].time_ns <= sys->v[yi].time_ns))
				put_sample(o, ss, si++, sym, own_pid, t0, mono_to_real, &sb);
			else if (y_ok)
				put_syscall(o, sys, yi++, t0, mono_to_real);
			else
				break;
		}
		if (o->flags.json) {
			sb.len = 0;
			ret = evr_event_to_json(&v, &sb);
			if (ret < 0)
				break;
			if (v.nframes && sb.len && sb.buf[sb.len - 1] == '}') {
				sb.len--;
				evr_strbuf_printf(&sb, ",\"stack\":[");
				for (uint32_t k = 0; k < v.nframes; k++)
					put_frame_json(&sb, sym, frame_at(v.frames, k), true, k == 0);
				evr_strbuf_printf(&sb, "]}");
			}
			fwrite(sb.buf, 1, sb.len, stdout);
			putchar('\n');
			continue;
		}
		put_time(stdout, o, &v, t0, mono_to_real);
		put_text(stdout, &v);
		for (uint32_t k = 0; k < v.nframes; k++)
			put_frame_text(stdout, sym, frame_at(v.frames, k), true);
	}
	if (ret == 0 && first && ss && ss->n)
		t0 = ss->v[0].time_ns;
	if (ret == 0 && first && sys && sys->n && (!(ss && ss->n) || sys->v[0].time_ns < t0))
		t0 = sys->v[0].time_ns;
	while (ret == 0 && ((ss && si < ss->n) || (sys && yi < sys->n))) {
		if (ss && si < ss->n && !(sys && yi < sys->n && sys->v[yi].time_ns < ss->v[si].time_ns))
			put_sample(o, ss, si++, sym, own_pid, t0, mono_to_real, &sb);
		else
			put_syscall(o, sys, yi++, t0, mono_to_real);
	}
	if (ret < 0) {
		fflush(stdout);
		evr_cli_error(CMD, "%s: %s", evr_cli_trace_name(o->path),
			      ret == -ENOMEM ? "out of memory" : evr_trace_reader_errmsg(r));
		goto out;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		ret = errno ? -errno : -EIO;
		evr_cli_error(CMD, "cannot write the output: %s", strerror(-ret));
		goto out;
	}
	evr_trace_reader_stats(r, &st);
	evr_cli_trace_warnings(CMD, o->path, r);
	evr_cli_trace_unchecked(CMD, o->path, r);
	if (sym) {
		const struct evr_process_info *pi = evr_trace_reader_process(r);
		char note[256];

		if (evr_symbolizer_unmapped_note(sym, pi ? pi->pid : 0, note, sizeof(note)))
			evr_cli_warn(CMD, "%s: %s", evr_cli_trace_name(o->path), note);
	}
	evr_trace_reader_stats(r, &st);
	if (st.stream_other_chunks)
		evr_cli_warn(CMD, "stdin: %" PRIu64 " chunks of CPU samples or module maps went by "
			     "unread (a stream is read once; dump the file to see samples and "
			     "symbolized stacks)", st.stream_other_chunks);
	ret = 0;
out:
	free(sb.buf);
	evr_samples_free(ss);
	evr_syscalls_set_free(sys);
	evr_symbolizer_free(sym);
	evr_trace_reader_free(r);
	return ret;
}

int evr_cmd_dump(int argc, char **argv)
{
	static const struct evr_cli_steps steps = { .run = run };
	struct dump_opts o = { 0 };

	return evr_cli_main(parse_argv(argc, argv, &o), &steps, &o);
}
