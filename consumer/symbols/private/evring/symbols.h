/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring's stacks and symbols library (libevring-symbols): module maps,
 * symbolization with elfutils' libdw (ELF symbols, DWARF lines) and perf maps
 * (JIT code), live thread-stack snapshots of a process (ptrace + libdw, as
 * eu-stack does), and the CPU sampler (perf_event_open) that `evring record
 * --sample-cpu` runs as a side-band source. Used by the evring command (record,
 * dump, report, convert, stacks) and the monitor; nothing here runs in the
 * traced process.
 *
 * Addresses: stacks hold program counters as the process saw them. Frame 0 of
 * a snapshot or a sample is where the thread was; every other frame is a
 * return address, which points after its call instruction: the lookup then
 * uses pc - 1 so that a call at the very end of a function names that
 * function (evr_symbolizer_lookup()'s @is_return).
 *
 * Errors: functions return 0 or a positive count on success, -errno on
 * failure; those that take @errbuf leave one line naming the cause there.
 * Nothing here prints or exits.
 */
#ifndef EVR_SYMBOLS_H
#define EVR_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- module maps ------------------------------------------------------------ */

#define EVR_BUILD_ID_MAX 20u

/* evr_module.flags: executable memory that is no file (path "[anon]" or "[vdso]"). */
#define EVR_MODULE_ANON	0x1u	/* anonymous executable memory: JIT code */
#define EVR_MODULE_VDSO	0x2u	/* the kernel's vDSO */

/*
 * One executable mapping of a process, as /proc/PID/maps or a perf MMAP2 record
 * has it: a file, or (flags) anonymous executable memory or the vDSO.
 */
struct evr_module {
	uint64_t start;			/* mapped address range [start, end) */
	uint64_t end;
	uint64_t pgoff;			/* file offset mapped at start */
	uint64_t time_ns;		/* CLOCK_MONOTONIC when seen mapped; 0: before the trace */
	uint32_t pid;
	uint8_t build_id_len;		/* 0: unknown */
	uint8_t flags;			/* EVR_MODULE_ANON, EVR_MODULE_VDSO; 0: a file */
	uint8_t build_id[EVR_BUILD_ID_MAX];
	char *path;			/* owned by the map */
};

struct evr_modmap {
	size_t n;
	struct evr_module *v;		/* sorted by start once evr_modmap_sort() ran */
	size_t cap;
};

/**
 * evr_modmap_new() - an empty map.
 * @ret: free with evr_modmap_free().
 * Return: 0, -ENOMEM.
 */
int evr_modmap_new(struct evr_modmap **ret);

/* Free @m and its paths. Accepts NULL. */
void evr_modmap_free(struct evr_modmap *m);

/**
 * evr_modmap_add() - add one mapping (the path is copied). A build ID not
 * given (@build_id_len 0) is left unknown.
 * Return: 0, -EINVAL, -ENOMEM.
 */
int evr_modmap_add(struct evr_modmap *m, const struct evr_module *mod);

/**
 * evr_modmap_read_pid() - add the executable mappings of process @pid
 * (/proc/PID/maps): files, each with the GNU build ID read from it
 * (/proc/PID/root/PATH, so that a process in another mount namespace works),
 * anonymous executable memory (EVR_MODULE_ANON, path "[anon]") and the vDSO
 * (EVR_MODULE_VDSO, "[vdso]"). Deleted files and [vsyscall] are left out.
 * Return: number added, -ESRCH (no such process), -EACCES, -ENOMEM.
 */
int evr_modmap_read_pid(struct evr_modmap *m, pid_t pid, uint64_t time_ns);

/* Sort by start (stable for equal starts). */
void evr_modmap_sort(struct evr_modmap *m);

/**
 * evr_modmap_find() - the mapping holding @addr, the latest added among
 * overlapping ones; NULL if none. Sorted maps only.
 */
const struct evr_module *evr_modmap_find(const struct evr_modmap *m, uint64_t addr);

/**
 * evr_modmap_encode() - the map as a MODULES chunk payload (docs/trace-format.md).
 * @ret: malloc'ed, free() it.
 * Return: 0, -ENOMEM, -E2BIG (more than a chunk can hold).
 */
int evr_modmap_encode(const struct evr_modmap *m, void **ret, size_t *ret_len);

/**
 * evr_modmap_decode() - add the mappings of a MODULES chunk payload.
 * Return: number added, -EBADMSG (malformed: nothing added), -ENOMEM.
 */
int evr_modmap_decode(struct evr_modmap *m, const void *data, size_t len);

/**
 * evr_build_id_read() - the GNU build ID of ELF file @path.
 *
 * @path may come from a process (its memory map, a trace): it is opened with
 * evr_untrusted_open(), so a FIFO or a device planted there is refused.
 *
 * Return: its length (1..EVR_BUILD_ID_MAX), 0 when the file has none,
 * -ENOENT/-EACCES, -ENOEXEC (not ELF, or not a regular file).
 */
int evr_build_id_read(const char *path, uint8_t ret[EVR_BUILD_ID_MAX]);

/* @id as lower-case hex into @buf (2 * len + 1 bytes). */
const char *evr_build_id_hex(const uint8_t *id, size_t len, char *buf, size_t buflen);

/* ---- perf maps (JIT code) ------------------------------------------------------ */

/*
 * The perf map convention (linux tools/perf/Documentation/jit-interface.txt):
 * /tmp/perf-PID.map, one "START SIZE name" line per symbol, START and SIZE in
 * hex (with or without 0x), the name being the rest of the line.
 */
#define EVR_PERF_MAP_MAX (64u << 20)	/* bytes of a perf map we read */

/**
 * evr_perf_map_read() - the contents of /tmp/perf-@pid.map.
 * @ret: malloc'ed, NUL-terminated; free() it.
 *
 * Opened with evr_untrusted_open(): whatever another user planted at that name
 * (a FIFO, a symbolic link, a device) is refused without blocking.
 *
 * Return: its length, -ENOENT (no map: a process without JIT), -EACCES,
 * -EPERM (not a regular file, a symbolic link, or owned by neither the
 * process's user nor root; our own user when the process is gone: not
 * trusted), -EFBIG (over EVR_PERF_MAP_MAX), -ENOMEM.
 */
ssize_t evr_perf_map_read(pid_t pid, char **ret);

/* ---- symbolization -------------------------------------------------------- */

struct evr_symbolizer;

/* One resolved address. Strings are borrowed from the symbolizer until it is freed. */
/* A function the compiler inlined at an address, and where in it the address is. */
struct evr_sym_inline {
	const char *func;
	const char *file;		/* NULL: unknown */
	uint32_t line;			/* 0: unknown */
};

struct evr_sym {
	const char *func;		/* NULL: unknown */
	uint64_t offset;		/* pc - function start, when func */
	const char *module;		/* file name of the module (basename), "[jit]", or NULL */
	uint64_t module_offset;		/* pc - module bias (file-relative), when module */
	/* Source position in func: with functions inlined at pc, the call of the
	 * outermost of them; when debug info says. */
	const char *file;
	uint32_t line;			/* 0: unknown */
	bool jit;			/* resolved by a perf map */
	/* The functions inlined at pc (debug info's inlined subroutines), the
	 * innermost first, each with where pc is in it: a stack of ninlined frames
	 * above func's own. Owned by the symbolizer. */
	uint32_t ninlined;
	const struct evr_sym_inline *inlined;
};

/**
 * evr_symbolizer_new_offline() - a symbolizer for addresses of a process
 * described by @m (a trace's module map): each module is looked for at its
 * path, and used only if its build ID matches the map's (when both are known).
 * @m: borrowed for the call.
 * @ret: free with evr_symbolizer_free().
 * Return: 0, -ENOMEM.
 * Context: opens files lazily; call evr_symbolizer_preload() before a seccomp
 * sandbox that forbids open().
 */
int evr_symbolizer_new_offline(const struct evr_modmap *m, struct evr_symbolizer **ret);

/**
 * evr_symbolizer_new_pid() - a symbolizer for the live process @pid: its
 * modules come from /proc/PID/maps (libdw's dwfl_linux_proc_report) and its
 * perf map, when it has one, is read too.
 * Return: 0, -ESRCH, -EACCES, -ENOMEM.
 */
int evr_symbolizer_new_pid(pid_t pid, struct evr_symbolizer **ret, char *errbuf, size_t errlen);

void evr_symbolizer_free(struct evr_symbolizer *s);

/**
 * evr_symbolizer_add_perf_map() - add JIT symbols from perf map text @text
 * (@len bytes). Lines that do not parse are skipped and counted.
 * Return: number of symbols added, -ENOMEM.
 */
int evr_symbolizer_add_perf_map(struct evr_symbolizer *s, const char *text, size_t len);

/**
 * evr_symbolizer_preload() - open every module and read its symbol table now,
 * so that later lookups need no system call.
 * Return: number of modules whose file could not be used (missing, other build ID).
 */
int evr_symbolizer_preload(struct evr_symbolizer *s);

/**
 * evr_symbolizer_lookup() - resolve @pc.
 * @is_return: @pc is a return address (every frame but a stack's first): look up
 *	@pc - 1.
 * @ret: filled; every field may be unknown.
 * Return: 1 a function name was found, 0 not (ret says what is known).
 * Context: results are cached per address.
 */
int evr_symbolizer_lookup(struct evr_symbolizer *s, uint64_t pc, bool is_return,
			  struct evr_sym *ret);

/**
 * evr_sym_format() - one frame as text: "func+0xOFF (module)", "module+0xOFF"
 * when the function is unknown, or "0xPC" when nothing is; with
 * @with_line, " at file:line" when known.
 * Return: @buf.
 */
const char *evr_sym_format(const struct evr_sym *sym, uint64_t pc, bool with_line, char *buf,
			   size_t len);

/**
 * evr_sym_format_inlined() - function @k (0: the innermost) of those inlined at
 * @sym's address as text: "func (inlined)", with @with_line " at file:line"
 * when known. The text forms of a stack (`evring stacks`, `evring dump`, the
 * monitor's pages) print these before the frame's own line, innermost first.
 * Return: @buf ("" when @k >= @sym->ninlined).
 */
const char *evr_sym_format_inlined(const struct evr_sym *sym, uint32_t k, bool with_line,
				   char *buf, size_t len);

/**
 * evr_symbolizer_unmapped_note() - one line about the code addresses looked up
 * so far that no file holds: those in anonymous executable memory (JIT code)
 * when the symbolizer has no perf map at all (how many, and where the map was
 * looked for: @pid, /tmp/perf-PID.map), and those in no mapping of the process
 * at all (garbage from a frame-pointer walk that crossed a frame without one).
 * A trace from a recorder that did not record anonymous executable memory
 * cannot tell the two apart: one note then says either. NULL when there is
 * nothing to say.
 * Return: @buf or NULL.
 */
const char *evr_symbolizer_unmapped_note(const struct evr_symbolizer *s, uint32_t pid, char *buf,
					 size_t len);

/* Warnings the symbolizer collected (missing files, build-ID mismatches), one per line, or "". */
const char *evr_symbolizer_warnings(const struct evr_symbolizer *s);

/* ---- trace files ------------------------------------------------------------- */

struct evr_trace_reader;

/**
 * evr_symbolizer_from_trace() - a symbolizer for the addresses in trace @r: the
 * module map of its MODULES chunks, the JIT symbols of its PERF_MAP chunks (or,
 * when it has none, of /tmp/perf-PID.map of the traced pid on this machine,
 * as perf report does), every module opened now (evr_symbolizer_preload()), so
 * that a seccomp sandbox may follow.
 * @ret: NULL when the trace has no module map; free with evr_symbolizer_free().
 * Return: 0, -ENOMEM, -EIO.
 */
int evr_symbolizer_from_trace(struct evr_trace_reader *r, struct evr_symbolizer **ret);

/* ---- CPU samples in trace files ------------------------------------------------ */

/* One record of a SAMPLES chunk (docs/trace-format.md); records follow each other. */
struct evr_sample_rec {
	uint64_t time_ns;		/* CLOCK_MONOTONIC, as the events' timestamps once converted */
	uint32_t pid;
	uint32_t tid;
	uint32_t cpu;
	uint16_t type;			/* EVR_SAMPLE_* */
	uint16_t nframes;		/* then nframes u64 addresses, innermost first */
	uint64_t value;			/* CPU: the sample's period in ns; SWITCH_OUT: bit 0
					 * set if preempted, clear if it blocked; LOST: samples
					 * lost. A system-wide switch (EVR_SAMPLER_SYSTEM) has
					 * the thread switched in (OUT) or out (IN) in bits 32-63,
					 * 0 for the idle task */
};
_Static_assert(sizeof(struct evr_sample_rec) == 32, "SAMPLES record layout");

enum evr_sample_type {
	EVR_SAMPLE_CPU = 1,		/* the thread was running user code: frames[0] is the pc */
	EVR_SAMPLE_SWITCH_OUT = 2,	/* the thread left the CPU */
	EVR_SAMPLE_SWITCH_IN = 3,	/* the thread got a CPU */
	EVR_SAMPLE_LOST = 4,		/* value samples were lost on this CPU's ring */
	/* Thread tid's count of counter cpu (EVR_COUNTER_*: a thread's count covers
	 * every CPU, so that field names the counter), an increment: a thread's
	 * count is the sum of its records (record --perf-counters). */
	EVR_SAMPLE_COUNTER = 5,
};

/* The perf events evring names: COUNTER records' counters, evr_sampler_rec.event's. */
enum evr_counter_id {
	EVR_COUNTER_CPU_CLOCK = 1,	/* software: ns on a CPU (hrtimer) */
	EVR_COUNTER_TASK_CLOCK = 2,	/* software: ns the task ran */
	EVR_COUNTER_CONTEXT_SWITCHES = 3,
	EVR_COUNTER_PAGE_FAULTS = 4,
	EVR_COUNTER_CPU_MIGRATIONS = 5,
	EVR_COUNTER_MAJOR_FAULTS = 6,
	EVR_COUNTER_CYCLES = 16,	/* hardware (a PMU) from here on */
	EVR_COUNTER_INSTRUCTIONS = 17,
	EVR_COUNTER_CACHE_MISSES = 18,
	EVR_COUNTER_BRANCH_MISSES = 19,
	EVR_COUNTER_CACHE_REFERENCES = 20,
	EVR_COUNTER_BRANCHES = 21,
};
#define EVR_COUNTER_HARDWARE(id) ((id) >= EVR_COUNTER_CYCLES)

/* The name of counter @id as perf spells it ("page-faults"), or NULL. */
const char *evr_perf_counter_name(uint16_t id);

/*
 * evr_perf_counter_list_parse() - "cycles,page-faults" into @ids (at most @max,
 * each once). Return: how many, or -EINVAL (@errbuf names the unknown one).
 */
int evr_perf_counter_list_parse(const char *list, uint16_t *ids, uint32_t max, char *errbuf,
				size_t errlen);

/*
 * evr_pmu_check() - whether this machine has hardware counters we may open.
 * Return: 1, or 0 with @why on one line ("no hardware PMU here (...)").
 */
int evr_pmu_check(char *why, size_t len);

#define EVR_SAMPLE_SWITCH_PREEMPTED 0x1u		/* SWITCH_OUT value: preempted */
#define EVR_SAMPLE_SWITCH_OTHER(v) ((uint32_t)((v) >> 32))	/* next/prev tid */

/* evr_sampler_rec.event: the event (low 16 bits: EVR_COUNTER_*) and how it was opened. */
#define EVR_SAMPLER_CPU_CLOCK	1u		/* software cpu-clock */
#define EVR_SAMPLER_EVENT(e)	((uint16_t)((e) & 0xffffu))
#define EVR_SAMPLER_SYSTEM	0x10000u	/* on every CPU for every process (--system) */
#define EVR_SAMPLER_KERNEL	0x20000u	/* kernel frames were allowed */
/*
 * EVR_SAMPLER_EVENT() of the timer-tick source (--sample-cpu=timer-tick): not a
 * counter but every Nth scheduler tick the kernel takes anyway (the tracepoint
 * timer:hrtimer_expire_entry of the tick's timer), N in EVR_SAMPLER_TICK_PERIOD();
 * freq_hz is then the kernel's HZ / N, rounded. Busy CPUs only (docs/system.md).
 */
#define EVR_SAMPLER_TIMER_TICK	15u
#define EVR_SAMPLER_TICK_PERIOD(e)	((uint32_t)(e) >> 20)	/* 1-4095 */
#define EVR_SAMPLER_TICK_SHIFT	20

/*
 * EVR_CHUNK_TASKS: the names of the processes and threads of a system-wide
 * recording (struct evr_task_rec + name, padded to 8, repeated): those that ran
 * at its start (read from /proc), then the kernel's COMM, FORK and EXIT records.
 */
#define EVR_CHUNK_TASKS 14u

enum evr_task_what {
	EVR_TASK_SCAN = 1,		/* existed at the start: name from /proc/PID/comm */
	EVR_TASK_COMM = 2,		/* took this name (exec, prctl) */
	EVR_TASK_FORK = 3,		/* created by ppid (a process when pid == tid) */
	EVR_TASK_EXIT = 4,		/* ended */
};

struct evr_task_rec {
	uint64_t time_ns;		/* CLOCK_MONOTONIC; the start of the recording for SCAN */
	uint32_t pid;			/* process */
	uint32_t tid;			/* thread (== pid: the process's main thread) */
	uint32_t ppid;			/* FORK: the parent process; else 0 */
	uint16_t what;			/* EVR_TASK_* */
	uint16_t name_len;		/* then that many bytes, no NUL, padded to 8 */
};
_Static_assert(sizeof(struct evr_task_rec) == 24, "TASKS record layout");

/* A task record as loaded. */
struct evr_task {
	uint64_t time_ns;
	uint32_t pid, tid, ppid;
	uint16_t what;
	char name[18];			/* NUL-terminated; "" for FORK and EXIT */
};

/* The SAMPLER chunk: how samples were taken, and the totals. */
struct evr_sampler_rec {
	uint32_t freq_hz;		/* asked for; timer-tick: what its period gives */
	uint32_t event;			/* EVR_SAMPLER_EVENT(): EVR_COUNTER_*, and flags */
	uint32_t cpus;			/* rings */
	uint32_t threads;		/* threads opened */
	uint64_t samples;
	uint64_t lost;
	uint64_t switches;
	uint64_t throttled;		/* times the kernel throttled the rate */
};
_Static_assert(sizeof(struct evr_sampler_rec) == 48, "SAMPLER record layout");

/*
 * evr_sampler_source() - what @rec sampled, on one line into @buf: "cpu-clock,
 * 999 Hz", "timer ticks, every 3rd (83 Hz)". Return: @buf.
 */
char *evr_sampler_source(const struct evr_sampler_rec *rec, char *buf, size_t len);

/* A trace's CPU samples, loaded whole and sorted by time. */
struct evr_samples {
	size_t n;
	struct evr_sample_rec *v;	/* v[i].nframes frames at frames + frame_off[i] */
	size_t *frame_off;
	uint64_t *frames;
	bool has_sampler;
	struct evr_sampler_rec sampler;	/* when has_sampler */
	struct evr_task *tasks;		/* TASKS records, in file order */
	size_t ntasks;
};

/*
 * evr_samples_task_name() - the name of process @pid in @s's TASKS records (its
 * main thread's last name, else any thread's), or NULL.
 */
const char *evr_samples_task_name(const struct evr_samples *s, uint32_t pid);

/**
 * evr_samples_load() - every record of the SAMPLES chunks of @r, sorted by time.
 * @ret: n is 0 when the trace has none; free with evr_samples_free().
 * Return: 0, -EBADMSG (a malformed chunk: the records before it are kept), -ENOMEM.
 */
int evr_samples_load(struct evr_trace_reader *r, struct evr_samples **ret);

void evr_samples_free(struct evr_samples *s);

/* ---- profiles: aggregated stacks and their export --------------------------------- */

#include <stdio.h>

/*
 * A profile: stacks of symbolized frame names, aggregated into a tree whose
 * first level is the thread ("name (tid)"), with each stack's weight (ns of CPU
 * for CPU samples, 1 for an event); the stacks are also kept in the order
 * added, for time-ordered formats.
 */
struct evr_profile;

/* @unit: what weights count ("nanoseconds", "events"). Return: 0, -ENOMEM. */
int evr_profile_new(const char *unit, struct evr_profile **ret);
void evr_profile_free(struct evr_profile *p);

/* One stack: @frames innermost first, @n of them. Return: 0, -ENOMEM. */
int evr_profile_add(struct evr_profile *p, const char *thread, const char *const *frames,
		    uint32_t n, uint64_t time_ns, uint64_t weight);

/* The CPU samples of @ss (weights: their periods), symbolized by @sym (may be NULL), threads
 * named from @r (may be NULL). */
int evr_profile_add_samples(struct evr_profile *p, const struct evr_samples *ss,
			    struct evr_symbolizer *sym, struct evr_trace_reader *r);

/* An event's stack (struct evr_event_view's frames), weight 1. */
int evr_profile_add_event_stack(struct evr_profile *p, struct evr_symbolizer *sym,
				struct evr_trace_reader *r, uint32_t tid, const void *frames,
				uint32_t nframes, uint64_t time_ns);

/**
 * evr_profile_from_trace() - the profile of trace @r: its CPU samples (@ss,
 * weights in ns), or, when it has none or @event_stacks asks, the stacks its
 * events carry (weight 1 each; reads @r's events to the end).
 * Return: 0, -ENOMEM, or the reader's error.
 */
int evr_profile_from_trace(struct evr_trace_reader *r, struct evr_symbolizer *sym,
			   const struct evr_samples *ss, bool event_stacks,
			   struct evr_profile **ret);

/* Sum of the weights added. */
uint64_t evr_profile_total(const struct evr_profile *p);

/* How many stacks were added; @ret_stacks (may be NULL): how many distinct ones. */
size_t evr_profile_count(const struct evr_profile *p, size_t *ret_stacks);

/* A function's share of a profile: as a leaf (self), and on the stack at all (total). */
struct evr_profile_func {
	const char *name;		/* borrowed from the profile */
	uint64_t self, total;		/* weights */
};

/*
 * evr_profile_functions() - every function of @p's stacks (thread names aside)
 * with its self and total weight, heaviest self first, as `perf report` and
 * `pprof -top` rank them. @ret: free() it; names live as long as @p.
 * Return: 0, -ENOMEM.
 */
int evr_profile_functions(const struct evr_profile *p, struct evr_profile_func **ret,
			  size_t *ret_n);

/* Folded stacks: "thread;root;...;leaf WEIGHT" per distinct stack. Return: 0, -EIO. */
int evr_profile_write_folded(const struct evr_profile *p, FILE *f);

/* speedscope's JSON file format: a sampled profile per thread, the busiest first (the one
 * speedscope opens on). Return: 0, -EIO, -ENOMEM. */
int evr_profile_write_speedscope(const struct evr_profile *p, const char *name, FILE *f);

/**
 * evr_pprof_write() - the profile of trace @r in pprof's format (profile.proto,
 * gzip-compressed; `go tool pprof`): its CPU samples (@ss; values: samples and
 * CPU nanoseconds), or, when it has none or @event_stacks asks, the stacks its
 * events carry (reads @r's events to the end; value: events). Locations keep
 * their addresses, in mappings from the trace's module map, with the functions
 * @sym (may be NULL) resolved; each sample is labelled with its thread.
 * @name: the trace's name, in the profile's comments.
 * @ret_stacks: the number of stacks written.
 * Return: 0, -ENODATA (nothing to profile: nothing written), -ENOMEM, -EIO, or
 * the reader's error.
 */
int evr_pprof_write(struct evr_trace_reader *r, struct evr_symbolizer *sym,
		    const struct evr_samples *ss, bool event_stacks, const char *name, FILE *out,
		    uint64_t *ret_stacks);

/* A flame graph as one <svg> element, @width pixels wide, no script. Return: 0, -EIO. */
int evr_profile_write_svg(const struct evr_profile *p, const char *title, uint32_t width,
			  FILE *f);

/*
 * Stack frames for Chrome trace-event JSON (struct evr_chrome_stacks of
 * <evring/export.h>): events' stacks become "sf" ids into one "stackFrames"
 * tree of symbolized names, and the CPU samples of @ss a top-level "samples"
 * array. @sym and @ss are borrowed (either may be NULL).
 */
struct evr_chrome_frames;
struct evr_event_view;

int evr_chrome_frames_new(struct evr_symbolizer *sym, const struct evr_samples *ss,
			  struct evr_chrome_frames **ret);
void evr_chrome_frames_free(struct evr_chrome_frames *cf);
/* evr_chrome_stacks.stack_id; @ctx is the struct evr_chrome_frames. */
int evr_chrome_frames_stack_id(void *ctx, const struct evr_event_view *v, uint64_t *ret);
/* evr_chrome_stacks.write_frames. */
long evr_chrome_frames_write(void *ctx, FILE *out);

/*
 * The COUNTER records of @ss (may be NULL) as Chrome counter events, each with
 * its thread's running total; @first: nothing was written before (no comma).
 * Return: bytes written, -EIO, -ENOMEM.
 */
long evr_counters_chrome_write(const struct evr_samples *ss, FILE *out, bool first);

/* ---- the recorder's side-band source -------------------------------------------- */

/*
 * What `evring record` adds to a trace besides the producer's rings: the module
 * map (MODULES), the perf map (PERF_MAP), and with sampling the CPU samples,
 * context switches and new mappings (SAMPLES, MODULES, SAMPLER). Everything that
 * needs a file or a system call beyond read/poll is opened in
 * evr_sideband_new(), before the recorder's seccomp sandbox.
 */
struct evr_sideband;

/*
 * Opens /tmp/perf-@pid.map, owned by @owner, for a confined recorder (the
 * sandbox's broker: evr_broker_open_perf_map()). Return: the descriptor, or -errno.
 */
typedef int evr_sideband_open_fn(void *ctx, pid_t pid, uid_t owner);

#define EVR_PERF_COUNTERS_MAX 12

struct evr_sideband_opts {
	pid_t pid;
	uint32_t sample_hz;		/* 0: no CPU sampling */
	/* With sample_hz: the event sampled (EVR_COUNTER_*; 0: cpu-clock). A hardware
	 * one where there is no PMU: cpu-clock, and pmu_note says so. */
	uint16_t sample_event;
	/* Per-thread counters (EVR_COUNTER_*), 0 of them: none. Hardware ones where
	 * there is no PMU are left out (pmu_note); none left: task-clock. */
	uint16_t counters[EVR_PERF_COUNTERS_MAX];
	uint32_t ncounters;
	/* With sample_hz: sample every CPU, every process (evr_sampler_new_system());
	 * where the kernel refuses, only @pid, and sampler_note says why. */
	bool system;
	bool syscalls;			/* record the system calls (<evring/syscalls.h>) */
	const char *syscall_list;	/* with syscalls: "write,openat", NULL: all */
	/* A perf map that did not exist at evr_sideband_new() is looked for again at
	 * evr_sideband_finish() (a JIT that starts its map late): through this, or,
	 * when NULL, by opening it directly (an unconfined recorder). */
	evr_sideband_open_fn *open_perf_map;
	void *open_ctx;
};

/* Writes one chunk of @kind (EVR_CHUNK_MODULES...). Return: 0 or -errno (stops the source). */
typedef int evr_sideband_emit_fn(void *ctx, uint32_t kind, const void *data, size_t len);

/**
 * evr_sideband_new() - read the process's module map, open its perf map (if
 * any), and with @o->sample_hz open and start the perf events.
 * @ret: free with evr_sideband_free().
 * Return: 0, -ESRCH, -EACCES (another user's process, or perf_event_paranoid;
 * errbuf says which), -ENOMEM, -errno.
 */
int evr_sideband_new(const struct evr_sideband_opts *o, struct evr_sideband **ret,
		     char *errbuf, size_t errlen);

/* Whether the process's perf map was open at evr_sideband_new(). */
bool evr_sideband_has_perf_map(const struct evr_sideband *sb);

/* Set how a perf map that appears later is opened (evr_sideband_opts.open_perf_map). */
void evr_sideband_set_perf_map_opener(struct evr_sideband *sb, evr_sideband_open_fn *fn,
				      void *ctx);

/* The first chunks (MODULES). Return: 0 or what @emit returned. */
int evr_sideband_start(struct evr_sideband *sb, evr_sideband_emit_fn *emit, void *ctx);

/**
 * evr_sideband_poll() - move what the sampler collected into chunks.
 * Return: 0 or what @emit returned. Context: only read() and memory accesses.
 */
int evr_sideband_poll(struct evr_sideband *sb, evr_sideband_emit_fn *emit, void *ctx);

/* Stop sampling, drain, and write the last chunks (PERF_MAP, SAMPLER). */
int evr_sideband_finish(struct evr_sideband *sb, evr_sideband_emit_fn *emit, void *ctx);

struct evr_sampler_totals {
	uint64_t samples;		/* CPU samples stored */
	uint64_t lost;			/* samples the kernel lost (ring full) */
	uint64_t switches;		/* context switch records */
	uint32_t threads;		/* threads sampled */
	bool system;			/* every CPU, every process */
	char note[256];			/* why system-wide sampling fell back, or "" */
	char source[64];		/* what was sampled: evr_sampler_source() */
};

/* What the sampler did so far. */
void evr_sideband_totals(const struct evr_sideband *sb, struct evr_sampler_totals *ret);

/* The per-thread counters' totals (record --perf-counters). */
struct evr_perf_counters_totals {
	uint32_t counters;		/* counted */
	uint32_t threads;		/* threads opened at the start */
	uint64_t records;		/* COUNTER records written */
	uint64_t lost;			/* READ records the kernel lost (ring full) */
	bool user_only;			/* the kernel's side refused: no context switches */
	bool folded;			/* kernel < 6.12: later threads counted with their creator */
	uint16_t ids[EVR_PERF_COUNTERS_MAX];	/* what was counted */
};

/*
 * The counters' totals (false without counters), and in @pmu_note (when not
 * NULL) the line about a missing PMU, or "".
 */
bool evr_sideband_counters(const struct evr_sideband *sb, struct evr_perf_counters_totals *ret,
			   const char **pmu_note);

struct evr_syscall_info_rec;

/*
 * The system-call tracer's totals (false without evr_sideband_opts.syscalls),
 * and in @note (when not NULL) a line it had for the user at its start, or "".
 */
bool evr_sideband_syscalls(const struct evr_sideband *sb, struct evr_syscall_info_rec *ret,
			   const char **note);

void evr_sideband_free(struct evr_sideband *sb);

/* ---- live thread stacks (evring stacks) ----------------------------------- */

struct evr_thread_stack {
	uint32_t tid;
	char name[16];			/* /proc/PID/task/TID/comm */
	char state;			/* from /proc/PID/task/TID/stat: R, S, D, T... ; '?' gone */
	int err;			/* 0, or -errno: the thread could not be unwound */
	const char *errmsg;		/* when err: one line; borrowed from the snapshot */
	uint32_t nframes;
	uint64_t *pcs;			/* frame 0 first; owned by the snapshot */
	bool *activation;		/* per frame: the pc is where the thread is (no -1) */
	uint64_t pause_ns;		/* how long the thread was stopped */
};

struct evr_stacks {
	pid_t pid;
	uint32_t nthreads;
	struct evr_thread_stack *threads;	/* in /proc/PID/task order */
	uint64_t total_ns;			/* the whole snapshot */
	struct evr_symbolizer *sym;		/* the process's modules at snapshot time */
	void *msgs_;				/* private: the threads' errmsg storage */
};

/**
 * evr_stacks_snapshot() - the call stack of every thread of @pid, unwound with
 * DWARF CFI by libdw while each thread is stopped in turn with ptrace
 * (PTRACE_ATTACH, read registers and stack, PTRACE_DETACH): the method of
 * eu-stack, which works on any process the caller may trace, libevring or not.
 * A thread that exits during the snapshot is reported with -ESRCH; one that
 * cannot be stopped with its error.
 * @max_depth: frames per thread (1..1024).
 * @ret: free with evr_stacks_free().
 * Return: 0, -ESRCH (no process), -EACCES/-EPERM (another user's process, or
 * ptrace forbidden: errbuf says which), -ENOMEM.
 */
int evr_stacks_snapshot(pid_t pid, uint32_t max_depth, struct evr_stacks **ret, char *errbuf,
			size_t errlen);

void evr_stacks_free(struct evr_stacks *st);

struct evr_strbuf;

/**
 * evr_stacks_json() - append @st to @sb as one JSON object, no newline: the
 * document of `evring stacks --json` and the monitor's /processes/{pid}/stacks
 * (docs/stacks.md, "JSON").
 * Return: 0, -EINVAL, -ENOMEM (@sb then holds part of it).
 * Context: any thread; @st is only read.
 */
int evr_stacks_json(const struct evr_stacks *st, struct evr_strbuf *sb);

/* ---- process checks --------------------------------------------------------- */

/**
 * evr_proc_check_access() - may the caller look into @pid? Checks that it
 * exists and belongs to the caller's user (or that the caller is root).
 * Return: 0, -ESRCH ("no process PID"), -EACCES ("process PID belongs to
 * user NAME (uid U); ..." with @what saying what is refused, e.g. "you can
 * sample only your own processes").
 */
int evr_proc_check_access(pid_t pid, const char *what, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* EVR_SYMBOLS_H */
