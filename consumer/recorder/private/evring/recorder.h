/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libevring-recorder: record a session of a traced process into a trace file,
 * or into any byte stream (a pipe, a socket: the output is written front to
 * back and never seeked). `evring record` and the monitor are built on it.
 *
 * Life cycle, all on one thread:
 *
 *   evr_recorder_new()    start the session on a connected client (<evring/consumer.h>)
 *   evr_recorder_start()  write the trace's first chunks (PROCESS, SESSION, METADATA) to an fd
 *   evr_recorder_pump()   non-blocking: write what the producer published, then what is due
 *                         (thread names, side bands); repeat
 *   evr_recorder_wait()   sleep until there is something to pump
 *   evr_recorder_run()    pump and wait until a stop condition (a loop around the two above)
 *   evr_recorder_stop()   stop the session, drain it, write the final losses and the END chunk
 *   evr_recorder_stats()  events, bytes, lost, why it stopped; at any time
 *   evr_recorder_free()
 *
 * What goes to the output: the producer's ring bytes, unchanged, in EVENTS
 * chunks (docs/trace-format.md); the session's event descriptions (METADATA)
 * before the first EVENTS chunk that needs them; the process's thread names
 * (THREADS) as they are learnt; what side bands add (evr_recorder_add_sideband()).
 * Every write is one whole chunk, so the output is a valid, truncated trace at
 * every moment: a recorder killed mid-way leaves a file that reads up to its
 * last chunk.
 *
 * Losses are exact: once evr_recorder_stop() returned 0, for the session
 * emitted == evr_recorder_stats.events + evr_recorder_stats.lost, and the END
 * chunk says the same.
 *
 * Errors are -errno with one line in the caller's @errbuf (which may be NULL).
 * An error while writing the output (a full disk, a closed pipe) sets
 * evr_recorder_stats.write_failed: the output then holds whole chunks only,
 * evr_recorder_stats.events of them readable. Warnings (the session did not stop
 * cleanly, ...) go to the log function of evr_recorder_opts. The library never
 * prints, never exits and installs no signal handler; a caller that writes to a
 * pipe should ignore SIGPIPE (a closed pipe is then an -EPIPE write error).
 */
#ifndef EVR_RECORDER_H
#define EVR_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <evring/consumer.h>
#include <evring/trace.h>

