// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recorder's io_uring engine (recorder-uring.h).
 *
 * With synchronous direct I/O, a batch's writev() blocks the drain for as long
 * as the disk takes, so the rings must hold that time: a disk's stall of 30 ms
 * loses what a 16 MiB ring cannot hold of a 500 MB/s stream. Here the trace
 * writer hands each batch (its segments, its offset, its stage) to
 * evr_uring_submit(), which queues one IORING_OP_WRITEV at that offset and
 * returns: up to EVR_URING_DEPTH batches are in flight while the drain goes on
 * taking packets. The packets' bytes still go from the session mapping to the
 * disk by DMA; the stage that holds a batch's copied chunks stays with the
 * batch until it completed, and the writer gets another.
 *
 * Order: completions may come in any order, but a ring's space goes back to
 * its writers (evr_client_span_release_to(), to where the reader stood when
 * the batch was closed) and the file counts as written only for a run of
 * completed batches from the oldest on, so that the file is whole up to
 * there. The first failed or short write fails the recording: once every
 * write in flight has ended, the file is cut back to the end of the batch
 * before it, and the events counted are those of the batches before it.
 *
 * Fixed buffers: the session mapping and the stages as one registered
 * buffer, so that a batch is one IORING_OP_WRITEV_FIXED and the kernel pins no
 * page per write. Registering pins every page of the session at once, which
 * pays only once the per-write pins would have cost as much: it starts when
 * the plain writes have written FIXED_AFTER times the buffer's size. A thread
 * of ours then does it on a ring of its own (register_worker()), and submit()
 * clones the buffer into the writing ring once it is there, so that neither
 * the drain nor the writes wait for it (register_fixed() without the thread).
 *
 * Preallocation: a direct write that makes the file longer is taken under
 * the inode's exclusive lock and finished before the next one starts (ext4:
 * its size moves in a journal transaction), so the batches in flight would
 * go out one at a time. A write that lies inside the file's size over
 * allocated blocks (unwritten ones too) is an overwrite, which ext4 (Linux
 * 6.3 or later) and XFS take under the shared lock, several at once. So the
 * file's space is allocated ahead of the writes, a step at a time
 * (fallocate() mode 0, which moves the size too: IORING_OP_FALLOCATE, in
 * io_uring's worker, so the drain does not wait for it), and cut back to what
 * was written at the end (evr_uring_trim()). A file system that refuses it
 * (EOPNOTSUPP, ENOSPC) gets the appending writes of before.
 *
 * Confinement: the ring is created disabled, given the output as its only
 * (fixed) file, the eventfd and the fixed buffer, then restricted to
 * IORING_OP_WRITEV, IORING_OP_WRITEV_FIXED and IORING_OP_FALLOCATE on fixed
 * files
 * (IORING_REGISTER_RESTRICTIONS) before it is enabled: the recorder's
 * seccomp filter allows io_uring_enter(), and this keeps that from becoming
 * a way around the filter (no open, no socket, no other file through it).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <evring/mono-time.h>

#include "recorder-alloc.h"
#include "recorder-uring.h"

#ifdef EVR_HAVE_LIBURING

#include <fcntl.h>
#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <evring/shm.h>

/* Linux 6.15's vectored write from a registered buffer; liburing 2.3 and the
 * headers of older kernels do not name it (the opcode is fixed in the ABI). */
#define EVR_IORING_OP_WRITEV_FIXED	61u
/* The stages of the batches in flight and the writer's: a pool that is
 * registered with the session mapping, right below it. A stage holds a
 * batch's copied bytes: a 4 KiB block (header and PAD) before each 64 KiB
 * packet, 256 KiB for a full 4 MiB batch (recorder.c's BATCH_BYTES), more
 * where packets are copied whole (parts of packets at a flush, metadata).
 * A batch whose copies outgrow it gets a stage of the writer's own and goes
 * out plain: 512 KiB holds twice a full batch's, and registering the pool
 * allocates a quarter of the pages that 2 MiB stages did. */
#define POOL_STAGES	(EVR_URING_DEPTH + 1u)
#define POOL_STAGE	(512u << 10)
#define POOL_LEN	((size_t)POOL_STAGES * POOL_STAGE)
#define SPARE_MAX	(2u * POOL_STAGES)
#define ALLOC_TAG	UINT64_MAX	/* the user data of the fallocate request */
/*
 * The fixed buffer is registered once the plain writes (whose pages the
 * kernel pins per write) have written this many times its size: then they
 * have cost about what the registration costs (a rent-or-buy rule, at most
 * twice the cheaper choice whatever the recording's length). On the Intel
 * guest (evr-bench-mapcost, 64 MiB): a plain 4 MiB direct write costs 1.79
 * ns of kernel CPU per 44.7-byte event, one from the registered buffer 0.52,
 * so the per-write pins cost 28 us a MB; registering a session whose pages
 * the drain's reads have mapped costs 1.1 ms (17 us a MB), the pool's fresh
 * pages 0.7 ms, and the end unpins them all again: about what the plain
 * writes of twice the buffer's size cost. By then the writers have gone
 * round the rings twice, and the drain's reads have mapped every page the
 * registration pins. (With a second mapping of the session, whose pages the
 * pins faulted in again, the registration cost 9-12 ms and this was 3; at 1
 * the 0.13-s recordings of scripts/bench-attach, about the buffer's size,
 * paid both: 16.6-19.7 ns an event against 12.3-15.3.)
 */
#define FIXED_AFTER	2u
/* Linux 6.12's IORING_REGISTER_CLONE_BUFFERS and its argument as 6.13 gave it
 * (offsets and count zero: every buffer), which the headers of older kernels
 * do not have; any kernel with IORING_OP_WRITEV_FIXED (6.15) has both. */
#define EVR_IORING_REGISTER_CLONE_BUFFERS 30u
struct evr_clone_buffers {
	uint32_t src_fd, flags, src_off, dst_off, nr, pad[3];
};

struct batch {
	uint64_t off, len;
	uint64_t events;		/* the recorder's count once it is in the file */
	uint64_t submit_ns;
	uint8_t *stage;
	size_t cap;
	int32_t res;
	bool done;
};

struct evr_uring {
	struct io_uring ring;
	bool ring_ok;
	int fd, efd;
	struct evr_client *c;
	struct evr_trace_writer *w;
	const uint64_t *events;
	uint32_t nr_rings;
	struct batch b[EVR_URING_DEPTH];
	uint64_t *pos;			/* [EVR_URING_DEPTH][nr_rings]: where to release */
	uint32_t head, count;		/* the oldest batch in flight, how many */
	struct spare { uint8_t *p; size_t cap; } spare[SPARE_MAX];
	uint32_t nspare;
	struct spare lent;		/* the stage the writer has from us */
	/* Fixed buffers: the pool of stages and the session mapping above it,
	 * registered as buffer 0, so that a batch all inside it is one
	 * IORING_OP_WRITEV_FIXED whose pages were pinned once, not per write. */
	uint8_t *pool, *fx_hi;		/* the buffer: [pool, fx_hi) */
	uint8_t *fx_region;		/* prepared, not registered yet */
	uint64_t plain_bytes;		/* written by plain IORING_OP_WRITEV */
	uint64_t fx_after;		/* ... before the registration starts */
	/* The registering thread and its ring (set up at the start, under no
	 * sandbox): it registers fx_region there, sets reg_res, then reg_done
	 * (release); submit() clones the buffer. */
	struct io_uring reg;
	bool reg_ok;			/* the ring is there */
	pthread_t reg_thread;
	bool reg_running;		/* reg_thread is to be joined */
	int reg_res;
	atomic_bool reg_done;
	size_t map_len;			/* the session mapping's (the client's), right above the pool */
	uint64_t fixed_writes;
	int err;			/* sticky: the first failed write */
	uint64_t err_off;		/* where the file was cut back to */
	bool cut;
	uint64_t durable, durable_events;
	uint64_t busy_ns, busy_since, bytes, waited_ns;
	uint64_t write_max_ns;		/* the longest write: submitted to completed */
	/* Preallocation: the file's size is al.end, allocated up to there;
	 * a request for alloc_next is in flight while alloc_pending. */
	struct evr_alloc al;
	bool alloc_pending;
	uint64_t alloc_next;
};

static void fixed_step(struct evr_uring *u);

/* Is @p a stage of the registered pool (never freed, only reused)? */
static bool in_pool(const struct evr_uring *u, const uint8_t *p)
{
	return u->pool && p >= u->pool && p < u->pool + POOL_LEN;
}

/* A stage no write and no writer uses any more: kept for reuse (the pool's
 * always), else freed. */
static void put_spare(struct evr_uring *u, uint8_t *p, size_t cap)
{
	if (!p)
		return;
	if (u->nspare < SPARE_MAX && (in_pool(u, p) || u->nspare < POOL_STAGES))
		u->spare[u->nspare++] = (struct spare){ p, cap };
	else if (!in_pool(u, p))
		free(p);
}

/* A spare stage for the writer: one of the pool first (its batches go out
 * fixed). Return: the index in spare[], or -1. */
static int pick_spare(const struct evr_uring *u)
{
	for (uint32_t i = u->nspare; i-- > 0;)
		if (in_pool(u, u->spare[i].p))
			return (int)i;
	return u->nspare ? (int)u->nspare - 1 : -1;
}

/*
 * Does the batch lie in the registered buffer (the pool's stages and the
 * session mapping above them)? Not when the writer grew a stage of its own.
 */
static bool fixed_fits(const struct evr_uring *u, const struct iovec *iov, int n)
{
	if (!u->pool)
		return false;
	for (int i = 0; i < n; i++) {
		const uint8_t *p = iov[i].iov_base;

		if (p < u->pool || p >= u->fx_hi || (size_t)(u->fx_hi - p) < iov[i].iov_len)
			return false;
	}
	return true;
}

/* The completed run from the oldest batch on: the file and the rings move on. */
static void retire(struct evr_uring *u)
{
	while (u->count && u->b[u->head].done && !u->err) {
		struct batch *b = &u->b[u->head];
		const uint64_t *pos = u->pos + (size_t)u->head * u->nr_rings;

		if (b->res < 0 || (uint64_t)b->res != b->len) {
			/* A short direct write is the file system running out of room. */
			u->err = b->res < 0 ? b->res : -ENOSPC;
			if (u->err == -EDQUOT || u->err == -EFBIG)
				u->err = -ENOSPC;
			u->err_off = b->off;
			break;
		}
		u->durable = b->off + b->len;
		u->durable_events = b->events;
		for (uint32_t i = 0; i < u->nr_rings; i++)
			evr_client_span_release_to(u->c, i, pos[i]);
		put_spare(u, b->stage, b->cap);
		b->stage = NULL;
		u->head = (u->head + 1) % EVR_URING_DEPTH;
		u->count--;
		evr_trace_writer_completed(u->w, u->durable, 0);
	}
}

/* Take one completion (waiting for it with @wait). Return: 1, 0 none, -errno. */
static int take_cqe(struct evr_uring *u, bool wait)
{
	struct io_uring_cqe *cqe;
	struct batch *b;
	uint64_t now;
	int ret;

	do {
		ret = wait ? io_uring_wait_cqe(&u->ring, &cqe) : io_uring_peek_cqe(&u->ring, &cqe);
	} while (ret == -EINTR);
	if (ret == -EAGAIN)
		return 0;
	if (ret < 0)
		return ret;
	if (io_uring_cqe_get_data64(cqe) == ALLOC_TAG) {
		/* Refused (no room, a file system without it): the writes append
		 * from there on, as without preallocation. */
		u->alloc_pending = false;
		if (cqe->res == 0)
			u->al.end = u->alloc_next;
		else if (!u->al.err)
			u->al.err = cqe->res;
		if (cqe->res != 0)
			u->al.on = false;
		io_uring_cqe_seen(&u->ring, cqe);
		return 1;
	}
	b = &u->b[io_uring_cqe_get_data64(cqe) % EVR_URING_DEPTH];
	b->res = cqe->res;
	b->done = true;
	io_uring_cqe_seen(&u->ring, cqe);
	/* Busy time: while any write was in flight (the disk's rate, for the
	 * recorder's choice of I/O, is bytes over that time). */
	now = evr_mono_ns();
	u->busy_ns += now - (u->busy_since > b->submit_ns ? u->busy_since : b->submit_ns);
	u->busy_since = now;
	if (now - b->submit_ns > u->write_max_ns)
		u->write_max_ns = now - b->submit_ns;
	if (b->res > 0)
		u->bytes += (uint64_t)b->res;
	return 1;
}

/* Wait for every batch in flight to end (the kernel may still read its stage), and
 * drop them all. */
static void drop_all(struct evr_uring *u)
{
	while (u->count) {
		struct batch *b = &u->b[u->head];

		if (!b->done && take_cqe(u, true) <= 0)
			break;
		if (!b->done)
			continue;
		put_spare(u, b->stage, b->cap);
		b->stage = NULL;
		u->head = (u->head + 1) % EVR_URING_DEPTH;
		u->count--;
	}
}

/* No more space asked for, and the request in flight ended: nothing moves the
 * file's size behind a cut. */
static void alloc_stop(struct evr_uring *u)
{
	u->al.on = false;
	while (u->alloc_pending)
		if (take_cqe(u, true) < 0)
			break;
}

/* After a failure, once nothing is in flight: the file ends with a whole chunk. */
static void cut_back(struct evr_uring *u)
{
	/* Every later batch ended too: they may have written past the failure, and
	 * are dropped with it. */
	drop_all(u);
	alloc_stop(u);
	if (!u->cut) {
		u->cut = true;
		/* The file may hold parts of this batch and whole later ones. */
		(void)ftruncate(u->fd, (off_t)u->err_off);
		evr_trace_writer_completed(u->w, u->durable, u->err);
	}
}

int evr_uring_reap(struct evr_uring *u, bool wait_all)
{
	int ret;

	if (!u)
		return 0;
	if (u->err) {
		cut_back(u);
		return u->err;
	}
	if (!u->count)
		return 0;
	for (;;) {
		ret = take_cqe(u, false);
		if (ret < 0)
			return ret;
		if (ret > 0)
			continue;	/* all that is ready first */
		retire(u);
		if (u->err || !wait_all || !u->count)
			break;
		ret = take_cqe(u, true);
		if (ret < 0)
			return ret;
	}
	retire(u);
	if (u->err) {
		cut_back(u);
		return u->err;
	}
	return 0;
}

/* evr_trace_writer_submit_fn: one vectored write of the batch at its offset. */
static int submit(void *arg, const struct iovec *iov, int n, uint64_t off, uint64_t len,
		  uint8_t **stage, size_t *cap)
{
	struct evr_uring *u = arg;
	struct io_uring_sqe *sqe;
	struct batch *b;
	uint32_t slot;
	uint64_t *pos;
	int ret;

	if (u->err)
		return u->err;
	if (u->count == EVR_URING_DEPTH) {
		/* Every slot in flight: the disk is behind, the drain waits. */
		uint64_t t0 = evr_mono_ns();

		while (u->count == EVR_URING_DEPTH && !u->err) {
			ret = take_cqe(u, true);
			if (ret < 0)
				return ret;
			retire(u);
		}
		u->waited_ns += evr_mono_ns() - t0;
		if (u->err) {
			cut_back(u);
			return u->err;
		}
	}
	slot = (u->head + u->count) % EVR_URING_DEPTH;
	b = &u->b[slot];
	pos = u->pos + (size_t)slot * u->nr_rings;
	/* The spans done so far are in this batch or before it: the one being
	 * written when the writer's stage filled up is not done yet. */
	for (uint32_t i = 0; i < u->nr_rings; i++)
		pos[i] = evr_client_span_pos(u->c, i);
	/* Half a step ahead (64 MiB, 16 batches) to write while the next
	 * step's request runs (recorder-alloc.h). */
	if (u->al.on && !u->alloc_pending && off + len + u->al.step / 2 > u->al.end) {
		/* Ahead of the writes, before this one: it takes the inode's lock
		 * and waits for the writes in flight, in io_uring's worker. */
		sqe = io_uring_get_sqe(&u->ring);
		if (!sqe)
			return -EBUSY;
		u->alloc_next = u->al.end + u->al.step;
		io_uring_prep_fallocate(sqe, 0, 0, (off_t)u->al.end, (off_t)u->al.step);
		sqe->flags |= IOSQE_FIXED_FILE;
		io_uring_sqe_set_data64(sqe, ALLOC_TAG);
		u->alloc_pending = true;
	}
	sqe = io_uring_get_sqe(&u->ring);
	if (!sqe)
		return -EBUSY;	/* not with a ring of twice the depth */
	if (u->fx_region)
		fixed_step(u);
	/* The iovec array is the kernel's once submitted (IORING_FEAT_SUBMIT_STABLE,
	 * checked at setup), so the writer may reuse it. */
	if (fixed_fits(u, iov, n)) {
		io_uring_prep_writev(sqe, 0, iov, (unsigned int)n, off);
		sqe->opcode = EVR_IORING_OP_WRITEV_FIXED;
		sqe->buf_index = 0;
		u->fixed_writes++;
	} else {
		io_uring_prep_writev(sqe, 0, iov, (unsigned int)n, off);
		u->plain_bytes += len;
	}
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(sqe, slot);
	*b = (struct batch){ .off = off, .len = len, .events = *u->events,
			     .submit_ns = evr_mono_ns(), .stage = *stage, .cap = *cap };
	if (!u->count)
		u->busy_since = b->submit_ns;
	do {
		ret = io_uring_submit(&u->ring);
	} while (ret == -EINTR);
	if (ret < 0)
		return ret;
	u->count++;
	/* The writer handed in a stage of its own (it outgrew ours): ours is free. */
	if (u->lent.p && u->lent.p != b->stage)
		put_spare(u, u->lent.p, u->lent.cap);
	u->lent = (struct spare){ NULL, 0 };
	/* A stage for the next batch: a spare one, or a new one alike. */
	ret = pick_spare(u);
	if (ret >= 0) {
		u->lent = u->spare[ret];
		u->spare[ret] = u->spare[--u->nspare];
	} else {
		u->lent.p = aligned_alloc(4096, b->cap);
		u->lent.cap = b->cap;
		if (!u->lent.p)
			return -ENOMEM;
	}
	*stage = u->lent.p;
	*cap = u->lent.cap;
	return 0;
}

/*
 * io_uring_register() itself: Debian's liburing 2.3 declares
 * io_uring_register_restrictions() and io_uring_enable_rings() but its shared
 * library does not export them.
 */
static int ring_register(struct evr_uring *u, unsigned int op, void *arg, unsigned int n)
{
	long ret = syscall(__NR_io_uring_register, u->ring.ring_fd, op, arg, n);

	return ret < 0 ? -errno : 0;
}

/* The fixed buffer's region: the stage pool, then the session mapping. */
static size_t region_len(const struct evr_uring *u)
{
	return POOL_LEN + u->map_len;
}

/*
 * The session mapping and a pool of stages as one registered buffer, where
 * the kernel takes it: Linux 6.15 or later (IORING_OP_WRITEV_FIXED), and a
 * locked-memory limit that holds both (RLIMIT_MEMLOCK, for a process without
 * CAP_IPC_LOCK: their pages stay pinned while the recorder runs). A request
 * names one registered buffer, and a batch holds stage and packets, so the
 * two must be one address range: the pool goes into the range the client's
 * mapping keeps free right below the session (evr_shm_session_headroom()).
 * The registration then pins pages that the drain's reads have mapped
 * already; a second mapping of the session (this engine's first way) had
 * every page faulted in again by the pins and unmapped again at the end, 8-11
 * ms of CPU for 64 MiB on the Intel guest (evr-bench-mapcost). Else, or with
 * EVR_RECORDER_NO_FIXED=1 (the tests), every batch is a plain
 * IORING_OP_WRITEV, whose pages the kernel pins per write. Here the pool; the
 * registration comes later (register_fixed()).
 * Return: 0 prepared, -errno not.
 */
static int prepare_fixed(struct evr_uring *u)
{
	const char *no = getenv("EVR_RECORDER_NO_FIXED"), *after;
	const struct evr_shm_hdr *h = evr_client_shm(u->c);
	struct io_uring_probe *probe;
	struct evr_shm_hdr geo;
	size_t len, room_len;
	uint8_t *p;
	bool ok;

	if (no && strcmp(no, "1") == 0)
		return -EPERM;
	probe = io_uring_get_probe_ring(&u->ring);
	ok = probe && io_uring_opcode_supported(probe, EVR_IORING_OP_WRITEV_FIXED);
	io_uring_free_probe(probe);
	if (!ok)
		return -EOPNOTSUPP;
	if (!h)
		return -EINVAL;
	/* The validated size, not the header the producer may rewrite. */
	evr_shm_geometry_of(h, &geo);
	len = (size_t)geo.total_size;
	if (!len || (len & 4095u))
		return -EINVAL;
	if (!evr_shm_session_headroom(h, &room_len) || room_len < POOL_LEN)
		return -ENOSPC;
	/* The pool's pages come with the registration's pins: a recording too
	 * short for it allocates none of them. */
	p = (uint8_t *)h - POOL_LEN;
	if (mmap(p, POOL_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		 0) == MAP_FAILED)
		return -errno;
	u->fx_region = p;
	u->map_len = len;
	/* EVR_RECORDER_FIXED_AFTER=N: after N times the buffer's size (the
	 * tests' 0: from the first batch). */
	after = getenv("EVR_RECORDER_FIXED_AFTER");
	u->fx_after = (uint64_t)(after && *after ? strtoul(after, NULL, 10) : FIXED_AFTER) *
		      region_len(u);
	return 0;
}

/* The pool back to the client's headroom: reserved, its pages freed (the
 * client unmaps the headroom with the session). */
static void pool_release(uint8_t *p)
{
	(void)mmap(p, POOL_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		   -1, 0);
}

/* The registered buffer in place: the pool's stages become the spares. */
static void fixed_in_place(struct evr_uring *u, uint8_t *p)
{
	u->pool = p;
	u->fx_hi = p + region_len(u);
	for (uint32_t i = 0; i < POOL_STAGES && u->nspare < SPARE_MAX; i++)
		u->spare[u->nspare++] = (struct spare){ p + (size_t)i * POOL_STAGE, POOL_STAGE };
}

/*
 * The registration in the drain's own thread, where no registering thread
 * could start or the kernel refused the clone: it holds the drain while the
 * kernel pins every page (4-30 ms for 64 MiB once the writers have touched
 * them; 130-480 ms on the PVM guest at the start, when most were not, which
 * overflowed a 500 MB/s stream's 32 MiB ring). Until then, and where it
 * fails, the batches are plain IORING_OP_WRITEV.
 */
static void register_fixed(struct evr_uring *u)
{
	uint8_t *p = u->fx_region;
	struct iovec iov = { .iov_base = p, .iov_len = region_len(u) };

	u->fx_region = NULL;
	if (io_uring_register_buffers(&u->ring, &iov, 1) < 0) {
		pool_release(p);
		return;
	}
	fixed_in_place(u, p);
}

/* The registering thread: the pins on a ring of its own, which holds no lock
 * of the writing ring's while the kernel allocates and pins. */
static void *register_worker(void *arg)
{
	struct evr_uring *u = arg;
	struct iovec iov = { .iov_base = u->fx_region, .iov_len = region_len(u) };

	u->reg_res = io_uring_register_buffers(&u->reg, &iov, 1);
	atomic_store_explicit(&u->reg_done, true, memory_order_release);
	return NULL;
}

/* Start register_worker() on the ring set up at the start. Return: 0
 * started, -errno not (no ring, a sandbox without threads, no memory). */
static int register_start(struct evr_uring *u)
{
	sigset_t all, old;
	int err;

	if (!u->reg_ok)
		return -ENODEV;
	/* Signals blocked in it: the program's handlers run on its own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&u->reg_thread, NULL, register_worker, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err < 0)
		return err;
	u->reg_running = true;
	return 0;
}

/* Wait for the registering thread (at once once reg_done), drop its ring. */
static void register_join(struct evr_uring *u)
{
	if (u->reg_running)
		pthread_join(u->reg_thread, NULL);
	u->reg_running = false;
	if (u->reg_ok)
		io_uring_queue_exit(&u->reg);
	u->reg_ok = false;
}

/* The registering thread is done: the same pages into the writing ring
 * (references, no new pins). Where the kernel refuses the clone, the next
 * batch registers them itself (fixed_step() with the thread's ring gone:
 * register_fixed(), the pages pinned once already are in memory); where it
 * refused the registration, no fixed buffer. */
static void clone_fixed(struct evr_uring *u)
{
	struct evr_clone_buffers cb = { .src_fd = (uint32_t)u->reg.ring_fd };
	uint8_t *p = u->fx_region;
	int reg = u->reg_res, err = reg;

	if (reg == 0)
		err = ring_register(u, EVR_IORING_REGISTER_CLONE_BUFFERS, &cb, 1);
	register_join(u);
	if (err == 0) {
		u->fx_region = NULL;
		fixed_in_place(u, p);
	} else if (reg == 0) {
		u->fx_after = 0;
	} else {
		u->fx_region = NULL;
		pool_release(p);
	}
}

/* The fixed buffer's turn, before a batch is prepared (submit()): its
 * registration starts once the plain writes have written FIXED_AFTER times
 * its size, on the registering thread, else here; the buffer is taken once
 * the thread is done. */
static void fixed_step(struct evr_uring *u)
{
	if (u->reg_running) {
		if (atomic_load_explicit(&u->reg_done, memory_order_acquire))
			clone_fixed(u);
		return;
	}
	if (u->plain_bytes < u->fx_after)
		return;
	if (register_start(u) < 0) {
		register_join(u);
		register_fixed(u);
	}
}

int evr_uring_new(int fd, struct evr_client *c, struct evr_trace_writer *w,
		  const uint64_t *events, uint32_t nr_rings, struct evr_uring **ret)
{
	struct io_uring_restriction res[6] = {
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_WRITEV },
		{ .opcode = IORING_RESTRICTION_SQE_FLAGS_REQUIRED, .sqe_flags = IOSQE_FIXED_FILE },
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_FALLOCATE },
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = EVR_IORING_OP_WRITEV_FIXED },
		/* The one registration after the start: the registering thread's
		 * buffer cloned (clone_fixed()), or registered (register_fixed()). */
		{ .opcode = IORING_RESTRICTION_REGISTER_OP, .register_op = IORING_REGISTER_BUFFERS },
		{ .opcode = IORING_RESTRICTION_REGISTER_OP,
		  .register_op = EVR_IORING_REGISTER_CLONE_BUFFERS },
	};
	unsigned int nres = 3;
	struct io_uring_params p = { .flags = IORING_SETUP_R_DISABLED };
	struct evr_uring *u;
	int err;

	if (fd < 0 || !c || !w || !events || !ret)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->fd = fd;
	u->c = c;
	u->w = w;
	u->events = events;
	u->nr_rings = nr_rings ? nr_rings : 1;
	u->efd = -1;
	u->pos = calloc((size_t)EVR_URING_DEPTH * u->nr_rings, sizeof(*u->pos));
	if (!u->pos) {
		err = -ENOMEM;
		goto fail;
	}
	err = io_uring_queue_init_params(2 * EVR_URING_DEPTH, &u->ring, &p);
	if (err < 0)
		goto fail;
	u->ring_ok = true;
	if (!(p.features & IORING_FEAT_SUBMIT_STABLE)) {
		err = -EOPNOTSUPP;
		goto fail;
	}
	u->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->efd < 0) {
		err = -errno;
		goto fail;
	}
	err = io_uring_register_files(&u->ring, &fd, 1);
	if (err == 0)
		err = io_uring_register_eventfd(&u->ring, u->efd);
	if (err == 0 && prepare_fixed(u) == 0) {
		nres = 6;
		/* The registering thread's ring now: io_uring_setup() is not
		 * in the recorder's seccomp filter. */
		u->reg_ok = io_uring_queue_init(1, &u->reg, 0) == 0;
	}
	if (err == 0)
		err = ring_register(u, IORING_REGISTER_RESTRICTIONS, res, nres);
	if (err == 0)
		err = ring_register(u, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (err == 0)
		err = evr_trace_writer_set_submit(w, submit, u);
	if (err < 0)
		goto fail;
	/* The first step, before the first write (so nothing waits for it) and
	 * before the sandbox: whether the file system takes it at all. */
	(void)evr_alloc_start(&u->al, fd);
	*ret = u;
	return 0;
fail:
	evr_uring_free(u);
	return err;
}

