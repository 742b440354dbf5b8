/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared parts of the evring command: exit codes, messages, option value
 * parsers, and the seccomp sandbox. Each subcommand lives in its own file and
 * follows the house pattern: parse_argv() into an options struct, then run(),
 * returning -errno that main() maps to an exit status.
 */
#ifndef EVR_CLI_H
#define EVR_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <evring/cli-options.h>
#include <evring/export.h>
#include <evring/mono-time.h>

/* Exit statuses (docs/cli.md). */
enum {
	EVR_EXIT_OK = 0,
	EVR_EXIT_FAILURE = 1,	/* the work failed: attach refused, I/O error, corrupt file */
	EVR_EXIT_USAGE = 2,	/* bad command line */
};

/* Subcommands: @argv[0] is the subcommand name. Return an exit status. */
int evr_cmd_ps(int argc, char **argv);
int evr_cmd_providers(int argc, char **argv);
int evr_cmd_record(int argc, char **argv);
int evr_cmd_dump(int argc, char **argv);
int evr_cmd_convert(int argc, char **argv);
int evr_cmd_report(int argc, char **argv);
/* Runs evring-monitor (consumer/monitor/) beside this program. */
int evr_cmd_monitor(int argc, char **argv);
int evr_cmd_stacks(int argc, char **argv);
int evr_cmd_forward(int argc, char **argv);	/* consumer/forward/ */
int evr_cmd_profiles(int argc, char **argv);	/* record-profiles.c */

