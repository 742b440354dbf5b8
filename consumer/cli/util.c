// SPDX-License-Identifier: LGPL-2.1-or-later
/* Messages, exit statuses and option value parsers shared by the subcommands. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <evring/abi.h>
#include <evring/consumer.h>
#include <evring/mono-time.h>

#include "cli.h"

__attribute__((format(printf, 3, 0))) static void vmsg(const char *cmd, const char *kind,
						       const char *fmt, va_list ap)
{
	/* One write per line, so lines from two tools on one terminal never mix. */
	char line[1024];
	int n;

	n = snprintf(line, sizeof(line), "evring %s: %s", cmd, kind);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	fprintf(stderr, "%s\n", line);
}

void evr_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(cmd, "", fmt, ap);
	va_end(ap);
}

void evr_cli_warn(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(cmd, "warning: ", fmt, ap);
	va_end(ap);
}

int evr_cli_file_operand(const char *cmd, const char *synopsis, int argc, char **argv,
			 const char **path)
{
	if (optind >= argc) {
		evr_cli_error(cmd, "which file? (%s)", synopsis);
		return -EINVAL;
	}
	if (optind + 1 < argc) {
		evr_cli_error(cmd, "unexpected argument '%s' (one file at a time)", argv[optind + 1]);
		return -EINVAL;
	}
	*path = argv[optind];
	return 0;
}

void evr_cli_cpu_line(const char *cmd, uint64_t at_start, uint64_t at_end, uint64_t at_finish,
		      uint64_t events)
{
	char per[48] = "";

	if (!at_start || !at_end || at_end < at_start || at_finish < at_end)
		return;		/* no clock, or no recording */
	if (events)
		snprintf(per, sizeof(per), " (%.1f ns an event)",
			 (double)(at_end - at_start) / (double)events);
	fprintf(stderr, "evring %s: CPU %.1f ms: %.1f ms to start, %.1f ms recording%s, %.1f ms to "
		"finish\n", cmd, (double)at_finish / 1e6, (double)at_start / 1e6,
		(double)(at_end - at_start) / 1e6, per, (double)(at_finish - at_end) / 1e6);
}

int evr_cli_exit_status(int err)
{
	if (err >= 0)
		return EVR_EXIT_OK;
	return err == -EINVAL ? EVR_EXIT_USAGE : EVR_EXIT_FAILURE;
}

int evr_cli_run_status(int err)
{
	return err < 0 ? EVR_EXIT_FAILURE : EVR_EXIT_OK;
}

int evr_cli_getopt_error(const char *cmd, int c, char **argv)
{
	const char *arg = argv[optind - 1];
	char shortopt[3] = { '-', (char)optopt, 0 };

	/* For a short option inside a group ("-jx"), argv[optind - 1] is the group. */
	if (optopt && !(arg[0] == '-' && arg[1] == '-'))
		arg = shortopt;
	if (c == ':')
		evr_cli_error(cmd, "option '%s' needs a value (try evring %s --help)", arg, cmd);
	else
		evr_cli_error(cmd, "unknown option '%s' (try evring %s --help)", arg, cmd);
	return -EINVAL;
}

int evr_cli_common_opt(const char *cmd, int c, char **argv, void (*usage)(FILE *f),
		       struct evr_cli_flags *flags)
{
	switch (c) {
	case 'j':
		flags->json = true;
		return 1;
	case EVR_OPT_NO_SANDBOX:
		flags->no_sandbox = true;
		return 1;
	case EVR_OPT_SANDBOX_PROBE:
		flags->sandbox_probe = true;
		return 1;
	case 'h':
		usage(stdout);
		return 0;
	default:
		if (c == '?' && !optopt) {
			/* An unknown long option: the nearest one the help names, if any. */
			const char *arg = argv[optind - 1];
			char near[80];

			if (evr_cli_suggest_option(arg, usage, near, sizeof(near))) {
				evr_cli_error(cmd, "unknown option '%s'; did you mean '%s'? (try evring "
					      "%s --help)", arg, near, cmd);
				return -EINVAL;
			}
		}
		return evr_cli_getopt_error(cmd, c, argv);
	}
}

/* A non-negative decimal number with an optional fraction; @ret_end: the suffix. */
static int parse_number(const char *s, double *ret, const char **ret_end)
{
	char *end;
	double v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v != v || v < 0)
		return -EINVAL;
	/* strtod also takes "inf", "nan" and hex floats: not durations or sizes. */
	for (const char *p = s; p < end; p++)
		if ((*p < '0' || *p > '9') && *p != '.')
			return -EINVAL;
	*ret = v;
	*ret_end = end;
	return 0;
}

