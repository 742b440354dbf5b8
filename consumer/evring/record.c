// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record: attach to a process (or start one), run a session, and write
 * its rings into a trace file.
 *
 * The recorder never decodes an event: every span of published records goes
 * from the session mapping to the file with one writev (the trace writer's
 * EVENTS chunk), and its events are only counted (evr_span_count) for the
 * progress line and the summary. Metadata entries are copied to the file before
 * the first span that may need them: a span's records were published after
 * their descriptions (<evring/abi.h>), so reading new metadata after taking a
 * span, and before writing it, always finds them.
 *
 * Losses: LOST records inside spans, gaps between what a packet header says was
 * written on its ring before it and what we stored (a lapped overwrite session,
 * a span retracted because the writers reached it), and at the end the losses
 * no record shows (evr_client_span_final_lost). The summary always reports them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/trace.h>

#include "cli.h"
#include "record.h"

#define CMD "record"
#define PROGRESS_NS 250000000u		/* refresh ~4 times a second */
#define THREADS_NS 250000000u		/* ask for the thread names 4 times a second */
#define SPANS_PER_ROUND 256u		/* then look at signals and the clock again */
#define META_BATCH_BYTES (1u << 20)

static volatile sig_atomic_t stop_signal;

static int write_error(struct recorder *r, int err);

static void on_stop_signal(int sig)
{
	/* A second Ctrl-C while draining: leave now; every chunk written is whole. */
	if (stop_signal)
		_exit(128 + sig);
	stop_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: evring record -p PID [OPTIONS]\n"
		"       evring record [OPTIONS] -- PROGRAM [ARGS...]\n"
		"Record events of a running process, or of PROGRAM from its first event.\n"
		"  -p, --pid PID            attach to process PID (no restart needed)\n"
		"      --providers LIST     Name[:0xKEYWORDS[:LEVEL[:k=v;...]]],... (default: '*')\n"
		"  -o, --output FILE        trace file to write (default: trace.evtrace)\n"
		"      --duration TIME      stop after TIME (500ms, 30s, 5m, 1h)\n"
		"      --buffer-size SIZE   session buffer in all, split over the process's rings\n"
		"                           (e.g. 64M; default: the producer's 4 MiB per ring)\n"
		"      --mode MODE          discard (default: drop new events when full) or\n"
		"                           overwrite (flight recorder: keep the newest)\n"
		"      --counter-interval TIME  sample the providers' counters every TIME\n"
		"                           (e.g. 1s; at least 10ms; default: no counters)\n"
		"      --no-sandbox         do not confine evring with seccomp once attached\n"
		"Stops on Ctrl-C/SIGTERM, after --duration, or when the process exits.\n");
}

static int parse_pid(const char *s, pid_t *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 0x3fffffff) {
		evr_cli_error(CMD, "--pid: '%s' is not a process id", s);
		return -EINVAL;
	}
	*ret = (pid_t)v;
	return 0;
}

