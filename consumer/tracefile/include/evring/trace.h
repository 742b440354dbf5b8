/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring trace files: the writer `evring record` uses and the reader behind
 * `evring dump` and `convert`. The byte format is documented in
 * docs/trace-format.md; the structures below are that format, little endian.
 *
 * A trace file is a file header followed by chunks. Every chunk has a length
 * and two CRC-32C checksums (its header's and its payload's; an EVENTS chunk
 * may go without the latter: EVR_TRACE_CHUNK_UNCHECKED), so a file cut
 * anywhere (recorder killed, disk full) reads up to its last complete chunk.
 * Event records are stored exactly as the producer wrote them into its rings:
 * the writer never decodes or reformats them (zero copy, one writev per span).
 */
#ifndef EVR_TRACE_H
#define EVR_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <evring/abi.h>
#include <evring/consumer.h>
#include <evring/schema.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the file format ------------------------------------------------------ */

#define EVR_TRACE_MAGIC		"EVRTRACE"	/* 8 bytes, no NUL */
#define EVR_TRACE_VERSION	2u	/* the newest this reader knows */
#define EVR_TRACE_VERSION_ONE	1u	/* one process: what a single recording writes */
/*
 * Version 2: several processes in one file (evr_trace_mux). Each process is a
 * stream of chunks that reads exactly like a version 1 file; the chunk
 * header's 16-bit field says which stream (0: the file's own chunks, the
 * process table and the file's END). Readers of version 1 refuse such a file
 * as newer, which is right: they would mix the processes.
 */
#define EVR_TRACE_VERSION_MULTI	2u
#define EVR_TRACE_CHUNK_MAGIC	0x43525645u	/* "EVRC" */
#define EVR_TRACE_CHUNK_MAX	((16u << 20) + 4096u)	/* payload bytes of any chunk */

struct evr_trace_file_hdr {
	char magic[8];			/* EVR_TRACE_MAGIC */
	uint32_t version;		/* EVR_TRACE_VERSION */
	uint32_t hdr_size;		/* 64: the first chunk starts here */
	uint32_t abi_version;		/* EVR_ABI_VERSION of the stored records */
	uint32_t flags;			/* 0 */
	uint64_t created_realtime_ns;
	uint8_t reserved[28];		/* 0 */
	uint32_t crc;			/* CRC-32C of the 60 bytes before it */
};

enum evr_trace_chunk_kind {
	EVR_CHUNK_PROCESS = 1,		/* a packed evr.ProcessInfo, as the producer sent it */
	EVR_CHUNK_SESSION = 2,		/* struct evr_trace_session_rec + strings */
	EVR_CHUNK_METADATA = 3,		/* struct evr_meta_entry + payload, padded to 8, repeated */
	EVR_CHUNK_EVENTS = 4,		/* struct evr_trace_events_rec + raw ring bytes */
	EVR_CHUNK_LOST = 5,		/* struct evr_trace_lost_rec */
	EVR_CHUNK_DISCARD = 6,		/* struct evr_trace_discard_rec */
	EVR_CHUNK_END = 7,		/* struct evr_trace_end_rec */
	EVR_CHUNK_THREADS = 8,		/* struct evr_trace_thread_rec + name, padded to 4, repeated */
	EVR_CHUNK_SYNC = 9,		/* struct evr_trace_sync + u64 head per ring */
	/* 10-15: stacks and CPU samples (<evring/symbols.h>,
	 * docs/trace-format.md), written with evr_trace_writer_chunk(). */
	EVR_CHUNK_MODULES = 10,		/* module map: executable file mappings, build IDs */
	EVR_CHUNK_SAMPLES = 11,		/* CPU samples, context switches, lost samples */
	EVR_CHUNK_PERF_MAP = 12,	/* a perf map's text (JIT symbols) */
	EVR_CHUNK_SAMPLER = 13,		/* the CPU sampler's settings and totals */
	/* 20, 21: system calls, SYSCALLS and SYSCALL_INFO (consumer/symbols/private/
	 * evring/syscalls.h, docs/trace-format.md). */
	/* Zero bytes that align the next chunk's payload for direct I/O; readers
	 * skip it like any kind they do not know. */
	EVR_CHUNK_PAD = 16,
	/* Version 2, stream 0: the process table (struct evr_trace_proc_rec, repeated). */
	EVR_CHUNK_PROCS = 17,
};

/* Chunks start 8-byte aligned; the next one at offset + 24 + align8(len). */
struct evr_trace_chunk_hdr {
	uint32_t magic;			/* EVR_TRACE_CHUNK_MAGIC */
	uint16_t kind;			/* enum evr_trace_chunk_kind; readers skip unknown kinds */
	uint16_t flags;			/* bit 15: EVR_TRACE_CHUNK_UNCHECKED; bits 0-14:
					 * version 1: 0; version 2: the stream (0: the file's
					 * own chunks, n: the n-th process attached) */
	uint32_t len;			/* payload bytes, padding not included */
	uint32_t seq;			/* 0 for the first chunk, +1 per chunk */
	uint32_t data_crc;		/* CRC-32C of the len payload bytes (0 if unchecked) */
	uint32_t hdr_crc;		/* CRC-32C of the 20 bytes before it */
};

/*
 * A chunk whose payload carries no checksum: data_crc is 0 and means nothing,
 * the header's own CRC holds as always (so the bit itself cannot flip unseen).
 * The recorder writes EVENTS chunks so while it is behind the producer
 * (evring record --checksum=auto), or always with --checksum=never: the CRC
 * of every byte is most of a recorder's own CPU time, and a recorder short
 * of CPU would lose events for it. Readers read such a chunk as any other and
 * count it (evr_trace_stats.unchecked_chunks); damage inside its payload goes
 * unseen, unless it breaks the records (a corrupt packet).
 */