struct unit {
	const char *suffix;
	double mult;
};

/*
 * @s as a number with one of the @n @units' suffixes (compared ignoring case
 * with @nocase), in [1, @max] once multiplied. Return: 0, or -EINVAL.
 */
static int parse_scaled(const char *s, const struct unit *units, size_t n, bool nocase,
			double max, uint64_t *ret)
{
	const char *suffix;
	double v;

	if (parse_number(s, &v, &suffix) < 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		double x = v * units[i].mult;

		if ((nocase ? strcasecmp : strcmp)(suffix, units[i].suffix) != 0)
			continue;
		if (x < 1 || x > max)
			return -EINVAL;
		*ret = (uint64_t)x;
		return 0;
	}
	return -EINVAL;
}

int evr_parse_duration(const char *cmd, const char *opt, const char *s, uint64_t *ret_ns)
{
	uint64_t ns;

	/* evring's forms and dotnet's dd:hh:mm:ss, as every evring tool takes them. */
	if (evr_duration_parse(s, &ns) == 0 && ns > 0) {
		*ret_ns = ns;
		return 0;
	}
	evr_cli_error(cmd, "%s: invalid duration '%s' (use e.g. 500ms, 30s, 5m, 1h, or "
		      "hh:mm:ss / dd:hh:mm:ss)", opt, s);
	return -EINVAL;
}

int evr_parse_size(const char *cmd, const char *opt, const char *s, uint64_t *ret_bytes)
{
	static const struct unit units[] = {
		{ "", 1 }, { "b", 1 }, { "k", 1024.0 }, { "kb", 1024.0 }, { "kib", 1024.0 },
		{ "m", 1048576.0 }, { "mb", 1048576.0 }, { "mib", 1048576.0 },
		{ "g", 1073741824.0 }, { "gb", 1073741824.0 }, { "gib", 1073741824.0 },
	};

	if (parse_scaled(s, units, sizeof(units) / sizeof(units[0]), true, 0x1p62, ret_bytes) == 0)
		return 0;
	evr_cli_error(cmd, "%s: invalid size '%s' (use e.g. 4096, 512K, 64M, 1G)", opt, s);
	return -EINVAL;
}

const char *evr_fmt_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = -1;

	while (v >= 1024.0 && u < 3) {
		v /= 1024.0;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu B", (unsigned long long)n);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

/* Length of the valid UTF-8 sequence at @p (1..4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *p)
{
	size_t n;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1fu;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0fu;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07u;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void evr_json_fputs(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		size_t n = utf8_len(p);

		if (n == 0) {
			fputs("\\ufffd", f);
			p++;
			continue;
		}
		if (n > 1) {
			fwrite(p, 1, n, f);
		} else if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p);
		} else if (*p == '\n') {
			fputs("\\n", f);
		} else if (*p == '\t') {
			fputs("\\t", f);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p);
		} else {
			fputc(*p, f);
		}
		p += n;
	}
	fputc('"', f);
}

int evr_cli_parse_pid(const char *cmd, const char *opt, const char *s, pid_t *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 0x3fffffff) {
		evr_cli_error(cmd, "%s: '%s' is not a process id", opt, s);
		return -EINVAL;
	}
	*ret = (pid_t)v;
	return 0;
}

int evr_cli_parse_uint(const char *cmd, const char *opt, const char *s, uint32_t lo,
		       uint32_t hi, uint32_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi) {
		evr_cli_error(cmd, "%s: '%s' is not a number from %u to %u", opt, s, lo, hi);
		return -EINVAL;
	}
	*ret = (uint32_t)v;
	return 0;
}

int evr_cli_no_operands(const char *cmd, int argc, char **argv)
{
	if (optind < argc) {
		evr_cli_error(cmd, "unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

int evr_cli_parse_providers(const char *cmd, const char *s, const char **ret)
{
	/* The spec itself is checked where it is used (evr_provider_spec_parse()). */
	if (!*s) {
		evr_cli_error(cmd, "--providers: empty provider list");
		return -EINVAL;
	}
	*ret = s;
	return 0;
}

/* Callers compare the share with the smallest ring, as if with the quotient: the same
 * answer only because that minimum is a power of two. */