/* "evring record: <message>\n" on stderr. */
__attribute__((format(printf, 2, 3)))
void evr_cli_error(const char *cmd, const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void evr_cli_warn(const char *cmd, const char *fmt, ...);

/*
 * The message for getopt_long()'s @c ('?' unknown option, ':' missing value;
 * the optstring must start with "+:"). Return: -EINVAL.
 */
int evr_cli_getopt_error(const char *cmd, int c, char **argv);

/* getopt_long() values of the long-only options shared by the subcommands
 * (EVR_CLI_OPTIONS_SANDBOX()'s). */
enum {
	EVR_OPT_NO_SANDBOX = EVR_CLI_LONG_ONLY,
	EVR_OPT_SANDBOX_PROBE,
	EVR_OPT_FIRST_OWN,	/* a subcommand's own long-only options start here */
};

/* Options spelled the same in every subcommand that takes them. */
struct evr_cli_flags {
	bool json;		/* -j, --json */
	bool no_sandbox;	/* --no-sandbox */
	bool sandbox_probe;	/* --debug-sandbox-probe */
};

/*
 * Handle getopt_long()'s @c when it is not one of the subcommand's own
 * options: a shared flag into @flags, -h/--help (@usage on stdout), or else a
 * getopt error (evr_cli_getopt_error()). Only options the subcommand lists in
 * its optstring and longopts reach here.
 * Return: 1 go on parsing, 0 --help was printed, -EINVAL.
 */
int evr_cli_common_opt(const char *cmd, int c, char **argv, void (*usage)(FILE *f),
		       struct evr_cli_flags *flags);

/*
 * The one FILE operand left after the options (from getopt's optind) into
 * *@path; a missing or extra operand is a usage error, the missing one naming
 * @synopsis (for example "evring dump FILE").
 * Return: 0, -EINVAL.
 */
int evr_cli_file_operand(const char *cmd, const char *synopsis, int argc, char **argv,
			 const char **path);

/*
 * -n NAME: the pid of the one process named @name that runs libevring's agent
 * (evr_process_resolve_name()), or print why not ("no process named...",
 * "2 processes named X ...: 4242 (...), ...; choose one with -p PID") as
 * @cmd's error. Return: 1 (go on), -ESRCH, -ENOTUNIQ, -errno.
 */
int evr_cli_pid_of_name(const char *cmd, const char *name, pid_t *ret);

/* -p PID: a process id of @s, or print why not (naming @opt). Return: 0, -EINVAL. */
int evr_cli_parse_pid(const char *cmd, const char *opt, const char *s, pid_t *ret);

/* A whole number from @lo to @hi of @s, or print why not (naming @opt). Return: 0, -EINVAL. */
int evr_cli_parse_uint(const char *cmd, const char *opt, const char *s, uint32_t lo,
		       uint32_t hi, uint32_t *ret);

/* After getopt: an error naming the first operand left, if any. Return: 0, -EINVAL. */
int evr_cli_no_operands(const char *cmd, int argc, char **argv);

/* --providers: a non-empty list (@s itself). Return: 0, or -EINVAL (printed). */
int evr_cli_parse_providers(const char *cmd, const char *s, const char **ret);

/* --buffer-size @total shared by @nr_rings rings (0: 1): one ring's share, a power of
 * two rounded down (at least 1; the caller checks it against the ring minimum). */
uint64_t evr_cli_ring_share(uint64_t total, uint32_t nr_rings);

/* --counter-interval: 10ms to 1h, in ms. Return: 0, or -EINVAL (printed). */
int evr_cli_parse_counter_interval(const char *cmd, const char *s, uint32_t *ret_ms);

/*
 * What getopt_long() ("+" mode) left in @argv: nothing, or "-- PROGRAM [ARGS...]"
 * (*@ret_program set). Return: 0, or -EINVAL (printed) for an operand not
 * after "--".
 */
int evr_cli_program_operand(const char *cmd, int argc, char **argv, char ***ret_program);

/*
 * The stop signal (SIGINT, SIGTERM, SIGHUP) of a tool that runs until stopped;
 * 0 until one comes. A second one while it finishes ends the process at once
 * (exit status 128 + signal), unless the process that sent the first repeats it
 * within a second: timeout(1) signals its child and then its process group.
 */
extern volatile sig_atomic_t evr_cli_stop_signal;

/* Catch the stop signals into evr_cli_stop_signal (no SA_RESTART) and ignore SIGPIPE. */
void evr_cli_catch_stop_signals(void);

/*
 * What a recorder cost in CPU, said in one line at its end: the process's CPU
 * (every thread, user and system: evr_clock_ns(CLOCK_PROCESS_CPUTIME_ID)) read
 * when the recording starts (@at_start: linking, attaching, the sandbox), when
 * it has ended (@at_end: the events, @events of them, and the file's end; 0: it
 * never did, no line) and after everything was released (@at_finish:
 * unmapping the sessions, the last hold on their memory). docs/recorder.md,
 * "What the recorder costs".
 */
void evr_cli_cpu_line(const char *cmd, uint64_t at_start, uint64_t at_end, uint64_t at_finish,
		      uint64_t events);

/* An error -errno to an exit status: -EINVAL from option parsing is a usage error. */
int evr_cli_exit_status(int err);

/*
 * A subcommand's run() result to an exit status: past option parsing, even
 * -EINVAL is no usage error.
 */
int evr_cli_run_status(int err);

/*
 * The steps of a subcommand after its parse_argv(), for evr_cli_main(). Each
 * takes the subcommand's options struct as void *: the file's own run() and
 * friends take it so, and name its type on their first line.
 */
struct evr_cli_steps {
	/*
	 * What the options still need from the system before the work (-n NAME's
	 * pid, an output's default name); NULL: nothing. Return: 0, or -errno
	 * after printing why: -EINVAL a usage error (options that do not go
	 * together), any other a failure.
	 */
	int (*prepare)(void *opts);
	/* The work. Return: 0, or -errno after printing why: a failure, even -EINVAL. */
	int (*run)(void *opts);
	/* Frees what parsing and prepare() left in the options, whatever happened; or NULL. */
	void (*fini)(void *opts);
};

/**
 * evr_cli_main() - the tail of every evr_cmd_*(): prepare and run after the
 * command line was read, and the exit status of whichever step ended it.
 * @parsed: what parse_argv() returned: > 0 go on, 0 done (--help printed),
 *          -EINVAL a usage error, another -errno a failure.
 * @steps: the subcommand's steps; @opts: its options, given to each.
 *
 * One rule for every subcommand: parsing and prepare() end in EVR_EXIT_USAGE
 * for -EINVAL (evr_cli_exit_status()), run() never does (evr_cli_run_status()).
 * Return: the exit status.
 */
int evr_cli_main(int parsed, const struct evr_cli_steps *steps, void *opts);

/*
 * Option values. Each returns 0 or -EINVAL after printing one line that names
 * @opt and the accepted forms.
 *  duration: "500ms", "30s", "5m", "2h", or a bare number of seconds.
 *  size: "4096", "64K", "64M", "1G" (binary multiples; "KiB"/"MiB"/"GiB" too).
 */
int evr_parse_duration(const char *cmd, const char *opt, const char *s, uint64_t *ret_ns);
int evr_parse_size(const char *cmd, const char *opt, const char *s, uint64_t *ret_bytes);

/* "12.3 MiB", "512 B" into @buf. */
const char *evr_fmt_bytes(uint64_t n, char *buf, size_t len);
/* evr_fmt_count() ("1.25 M"): <evring/export.h>, with the report that shows it too. */

/* @s as a JSON string: quoted, escaped, invalid UTF-8 replaced by U+FFFD. */
void evr_json_fputs(FILE *f, const char *s);

/* ---- did you mean (suggest.c) ----------------------------------------------- */

/* Damerau-Levenshtein distance (a swap of neighbours is one edit); long words: their length. */
size_t evr_cli_edit_distance(const char *a, const char *b);

/*
 * The one of @cands (@n, NULL entries skipped) nearest to @word, if near
 * enough to be what was meant (at most a third of @word's length, at least one
 * edit); NULL otherwise. Borrowed from @cands.
 */
const char *evr_cli_closest(const char *word, const char *const *cands, size_t n);

/* For an unknown "--option": the nearest long option @usage's text names, into @buf. */
const char *evr_cli_suggest_option(const char *typed, void (*usage)(FILE *f), char *buf,
				   size_t len);

/* For -n NAME that names none: "minirt (pid 4242)", the nearest process one may attach to. */
const char *evr_cli_suggest_process(const char *name, char *buf, size_t len);

/* Every export format, one line each ("chrome (perfetto)  Chrome trace-event ..."). */
void evr_cli_print_formats(FILE *f, const char *indent);

/* ---- trace files (cli-trace.c) --------------------------------------------- */

struct evr_trace_reader;
struct evr_trace_stats;

/* evr_cli_trace_open(): the reader must be able to go back (a second reader, raw chunks). */
#define EVR_CLI_TRACE_FILE 0x1u

/*
 * Open trace @path ("-": standard input), or say why not as @cmd's error. From
 * a pipe the trace is read as a stream, or with EVR_CLI_TRACE_FILE first
 * copied into an unnamed file in $TMPDIR; opening "-" again gives that copy.
 * Return: 0, or -errno (-EBADMSG for a file that is not a trace or is corrupt).
 */
int evr_cli_trace_open(const char *cmd, const char *path, uint32_t flags,
		       struct evr_trace_reader **ret);

/*
 * evr_cli_trace_open() for process @stream of a file of several processes
 * (evr_trace_reader_open_stream(); 0: the first, or the one of a single-process
 * file). "-" opens the copy a first evr_cli_trace_open() made, if it made one.
 */
int evr_cli_trace_open_stream(const char *cmd, const char *path, uint32_t stream, uint32_t flags,
			      struct evr_trace_reader **ret);

/*
 * The readers of the processes of the trace that @r0 (opened by
 * evr_cli_trace_open()) reads: one per process of a file of several processes,
 * in stream order (@r0 itself for the first, whichever it is), only those of
 * @pid unless 0; for a single-process file @r0 alone, or none when @pid is not
 * its process. @ret: malloc'ed array of *@ret_n readers, for
 * evr_cli_trace_procs_free().
 * Return: 0, or -errno after printing why (-ESRCH: no such process in the file).
 */
int evr_cli_trace_procs(const char *cmd, const char *path, struct evr_trace_reader *r0,
			uint32_t flags, pid_t pid, struct evr_trace_reader ***ret, uint32_t *ret_n);

/* Free @rs from evr_cli_trace_procs(): its @n readers but @r0, and the array. */
void evr_cli_trace_procs_free(struct evr_trace_reader **rs, uint32_t n,
			      struct evr_trace_reader *r0);

/* The pid of the process @r reads, or 0 when unknown. */
uint32_t evr_cli_trace_pid(const struct evr_trace_reader *r);

/* @path as messages name it: "stdin" for "-". */
const char *evr_cli_trace_name(const char *path);

/*
 * Warn about everything wrong with @path, one line each, once it was read to
 * the end: where it was cut or that it has no END chunk, damage repaired,
 * salvaged or skipped, events its END chunk counts that it does not hold
 * (evr_trace_reader_problems()), clock jumps.
 */
void evr_cli_trace_warnings(const char *cmd, const char *path, const struct evr_trace_reader *r);

/* "FILE: N chunks of events carry no checksum": one line on stderr when any do
 * (EVR_TRACE_CHUNK_UNCHECKED: not damage, but damage there would go unseen). */
void evr_cli_trace_unchecked(const char *cmd, const char *path, const struct evr_trace_reader *r);

/* ---- sandbox (sandbox.c, on <evring/sandbox.h>) ------------------------- */

enum evr_sandbox_profile {
	EVR_SANDBOX_DUMP,	/* read the open trace file, write stdout/stderr */
	EVR_SANDBOX_RECORD,	/* + the agent socket, the session mapping, child status */
	EVR_SANDBOX_ATTACHED,	/* + waiting, sockets already open (the agents', the
				 * broker's), reaping a child: ps, providers, convert
				 * --format ctf (its broker creates the files) */
};

/*
 * Allow only the system calls @profile needs from now on, unless @flags says
 * --no-sandbox; every other call fails with EPERM. A failure is printed as
 * @cmd's error. @child: with EVR_SANDBOX_RECORD, the program `record --
 * PROGRAM` started, which may still be sent SIGTERM (0: none).
 * Return: 0, or -errno.
 * Context: once every file and socket is open; affects the whole process.
 */
int evr_cli_sandbox_enter(const char *cmd, enum evr_sandbox_profile profile,
			  const struct evr_cli_flags *flags);
int evr_cli_sandbox_enter_child(const char *cmd, enum evr_sandbox_profile profile,
				const struct evr_cli_flags *flags, pid_t child);

/*
 * The hidden --debug-sandbox-probe: try to open a file as an attacker who took
 * over the process would, and say on stderr what happened ("sandbox probe:
 * open(/etc/passwd): Operation not permitted"). Return: 0 if the open was
 * refused with EPERM, -EACCES otherwise.
 */
int evr_cli_sandbox_probe(const char *cmd);

struct evr_broker;
struct evr_client;

/*
 * For tools that attach to processes (ps, providers): start the broker, then
 * enter EVR_SANDBOX_ATTACHED (and the probe, if asked); with --no-sandbox,
 * neither. stdout's buffering is decided first. @ret: the broker or NULL, free
 * with evr_broker_free(). Return: 0, or -errno after printing why.
 * Context: before any thread is started.
 */
int evr_cli_attach_confine(const char *cmd, const struct evr_cli_flags *flags,
			   struct evr_broker **ret);

/* evr_client_connect() / evr_process_list_checked(), through @b unless NULL. */
int evr_cli_connect(struct evr_broker *b, pid_t pid, const char *client_name,
		    struct evr_client **ret, char *errbuf, size_t errlen);
int evr_cli_process_list(struct evr_broker *b, pid_t **ret, uint32_t *ret_n, char *errbuf,
			 size_t errlen);

/* What a recording knows about its losses (struct evr_recorder_stats's fields). */
struct evr_loss_facts {
	uint64_t events, lost, bytes;	/* stored, lost, bytes in the file */
	uint64_t ring_size;		/* bytes per ring */
	uint32_t nr_rings;
	uint64_t stall_ns;		/* the longest time the rings went unread */
	uint64_t write_max_ns;		/* the longest write in flight (io_uring), or 0 */
	uint64_t disk_waited_ns;	/* the drain waited for writes in flight, in all */
	uint64_t write_ns;		/* time spent writing @bytes */
	uint64_t stream_ns;		/* the time the process sent over */
	bool direct, direct_fell_back;
	bool cache_slow;		/* the page cache was left for good: direct I/O again */
	bool cache_dear;		/* it cost the recorder too much CPU: direct I/O again */
};

/**
 * evr_loss_advice() - the line `evring record` prints when a discard session
 * lost events: how many, why (how long the rings hold the stream and how long
 * they went unread, or how long a write held their spans when that was longer,
 * or the disk's rate against the stream's when the disk is the slower) and what
 * would have avoided it (docs/recorder.md, "When events are lost"). Without the
 * "evring record: warning: " prefix.
 * Return: @buf.
 */
const char *evr_loss_advice(const struct evr_loss_facts *f, char *buf, size_t len);

#endif /* EVR_CLI_H */