#define EVR_TRACE_CHUNK_UNCHECKED	0x8000u
/* Version 2: the stream number is the low 15 bits of the header's flags. */
#define EVR_TRACE_CHUNK_STREAM_MASK	0x7fffu

struct evr_trace_session_rec {
	uint32_t mode;			/* enum evr_mode */
	uint32_t packet_size;
	uint64_t ring_size;
	uint32_t nr_rings;
	uint32_t session_id;
	uint64_t session_serial;
	uint64_t start_realtime_ns;
	uint64_t start_mono_ns;
	struct evr_clock_calib clock;	/* converts every raw timestamp of the file */
	uint32_t providers_len;		/* then that many bytes of the provider list */
	uint32_t client_len;		/* then that many bytes of the client name */
};

struct evr_trace_events_rec {
	uint32_t ring;			/* ring index, < nr_rings */
	uint32_t reserved;		/* 0 */
	uint64_t pos;			/* ring byte position of the first stored byte */
	/* then the raw bytes of ring positions [pos, pos + len - 16) */
};

struct evr_trace_lost_rec {
	uint32_t ring;
	uint32_t reserved;
	uint64_t count;			/* events lost on this ring that no record shows */
};

struct evr_trace_discard_rec {
	uint64_t chunk_off;		/* file offset of an earlier EVENTS chunk to ignore */
};

/*
 * A thread of the traced process and its name (/proc/PID/task/TID/comm when the
 * recorder saw it). A later THREADS chunk may name a tid again: the last name wins.
 */
struct evr_trace_thread_rec {
	uint32_t tid;
	uint32_t name_len;		/* then that many bytes, no NUL, padded to 4 */
};

/*
 * A clock sync point: the session's raw clock and the system clocks read at one
 * instant, so that readers convert raw timestamps piecewise-linearly between
 * points instead of trusting one calibration for hours. In a SYNC chunk it is
 * followed by one u64 per ring of the session: the ring's published head
 * (byte position) read just before the clocks, which places every record
 * before or after the point whatever its timestamp says.
 */
#define EVR_SYNC_DISCONT	0x1u	/* the raw clock jumped: this point starts a new segment */
#define EVR_SYNC_BACKWARDS	0x2u	/* ...and went back (with EVR_SYNC_DISCONT) */
#define EVR_SYNC_FINAL		0x4u	/* taken when the recording stopped */

struct evr_trace_sync {
	uint64_t ts;			/* raw timestamp (the session's enum evr_clock_kind) */
	uint64_t mono_ns;		/* CLOCK_MONOTONIC at ts */
	uint64_t real_ns;		/* CLOCK_REALTIME at ts */
	uint64_t raw_ns;		/* CLOCK_MONOTONIC_RAW at ts (jump detection) */
	uint64_t boot_ns;		/* CLOCK_BOOTTIME at ts (suspends) */
	uint32_t window;		/* uncertainty of ts: raw ticks between the reads around mono_ns */
	uint32_t flags;			/* EVR_SYNC_* */
};

#define EVR_TRACE_END_PRODUCER_GONE	0x1u	/* the traced process died during recording */
#define EVR_TRACE_END_INTERRUPTED	0x4u	/* stopped by a signal (Ctrl-C, SIGTERM) */

struct evr_trace_end_rec {
	uint64_t events;		/* event records the recorder stored (its own count) */
	uint64_t lost;			/* events it knows were lost */
	uint64_t end_realtime_ns;
	uint64_t end_mono_ns;
	uint32_t flags;			/* EVR_TRACE_END_* */
	uint32_t reserved;
	uint64_t chunks;		/* chunks before this one */
	uint64_t bytes;			/* file bytes before this chunk */
};

/*
 * A line of the process table of a version 2 file (PROCS chunks of stream 0):
 * what happened to the process of @stream, and when. An ATTACHED line comes
 * before the stream's first chunk and names the process; later lines say how
 * its recording ended. Readers take the last line of each kind per stream.
 */
enum evr_trace_proc_what {
	EVR_TRACE_PROC_ATTACHED = 1,	/* recording started: pid, ppid, start, name, cmdline */
	EVR_TRACE_PROC_EXITED = 2,	/* it ended its session (a normal exit) */
	EVR_TRACE_PROC_DIED = 3,	/* it died (or exited without ending its session) */
	EVR_TRACE_PROC_DETACHED = 4,	/* the recording stopped while it ran */
	EVR_TRACE_PROC_FAILED = 5,	/* recording it failed (cmdline: why); no stream data after */
};

struct evr_trace_proc_rec {
	uint32_t stream;		/* 1..32767 */
	uint32_t pid;
	uint32_t ppid;
	uint16_t what;			/* enum evr_trace_proc_what */
	uint16_t name_len;		/* then the name (comm-like, argv[0]'s base name) */
	uint64_t time_ns;		/* CLOCK_MONOTONIC when it happened */
	uint64_t start_realtime_ns;	/* ATTACHED: the process's start; else 0 */
	uint32_t cmdline_len;		/* then the command line: argv, NUL between */
	uint32_t reserved;		/* 0 */
	/* name, cmdline, zero padding to a multiple of 8 */
};

EVR_STATIC_ASSERT(sizeof(struct evr_trace_proc_rec) == 40, "process table layout");
EVR_STATIC_ASSERT(sizeof(struct evr_trace_file_hdr) == 64, "file header layout");
EVR_STATIC_ASSERT(sizeof(struct evr_trace_chunk_hdr) == 24, "chunk header layout");
EVR_STATIC_ASSERT(sizeof(struct evr_trace_session_rec) == 104, "session record layout");
EVR_STATIC_ASSERT(sizeof(struct evr_trace_events_rec) == 16, "events record layout");
EVR_STATIC_ASSERT(sizeof(struct evr_trace_lost_rec) == 16, "lost record layout");
EVR_STATIC_ASSERT(sizeof(struct evr_trace_end_rec) == 56, "end record layout");
EVR_STATIC_ASSERT(sizeof(struct evr_trace_sync) == 48, "sync record layout");