/* Return: 1 run, 0 done (--help), -EINVAL. */
static int parse_argv(int argc, char **argv, struct record_opts *o)
{
	enum { OPT_PROVIDERS = EVR_OPT_FIRST_OWN, OPT_DURATION, OPT_BUFFER, OPT_MODE,
	       OPT_COUNTERS };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "providers", required_argument, NULL, OPT_PROVIDERS },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "buffer-size", required_argument, NULL, OPT_BUFFER },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "counter-interval", required_argument, NULL, OPT_COUNTERS },
		EVR_CLI_LONGOPTS_SANDBOX,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, r;

	o->providers = "*";
	o->output = "trace.evtrace";
	o->mode = EVR_MODE_DISCARD;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pid(optarg, &o->pid) < 0)
				return -EINVAL;
			break;
		case OPT_PROVIDERS:
			if (!*optarg) {
				evr_cli_error(CMD, "--providers: empty provider list");
				return -EINVAL;
			}
			o->providers = optarg;
			break;
		case 'o':
			if (!*optarg) {
				evr_cli_error(CMD, "--output: empty file name");
				return -EINVAL;
			}
			o->output = optarg;
			break;
		case OPT_DURATION:
			if (evr_parse_duration(CMD, "--duration", optarg, &o->duration_ns) < 0)
				return -EINVAL;
			break;
		case OPT_COUNTERS: {
			uint64_t ns;

			if (evr_parse_duration(CMD, "--counter-interval", optarg, &ns) < 0)
				return -EINVAL;
			if (ns < 10000000ull || ns > 3600000000000ull) {
				evr_cli_error(CMD, "--counter-interval %s is not between 10ms and 1h",
					      optarg);
				return -EINVAL;
			}
			o->counter_interval_ms = (uint32_t)(ns / 1000000u);
			break;
		}
		case OPT_BUFFER:
			if (evr_parse_size(CMD, "--buffer-size", optarg, &o->buffer_size) < 0)
				return -EINVAL;
			o->buffer_arg = optarg;
			break;
		case OPT_MODE:
			if (strcmp(optarg, "discard") == 0) {
				o->mode = EVR_MODE_DISCARD;
			} else if (strcmp(optarg, "overwrite") == 0) {
				o->mode = EVR_MODE_OVERWRITE;
			} else {
				evr_cli_error(CMD, "--mode: '%s' is not discard or overwrite", optarg);
				return -EINVAL;
			}
			break;
		default:
			r = evr_cli_common_opt(CMD, c, argv, usage, &o->flags);
			if (r <= 0)
				return r;
		}
	}
	if (optind < argc) {
		/* getopt stops at "--" (and consumes it) or at the first non-option. */
		if (strcmp(argv[optind - 1], "--") != 0) {
			evr_cli_error(CMD, "unexpected argument '%s' (a program to start goes "
				      "after --)", argv[optind]);
			return -EINVAL;
		}
		o->program = argv + optind;
	}
	if (o->pid && o->program) {
		evr_cli_error(CMD, "-p and -- PROGRAM exclude each other");
		return -EINVAL;
	}
	if (!o->pid && !o->program) {
		evr_cli_error(CMD, "say what to record: -p PID or -- PROGRAM [ARGS...] "
			      "(try evring record --help)");
		return -EINVAL;
	}
	return 1;
}

/* --buffer-size in all, to one ring's size: a power of two, rounded down. */
static int ring_size_for(const struct record_opts *o, uint32_t nr_rings, uint64_t *ret)
{
	uint64_t min = (uint64_t)EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN;
	uint64_t per, p2 = 1;
	char a[32];

	if (!o->buffer_size) {
		*ret = 0;
		return 0;
	}
	if (nr_rings == 0)
		nr_rings = 1;
	per = o->buffer_size / nr_rings;
	while (p2 <= per / 2)
		p2 *= 2;
	if (per < min) {
		evr_cli_error(CMD, "--buffer-size %s is too small: the process has %u rings and "
			      "each needs at least %s (use at least %lluK)",
			      o->buffer_arg, nr_rings, evr_fmt_bytes(min, a, sizeof(a)),
			      (unsigned long long)(min * nr_rings / 1024));
		return -EINVAL;
	}
	*ret = p2 < EVR_RING_SIZE_MAX ? p2 : EVR_RING_SIZE_MAX;
	return 0;
}

/* Copy the metadata entries not yet in the file into METADATA chunks. */
static int write_metadata(struct recorder *r)
{
	struct evr_trace_meta batch[256];
	uint32_t n = 0, bytes = 0;
	int ret;

	for (;;) {
		const void *data;
		uint32_t kind, len;

		ret = evr_client_meta_next(r->c, &r->meta_pos, &kind, &data, &len);
		if (ret < 0) {
			evr_cli_error(CMD, "the session's metadata area is corrupt: %s",
				      strerror(-ret));
			return ret;
		}
		if (ret == 1) {
			batch[n++] = (struct evr_trace_meta){ .kind = kind, .len = len,
							      .data = data };
			bytes += len + 16;
		}
		if (n && (ret == 0 || n == 256 || bytes >= META_BATCH_BYTES)) {
			int w = evr_trace_writer_metadata(r->w, batch, n);

			if (w < 0)
				return write_error(r, w);
			n = 0;
			bytes = 0;
		}
		if (ret == 0)
			return 0;
	}
}