int evr_uring_fd(const struct evr_uring *u)
{
	return u ? u->efd : -1;
}

uint32_t evr_uring_in_flight(const struct evr_uring *u)
{
	return u ? u->count : 0;
}

int evr_uring_arm(struct evr_uring *u)
{
	uint64_t v;

	if (!u || !u->count)
		return 0;
	/* The eventfd first: a completion that comes after this read signals it
	 * again, so a wait on it never sleeps through one left in the ring. One
	 * read per sleep, not per round: the rounds look at the ring itself. */
	if (read(u->efd, &v, sizeof(v)) < 0 && errno != EAGAIN && errno != EINTR)
		return -errno;
	return io_uring_cq_ready(&u->ring) ? 1 : 0;
}

void evr_uring_stats(const struct evr_uring *u, struct evr_uring_stats *ret)
{
	if (!u || !ret)
		return;
	*ret = (struct evr_uring_stats){
		.durable = u->durable,
		.events = u->durable_events,
		.busy_ns = u->busy_ns,
		.bytes = u->bytes,
		.waited_ns = u->waited_ns,
		.write_max_ns = u->write_max_ns,
		.in_flight = u->count,
		.fixed = u->pool != NULL,
		.fixed_writes = u->fixed_writes,
		.prealloc = u->al.used,
		.prealloc_err = u->al.err,
	};
}