/**
 * evr_crc32c() - CRC-32C of @len bytes, continuing from @crc (0 to start).
 * Return: the checksum; evr_crc32c(0, "123456789", 9) == 0xe3069283.
 * Context: any thread.
 */
uint32_t evr_crc32c(uint32_t crc, const void *data, size_t len);

/* ---- session description (writer input, reader output) ------------------- */

struct evr_trace_session {
	uint32_t mode;			/* enum evr_mode */
	uint32_t packet_size;
	uint64_t ring_size;
	uint32_t nr_rings;
	uint32_t session_id;
	uint64_t session_serial;
	uint64_t start_realtime_ns;
	uint64_t start_mono_ns;
	struct evr_clock_calib clock;
	const char *providers;		/* NUL-terminated; NULL means "" */
	const char *client;		/* NUL-terminated; NULL means "" */
};

/* What the recorder knows at the end (the writer adds chunk and byte counts). */
struct evr_trace_end {
	uint64_t events;
	uint64_t lost;
	uint64_t end_realtime_ns;
	uint64_t end_mono_ns;
	uint32_t flags;			/* EVR_TRACE_END_* */
	uint64_t chunks;		/* reader: as stored */
	uint64_t bytes;			/* reader: as stored */
};

/* ---- writer ---------------------------------------------------------------- */

struct evr_trace_writer;

/**
 * evr_trace_writer_new() - start a trace file on @fd: writes the file header.
 * @fd: an open file (or pipe) positioned where the trace starts; borrowed, the
 *      writer never closes it. Only write() and writev() are used on it, so it
 *      may be opened before a seccomp sandbox is entered.
 * @ret: free with evr_trace_writer_free().
 *
 * Every writer call writes one whole chunk with one writev() (retried on short
 * writes and EINTR) and buffers nothing, so what a call wrote is on the file
 * when it returns (direct I/O batches instead: evr_trace_writer_new_flags()).
 * After a failed write the writer is broken: every later call returns the same
 * error and writes nothing, so the file holds whole chunks
 * followed by at most one partial one, which readers report as truncated.
 *
 * Return: 0, -EINVAL, -ENOMEM, -ENOSPC (disk full or quota), -EIO, -errno.
 * Context: one thread at a time per writer.
 */
int evr_trace_writer_new(int fd, struct evr_trace_writer **ret);

/*
 * EVR_TRACE_WRITER_DIRECT: write with direct I/O (O_DIRECT) where @fd is a
 * regular file on a file system that says it supports it (statx()'s
 * STATX_DIOALIGN: ext4, XFS, btrfs...; not tmpfs), else as without the flag.
 * Whole packets then go from the session mapping to the disk with no copy into
 * the page cache: chunks are gathered into batches, and an EVENTS chunk whose
 * bytes are aligned is written from where they lie, behind a PAD chunk that
 * aligns them. Nothing reaches the file until evr_trace_writer_flush() (or a
 * batch filling up): the caller keeps an EVENTS chunk's bytes unchanged until
 * then (evr_client_span_hold()). The other chunks are copied when written, and
 * evr_trace_writer_end() flushes. The file is as readable as a buffered one;
 * it ends with END as always, and holds a few PAD chunks.
 */
#define EVR_TRACE_WRITER_DIRECT 0x1u

/**
 * evr_trace_writer_new_flags() - evr_trace_writer_new() with @flags
 * (EVR_TRACE_WRITER_DIRECT). The file system is asked, and O_DIRECT set on
 * @fd, here (fstat, statx, fcntl): call it before entering a sandbox. The file
 * header is written at once, which also proves that direct writes work;
 * otherwise the writer falls back to buffered writes.
 * Return: as evr_trace_writer_new().
 */
int evr_trace_writer_new_flags(int fd, uint32_t flags, struct evr_trace_writer **ret);

/* True when the writer uses direct I/O (EVR_TRACE_WRITER_DIRECT was granted). */
bool evr_trace_writer_direct(const struct evr_trace_writer *w);

/**
 * evr_trace_writer_set_direct() - turn direct I/O off (@on false: the batch is
 * written, then every chunk goes through the page cache as it is written) or
 * back on (from the next page boundary, reached with a PAD chunk), on a
 * writer that EVR_TRACE_WRITER_DIRECT was granted to. A recorder turns it off
 * while the disk cannot keep up, so that the page cache absorbs the burst.
 * Return: 0, -EOPNOTSUPP (never granted), a write error, or fcntl()'s -errno.
 * Context: the writer's thread; fcntl(F_GETFL, F_SETFL) and writev().
 */
int evr_trace_writer_set_direct(struct evr_trace_writer *w, bool on);

/**
 * evr_trace_writer_set_checksum() - whether the EVENTS chunks written from
 * now on carry the CRC of their payload (@on, the default) or not (the
 * header's EVR_TRACE_CHUNK_UNCHECKED; the header keeps its own CRC). Every
 * other chunk is checksummed always. The CRC is one pass over every byte
 * recorded, from memory another CPU wrote: a recorder that falls behind turns
 * it off until it caught up (docs/recorder.md, "Checksums").
 * Context: the writer's thread; no system call.
 */
void evr_trace_writer_set_checksum(struct evr_trace_writer *w, bool on);

/* EVENTS chunks written without their payload's CRC so far. */
uint64_t evr_trace_writer_unchecked(const struct evr_trace_writer *w);

/**
 * evr_trace_writer_flush() - write the batch gathered so far (direct I/O),
 * padded to the file system's block size with a PAD chunk. Buffered writers
 * have nothing to flush. After it returns 0, every chunk written so far is in
 * the file, and the EVENTS bytes it referred to may be reused.
 * Return: 0, or a write error (sticky, as for any write).
 */