_Static_assert(((EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN) &
		(EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN - 1)) == 0,
	       "the smallest ring is a power of two");

uint64_t evr_cli_ring_share(uint64_t total, uint32_t nr_rings)
{
	uint64_t per = total / (nr_rings ? nr_rings : 1), p2 = 1;

	while (p2 <= per / 2)
		p2 *= 2;
	return p2;
}

int evr_cli_parse_counter_interval(const char *cmd, const char *s, uint32_t *ret_ms)
{
	uint64_t ns;

	if (evr_parse_duration(cmd, "--counter-interval", s, &ns) < 0)
		return -EINVAL;
	if (ns < 10000000ull || ns > 3600000000000ull) {
		evr_cli_error(cmd, "--counter-interval %s is not between 10ms and 1h", s);
		return -EINVAL;
	}
	*ret_ms = (uint32_t)(ns / 1000000u);
	return 0;
}

int evr_cli_program_operand(const char *cmd, int argc, char **argv, char ***ret_program)
{
	if (optind >= argc)
		return 0;
	/* getopt stops at "--" (and consumes it) or at the first non-option. */
	if (strcmp(argv[optind - 1], "--") != 0) {
		evr_cli_error(cmd, "unexpected argument '%s' (a program to start goes "
			      "after --)", argv[optind]);
		return -EINVAL;
	}
	*ret_program = argv + optind;
	return 0;
}

volatile sig_atomic_t evr_cli_stop_signal;

/* Who sent the first stop signal (a process's pid, or -1: the kernel, the
 * terminal's Ctrl-C) and when (CLOCK_MONOTONIC, ns). */
static pid_t stop_sender;
static uint64_t stop_ns;

/* How long a process's repeat of its own stop signal is the same request. */
#define STOP_REPEAT_NS 1000000000ull

static void on_stop_signal(int sig, siginfo_t *si, void *uctx)
{
	pid_t sender = si && si->si_code == SI_USER ? si->si_pid : -1;
	uint64_t now = evr_mono_ns();	/* clock_gettime(): async-signal-safe */

	(void)uctx;
	if (evr_cli_stop_signal) {
		/* timeout(1) sends its signal to its child and then again to its
		 * whole process group, the child included: the same request
		 * twice, microseconds apart. */
		if (sender > 0 && sender == stop_sender && now - stop_ns < STOP_REPEAT_NS)
			return;
		/* A second Ctrl-C while the tool finishes (drains, flushes): leave
		 * now; whatever a recorder wrote is whole chunks. */
		_exit(128 + sig);
	}
	stop_sender = sender;
	stop_ns = now;
	evr_cli_stop_signal = sig;
}

void evr_cli_catch_stop_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_stop_signal, .sa_flags = SA_SIGINFO };

	/* No SA_RESTART: a signal must end the tool's wait (evr_recorder_wait(),
	 * evr_client_wait()) at once. Each stop signal blocks the others while its
	 * handler runs: the sender and the flag are written by one at a time. */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGHUP);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* A dead agent or a closed pipe or socket is an error return, not a death. */
	signal(SIGPIPE, SIG_IGN);
}

int evr_cli_pid_of_name(const char *cmd, const char *name, pid_t *ret)
{
	char err[1024];
	int r = evr_process_resolve_name(name, ret, err, sizeof(err));

	if (r < 0) {
		char near[96];

		if (r == -ESRCH && evr_cli_suggest_process(name, near, sizeof(near)))
			evr_cli_error(cmd, "%s; did you mean %s?", err, near);
		else
			evr_cli_error(cmd, "%s", err);
		return r;
	}
	return 1;
}

/* @n bytes as --buffer-size takes them: "256M", "2G", "512K". */
static const char *size_arg(uint64_t n, char *buf, size_t len)
{
	if (n >= (1ull << 30) && n % (1ull << 30) == 0)
		snprintf(buf, len, "%lluG", (unsigned long long)(n >> 30));
	else if (n >= (1ull << 20) && n % (1ull << 20) == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(n >> 20));
	else
		snprintf(buf, len, "%lluK", (unsigned long long)((n + 1023) >> 10));
	return buf;
}

#define DISK_RATE_MIN_BYTES	(16u << 20)	/* a few small writes say little */