int evr_uring_trim(struct evr_uring *u, uint64_t size)
{
	if (!u)
		return 0;
	alloc_stop(u);
	/* The file's size is al.end, or what buffered writes made of it past
	 * there (then larger than @size is not). */
	return evr_alloc_trim(&u->al, size);
}

void evr_uring_free(struct evr_uring *u)
{
	if (!u)
		return;
	/* The kernel may still read the stages: let every write end first. */
	if (u->ring_ok) {
		drop_all(u);
		alloc_stop(u);
	}
	if (u->ring_ok)
		io_uring_queue_exit(&u->ring);
	/* Its pins in flight hold the region: unmapped after it. */
	register_join(u);
	if (u->efd >= 0)
		close(u->efd);
	/* The writer's stage is ours: the recorder frees the writer after us,
	 * which frees no stage of ours. */
	put_spare(u, u->lent.p, u->lent.cap);
	for (uint32_t i = 0; i < u->nspare; i++)
		if (!in_pool(u, u->spare[i].p))
			free(u->spare[i].p);
	if (u->pool || u->fx_region)
		pool_release(u->pool ? u->pool : u->fx_region);
	free(u->pos);
	free(u);
}

#else /* !EVR_HAVE_LIBURING */

int evr_uring_new(int fd, struct evr_client *c, struct evr_trace_writer *w,
		  const uint64_t *events, uint32_t nr_rings, struct evr_uring **ret)
{
	(void)fd, (void)c, (void)w, (void)events, (void)nr_rings, (void)ret;
	return -EOPNOTSUPP;
}

int evr_uring_fd(const struct evr_uring *u)
{
	(void)u;
	return -1;
}

uint32_t evr_uring_in_flight(const struct evr_uring *u)
{
	(void)u;
	return 0;
}

int evr_uring_arm(struct evr_uring *u)
{
	(void)u;
	return 0;
}

int evr_uring_reap(struct evr_uring *u, bool wait_all)
{
	(void)u, (void)wait_all;
	return 0;
}

void evr_uring_stats(const struct evr_uring *u, struct evr_uring_stats *ret)
{
	(void)u;
	if (ret)
		memset(ret, 0, sizeof(*ret));
}

int evr_uring_trim(struct evr_uring *u, uint64_t size)
{
	(void)u, (void)size;
	return 0;
}

void evr_uring_free(struct evr_uring *u)
{
	(void)u;
}

#endif