int evr_trace_writer_flush(struct evr_trace_writer *w);

struct iovec;

/**
 * typedef evr_trace_writer_submit_fn - write a direct-I/O batch asynchronously.
 * @arg: as given to evr_trace_writer_set_submit().
 * @iov: the batch, @n segments (at most 512), valid only during the call.
 * @off: its offset in the file (aligned, as @len).
 * @stage: in: the stage the batch's copied segments lie in, which now belongs
 *         to the callee; out: an aligned (4096) stage of *@cap bytes for the
 *         writer's next batch, which stays the callee's: the writer never frees
 *         it (a writer that needs a larger one drops it and allocates its own,
 *         which the next call hands over; the callee frees what it has once the
 *         writer is done, before or after evr_trace_writer_free()).
 * Return: 0 (the batch is on its way), or -errno (sticky, as a write error).
 */
typedef int evr_trace_writer_submit_fn(void *arg, const struct iovec *iov, int n, uint64_t off,
				       uint64_t len, uint8_t **stage, size_t *cap);

/**
 * evr_trace_writer_set_submit() - hand every later direct-I/O batch to @fn
 * instead of writing it (NULL: write it again). The engine reports how far
 * the file got with evr_trace_writer_completed(); every batch must have
 * completed before evr_trace_writer_set_direct(w, false), which moves the
 * file position to the end (lseek) before buffered writes go on.
 * Return: 0, -EINVAL (no direct I/O granted), -EBUSY (a batch is gathered).
 */
int evr_trace_writer_set_submit(struct evr_trace_writer *w, evr_trace_writer_submit_fn *fn,
				void *arg);

/*
 * evr_trace_writer_completed() - the submit engine's report: the file holds
 * whole chunks up to @written bytes; @err (0: none) fails the writer (sticky).
 */
void evr_trace_writer_completed(struct evr_trace_writer *w, uint64_t written, int err);

/* Bytes gathered and not yet written (0 for a buffered writer). */
uint64_t evr_trace_writer_pending(const struct evr_trace_writer *w);

/*
 * Bytes in the file: evr_trace_writer_bytes() less what is pending; after a
 * failed write, as far as the file got (chunks that end there are whole).
 */
uint64_t evr_trace_writer_written(const struct evr_trace_writer *w);

/* Does not close the fd. Accepts NULL. Context: as evr_trace_writer_new(). */
void evr_trace_writer_free(struct evr_trace_writer *w);

/**
 * evr_trace_writer_process() - a PROCESS chunk: the packed evr.ProcessInfo as
 * received from the producer (struct evr_process_info's pb and pb_len).
 * Return: 0, -EINVAL (empty or larger than 1 MiB), or a write error.
 * Context: the writer's thread; one writev(), repeated after a short write (poll() while a
 * non-blocking fd is full).
 */
int evr_trace_writer_process(struct evr_trace_writer *w, const void *pb, size_t len);

/**
 * evr_trace_writer_session() - the SESSION chunk; exactly one, before any
 * EVENTS or LOST chunk.
 * @s: borrowed; its geometry must be valid (as the session memory header).
 * Return: 0, -EINVAL (bad geometry or clock, or a second session), or a write error.
 * Context: the writer's thread; one writev(), repeated after a short write (poll() while a
 * non-blocking fd is full).
 */
int evr_trace_writer_session(struct evr_trace_writer *w, const struct evr_trace_session *s);

/* One metadata entry, as evr_client_meta_next() returns it. */
struct evr_trace_meta {
	uint32_t kind;			/* enum evr_meta_kind */
	uint32_t len;
	const void *data;		/* borrowed for the call */
};

/**
 * evr_trace_writer_metadata() - a METADATA chunk holding @n entries, written as
 * they are (a packed evr.EventDesc is not re-encoded). Write the descriptions a
 * span may need before the span.
 * Return: 0, -EINVAL (no entries, or more than EVR_TRACE_CHUNK_MAX bytes), or a
 * write error.
 * Context: the writer's thread; one writev(), repeated after a short write (poll() while a
 * non-blocking fd is full).
 */
int evr_trace_writer_metadata(struct evr_trace_writer *w, const struct evr_trace_meta *v,
			      uint32_t n);

/**
 * evr_trace_writer_events() - an EVENTS chunk: @len raw bytes of ring @ring
 * starting at ring position @pos, written straight from @data (e.g. a struct
 * evr_span: the session mapping) with writev, not copied.
 * @data: whole records, starting with the packet header when @pos is at a
 *        packet boundary; borrowed for the call.
 * Return: 0, -EINVAL (no session yet, @ring out of range, @len 0, @pos not a
 * multiple of 8, or the span leaves its packet), or a write error.
 * Context: the writer's thread; one writev(), repeated after a short write (poll() while a
 * non-blocking fd is full).
 */
int evr_trace_writer_events(struct evr_trace_writer *w, uint32_t ring, uint64_t pos,
			    const void *data, uint32_t len);

/**
 * evr_trace_writer_discard_last() - a DISCARD chunk retracting the last EVENTS
 * chunk: call it when evr_client_span_done() says the span written last was
 * reached by the writers while it was being written (-ESTALE). Readers ignore
 * the retracted chunk; its events are counted as lost by the next packet header.
 * Return: 0, -EINVAL (no EVENTS chunk since the last discard), or a write error.
 * Context: the writer's thread; one writev(), repeated after a short write (poll() while a
 * non-blocking fd is full).
 */
int evr_trace_writer_discard_last(struct evr_trace_writer *w);

/**
 * evr_trace_writer_lost() - a LOST chunk: @count events lost on @ring that no
 * record shows (evr_client_span_final_lost()). Nothing is written for 0.
 * Return: 0, -EINVAL, or a write error.
 * Context: the writer's thread; one writev(), repeated after a short write (poll() while a
 * non-blocking fd is full).
 */