/*
 * A thread writes into one ring, so one ring must hold the stream for as long
 * as the rings went unread, or, with writes in flight (io_uring), for as long
 * as a write held the spans it took (their space goes back when it completes,
 * while the drain goes on reading): the --buffer-size offered holds the longer
 * of the two with half as much again to spare. It also holds what the ring held
 * and what was lost besides (all of it in one ring: one writer), so that it is
 * never the size that lost: a disk that takes less than the stream for a while
 * (1.9 s at 490 MB/s of 540 on the Intel guest, 128 MiB rings lost 1.6 M
 * events) fills the rings with no long wait anywhere. A disk slower than the
 * stream overall loses whatever the buffer: then the rates are the reason.
 */
const char *evr_loss_advice(const struct evr_loss_facts *f, char *buf, size_t len)
{
	uint64_t emitted = f->events + f->lost, need = f->ring_size ? f->ring_size : 65536;
	double per_ev, asked = 0, disk = 0, hold_ms = 0, stall_ms = (double)f->stall_ns / 1e6;
	double write_ms = (double)f->write_max_ns / 1e6, wait_ms;
	double secs = (double)f->stream_ns / 1e9;
	char why[384], fix[200], a[32], b[32];

	per_ev = f->events ? (double)f->bytes / (double)f->events : 0;
	if (secs > 0)
		asked = per_ev * (double)emitted / secs;
	if (f->write_ns && f->bytes >= DISK_RATE_MIN_BYTES)
		disk = (double)f->bytes * 1e9 / (double)f->write_ns;
	if (asked > 0)
		hold_ms = (double)f->ring_size / asked * 1e3;
	wait_ms = write_ms > stall_ms ? write_ms : stall_ms;
	while (((double)need < 1.5 * asked * wait_ms / 1e3 ||
		(double)need < (double)f->ring_size + per_ev * (double)f->lost) &&
	       need < (1ull << 36))
		need *= 2;
	if (disk > 0 && disk < asked) {
		snprintf(why, sizeof(why), "the disk took %.0f MB/s against %.0f MB/s asked, and "
			 "the rings (%u of %s) hold %.1f ms of this stream", disk / 1e6, asked / 1e6,
			 f->nr_rings, evr_fmt_bytes(f->ring_size, a, sizeof(a)), hold_ms);
		snprintf(fix, sizeof(fix), "%sfewer providers, or a faster disk (a larger "
			 "--buffer-size only delays the loss)",
			 f->direct && !f->cache_slow ? "--io buffered, " : "");
	} else {
		int k = snprintf(why, sizeof(why), "the rings (%u of %s) hold %.1f ms of this "
				 "stream (%.0f MB/s asked) and %s for up to %.0f ms", f->nr_rings,
				 evr_fmt_bytes(f->ring_size, a, sizeof(a)), hold_ms, asked / 1e6,
				 write_ms > stall_ms ? "a write held their space" : "went unread",
				 wait_ms);

		if (disk > 0 && k > 0 && (size_t)k < sizeof(why))
			k += snprintf(why + k, sizeof(why) - (size_t)k, " (%sthe disk took %.0f MB/s)",
				      f->cache_dear ? "the page cache cost the recorder too much CPU; " :
				      f->cache_slow ? "the page cache did not catch up; " :
				      f->direct_fell_back ? "direct I/O fell behind; " : "", disk / 1e6);
		/* No wait as long as the rings hold: they filled over a longer time, the
		 * disk or the drain slower than the stream for a while. */
		if (hold_ms > wait_ms && k > 0 && (size_t)k < sizeof(why)) {
			double waited_ms = (double)f->disk_waited_ns / 1e6;

			k += snprintf(why + k, sizeof(why) - (size_t)k, ", less than they hold: "
				      "for a while the %s less than the stream",
				      waited_ms >= hold_ms ? "disk took" : "recorder read");
			if (waited_ms >= hold_ms && (size_t)k < sizeof(why))
				snprintf(why + k, sizeof(why) - (size_t)k, " (the recorder waited "
					 "%.0f ms in all for its writes)", waited_ms);
		}
		snprintf(fix, sizeof(fix), "--buffer-size %s would have held that%s, or fewer "
			 "providers", size_arg(need * (f->nr_rings ? f->nr_rings : 1), b, sizeof(b)),
			 f->direct && !f->cache_slow ? ", or --io buffered" : "");
	}
	snprintf(buf, len, "%" PRIu64 " of %" PRIu64 " events lost (%.1f%%): %s; to avoid it: %s",
		 f->lost, emitted, 100.0 * (double)f->lost / (double)(emitted ? emitted : 1), why,
		 fix);
	return buf;
}