#ifdef __cplusplus
extern "C" {
#endif

struct evr_recorder;

/* A warning, one line without a newline; @arg is evr_recorder_opts.log_arg. */
typedef void evr_recorder_log_fn(void *arg, const char *msg);

#define EVR_RECORDER_NO_THREADS		0x1u	/* do not ask the process for thread names */
/*
 * Write whole packets with direct I/O where the output is a file on a file
 * system that supports it (EVR_TRACE_WRITER_DIRECT), in discard mode: packets
 * go from the session to the disk with no copy, in batches of up to 4 MiB
 * whose space the writers get back once the batch is written: a batch is
 * written when it is that big, when a ring has a quarter of its space in it,
 * or every flush_ms. Elsewhere the output is written as without it.
 */
#define EVR_RECORDER_DIRECT_IO		0x2u
/*
 * The caller started the client's session already (evr_client_start() with
 * opts->attach, on a thread of its own, say: a session start waits for the
 * agent, and a recorder of many processes starts theirs side by side):
 * evr_recorder_new() takes it as it is.
 */
#define EVR_RECORDER_SESSION_STARTED	0x100u
/*
 * Flush the packets still open at multiples of flush_ms on CLOCK_MONOTONIC
 * rather than flush_ms after the last flush: the recorders of one loop over
 * many processes (evr_recorder_step()) then all have their flush due at the
 * same instant, and one wake-up serves every one of them. The latency of a
 * record in an open packet is the same: at most flush_ms (and the loop's
 * lateness). evr_recorder_due_ns() then puts the clock sync points of the
 * steady cadence (one a second) and the looks at the thread names on those
 * instants too, at most flush_ms late.
 */
#define EVR_RECORDER_FLUSH_ALIGNED	0x200u
/*
 * With EVR_RECORDER_DIRECT_IO: write the batches through io_uring, up to 4 in
 * flight while the drain goes on (docs/recorder.md "I/O engine"), where the
 * kernel allows it; elsewhere (built without liburing, io_uring refused by the
 * kernel, its io_uring_disabled sysctl, a seccomp filter or a container, or
 * the environment variable EVR_RECORDER_NO_URING set to 1) each batch is one
 * writev() from the recorder's thread. EVR_RECORDER_URING_WARN: say so (the
 * user asked for io_uring by name). Where the kernel also takes it (Linux
 * 6.15, a locked-memory limit that holds the session), the session's memory
 * is registered as a fixed buffer, so that its pages are pinned once, not per
 * write (EVR_RECORDER_NO_FIXED=1 in the environment: not).
 */
#define EVR_RECORDER_URING		0x4u
#define EVR_RECORDER_URING_WARN		0x8u
/*
 * The payload CRC of EVENTS chunks (docs/recorder.md, "Checksums"). Neither
 * flag (auto, the default): computed while the recorder keeps up, skipped
 * (the chunk marked EVR_TRACE_CHUNK_UNCHECKED) while a ring holds more than a
 * quarter of its size unread, until it is down to a sixteenth: the CRC is
 * most of the recorder's own CPU time, and no event is lost for its sake.
 * ALWAYS: every chunk checksummed, whatever it costs; NEVER: none.
 */
#define EVR_RECORDER_CHECKSUM_ALWAYS	0x10u
#define EVR_RECORDER_CHECKSUM_NEVER	0x20u

struct evr_recorder_opts {
	struct evr_attach_opts attach;	/* the session: providers (required), mode, sizes */
	const char *client;		/* the recorder's name in the SESSION chunk; NULL:
					 * "evring recorder" */
	uint32_t flags;			/* EVR_RECORDER_* */
	/*
	 * Data of a packet still being filled is written once it has waited this
	 * long (0: 250 ms). Complete packets are written as soon as they are
	 * pumped; a shorter interval means fresher output (a live stream) for a
	 * little more work per interval.
	 */
	uint32_t flush_ms;
	evr_recorder_log_fn *log;	/* warnings; NULL: dropped */
	void *log_arg;
	/*
	 * Record into a stream of this file of several processes (format 2)
	 * instead of a file of one's own: evr_recorder_start() then takes no fd
	 * (pass -1), and flags' EVR_RECORDER_DIRECT_IO does not apply. Borrowed:
	 * it must outlive the recorder.
	 */
	struct evr_trace_mux *mux;
};

/* Why the recording stopped (evr_recorder_stats.stop). */
enum evr_recorder_stop {
	EVR_RECORDER_RUNNING = 0,	/* not stopped yet */
	EVR_RECORDER_STOP_REQUESTED,	/* the caller: evr_recorder_run()'s tick, or evr_recorder_stop() */
	EVR_RECORDER_STOP_DEADLINE,	/* evr_recorder_run()'s deadline passed */
	EVR_RECORDER_STOP_ENDED,	/* the producer ended the session (libevring does when
					 * the process exits normally) */
	EVR_RECORDER_STOP_GONE,		/* the producer died, or exited without ending it */
	EVR_RECORDER_STOP_ERROR,	/* an error (evr_recorder_stats.error) */
};

struct evr_recorder_stats {
	uint64_t events;		/* event records written (in whole chunks) */
	uint64_t lost;			/* events known lost so far; exact once stopped */
	uint64_t bytes;			/* output bytes written (whole chunks) */
	uint64_t chunks;		/* chunks written */
	uint64_t spans;			/* EVENTS chunks written */
	uint64_t spans_retracted;	/* overwrite mode: spans overwritten while written */
	uint64_t spans_unchecked;	/* EVENTS chunks without their payload's CRC */
	enum evr_recorder_stop stop;
	int error;			/* the failure's -errno, or 0 */
	bool write_failed;		/* the failure was writing the output */
	bool has_end;			/* the END chunk was written */
	uint32_t nr_rings;
	uint32_t sync_points;		/* SYNC chunks written */
	uint32_t clock_jumps;		/* of them, those that found the TSC jumped */
	/* Why events were lost, for the caller's explanation (docs/recorder.md). */
	uint64_t ring_size;		/* bytes per ring */
	uint64_t stall_ns;		/* the longest time the rings went unread */
	uint64_t write_ns;		/* time spent writing .bytes (the disk's pace) */
	uint64_t stream_ns;		/* the start to the last span taken or the end, if sooner */
	bool direct;			/* direct I/O was on at the start */
	bool direct_fell_back;		/* direct I/O fell behind at least once */
	bool cache_slow;		/* ... and the page cache was left for good: it did not */
					/* catch up, or it cost too much (.cache_dear) */
	bool cache_dear;		/* ... it cost the recorder too much CPU: direct again */
	bool uring;			/* direct writes went through io_uring */
	int uring_error;		/* why io_uring was not used (-errno), or 0 */
	uint64_t uring_waited_ns;	/* the drain waited for a write (all slots in flight) */
	/* The longest write through io_uring, submitted to completed: the spans it
	 * holds keep their rings' space from the writers that long (0 without). */
	uint64_t uring_write_max_ns;
	/* The process did not answer the stop (stopped, stuck): its rings were read as
	 * they were, open packets included; a record being written then is missing. */
	bool unanswered;
	/* evr_recorder_stop() waited for the stop's answer (up to its deadline): false
	 * when the process had left a question unanswered before (no wait at all). */
	bool stop_waited;
	/* ... and gave up early: the process was found stopped (job control, a tracer). */
	bool stop_stopped;
};

/**
 * evr_recorder_new() - start a session on @c for recording.
 * @c: connected (evr_client_connect() or _accept()), without a session yet;
 *     borrowed, it must outlive the recorder. Reading the session is the
 *     recorder's from now on: do not call evr_client_next() or the span
 *     functions on @c.
 * @opts: borrowed for the call (strings are copied).
 * @ret: free with evr_recorder_free().
 * Return: 0, or the -errno of evr_client_start() (-EINVAL: the producer
 * refused the options, @errbuf says which), -ENOMEM.
 * Context: the recorder's thread; one round trip to the agent.
 */
int evr_recorder_new(struct evr_client *c, const struct evr_recorder_opts *opts,
		     struct evr_recorder **ret, char *errbuf, size_t errlen);

/**
 * evr_recorder_start() - begin the trace on @fd: the file header, the PROCESS
 * and SESSION chunks, and the event descriptions known so far.
 * @fd: a file, pipe or socket, positioned where the trace starts; borrowed
 *      (never closed), only write() and writev() are used on it (and poll()
 *      while a non-blocking one is full), so a seccomp sandbox may be entered
 *      after this call.
 * Return: 0; -EPROTO (the session memory has an invalid geometry); a write
 * error (evr_recorder_stats.write_failed, .bytes says how much is there);
 * -EINVAL (called twice).
 * Context: the recorder's thread.
 */
int evr_recorder_start(struct evr_recorder *r, int fd, char *errbuf, size_t errlen);

/**
 * evr_recorder_pump() - write what the producer published, without waiting:
 * up to 256 spans (complete packets, or the part of a packet that waited
 * longer than flush_ms), each with the event descriptions it needs first; then
 * the thread names and the side bands that are due.
 * Return: the number of EVENTS chunks written (0: nothing was ready), or
 * -errno: the recording failed (evr_recorder_stats says why; later calls
 * return the same error).
 * Context: the recorder's thread; may block on a full output, and on the
 * agent's answer when thread names are due (a thread not named yet showed in
 * a ring, at most every 250 ms; else every 2 s; up to 5 s).
 */
int evr_recorder_pump(struct evr_recorder *r, char *errbuf, size_t errlen);

/**
 * evr_recorder_wait() - sleep until a packet completes, the session ends, the
 * producer dies, something of the recorder's own is due (a flush, the thread
 * names, a side band), a signal arrives, or @timeout_ms passes (-1: no limit).
 * Return: 1 something to pump, 0 timeout, -errno (-EINTR: a signal).
 * Context: the recorder's thread.
 */
int evr_recorder_wait(struct evr_recorder *r, int timeout_ms);

/* Called by evr_recorder_run() every round: > 0 stops the recording, < 0 fails it. */
typedef int evr_recorder_tick_fn(struct evr_recorder *r, void *arg);

struct evr_recorder_run_opts {
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC; 0: none */
	evr_recorder_tick_fn *tick;	/* may be NULL */
	void *tick_arg;
	uint32_t tick_ms;		/* call tick at least this often while idle (0: 250) */
};

/**
 * evr_recorder_run() - pump and wait until the producer ends the session or
 * dies (and everything it published is written), the deadline passes, or the
 * tick asks to stop. A signal interrupts the wait: the tick then runs at once
 * (install handlers without SA_RESTART and let the tick check a flag).
 * @ro: may be NULL (run until the producer ends the session).
 * Return: 0 stopped (evr_recorder_stats.stop says why), -errno failed.
 * Context: the recorder's thread.
 */
int evr_recorder_run(struct evr_recorder *r, const struct evr_recorder_run_opts *ro,
		     char *errbuf, size_t errlen);

/**
 * evr_recorder_stop() - finish the trace. Unless the producer already ended
 * the session or died, ask it to stop the session (which flushes every ring);
 * write everything left, the losses no record shows (LOST chunks), the side
 * bands' last words, and the END chunk.
 * @end_flags: EVR_TRACE_END_INTERRUPTED if a signal stopped the recording
 *             (EVR_TRACE_END_PRODUCER_GONE is added by the recorder).
 * After a failure (pump or write error) nothing more is written: only the
 * session is stopped (after a write error) and the error returned again.
 * Return: 0, or -errno (see evr_recorder_stats). Calling it again returns the
 * first result.
 * Context: the recorder's thread; one round trip to the agent (30 s at most;
 * none when the process left a question unanswered before).
 */
int evr_recorder_stop(struct evr_recorder *r, uint32_t end_flags, char *errbuf, size_t errlen);

/**
 * evr_recorder_stop_begin() - before evr_recorder_stop_request(), for a caller
 * that ends many recordings at once: ask the process for its threads one last
 * time, without waiting; evr_recorder_stop_request() takes the answer, waiting
 * for it until 100 ms after this call. Called for every recording first, the
 * waits of the processes that do not answer (stopped) run side by side: 100 ms
 * in all, not 100 ms each. Nothing for a process that already left a question
 * unanswered, nor for a recording that ended by itself.
 * Context: the recorder's thread; no wait.
 */
void evr_recorder_stop_begin(struct evr_recorder *r);

/**
 * evr_recorder_stop_request() - the first part of evr_recorder_stop(), for a
 * caller that ends many recordings at once: the last look at the thread names,
 * then the request to stop the session, without waiting for its answer.
 * evr_recorder_stop() then waits for that answer until @deadline_ns
 * (evr_mono_ns()) at most, so that the producers stop side by side and one
 * that does not answer costs one wait in all, not one per recording. A
 * process that already left a question unanswered (a thread list: stopped,
 * stuck) is neither asked for its threads nor waited for, one whose last thread
 * list goes unanswered now is waited for 1 s at most: their rings are read as
 * they are (evr_recorder_stats.unanswered).
 * Context: the recorder's thread; no wait but the thread list's (100 ms at most,
 * counted from evr_recorder_stop_begin() when that asked).
 */
void evr_recorder_stop_request(struct evr_recorder *r, uint64_t deadline_ns);

/* The most spans one evr_recorder_step() writes: more may be ready then. */
#define EVR_RECORDER_STEP_MAX	256u

/**
 * evr_recorder_step() - one round of evr_recorder_run() without its waiting,
 * for a caller that drains several recorders in one loop: pump, and once the
 * producer ended the session or died and everything it published is written,
 * stop (evr_recorder_stats.stop says why; evr_recorder_stop() then finishes).
 * Return: the spans written (0: nothing was ready; call again before
 * waiting when it returned EVR_RECORDER_STEP_MAX), or -errno as
 * evr_recorder_pump().
 * Context: the recorder's thread.
 */
int evr_recorder_step(struct evr_recorder *r, char *errbuf, size_t errlen);

/*
 * CLOCK_MONOTONIC when the recorder has something of its own to do (a flush,
 * a sync point, thread names, a side band): the latest a caller's wait may
 * end. Context: the recorder's thread.
 */
uint64_t evr_recorder_due_ns(const struct evr_recorder *r);

/* The stream of evr_recorder_opts.mux the recorder writes (0: none). */
uint32_t evr_recorder_stream(const struct evr_recorder *r);

/* Copy the figures so far into @ret. Context: the recorder's thread. */
void evr_recorder_stats(const struct evr_recorder *r, struct evr_recorder_stats *ret);

/* Accepts NULL. Does not free the client nor close the fd. Context: the recorder's thread. */
void evr_recorder_free(struct evr_recorder *r);

/* ---- side bands: more chunks in the same trace ------------------------------------ */

/**
 * evr_recorder_sideband_fn - a source of extra chunks (CPU samples, module
 * maps...; the recorder writes clock sync points itself), called by the recorder with its trace writer.
 * @w: append chunks with evr_trace_writer_chunk() (kinds the writer does not
 *     know itself) or a kind's own writer function; borrowed for the call.
 * @now_ns: CLOCK_MONOTONIC when called.
 * @final: true once, from evr_recorder_stop(), after the session's last EVENTS
 *         chunk and before the END chunk: the last chance to write.
 * Return: 0, or -errno, which fails the recording (a write error on @w fails
 * it anyway).
 *
 * Order in the file: a chunk written at @now_ns follows every EVENTS chunk
 * written before this call and precedes the rest; records published before
 * @now_ns may still be in later EVENTS chunks (they wait in the rings until the
 * recorder takes them). So a chunk that holds timed data must carry its own
 * timestamps; readers place it by them, not by its position.
 */
typedef int evr_recorder_sideband_fn(struct evr_recorder *r, struct evr_trace_writer *w,
				     uint64_t now_ns, bool final, void *arg);

/**
 * evr_recorder_add_sideband() - call @fn every @interval_ms while recording
 * (the recorder wakes up for it), and once at the end.
 * @interval_ms: at least 1; the first call comes @interval_ms after this one.
 * @arg: passed to @fn; borrowed until evr_recorder_free().
 * Return: 0, -EINVAL, -ENOSPC (8 side bands already).
 * Context: the recorder's thread, after evr_recorder_start().
 */
int evr_recorder_add_sideband(struct evr_recorder *r, uint32_t interval_ms,
			      evr_recorder_sideband_fn *fn, void *arg);

/* The trace writer, NULL before evr_recorder_start(). Borrowed. Context: the recorder's thread. */
struct evr_trace_writer *evr_recorder_writer(const struct evr_recorder *r);

/* The session's client, as given to evr_recorder_new(). Context: the recorder's thread. */
struct evr_client *evr_recorder_client(const struct evr_recorder *r);

#ifdef __cplusplus
}
#endif

#endif /* EVR_RECORDER_H */