int evr_trace_writer_lost(struct evr_trace_writer *w, uint32_t ring, uint64_t count);

struct evr_trace_thread {
	uint32_t tid;
	const char *name;		/* NUL-terminated, at most 255 bytes are kept */
};

/**
 * evr_trace_writer_threads() - a THREADS chunk naming @n threads.
 * Return: 0, -EINVAL (no threads, or more than EVR_TRACE_CHUNK_MAX bytes), or a
 * write error.
 * Context: the writer's thread; one writev(), repeated after a short write.
 */
int evr_trace_writer_threads(struct evr_trace_writer *w, const struct evr_trace_thread *v,
			     uint32_t n);

/**
 * evr_trace_writer_chunk() - a chunk of a kind that has no writer function of
 * its own here (kinds above EVR_CHUNK_SYNC: CPU samples, module
 * maps...). Readers skip kinds they do not know, so a new kind needs no format
 * version (docs/trace-format.md, "Versioning").
 * @data: @len payload bytes, borrowed for the call.
 * Return: 0, -EINVAL (a kind up to EVR_CHUNK_SYNC or above 65535, or @len
 * above EVR_TRACE_CHUNK_MAX), or a write error.
 * Context: the writer's thread; one writev(), repeated after a short write.
 */
int evr_trace_writer_chunk(struct evr_trace_writer *w, uint32_t kind, const void *data,
			   uint32_t len);

/**
 * evr_trace_writer_sync() - a SYNC chunk: clock sync point @s and the published
 * head of each of the session's rings (@heads, nr_rings values) read just
 * before its clocks (evr_clock_sync_take() does both).
 * Return: 0, -EINVAL (no session yet, or a NULL argument), or a write error.
 * Context: the writer's thread; one writev(), repeated after a short write.
 */
int evr_trace_writer_sync(struct evr_trace_writer *w, const struct evr_trace_sync *s,
			  const uint64_t *heads);

/**
 * evr_trace_writer_end() - the END chunk, the last of the file.
 * @e: the recorder's totals; chunks and bytes are filled in by the writer.
 * Return: 0, -EINVAL (already ended), or a write error.
 * Context: the writer's thread; one writev(), repeated after a short write (poll() while a
 * non-blocking fd is full).
 */
int evr_trace_writer_end(struct evr_trace_writer *w, const struct evr_trace_end *e);

/* Bytes written so far (whole chunks only), and chunks. Context: the writer's thread. */
uint64_t evr_trace_writer_bytes(const struct evr_trace_writer *w);
uint64_t evr_trace_writer_chunks(const struct evr_trace_writer *w);

/* The write error that broke the writer (sticky), or 0. Context: the writer's thread. */
int evr_trace_writer_error(const struct evr_trace_writer *w);

/* ---- several processes in one file (version 2) -------------------------------- */

struct evr_trace_mux;

/**
 * evr_trace_mux_new() - start a version 2 trace on @fd: the file header. Its
 * streams (evr_trace_mux_stream()) then write into the same file, one whole
 * chunk at a time, each as a version 1 trace would (process, session,
 * events..., its own END), tagged with its stream number.
 * @fd: as for evr_trace_writer_new(); borrowed. Written with plain buffered
 *      writes (no direct I/O: the streams' chunks interleave).
 * @ret: free with evr_trace_mux_free() after every stream writer.
 * Return: 0, -EINVAL, -ENOMEM, or a write error.
 * Context: one thread for the mux and all its writers.
 */
int evr_trace_mux_new(int fd, struct evr_trace_mux **ret);

/**
 * evr_trace_mux_stream() - a writer for the next stream (1, 2, ...: the
 * number goes to *@ret_stream). It writes no file header. A write error of
 * any stream breaks them all (the file then ends in a partial chunk).
 * @ret: free with evr_trace_writer_free() before the mux.
 * Return: 0, -ENOSPC (32767 streams), -ENOMEM, or the mux's write error.
 */
int evr_trace_mux_stream(struct evr_trace_mux *m, uint32_t *ret_stream,
			 struct evr_trace_writer **ret);

/**
 * evr_trace_mux_proc() - a line of the process table (a PROCS chunk in stream 0).
 * @argv: @argc strings for the command line (ATTACHED), or NULL.
 * @name: NULL: "".
 * Return: 0, -EINVAL, or a write error.
 */
int evr_trace_mux_proc(struct evr_trace_mux *m, const struct evr_trace_proc_rec *rec,
		       const char *name, uint32_t argc, char *const *argv);

/**
 * evr_trace_mux_end() - the file's own END chunk (stream 0), after every
 * stream's: @e holds the totals of all streams.
 * Return: 0, -EINVAL, or a write error.
 */
int evr_trace_mux_end(struct evr_trace_mux *m, const struct evr_trace_end *e);

/**
 * evr_trace_mux_gather() - with @on, the streams' chunks are copied into one
 * buffer (up to 1 MiB; a bigger chunk is written at once) and written with
 * one write() by evr_trace_mux_flush(), so that a loop over many streams
 * makes one system call a round rather than one a chunk; off writes what is
 * gathered. The copy is taken when the chunk is written, so what it was made
 * of (a ring's span) may be reused at once. Until the flush the chunks are not
 * in the file: evr_trace_writer_written() says how far it got, and a failed
 * write fails every stream (evr_trace_mux_error()).
 * Return: 0, -EINVAL, or a write error.
 */
int evr_trace_mux_gather(struct evr_trace_mux *m, bool on);
int evr_trace_mux_flush(struct evr_trace_mux *m);

/* Bytes in the file so far (gathered ones included); the sticky write error or 0. */
uint64_t evr_trace_mux_bytes(const struct evr_trace_mux *m);
int evr_trace_mux_error(const struct evr_trace_mux *m);

