/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* evring record: state shared by record.c and record-launch.c (-- PROGRAM). */
#ifndef EVR_CLI_RECORD_H
#define EVR_CLI_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"

/* How evring record names itself to the agent, in either direction of connection. */
#define EVR_RECORD_CLIENT_NAME "evring record"

struct evr_client;
struct evr_recorder;
struct evr_provider_spec_list;
struct evr_schema_set;

struct record_opts {
	pid_t pid;			/* -p (or -n, once resolved), or 0 */
	const char *name;		/* -n, or NULL */
	char **program;			/* after --, or NULL */
	const char *providers;
	const char *output;		/* "-": stdout */
	const char *output_name;	/* as messages name it ("stdout" for "-") */
	uint64_t duration_ns;		/* 0: until stopped */
	uint64_t buffer_size;		/* in all; 0: the producer's default */
	const char *buffer_arg;		/* as typed, for messages */
	uint32_t mode;			/* enum evr_mode */
	uint32_t counter_interval_ms;	/* --counter-interval; 0: no counters */
	uint32_t stack_depth;		/* --stacks[=DEPTH]; 0: no stacks on events */
	uint32_t sample_hz;		/* --sample-cpu[=EVENT][:HZ]; 0: no CPU sampling */
	uint16_t sample_event;		/* its EVENT (EVR_COUNTER_*) */
	uint16_t counters[12];		/* --perf-counters[=LIST] (EVR_COUNTER_*) */
	uint32_t ncounters;
	bool system;			/* --system: sample every CPU (docs/system.md) */
	bool syscalls;			/* --syscalls[=LIST] (docs/syscalls.md) */
	const char *syscall_list;	/* its LIST, or NULL: every call */
	uint32_t connect_timeout_ms;	/* --connect-timeout; 0: the default (10 s) */
	uint32_t io_flags;		/* --io: EVR_RECORDER_DIRECT_IO, _URING, _URING_WARN */
	bool io_asked;			/* --io other than auto (else: io_flags_for()) */
	uint32_t crc_flags;		/* --checksum: 0 (auto), EVR_RECORDER_CHECKSUM_* */
	const char *connect_timeout_arg;	/* as typed, for messages */
	struct evr_cli_flags flags;	/* --no-sandbox */
	struct evr_provider_spec_list *spec;	/* --providers, parsed by evr_record_check_opts() */
	/* record-profiles.c */
	const char *providers_arg;	/* --providers as typed, or NULL */
	const char *profile;		/* --profile NAME[,NAME...], or NULL */
	const struct evr_export_format *format;	/* --format, or NULL */
	char *owned_providers, *owned_output;
	uint64_t heap_rate;		/* --heap[=RATE]; 0: no heap profile (record-heap.c) */
	pid_t convert_pid;		/* the --format helper, or 0 */
	int convert_fd;			/* its go-ahead pipe */
	/* Several processes in one file (record-multi.c): every -p and -n, --all. */
	pid_t pids[64];
	uint32_t npids;
	const char *names[64];
	uint32_t nnames;
	bool all;			/* --all: every process with an agent, late ones too */
};

/* More than one process, or --all: a file of several processes (record-multi.c). */
static inline bool evr_record_multi(const struct record_opts *o)
{
	return o->all || o->npids + o->nnames > 1;
}

/*
 * record-multi.c: record every process @o selects into one file of several
 * processes (format 2), draining all their sessions in one loop on this thread.
 * Return: 0, or -errno after printing why.
 */
int evr_record_multi_run(const struct record_opts *o);

/* record.c: open @o's output into *@ret_fd (-o -: a copy of stdout). @ret_created:
 * the file was made here. Return: 0, or -errno after printing why. */
int evr_record_open_output(const struct record_opts *o, int *ret_fd, bool *ret_created);

/* record.c: the stop signals into evr_cli_stop_signal (evr_cli_catch_stop_signals()),
 * and SIGXFSZ ignored: a file over RLIMIT_FSIZE is EFBIG, handled like a full disk. */
void evr_record_catch_signals(void);

struct evr_export_format;

/*
 * record-profiles.c: --profile into providers and options (explicit options
 * win, --providers adds to the profiles'); --format FORMAT; the default output
 * name PROCNAME_YYYYMMDD_HHMMSS.evtrace; the --format converter, forked before
 * the recording (prepare) and let go, or not, after it (finish).
 * Each returns 0 or -errno after printing why.
 */