/*
 * A span starting at a packet boundary carries the packet header: the events
 * written and lost on its ring before it. Return: true and that sum in @ret.
 */
static bool packet_before(const struct recorder *r, const struct evr_span *sp, uint64_t *ret)
{
	const struct evr_shm_hdr *h = evr_client_shm(r->c);
	struct evr_packet_hdr ph;

	if (sp->ring >= r->nr_rings || (sp->pos & (h->packet_size - 1)) != 0 ||
	    sp->len < sizeof(ph))
		return false;
	memcpy(&ph, sp->data, sizeof(ph));
	if (ph.magic != EVR_PACKET_MAGIC)
		return false;
	*ret = ph.events_before + ph.lost_before;
	return true;
}

/*
 * Write what is published, at most SPANS_PER_ROUND spans.
 * Return: the number of spans written, or -errno (already reported).
 */
static int pump(struct recorder *r)
{
	struct evr_span sp;
	int n = 0, ret;

	while (n < (int)SPANS_PER_ROUND) {
		uint64_t ev = 0, lost = 0, before = 0;
		bool has_hdr;
		int count;

		ret = evr_client_span_next(r->c, &sp);
		if (ret < 0) {
			evr_cli_error(CMD, "cannot read the session: %s", strerror(-ret));
			return ret;
		}
		if (ret == 0)
			break;
		ret = write_metadata(r);
		if (ret < 0)
			return ret;
		ret = evr_trace_writer_events(r->w, sp.ring, sp.pos, sp.data, sp.len);
		if (ret < 0)
			return write_error(r, ret);
		/* Read from the span before handing it back (discard mode: the writers
		 * may then reuse it). In overwrite mode they may be rewriting it under
		 * us already: what was read (here and by the writer's CRC) counts only
		 * if evr_client_span_done() then says it stayed intact. */
		has_hdr = packet_before(r, &sp, &before);
		count = evr_span_count(&sp, &ev, &lost);
		ret = evr_client_span_done(r->c, &sp);
		if (ret == -ESTALE) {
			/* Retract it from the file. Its events, and any gap before it,
			 * are counted when the next intact packet header of the ring
			 * says how many were written before it. */
			ret = evr_trace_writer_discard_last(r->w);
			if (ret < 0)
				return write_error(r, ret);
			r->spans_retracted++;
			n++;
			continue;
		}
		if (ret < 0) {
			evr_cli_error(CMD, "cannot release a span: %s", strerror(-ret));
			return ret;
		}
		if (count < 0) {
			evr_cli_error(CMD, "ring %u holds a malformed record near position %" PRIu64,
				      sp.ring, sp.pos);
			return count;
		}
		if (has_hdr && before > r->ring_seen[sp.ring]) {
			r->lost += before - r->ring_seen[sp.ring];
			r->ring_seen[sp.ring] = before;
		}
		r->events += ev;
		r->lost += lost;
		if (sp.ring < r->nr_rings)
			r->ring_seen[sp.ring] += ev + lost;
		n++;
	}
	return n;
}

/* Report a trace writer error (naming the file), mark the recorder failed. */
static int write_error(struct recorder *r, int err)
{
	char b[32];

	r->write_failed = true;
	if (err == -ENOSPC || err == -EDQUOT || err == -EFBIG)
		evr_cli_error(CMD, "%s: %s: recording stopped; the %" PRIu64 " events (%s) "
			      "written before are readable", r->o->output, strerror(-err),
			      r->events, evr_fmt_bytes(evr_trace_writer_bytes(r->w), b, sizeof(b)));
	else
		evr_cli_error(CMD, "cannot write %s: %s: recording stopped", r->o->output,
			      strerror(-err));
	return err;
}