/* Accepts NULL. Does not close the fd. */
void evr_trace_mux_free(struct evr_trace_mux *m);

/* ---- clock sync points, taken by a recorder --------------------------------- */

/*
 * A recorder takes a sync point when recording starts, 100 ms later (a first
 * rate), then every EVR_SYNC_INTERVAL_NS, 10 ms after a jump (the new rate),
 * and when it stops; it writes each with evr_trace_writer_sync(). The TSC is
 * the same counter in every process of the machine, so the consumer reads it
 * itself: the producer does nothing for it.
 *
 * Jumps: a point whose CLOCK_MONOTONIC_RAW reading disagrees with the previous
 * points' line (the TSC against the kernel's raw clock, which NTP does not
 * slew) by more than 2 us + 20 ppm of the time between them, or whose raw
 * timestamp is behind the previous one, is flagged EVR_SYNC_DISCONT (and
 * EVR_SYNC_BACKWARDS when the TSC is behind where the line says): a VM
 * restored from a snapshot or migrated to another host.
 */
#define EVR_SYNC_INTERVAL_NS	1000000000ull

struct evr_clock_sync_state {
	uint32_t kind;			/* the session's enum evr_clock_kind */
	struct evr_clock_calib calib;	/* the session's: the rate until two points exist */
	bool have_prev;
	struct evr_trace_sync prev;	/* the last point */
	uint32_t seg_points;		/* points in the current segment */
	struct evr_clock_calib raw_line; /* raw ticks to CLOCK_MONOTONIC_RAW, from the
					 * segment's last two points */
	uint64_t next_ns;		/* CLOCK_MONOTONIC when the next point is due */
	uint32_t points, jumps;		/* taken so far, and EVR_SYNC_DISCONT among them */
};

/**
 * evr_clock_sync_init() - start taking points for a session whose clock is
 * @session (its memory header's, struct evr_shm_hdr.clock).
 * Context: any thread; the state belongs to the caller.
 */
void evr_clock_sync_init(struct evr_clock_sync_state *st, const struct evr_clock_calib *session);

/**
 * evr_clock_sync_due() - whether a point is due at CLOCK_MONOTONIC @now_ns.
 * Context: the state's thread.
 */
bool evr_clock_sync_due(const struct evr_clock_sync_state *st, uint64_t now_ns);

/**
 * evr_clock_sync_take() - take a point now: the published head of each of the
 * @shm session's rings (into @ret_heads, evr_shm_nr_rings() values: the count
 * the mapping was validated with, whatever its header says now), then the clocks.
 * @flags: EVR_SYNC_FINAL for the last point, else 0; jump flags are added.
 * Return: 0 (the point in @ret), -EINVAL.
 * Context: the state's thread; no system call where the vDSO serves the clocks.
 */
int evr_clock_sync_take(struct evr_clock_sync_state *st, const struct evr_shm_hdr *shm,
			uint32_t flags, struct evr_trace_sync *ret, uint64_t *ret_heads);

/**
 * evr_clock_sync_classify() - the jump flags (EVR_SYNC_DISCONT,
 * EVR_SYNC_BACKWARDS) of point @p after the points the state has seen, and
 * make it the state's last point. evr_clock_sync_take() calls it; exposed so
 * that the rule can be tested with made-up points.
 * Return: the flags added to @p->flags.
 * Context: the state's thread.
 */
uint32_t evr_clock_sync_classify(struct evr_clock_sync_state *st, struct evr_trace_sync *p);

/* ---- reader ---------------------------------------------------------------- */

struct evr_trace_reader;

/**
 * evr_trace_reader_open() / evr_trace_reader_open_fd() - open a trace file.
 * @path: opened read-only, close-on-exec.
 * @fd: an open trace file; borrowed, it must stay open until
 *      evr_trace_reader_free(). Only pread() and fstat() are used on it. A
 *      pipe, socket or character device is read as a stream instead: read()
 *      front to back, once, in bounded memory (chunks are taken as they come,
 *      and records return in time order as far as the recorder's sync points
 *      show no ring can still bring an earlier one, or once 64 MiB wait);
 *      evr_trace_reader_chunk_next() is not available then.
 * @ret: free with evr_trace_reader_free().
 * @errbuf: one line naming the cause on failure, may be NULL.
 *
 * Scans the chunk headers of the whole file once (reading only the small chunks'
 * payloads: process, session, metadata), so that events can then be merged in
 * time order across rings with one chunk per ring in memory: memory use depends
 * on the number of chunks and rings, not on the file size.
 * A file that ends inside a chunk opens: it is read up to the last good chunk
 * and evr_trace_stats.truncated says where and why. Damage is repaired where
 * one bit is flipped (every chunk has CRCs), worked around where it is worse
 * (a damaged METADATA chunk gives what decodes; a damaged chunk header is
 * skipped to the next valid one), and always reported: evr_trace_stats and
 * evr_trace_reader_problems().
 *
 * Return: 0, -ENOENT/-EACCES (opening @path), -EBADMSG (not a trace file, or an
 * inconsistent chunk), -EPROTONOSUPPORT (a newer format), -ENOMEM, -EIO.
 * Context: the reader is used by one thread at a time.
 */
int evr_trace_reader_open(const char *path, struct evr_trace_reader **ret, char *errbuf,
			  size_t errlen);
int evr_trace_reader_open_fd(int fd, struct evr_trace_reader **ret, char *errbuf, size_t errlen);