int evr_record_profiles_apply(struct record_opts *o);

/* record-heap.c: --heap[=RATE] (bytes, with K/M/G), and the Heap provider added to
 * the providers once the profiles are applied. Return: 0 or -errno after printing why. */
#define EVR_RECORD_HEAP_DEFAULT_RATE (512u * 1024u)
int evr_record_heap_parse(const char *arg, struct record_opts *o);
int evr_record_heap_apply(struct record_opts *o);
int evr_record_format_parse(const char *s, struct record_opts *o);
int evr_record_default_output(struct record_opts *o);
int evr_record_convert_prepare(struct record_opts *o);
int evr_record_convert_finish(struct record_opts *o, bool recorded);
void evr_record_profiles_print(FILE *f, const char *indent);

struct evr_sideband;

struct recorder {
	const struct record_opts *o;
	struct evr_client *c;
	struct evr_recorder *rec;	/* <evring/recorder.h> */
	struct evr_sideband *sb;	/* module map, perf map, CPU samples (<evring/symbols.h>) */
	struct evr_broker *broker;	/* opens a perf map that appears once confined; or NULL */
	bool sb_started;
	int out_fd;
	uint32_t io_flags;		/* what --io comes to for out_fd (io_flags_for()) */
	bool created;			/* we created the output file */
	bool tty;			/* stderr is a terminal: show progress */
	int stop_signal;		/* the signal that stopped the recording, or 0 */
	uint64_t t_start, t_end, t_progress;
	uint64_t progress_events;	/* events at t_progress */
	/* -- PROGRAM */
	pid_t child;
	int child_pidfd;
	bool child_reaped;
	int child_status;		/* as waitpid() reports it, once reaped */
};

/*
 * Start r->o->program with EVR_CONNECT set and accept its connection into r->c
 * (the program waits in libevring's constructor until evr_client_resume()).
 * Return: 0, or -errno after printing why.
 */
int evr_record_launch(struct recorder *r);

/* record-syscalls.c: the --syscalls line of the summary (nothing without --syscalls). */
void evr_record_syscalls_summary(const struct evr_sideband *sb);
/* --syscalls=LIST: every name known (or a number). Return: 0, -EINVAL (said). */
int evr_record_syscalls_parse(const char *list);

/* record-perf.c: --sample-cpu[=EVENT][:HZ]. Return: 0, -EINVAL (said). */
int evr_record_sample_parse(const char *arg, struct record_opts *o);
/* --perf-counters[=LIST]. Return: 0, -EINVAL (said). */
int evr_record_counters_parse(const char *list, struct record_opts *o);
/* The line about a missing PMU, at the start (nothing where all is well). */
void evr_record_perf_note(const struct evr_sideband *sb);
/* The --perf-counters line of the summary. */
void evr_record_counters_summary(const struct evr_sideband *sb);

/* After recording: reap the program if it has ended (bounded wait). */
void evr_record_child_wait(struct recorder *r);

/*
 * Recording failed before the program was let run: say so, stop it politely
 * (SIGTERM, never SIGKILL), wait a moment for it and report its fate; one that
 * does not stop is left running, and said to be.
 */
void evr_record_child_abandon(struct recorder *r);

/* The summary line about the program: its exit status, or that it still runs. */
void evr_record_child_summary(const struct recorder *r, const char *why);

/* ---- record-check.c ---------------------------------------------------------- */

/*
 * Check the options that need no process, before attaching: --providers parses
 * (into @o->spec, freed by the caller with evr_provider_spec_list_free()), and
 * --buffer-size gives each ring of this machine its minimum.
 * Return: 0, or -EINVAL after one line naming the option.
 */
int evr_record_check_opts(struct record_opts *o);

/*
 * Warn about what --providers and --counter-interval name and the process does
 * not have, from @have: every event the process registered (ListEvents;
 * @complete), or only the descriptions that reached the session (a program
 * traced from its start that is gone: then only "nothing of X reached").
 */
void evr_record_check_providers(const struct record_opts *o, const struct evr_schema_set *have,
				pid_t pid, bool complete);

#endif /* EVR_CLI_RECORD_H */