static void progress(struct recorder *r, bool final)
{
	uint64_t now = evr_now_ns();
	double secs = (double)(now - r->t_start) / 1e9;
	double dt = (double)(now - r->t_progress) / 1e9;
	char ev[32], by[32], rate[32];

	if (!r->tty || (!final && now - r->t_progress < PROGRESS_NS))
		return;
	/* The rate over the last refresh (what the process does now); at the end, the mean. */
	fprintf(stderr, "\r\033[K%s events  %s  %" PRIu64 " lost  %s events/s  %.1f s%s",
		evr_fmt_count((double)r->events, ev, sizeof(ev)),
		evr_fmt_bytes(evr_trace_writer_bytes(r->w), by, sizeof(by)), r->lost,
		evr_fmt_count(final ? (secs > 0 ? (double)r->events / secs : 0)
				    : (dt > 0 ? (double)(r->events - r->progress_events) / dt : 0),
			      rate, sizeof(rate)),
		secs, final ? "\n" : "");
	r->t_progress = now;
	r->progress_events = r->events;
}

static int tname_cmp(const void *a, const void *b)
{
	const struct evr_thread_info *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * Ask the process for its threads and write a THREADS chunk with those that are
 * new or renamed since the last one, so that tools can show names next to tids.
 * Threads that live less than THREADS_NS between two looks go unnamed. Only a
 * write error is an error: a process that cannot answer just stays unnamed.
 */
static int record_threads(struct recorder *r)
{
	struct evr_thread_info *cur = NULL, *merged;
	struct evr_trace_thread *batch = NULL;
	uint32_t n = 0, nb = 0, nm = 0;
	char err[256];
	int ret = 0;

	if (r->threads_off || r->write_failed)
		return 0;
	r->t_threads = evr_now_ns();
	if (evr_client_list_threads(r->c, &cur, &n, err, sizeof(err)) < 0) {
		/* An older agent (EOPNOTSUPP) or a stopped one: names are a nicety. */
		r->threads_off = true;
		return 0;
	}
	merged = calloc((size_t)r->ntnames + n + 1, sizeof(*merged));
	batch = calloc((size_t)n + 1, sizeof(*batch));
	if (!merged || !batch) {
		free(merged);
		goto out;
	}
	qsort(cur, n, sizeof(*cur), tname_cmp);
	/* Merge the sorted lists; a tid in both keeps the current name. */
	for (uint32_t i = 0, j = 0; i < r->ntnames || j < n;) {
		if (j == n || (i < r->ntnames && r->tnames[i].tid < cur[j].tid)) {
			merged[nm++] = r->tnames[i++];
			continue;
		}
		if (i == r->ntnames || cur[j].tid < r->tnames[i].tid ||
		    strcmp(cur[j].name, r->tnames[i].name)) {
			if (cur[j].name[0])
				batch[nb++] = (struct evr_trace_thread){ .tid = cur[j].tid,
									 .name = cur[j].name };
		}
		if (i < r->ntnames && r->tnames[i].tid == cur[j].tid)
			i++;
		merged[nm++] = cur[j++];
	}
	if (nb) {
		ret = evr_trace_writer_threads(r->w, batch, nb);
		if (ret < 0) {
			free(merged);
			ret = write_error(r, ret);
			goto out;
		}
	}
	free(r->tnames);
	r->tnames = merged;
	r->ntnames = nm;
out:
	free(batch);
	free(cur);
	return ret;
}

/* Wait for something to read, at most until the next progress refresh or the deadline. */
static void wait_round(struct recorder *r)
{
	uint64_t now = evr_now_ns();
	uint64_t until = now + PROGRESS_NS;
	int ret;

	if (r->o->duration_ns && r->t_start + r->o->duration_ns < until)
		until = r->t_start + r->o->duration_ns;
	if (until <= now)
		return;
	ret = evr_client_wait(r->c, (int)((until - now + 999999) / 1000000));
	(void)ret;	/* -EINTR (a signal) and timeouts just end the round */
}

static int record_loop(struct recorder *r)
{
	enum evr_client_state st;
	int n;

	for (;;) {
		if (stop_signal) {
			r->stop = STOP_SIGNAL;
			break;
		}
		if (r->o->duration_ns && evr_now_ns() - r->t_start >= r->o->duration_ns) {
			r->stop = STOP_DURATION;
			break;
		}
		/* The state first: what was published before it changed is read below. */
		st = evr_client_state(r->c);
		n = pump(r);
		if (n < 0)
			return n;
		if (st == EVR_CLIENT_ENDED || st == EVR_CLIENT_GONE) {
			if (n == (int)SPANS_PER_ROUND)
				continue;
			r->stop = st == EVR_CLIENT_GONE ? STOP_GONE : STOP_ENDED;
			return 0;
		}
		progress(r, false);
		if (evr_now_ns() - r->t_threads >= THREADS_NS) {
			n = record_threads(r);
			if (n < 0)
				return n;
			continue;
		}
		if (n == 0)
			wait_round(r);
	}
	return 0;
}

/* Stop the session (it flushes every ring), then take what is left. */
static int finish_session(struct recorder *r)
{
	char err[512];
	int n, ret;

	if (r->stop == STOP_SIGNAL || r->stop == STOP_DURATION || r->write_failed) {
		/* The last look at the threads, while the process still runs (a write
		 * error sets write_failed, handled below). */
		(void)record_threads(r);
		ret = evr_client_stop(r->c, err, sizeof(err));
		if (ret < 0 && evr_client_state(r->c) != EVR_CLIENT_GONE)
			evr_cli_warn(CMD, "could not stop the session cleanly: %s", err);
		if (evr_client_state(r->c) == EVR_CLIENT_GONE && r->stop != STOP_SIGNAL)
			r->stop = STOP_GONE;
	}
	if (r->write_failed)
		return 0;
	do {
		n = pump(r);
		if (n < 0)
			return n;
	} while (n > 0);
	if (!evr_client_drained(r->c))
		evr_cli_warn(CMD, "the session did not end cleanly: records still being "
			     "written when the recording stopped are not in the file");
	for (uint32_t i = 0; i < r->nr_rings; i++) {
		uint64_t lost = 0;

		if (evr_client_span_final_lost(r->c, i, &lost) < 0 || lost == 0)
			continue;
		ret = evr_trace_writer_lost(r->w, i, lost);
		if (ret < 0)
			return write_error(r, ret);
		r->lost += lost;
	}
	return 0;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int write_end(struct recorder *r)
{
	struct evr_trace_end e = {
		.events = r->events,
		.lost = r->lost,
		.end_realtime_ns = realtime_ns(),
		.end_mono_ns = evr_now_ns(),
	};
	int ret;

	if (r->stop == STOP_GONE)
		e.flags |= EVR_TRACE_END_PRODUCER_GONE;
	if (r->stop == STOP_SIGNAL)
		e.flags |= EVR_TRACE_END_INTERRUPTED;
	ret = evr_trace_writer_end(r->w, &e);
	if (ret < 0)
		return write_error(r, ret);
	return 0;
}

static void summary(struct recorder *r)
{
	double secs = (double)(r->t_end - r->t_start) / 1e9;
	char by[32], rate[32], whybuf[256];

	progress(r, true);
	fprintf(stderr,
		"evring record: %" PRIu64 " events, %s, %" PRIu64 " lost, %.2f s, %s events/s, "
		"file %s\n",
		r->events, evr_fmt_bytes(evr_trace_writer_bytes(r->w), by, sizeof(by)), r->lost,
		secs, evr_fmt_count(secs > 0 ? (double)r->events / secs : 0, rate, sizeof(rate)),
		r->o->output);
	pid_t pid = r->child > 0 ? r->child : r->o->pid;

	switch (r->stop) {
	case STOP_SIGNAL:
		snprintf(whybuf, sizeof(whybuf), "stopped by %s", strsignal(stop_signal));
		break;
	case STOP_DURATION:
		snprintf(whybuf, sizeof(whybuf), "stopped after --duration");
		break;
	case STOP_ENDED:
		/* libevring ends its sessions when the process exits normally. */
		snprintf(whybuf, sizeof(whybuf), "process %d exited (it ended the session)",
			 (int)pid);
		break;
	case STOP_GONE:
		snprintf(whybuf, sizeof(whybuf),
			 "process %d died (or exited without ending the session)", (int)pid);
		break;
	case STOP_NONE:
		snprintf(whybuf, sizeof(whybuf), "%s", r->write_failed ?
			 "stopped: the file could not be written" : "stopped by an error");
		break;
	}
	if (r->child > 0)
		evr_record_child_summary(r, whybuf);
	else if (r->stop == STOP_SIGNAL || r->stop == STOP_DURATION)
		fprintf(stderr, "evring record: %s; process %d runs on\n", whybuf, (int)pid);
	else
		fprintf(stderr, "evring record: %s\n", whybuf);
	if (r->spans_retracted)
		fprintf(stderr, "evring record: %" PRIu64 " spans were overwritten while being "
			"written and were retracted (their events count as lost)\n",
			r->spans_retracted);
}

/* The trace's first chunks: process, session, metadata known so far. */
static int write_header(struct recorder *r)
{
	const struct evr_process_info *pi = evr_client_process(r->c);
	const struct evr_shm_hdr *h = evr_client_shm(r->c);
	struct evr_trace_session s = { 0 };
	int ret;

	ret = evr_trace_writer_new(r->out_fd, &r->w);
	if (ret < 0) {
		if (ret == -ENOMEM) {
			evr_cli_error(CMD, "out of memory");
			return ret;
		}
		evr_cli_error(CMD, "cannot write %s: %s", r->o->output, strerror(-ret));
		return ret;
	}
	if (pi->pb && pi->pb_len) {
		ret = evr_trace_writer_process(r->w, pi->pb, pi->pb_len);
		if (ret < 0)
			return write_error(r, ret);
	}
	s.mode = h->mode;
	s.packet_size = h->packet_size;
	s.ring_size = h->ring_size;
	s.nr_rings = h->nr_rings;
	s.session_id = h->session_id;
	s.session_serial = h->session_serial;
	s.start_realtime_ns = realtime_ns();
	s.start_mono_ns = evr_now_ns();
	s.clock = h->clock;
	s.providers = r->o->providers;
	s.client = EVR_RECORD_CLIENT_NAME;
	ret = evr_trace_writer_session(r->w, &s);
	if (ret < 0) {
		if (ret == -EINVAL) {
			evr_cli_error(CMD, "the session memory has an invalid geometry");
			return -EPROTO;
		}
		return write_error(r, ret);
	}
	return write_metadata(r);
}

static int start_session(struct recorder *r)
{
	const struct evr_process_info *pi = evr_client_process(r->c);
	struct evr_attach_opts ao = {
		.providers = r->o->providers,
		.mode = r->o->mode,
		.counter_interval_ms = r->o->counter_interval_ms,
	};
	char err[512];
	int ret;

	ret = ring_size_for(r->o, pi->nr_cpus, &ao.ring_size);
	if (ret < 0)
		return ret;
	ret = evr_client_start(r->c, &ao, err, sizeof(err));
	if (ret < 0) {
		/* -EINVAL here is the producer rejecting the provider list or sizes. */
		evr_cli_error(CMD, "%s", err);
		return ret == -EINVAL ? -EPROTO : ret;
	}
	r->nr_rings = evr_client_shm(r->c)->nr_rings;
	r->ring_seen = calloc(r->nr_rings ? r->nr_rings : 1, sizeof(*r->ring_seen));
	if (!r->ring_seen) {
		evr_cli_error(CMD, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int open_output(struct recorder *r)
{
	struct stat st;
	int fd;

	/* A file we create and then fail to fill is removed; an existing one is
	 * overwritten, like any recorder's output. */
	r->created = stat(r->o->output, &st) < 0;
	fd = open(r->o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int err = errno;

		evr_cli_error(CMD, "cannot open output %s: %s", r->o->output, strerror(err));
		return -err;
	}
	r->out_fd = fd;
	return 0;
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	/* No SA_RESTART: a signal must end the wait in evr_client_wait() at once. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* A dead agent or a closed pipe is an error return, not a death; a file
	 * over RLIMIT_FSIZE is EFBIG, handled like a full disk. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
}

static int run(const struct record_opts *o)
{
	struct recorder r = { .o = o, .out_fd = -1, .child = -1, .child_pidfd = -1 };
	char err[512];
	int ret;

	ret = open_output(&r);
	if (ret < 0)
		return ret;
	if (o->program) {
		ret = evr_record_launch(&r);
	} else {
		ret = evr_client_connect(o->pid, EVR_RECORD_CLIENT_NAME, &r.c, err, sizeof(err));
		if (ret < 0)
			evr_cli_error(CMD, "%s", err);
	}
	if (ret < 0)
		goto fail;
	ret = start_session(&r);
	if (ret < 0)
		goto fail;
	ret = write_header(&r);
	if (ret < 0)
		goto fail;
	install_signals();
	r.tty = isatty(STDERR_FILENO);
	ret = evr_cli_sandbox_enter(CMD, EVR_SANDBOX_RECORD, &o->flags);
	if (ret < 0)
		goto fail;
	/* Tests wait for this line: the session runs and the sandbox is in place. */
	if (o->program)
		fprintf(stderr, "evring record: recording %s (pid %d) into %s\n", o->program[0],
			(int)r.child, o->output);
	else
		fprintf(stderr, "evring record: recording process %d into %s (Ctrl-C to stop)\n",
			(int)o->pid, o->output);
	if (o->flags.sandbox_probe)
		evr_sandbox_probe(CMD);
	r.t_start = evr_now_ns();
	r.t_progress = r.t_start;
	if (o->program) {
		ret = evr_client_resume(r.c, err, sizeof(err));
		if (ret < 0) {
			evr_cli_error(CMD, "cannot let %s run: %s", o->program[0], err);
			goto fail;
		}
	}
	ret = record_loop(&r);
	if (ret == 0 || r.write_failed) {
		int fin = finish_session(&r);

		if (ret == 0)
			ret = fin;
	}
	if (ret == 0)
		ret = write_end(&r);
	r.t_end = evr_now_ns();
	if (r.child > 0)
		evr_record_child_wait(&r);
	summary(&r);
	goto out;
fail:
	if (r.child > 0)
		evr_record_child_abandon(&r);
	/* Nothing useful was recorded: do not leave an empty file behind. */
	if (r.created && (!r.w || evr_trace_writer_chunks(r.w) == 0))
		unlink(o->output);
out:
	evr_trace_writer_free(r.w);
	evr_client_free(r.c);
	free(r.ring_seen);
	free(r.tnames);
	if (r.child_pidfd >= 0)
		close(r.child_pidfd);
	if (r.out_fd >= 0 && close(r.out_fd) < 0 && ret == 0) {
		evr_cli_error(CMD, "cannot write %s: %s", o->output, strerror(errno));
		ret = -EIO;
	}
	return ret;
}

int evr_cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	int ret = parse_argv(argc, argv, &o);

	/* Past option parsing, -EINVAL is the process refusing something, not usage. */
	return ret <= 0 ? evr_cli_exit_status(ret) : evr_cli_run_status(run(&o));
}