/**
 * evr_trace_reader_open_stream() / _open_fd_stream() - open process @stream
 * (1, 2, ...: evr_trace_proc.stream) of a file of several processes (format
 * 2). The reader then reads that process as if it were the only one of the
 * file: everything below applies to it alone. evr_trace_reader_open() reads
 * the first process (stream 1) of such a file, and the one process of a
 * format 1 file, where @stream is ignored. The process table is read either
 * way (evr_trace_reader_procs()).
 * Return: as evr_trace_reader_open(); -EOPNOTSUPP for a format 2 trace read
 * from a pipe (its processes' chunks are kept apart only in a file).
 */
int evr_trace_reader_open_stream(const char *path, uint32_t stream,
				 struct evr_trace_reader **ret, char *errbuf, size_t errlen);
int evr_trace_reader_open_fd_stream(int fd, uint32_t stream, struct evr_trace_reader **ret,
				    char *errbuf, size_t errlen);

/* A process of a format 2 file, from its process table (PROCS chunks). */
struct evr_trace_proc {
	uint32_t stream;		/* for evr_trace_reader_open_stream() */
	uint32_t pid, ppid;
	uint32_t end;			/* enum evr_trace_proc_what of how its recording
					 * ended; 0: the file says nothing (cut short) */
	uint64_t attach_ns;		/* CLOCK_MONOTONIC when recording it began */
	uint64_t end_ns;		/* ... and when it ended (0: unknown) */
	uint64_t start_realtime_ns;	/* the process's start */
	char name[64];
	char *cmdline;			/* argv joined with spaces; "" when unknown */
	char *why;			/* EVR_TRACE_PROC_FAILED: the reason; else NULL */
};

/*
 * evr_trace_reader_procs() - the processes of a format 2 file in stream
 * order, or none (*@ret_n 0) for a format 1 file. Borrowed until free.
 * Return: true for a format 2 file (several processes).
 */
bool evr_trace_reader_procs(const struct evr_trace_reader *r, const struct evr_trace_proc **ret,
			    uint32_t *ret_n);

/* The stream this reader reads: 0 for a format 1 file. */
uint32_t evr_trace_reader_stream(const struct evr_trace_reader *r);

/* Accepts NULL. Does not close an fd given to evr_trace_reader_open_fd().
 * Context: the reader's thread. */
void evr_trace_reader_free(struct evr_trace_reader *r);

/* The traced process, or NULL if the file has no PROCESS chunk. Borrowed until free. */
const struct evr_process_info *evr_trace_reader_process(const struct evr_trace_reader *r);

/* The session, or NULL if the file was cut before its SESSION chunk. Borrowed. */
const struct evr_trace_session *evr_trace_reader_session(const struct evr_trace_reader *r);

/*
 * The name of thread @tid as the file's THREADS chunks give it (the last one
 * wins), or NULL. Borrowed until free.
 */
const char *evr_trace_reader_thread_name(const struct evr_trace_reader *r, uint32_t tid);

/* Every event description in the file. Borrowed until free. */
const struct evr_schema_set *evr_trace_reader_schemas(const struct evr_trace_reader *r);

/**
 * evr_trace_reader_next() - the next EVENT or LOST record, in timestamp order
 * across rings (ts_ns never decreases from one call to the next).
 * @ret: an EVENT's payload is borrowed until the next call.
 *
 * Losses come out as EVR_REC_LOST views at their place in time: LOST records,
 * gaps between what a packet header says was written before it and what the
 * file holds, retracted or corrupt chunks, and the final LOST chunks (after the
 * ring's last record).
 * Return: 1 a record, 0 the end, -EBADMSG (an EVENTS chunk changed since open),
 * -EIO, -ENOMEM; evr_trace_reader_errmsg() then says why. An error is final:
 * later calls return it again.
 * Context: the reader's thread; no system call but pread().
 */
int evr_trace_reader_next(struct evr_trace_reader *r, struct evr_event_view *ret);

/*
 * evr_trace_lost_add() - @total + @n, saturating at UINT64_MAX: the reader sums
 * losses this way (a damaged file can claim any count), and so must whoever
 * totals the LOST views, for the totals to agree with evr_trace_reader_stats().
 */
static inline uint64_t evr_trace_lost_add(uint64_t total, uint64_t n)
{
	return total + n < total ? UINT64_MAX : total + n;
}

/* One line about the last error of evr_trace_reader_next(), or "". */
const char *evr_trace_reader_errmsg(const struct evr_trace_reader *r);

struct evr_trace_stats {
	/* What the views returned so far add up to (totals once next() returned 0). */
	uint64_t events;		/* EVENT views */
	uint64_t lost;			/* sum of the LOST views' counts */
	uint64_t first_ts_ns;		/* of the first view, 0 if none */
	uint64_t last_ts_ns;		/* of the last view */
	uint64_t ts_clamped;		/* views whose ts was raised to keep the order */
	uint64_t corrupt_chunks;	/* EVENTS chunks whose payload failed its CRC */
	uint64_t corrupt_packets;	/* packets cut short by an invalid record */
	/* The clock, known at open. */
	uint32_t sync_points;		/* SYNC chunks in the file */
	uint32_t clock_segments;	/* 0: one calibration converts (no SYNC points, or a
					 * CLOCK_MONOTONIC session); n > 1: the clock jumped
					 * n - 1 times (see evr_trace_reader_clock_jump()) */
	uint64_t approx_ts;		/* records converted so far whose time is approximate
					 * (written across a clock jump, docs/trace-format.md) */
	uint64_t cpu_skew_ns;		/* so far: how far a record's TSC ran ahead of a sync
					 * point taken after it was published (0: never); the
					 * TSCs of its CPU and the recorder's disagree */
	uint32_t cpu_skew_ring;		/* the ring of that record */
	/* The file, known at open. */
	uint64_t file_size;
	uint64_t chunks;		/* good chunks */
	uint64_t bytes;			/* end of the last good chunk */
	uint64_t last_chunk_off;	/* offset of the last good chunk */
	/*
	 * The file does not end with its END chunk: it was cut (recorder killed,
	 * disk full: mid-chunk or at a chunk boundary), or is still being written.
	 * What precedes the cut reads normally.
	 */
	bool truncated;
	char truncated_why[160];	/* one line if truncated, else "" */
	bool has_end;			/* the file has an END chunk */
	struct evr_trace_end end;	/* its contents when has_end */
	/*
	 * Damage: the file is not as it was written (a disk or a copy that went
	 * wrong, an edit). evr_trace_reader_problems() says it in words.
	 */
	bool damaged;			/* any of the below, or corrupt chunks or packets */
	uint32_t repaired_chunks;	/* one flipped bit, repaired from the CRC */
	uint32_t salvaged_chunks;	/* damaged beyond repair, what could be trusted used */
	uint32_t missing_chunks;	/* chunk numbers absent from the sequence */
	uint64_t skipped_bytes;		/* unreadable bytes skipped to the next chunk */
	/*
	 * Once next() returned 0, with an END chunk: the events it says the file
	 * held that were not found (damaged_events), and how many of those the
	 * LOST views count (lost_damaged, part of lost). So the events the producer
	 * and the recorder lost are lost - lost_damaged.
	 */
	uint64_t damaged_events;
	uint64_t lost_damaged;
	/*
	 * Read from a pipe or socket: once, front to back. Chunks of kinds the
	 * reader itself does not use (CPU samples, module maps...) went by, to be
	 * had only from a file (evr_trace_reader_chunk_next()).
	 */
	bool stream;
	uint64_t stream_other_chunks;
	/*
	 * Chunks whose payload carries no CRC (EVR_TRACE_CHUNK_UNCHECKED: the
	 * recorder was behind, or --checksum=never), of this stream; known at
	 * open (a stream: so far). Not damage: damage inside them goes unseen.
	 */
	uint64_t unchecked_chunks;
};

/* Copy the statistics into @ret. Context: the reader's thread. */
void evr_trace_reader_stats(const struct evr_trace_reader *r, struct evr_trace_stats *ret);

/* One line about the file, without a newline; @arg as given. */
typedef void evr_trace_problem_fn(void *arg, const char *line);

/**
 * evr_trace_reader_problems() - what is wrong with the file, one line each,
 * for tools to print as warnings so that no cut or damage goes unsaid: where
 * and why it is truncated (or that it has no END chunk), chunks repaired,
 * salvaged, missing or skipped, corrupt packets, and events the END chunk
 * counts that the file does not hold (damage, not loss).
 * Complete once evr_trace_reader_next() returned 0 (the END check needs the
 * totals); before, it says what the scan found.
 * Return: the number of lines given to @fn (0: nothing wrong).
 * Context: the reader's thread.
 */
int evr_trace_reader_problems(const struct evr_trace_reader *r, evr_trace_problem_fn *fn,
			      void *arg);

/**
 * evr_trace_reader_ring_stats() - events and losses returned so far for @ring.
 * Return: 0, -EINVAL (@ring out of range or no session).
 * Context: the reader's thread.
 */
int evr_trace_reader_ring_stats(const struct evr_trace_reader *r, uint32_t ring,
				uint64_t *ret_events, uint64_t *ret_lost);

/* A discontinuity of the raw clock between two sync points of the file. */
struct evr_trace_clock_jump {
	uint64_t before_mono_ns;	/* CLOCK_MONOTONIC of the last point before it */
	uint64_t after_mono_ns;		/* ... and of the first point after it */
	int64_t step_ns;		/* how far the raw clock jumped, in the old segment's
					 * nanoseconds (negative: it went back) */
	uint32_t flags;			/* the later point's EVR_SYNC_* flags */
};

/**
 * evr_trace_reader_clock_jump() - the @i-th clock jump of the file (0 <=
 * @i < evr_trace_stats.clock_segments - 1).
 * Return: 0, -ENOENT (no such jump), -EINVAL.
 * Context: the reader's thread.
 */
int evr_trace_reader_clock_jump(const struct evr_trace_reader *r, uint32_t i,
				struct evr_trace_clock_jump *ret);

/* ---- raw chunks, for converters ------------------------------------------- */

struct evr_trace_chunk {
	uint64_t off;			/* file offset of the chunk header */
	uint32_t kind;			/* enum evr_trace_chunk_kind */
	uint32_t len;
	const void *data;		/* payload, borrowed until the next call */
};

/**
 * evr_trace_reader_chunk_next() - the good chunks in file order, payload CRC
 * checked, independent of evr_trace_reader_next(): exactly the chunks that
 * evr_trace_stats.chunks counts, each once (1 or -EBADMSG). A header with one
 * flipped bit is read repaired; a damaged place the reader skipped at open
 * (a header beyond repair, up to the next valid one: evr_trace_stats
 * .skipped_bytes, reported by evr_trace_reader_problems()) is skipped.
 * @pos: 0 at first; advanced past each chunk returned.
 * Return: 1 a chunk, 0 past the last good chunk, -EBADMSG (payload CRC
 * mismatch: *pos is still advanced), -EIO, -ENOMEM.
 * Context: the reader's thread; the payload buffer is separate from
 * evr_trace_reader_next()'s, so both iterations may be interleaved.
 */
int evr_trace_reader_chunk_next(struct evr_trace_reader *r, uint64_t *pos,
				struct evr_trace_chunk *ret);

/*
 * evr_trace_reader_chunk_next_kind() - evr_trace_reader_chunk_next() for the
 * chunks of @kind only (0: every kind); the others' payloads are not read.
 * Both return -ESPIPE for a stream (evr_trace_stats.stream): it is read once.
 */
int evr_trace_reader_chunk_next_kind(struct evr_trace_reader *r, uint64_t *pos, uint32_t kind,
				     struct evr_trace_chunk *ret);

#ifdef __cplusplus
}
#endif

#endif /* EVR_TRACE_H */
