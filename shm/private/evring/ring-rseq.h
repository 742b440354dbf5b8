/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-CPU ring ownership with restartable sequences (rseq): the write path
 * without an atomic read-modify-write. Producer side only; private to libevring
 * (not installed).
 *
 * Why: the try-lock of <evring/ring.h> is a `lock cmpxchg`, which waits for the
 * store buffer to drain. With a reader draining concurrently, the stores of the
 * previous records miss (the reader holds their lines), so the locked operation
 * of the next event waits for those misses: measured as ~40% of a write.
 *
 * Protocol
 * --------
 * A session is in per-CPU mode when rseq is usable in this process and it has a
 * ring for every possible CPU (evr_ring_percpu_min). Then ring i is written only
 * by threads running on CPU i, and only inside an rseq critical section that the
 * kernel aborts (restarts at its abort handler) if the thread is preempted,
 * migrated or interrupted by a signal before the section's last instruction.
 * Everything a section stores before that last instruction is speculative: the
 * record bytes at [head, head + size) (unpublished, so no reader looks at them),
 * last_ts (only a clamp floor; an aborted value is a timestamp that was really
 * read), and the writer's own {head, tid_events}. The last instruction commits.
 *
 *   CS (append): check cpu_id == i, lock == 0, lost_async == 0, no wake-up
 *       due, that the published head (ctl->head) is the writer's head, and
 *       that the record (with a THREAD record before it if another thread
 *       wrote the packet's last one) ends at or below fast_end; store the
 *       record(s); store {head, tid_events} advanced by them (one 16-byte
 *       store, so the settling below never finds one without the other);
 *       commit by publishing the new head to ctl->head (one store: the kernel
 *       aborts before it or not at all). A thread new to the packet writes
 *       its THREAD record in the section: the first write after a context
 *       switch between two writers once took the slow path for it (16 ns
 *       more here, evring-bench's switch_first).
 *       A record that does not fit in a ring that is full (discard mode, the
 *       gating reader behind) is dropped by the section itself: it commits a
 *       count instead of a record (EVR_RSEQ_DROP_FULL), which the slow path
 *       reports in-band once there is room.
 *
 * A section aborted between the store of {head, tid_events} and the commit
 * leaves the writer one EVENT record (and maybe the THREAD record before it)
 * ahead of what it published, a record its writer will append again when it
 * restarts. The next section on CPU i sees ctl->head != head and takes the
 * slow path, which takes that back under the lock (evr_ring_settle_locked()):
 * head and the packet's event count go back by one record, the packet's
 * thread is forgotten if the record taken back at ctl->head is a THREAD
 * record (so that the next write names its thread again), and ctl->head is
 * unchanged, so it never goes back.
 * ctl->head is in memory that consumers map writable; a value that is not
 * such a record's start is not trusted: the slow path publishes the writer's
 * head again.
 *
 * x86 is TSO: the record stores, the writer's head and the publish become
 * visible in program order, which is what the release store of head and the
 * release fence F1 give in the try-lock path; the acquire side is the readers'
 * (unchanged).
 *
 * The slow path (packet switch, LOST records, the discard tail check, a due
 * wake-up, an interrupted append to settle) is plain C and may be preempted, so
 * it runs under w->lock, which a per-CPU writer takes in a second critical
 * section (CS-lock: cpu_id == i, lock == 0, commit lock = 1): nobody else can take it while the thread runs on
 * CPU i, and every fast path on CPU i sees it held and stays out. The holder may
 * then migrate; it publishes with a release store and releases the lock with a
 * store-release (pairs with the lock checks of both sections, plain x86
 * loads, which are acquire loads). A section of another thread that was
 * between its stores and its commit when the lock was taken on CPU i was
 * preempted, hence aborted: the holder may settle what it left.
 *
 * A writer that finds the lock held (a holder preempted in the slow path, or a
 * signal handler nested on it) cannot write another CPU's ring: it counts the
 * event in lost_async, reported in-band by the next slow path. So does a thread
 * without an rseq registration in a per-CPU session, and a writer that finds
 * a discard-mode ring full (without taking the lock: a full ring would send
 * every write through the lock, and a holder preempted there would turn the
 * CPU's other writes into lock-held drops). The try-lock path, by contrast,
 * tries the other rings first; here the window is the slow path only (once per
 * packet, ~100 ns), and a signal handler that runs inside it.
 *
 * Aborts loop back to the start; after EVR_RSEQ_MAX_RESTARTS in a row (a
 * debugger single-stepping through the section aborts it at every step) the
 * event is counted lost rather than retried forever.
 *
 * A process never mixes the modes on one ring: the mode is a function of the
 * session's ring count and a process-wide constant set before any session
 * exists. Under ThreadSanitizer (which cannot see this ordering) and on other
 * architectures every session uses the try-lock.
 */
#ifndef EVR_RING_RSEQ_H
#define EVR_RING_RSEQ_H

#include <sys/rseq.h>

#include <evring/ring.h>

#if defined(__x86_64__) && defined(RSEQ_SIG) && !defined(__SANITIZE_THREAD__)
#define EVR_HAVE_RSEQ 1
#else
#define EVR_HAVE_RSEQ 0
#endif

/*
 * Sessions with at least this many rings are in per-CPU mode; UINT32_MAX when
 * rseq is not usable. Set by the producer before the first session starts.
 */
extern uint32_t evr_ring_percpu_min __attribute__((visibility("hidden")));

/* Nonzero when the CPU and the kernel support AVX2: the var section copies
 * with 32-byte moves (EVR_RSEQ_VAR_BYTES). Set when the library loads. */
extern uint8_t evr_ring_copy_avx2 __attribute__((visibility("hidden")));

/*
 * Nonzero when this process registered for membarrier's rseq fence, so that
 * evr_rseq_synchronize() can wait for rseq critical sections; set once, with
 * evr_ring_percpu_min. Without it, nothing reads rings inside a section
 * without an RCU read lock (evr_ring_rseq_append_words_rcu() is not used).
 */
extern int evr_rseq_fence_ok __attribute__((visibility("hidden")));

/*
 * evr_rseq_fence_register() - register the process for the fence; sets
 * evr_rseq_fence_ok. Again in a forked child.
 */
__attribute__((visibility("hidden"))) void evr_rseq_fence_register(void);

/*
 * evr_rseq_synchronize() - the grace period of rseq critical sections: on
 * return, no section of this process that started before the call can still
 * commit (running ones were aborted by an IPI, preempted ones at preemption).
 * Does nothing without evr_rseq_fence_ok. Context: may sleep.
 */
__attribute__((visibility("hidden"))) void evr_rseq_synchronize(void);

/* Payload words an EVENT record can take in registers (evr_ring_rseq_append_words_rcu()). */
#define EVR_RSEQ_WORDS_MAX 4

/* Restarts of one write before it gives up and counts the event lost. */
#define EVR_RSEQ_MAX_RESTARTS 1024

/*
 * A slow path that finds its CPU's ring held by another thread's slow path
 * (preempted inside it) yields the CPU to it this many times before it drops
 * the event.
 */
#define EVR_RING_BUSY_YIELDS 2

/*
 * One EVENT record, prepared once and appended to each session's ring.
 *
 * The payload is copied in whole 8-byte words: @src must be readable for
 * nq * 8 bytes, and the bytes from len up to there must be zero (they become
 * the record's padding). The generated fire functions build their payload that
 * way; evr_rseq_rec_pad() makes such a copy of any other payload.
 */
struct evr_rseq_rec {
	uint64_t w0;		/* record header word 0: size, type, event_id */
	uint64_t ts;
	const uint8_t *src;	/* payload, borrowed, padded as above */
	uint64_t nq;		/* 8-byte words of payload: ceil(len / 8) */
	uint32_t event_id;	/* for the slow path */
	uint32_t tid;
	uint32_t len;
	uint32_t flags;		/* the header's flags (EVR_REC_F_*), also in w0, for the slow path */
};

/*
 * evr_rseq_rec_init() - describe one EVENT record of @len payload bytes.
 * @payload: borrowed until the writes are done; padded (see struct evr_rseq_rec).
 */
/* Word 0 of an EVENT record's header: size, type, event_id. */
static inline uint64_t evr_rseq_event_w0(uint32_t event_id, uint32_t len)
{
	return (uint64_t)(EVR_REC_HDR_SIZE + len) | (uint64_t)EVR_REC_EVENT << 16 |
	       (uint64_t)event_id << 32;
}

static inline void evr_rseq_rec_init(struct evr_rseq_rec *r, uint32_t event_id, uint64_t ts,
				     uint32_t tid, const void *payload, uint32_t len)
{
	r->w0 = evr_rseq_event_w0(event_id, len);
	r->ts = ts;
	r->src = payload;
	r->nq = (len + 7u) / 8u;
	r->event_id = event_id;
	r->tid = tid;
	r->len = len;
	r->flags = 0;
}

/* Give the record @r the header flags @flags (EVR_REC_F_*). */
static inline void evr_rseq_rec_set_flags(struct evr_rseq_rec *r, uint8_t flags)
{
	r->w0 = (r->w0 & ~((uint64_t)0xff << 24)) | (uint64_t)flags << 24;
	r->flags = flags;
}

/* Bytes of a padded copy of a @len-byte payload (at least 8, for len 0). */
static inline uint32_t evr_rseq_pad_size(uint32_t len)
{
	return len ? (len + 7u) & ~7u : 8u;
}

/* Zero the bytes of @buf from @len up to the next multiple of 8: its padding. */
static inline void evr_rseq_pad_zero(uint8_t *buf, uint32_t len)
{
	if (len & 7u)
		memset(buf + len, 0, 8u - (len & 7u));
}

/* evr_rseq_rec_pad() - copy @len bytes of @payload into @buf (evr_rseq_pad_size(len) bytes), zero-padded. */
static inline const void *evr_rseq_rec_pad(uint8_t *buf, const void *payload, uint32_t len)
{
	if (len)
		memcpy(buf, payload, len);
	evr_rseq_pad_zero(buf, len);
	return buf;
}

/* This thread's rseq area, as registered by glibc. */
static inline struct rseq *evr_rseq_area(void)
{
#if defined(__GNUC__) && !defined(__clang__)
	char *tp = __builtin_thread_pointer();
#else
	char *tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
#endif
	return (struct rseq *)(tp + __rseq_offset);
}

static inline int32_t evr_rseq_cpu(const struct rseq *rs)
{
	return (int32_t)__atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
}

/* Leave no pointer to our descriptors behind (the kernel would otherwise clear it lazily). */
static inline void evr_rseq_clear_cs(struct rseq *rs)
{
	__atomic_store_n((uint64_t *)(void *)((char *)rs + offsetof(struct rseq, rseq_cs)), 0,
			 __ATOMIC_RELAXED);
}

/*
 * evr_ring_settle_locked() - take back the record of an append interrupted
 * before its commit (see the protocol above), or publish head again if
 * ctl->head was overwritten. Context: @w's lock held, or no writer can run.
 */
__attribute__((visibility("hidden"))) void evr_ring_settle_locked(struct evr_ring_writer *w);

#if EVR_HAVE_RSEQ
/*
 * Slow path of evr_ring_rseq_write(): take w->lock on @cpu (CS-lock), settle, then append
 * with the C code of the try-lock path. Return: as evr_ring_rseq_write(), or
 * -EAGAIN to restart (preempted, migrated or interrupted before the lock).
 */
__attribute__((visibility("hidden"))) int
evr_ring_rseq_write_slow(struct evr_ring_writer *w, struct rseq *rs, uint32_t cpu,
			 const struct evr_rseq_rec *r);

/*
 * Offsets the assembly below uses, as literals (an asm statement takes at most
 * 30 operands); each is checked against the C layout.
 */
#define EVR_RSEQ_S_(x) #x
#define EVR_RSEQ_S(x) EVR_RSEQ_S_(x)
#define EVR_OFF_RS_CS 8
#define EVR_OFF_RS_CPU 4
#define EVR_OFF_W_LOCK 0
#define EVR_OFF_W_FAST_END 8
#define EVR_OFF_W_HEAD 16
#define EVR_OFF_W_TID_EVENTS 24
#define EVR_OFF_W_LAST_TS 32
#define EVR_OFF_W_RING_MASK 40
#define EVR_OFF_W_DATA 48
#define EVR_OFF_W_CTL 64
#define EVR_OFF_W_LOST_ASYNC 192
#define EVR_OFF_W_BELL_DUE 56
#define EVR_OFF_W_MODE 108
#define EVR_OFF_W_LOST_FAST 120
#define EVR_OFF_CTL_HEAD 0
#define EVR_OFF_CTL_TAIL 64
#define EVR_OFF_CTL_LOST_FAST_TOTAL 160
#define EVR_RSEQ_CHECK_OFF(type, field, off) \
	_Static_assert(offsetof(type, field) == (off), #off)
EVR_RSEQ_CHECK_OFF(struct rseq, rseq_cs, EVR_OFF_RS_CS);
EVR_RSEQ_CHECK_OFF(struct rseq, cpu_id, EVR_OFF_RS_CPU);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, lock, EVR_OFF_W_LOCK);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, fast_end, EVR_OFF_W_FAST_END);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, head, EVR_OFF_W_HEAD);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, tid_events, EVR_OFF_W_TID_EVENTS);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, last_ts, EVR_OFF_W_LAST_TS);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, ring_mask, EVR_OFF_W_RING_MASK);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, data, EVR_OFF_W_DATA);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, ctl, EVR_OFF_W_CTL);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, lost_async, EVR_OFF_W_LOST_ASYNC);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, bell_due, EVR_OFF_W_BELL_DUE);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, mode, EVR_OFF_W_MODE);
EVR_RSEQ_CHECK_OFF(struct evr_ring_writer, lost_fast, EVR_OFF_W_LOST_FAST);
EVR_RSEQ_CHECK_OFF(struct evr_ring_ctl, head, EVR_OFF_CTL_HEAD);
EVR_RSEQ_CHECK_OFF(struct evr_ring_ctl, tail, EVR_OFF_CTL_TAIL);
EVR_RSEQ_CHECK_OFF(struct evr_ring_ctl, lost_fast_total, EVR_OFF_CTL_LOST_FAST_TOTAL);
_Static_assert(EVR_MODE_DISCARD == 0, "the section tests the mode against 0");

/* The THREAD record a section writes for a thread new to the packet: its
 * aligned size, and its header's word 0 (size, type, event id 0). */
#define EVR_RSEQ_THREAD_ASIZE 24
#define EVR_RSEQ_THREAD_W0 0x40018
_Static_assert(EVR_RSEQ_THREAD_ASIZE == EVR_REC_THREAD_ASIZE &&
		       EVR_REC_THREAD_SIZE == EVR_REC_HDR_SIZE + 8,
	       "a THREAD record: header and one word");
_Static_assert(EVR_RSEQ_THREAD_W0 ==
		       (EVR_REC_THREAD_SIZE | (uint32_t)EVR_REC_THREAD << 16),
	       "THREAD record header word 0");
/* Bit 31 of tid_events is free for the section's flag: a packet's count is below. */
_Static_assert(EVR_PACKET_SIZE_MAX / EVR_REC_HDR_SIZE < (1ull << 31), "events in a packet");

/*
 * The abort signature precedes every abort handler: the 4 bytes before the
 * handler must be RSEQ_SIG. The three bytes before it make the whole an
 * undefined instruction (ud1 RSEQ_SIG(%rip), %edi), so that a disassembler stays
 * in step and a stray jump there traps (see <bits/rseq.h>).
 */
#define EVR_RSEQ_ABORT_SIG ".byte 0x0f, 0xb9, 0x3d\n\t.long " EVR_RSEQ_S(RSEQ_SIG) "\n\t"

/*
 * A struct rseq_cs: version 0, flags 0, start, post-commit offset, abort. The
 * kernel validates the abort address against the signature and requires it
 * outside [start, post-commit).
 */
#define EVR_RSEQ_CS_DESC(label, start, post, abort)                                        \
	".pushsection __rseq_cs, \"aw\"\n\t"                                               \
	".balign 32\n\t"                                                                   \
	label ":\n\t"                                                                      \
	".long 0, 0\n\t"                                                                   \
	".quad " start ", " post " - " start ", " abort "\n\t"                             \
	".popsection\n\t"

/*
 * Arm the critical section described at @desc: the store of its address is the
 * last instruction before the section's start label, so a preemption after it
 * finds the IP inside the section and aborts, and one before it finds the IP
 * outside and leaves it alone.
 */
#define EVR_RSEQ_ARM(desc)                                                                  \
	"leaq " desc "(%%rip), %%rax\n\t"                                                  \
	"movq %%rax, " EVR_RSEQ_S(EVR_OFF_RS_CS) "(%[rs])\n\t"

/*
 * The drop of a full ring, inside the section: reached when the record does
 * not end at or below fast_end, placed where the common path never runs (after
 * the THREAD record's stores, which jump over it). In discard mode, if the ring
 * is full even with everything the gating reader released (ring_surely_full()
 * in ring-writer.c, the same test), the event is counted in lost_fast and the
 * section commits that count instead of a record, through the same last
 * instruction (the commit must be the section's last): %[a] = &lost_fast, %[c]
 * = the new count, then to 8. Before it, two stores that a restart makes
 * again: fast_end = 0, so that every write takes this way or the slow path
 * until the slow path has reported the drop in-band (it absorbs lost_fast
 * under the lock, which this section found free: nobody else writes either
 * field meanwhile); then the new count into the ring's shared lost_fast_total,
 * where readers of a producer that died find it (evr_ring_ctl_lost()). A
 * section aborted after that store leaves the shared count one ahead until
 * the next write on the ring, which fast_end sends to the slow path: that
 * copies the count again under the lock. %[te] = -1 tells
 * evr_ring_rseq_append() it was dropped. Anything else (overwrite mode,
 * room after all, a tail beyond head) takes the slow path, as before.
 *
 * A dropped event cost 22-32 ns here on the slow path (a second timestamp, the
 * payload staged, the section tried again), twice a written one; the
 * producer must not slow down because its consumer is behind.
 */
#define EVR_RSEQ_DROP_FULL                                                                 \
	"7:\n\t"                                                                            \
	EVR_RSEQ_DROP_COUNT("%[w]", "%[a]", "%[c]", "%l[slow]")                            \
	"movq $-1, %[te]\n\t"                                                             \
	"jmp 8f\n\t"
/*
 * The test and the count, with the ring writer in register @w and @a, @c free
 * (@c holds the record's end): leaves @a = &lost_fast and @c = the new count
 * for the commit, or goes to @slow. Also the hand-written var path's
 * (producer/write-v-asm.c), with its own registers.
 */
#define EVR_RSEQ_DROP_COUNT(w, a, c, slow)                                                 \
	"cmpl $0, " EVR_RSEQ_S(EVR_OFF_W_MODE) "(" w ")\n\t"	/* EVR_MODE_DISCARD */       \
	"jne " slow "\n\t"                                                                 \
	"movq " EVR_RSEQ_S(EVR_OFF_W_CTL) "(" w "), " a "\n\t"                             \
	"movq " EVR_RSEQ_S(EVR_OFF_CTL_TAIL) "(" a "), " a "\n\t"	/* the reader's tail */ \
	"cmpq " EVR_RSEQ_S(EVR_OFF_W_HEAD) "(" w "), " a "\n\t"                            \
	"ja " slow "\n\t"                                                                  \
	"subq " a ", " c "\n\t"                                                            \
	"decq " c "\n\t"                                                                   \
	"cmpq " EVR_RSEQ_S(EVR_OFF_W_RING_MASK) "(" w "), " c "\n\t"	/* end - tail > size? */ \
	"jbe " slow "\n\t"                                                                 \
	"movq $0, " EVR_RSEQ_S(EVR_OFF_W_FAST_END) "(" w ")\n\t"                           \
	"movq " EVR_RSEQ_S(EVR_OFF_W_LOST_FAST) "(" w "), " c "\n\t"                       \
	"incq " c "\n\t"                                                                   \
	"movq " EVR_RSEQ_S(EVR_OFF_W_CTL) "(" w "), " a "\n\t"                             \
	"movq " c ", " EVR_RSEQ_S(EVR_OFF_CTL_LOST_FAST_TOTAL) "(" a ")\n\t"               \
	"leaq " EVR_RSEQ_S(EVR_OFF_W_LOST_FAST) "(" w "), " a "\n\t"

/*
 * The three lines before the one a section asks for ahead (EVR_RING_PREFETCH
 * past the record's end), for the sections whose records run to 280 bytes:
 * together, the four lines that end where the record will end, one
 * ring-prefetch on, so that a run of such records asks for every line it will
 * fill and not one in three. @pf: what to add to @addr (an address operand,
 * "(%[a])") to reach that line. Where the ring does not fit in the writer's L2
 * (8 MiB rings on a Zen 3 EPYC guest with an L2 of 512 KiB and an L3 other
 * guests share) it made the 200-byte event a third cheaper (evring-bench
 * enabled_bytes200 45.8-55.6 -> 32.0-37.9 ns, 6 interleaved rounds); a loop
 * asking for each line of the record, from head, had cost 1.5 ns more than it
 * saved with the ring in cache (Zen 4). The lines before the ring's data, on a
 * wrap, are asked for in vain and cannot fault.
 */
#define EVR_RSEQ_PF_BEFORE(pf, addr)                                                       \
	"prefetchw " pf "-64" addr "\n\t"                                                \
	"prefetchw " pf "-128" addr "\n\t"                                               \
	"prefetchw " pf "-192" addr "\n\t"

/*
 * The append: one critical section on ring %[w], which belongs to CPU %[cpu].
 *
 * Every value comes in a register or as an operand the compiler picks, and
 * the scratch registers are the compiler's to choose, so that the write path
 * needs almost no stack frame: a call that spills and reloads is a good part of
 * a 15 ns write. The users differ in how the record's size is computed
 * (@end: %[c] = head + the EVENT record's aligned size), which lines they
 * ask for besides the one ahead (@pf_more, with %[a] its address:
 * EVR_RSEQ_PF_BEFORE() or nothing) and how the payload is copied (@copy, to
 * 16(%[d])); %[a], %[x0] and %[x1] are free in @copy. %[ts] comes in as the
 * timestamp read and is clamped in place.
 *
 * Exits: falls through when written and published; %l[restart]: preempted,
 * migrated or signalled before the commit; %l[slow]: slow path needed.
 */
#define EVR_RSEQ_APPEND_ASM(begin, end, pf_more, copy)                                     \
	EVR_RSEQ_CS_DESC("3", "1f", "2f", "4f")                                            \
	".pushsection __rseq_failure, \"ax\"\n\t"                                          \
	EVR_RSEQ_ABORT_SIG                                                                 \
	"4:\n\t"                                                                           \
	"jmp %l[restart]\n\t"                                                              \
	".popsection\n\t"                                                                  \
	"leaq 3b(%%rip), %[a]\n\t"                                                         \
	"movq %[a], " EVR_RSEQ_S(EVR_OFF_RS_CS) "(%[rs])\n"                                \
	"1:\n\t"                                                                           \
	"cmpl %[cpu], " EVR_RSEQ_S(EVR_OFF_RS_CPU) "(%[rs])\n\t"                           \
	"jne 4b\n\t"                                                                       \
	begin                                                                              \
	"cmpl $0, " EVR_RSEQ_S(EVR_OFF_W_LOCK) "(%[w])\n\t"                                \
	"jne %l[slow]\n\t"                                                                 \
	"movq " EVR_RSEQ_S(EVR_OFF_W_TID_EVENTS) "(%[w]), %[te]\n\t"	/* te = tid_events */ \
	"movq " EVR_RSEQ_S(EVR_OFF_W_HEAD) "(%[w]), %[d]\n\t"		/* d = head */    \
	"movq " EVR_RSEQ_S(EVR_OFF_W_CTL) "(%[w]), %[a]\n\t"                               \
	"cmpq " EVR_RSEQ_S(EVR_OFF_CTL_HEAD) "(%[a]), %[d]\n\t"	/* interrupted append */ \
	"jne %l[slow]\n\t"                                                                 \
	"movq %[te], %[a]\n\t"                                                             \
	"shrq $32, %[a]\n\t"                                                               \
	"cmpl %[tid], %k[a]\n\t"                                                           \
	"je 5f\n\t"                                                                         \
	/* New thread in the packet: its THREAD record first, at head. te gets \
	 * the new tid, and bit 31 (above any count) says the record is due. */ \
	"movl %[tid], %k[a]\n\t"                                                           \
	"shlq $32, %[a]\n\t"                                                               \
	"movl %k[te], %k[te]\n\t"                                                          \
	"orq %[a], %[te]\n\t"                                                              \
	"btsq $31, %[te]\n\t"                                                              \
	"addq $" EVR_RSEQ_S(EVR_RSEQ_THREAD_ASIZE) ", %[d]\n\t"                            \
	"5:\n\t"                                                                            \
	end				/* c = end */                                      \
	"cmpq " EVR_RSEQ_S(EVR_OFF_W_FAST_END) "(%[w]), %[c]\n\t"                          \
	"ja 7f\n\t"			/* no room here: full (EVR_RSEQ_DROP_FULL)? */    \
	"cmpq $0, " EVR_RSEQ_S(EVR_OFF_W_LOST_ASYNC) "(%[w])\n\t"                          \
	"jne %l[slow]\n\t"                                                                 \
	"cmpq " EVR_RSEQ_S(EVR_OFF_W_BELL_DUE) "(%[w]), %[ts]\n\t"	/* a wake-up is due */ \
	"jae %l[slow]\n\t"                                                                 \
	"cmpq " EVR_RSEQ_S(EVR_OFF_W_LAST_TS) "(%[w]), %[ts]\n\t"                          \
	"cmovbq " EVR_RSEQ_S(EVR_OFF_W_LAST_TS) "(%[w]), %[ts]\n\t"                        \
	"movq %[ts], " EVR_RSEQ_S(EVR_OFF_W_LAST_TS) "(%[w])\n\t"                          \
	"leaq %c[pf](%[c]), %[a]\n\t"	/* own the line ahead */                           \
	"andq " EVR_RSEQ_S(EVR_OFF_W_RING_MASK) "(%[w]), %[a]\n\t"                         \
	"addq " EVR_RSEQ_S(EVR_OFF_W_DATA) "(%[w]), %[a]\n\t"                              \
	"prefetchw (%[a])\n\t"                                                             \
	pf_more                                                                            \
	"andq " EVR_RSEQ_S(EVR_OFF_W_RING_MASK) "(%[w]), %[d]\n\t"                         \
	"addq " EVR_RSEQ_S(EVR_OFF_W_DATA) "(%[w]), %[d]\n\t"	/* d = destination */      \
	"btrq $31, %[te]\n\t"                                                              \
	"jnc 6f\n\t"                                                                        \
	/* The THREAD record, right before: in the same packet, so contiguous. */ \
	"movq $" EVR_RSEQ_S(EVR_RSEQ_THREAD_W0) ", -" EVR_RSEQ_S(EVR_RSEQ_THREAD_ASIZE) "(%[d])\n\t" \
	"movq %[ts], 8-" EVR_RSEQ_S(EVR_RSEQ_THREAD_ASIZE) "(%[d])\n\t"                    \
	"movl %[tid], %k[a]\n\t"	/* struct evr_rec_thread: tid, pad 0 */            \
	"movq %[a], 16-" EVR_RSEQ_S(EVR_RSEQ_THREAD_ASIZE) "(%[d])\n\t"                    \
	"jmp 6f\n\t"                                                                       \
	EVR_RSEQ_DROP_FULL                                                                 \
	"6:\n\t"                                                                            \
	"movq %[w0], %[a]\n\t"		/* EVENT record: header, ts, payload */            \
	"movq %[a], (%[d])\n\t"                                                            \
	"movq %[ts], 8(%[d])\n\t"                                                          \
	copy                                                                               \
	"incq %[te]\n\t"		/* one more event in the packet */                 \
	"movq %[c], %[x0]\n\t"	/* {head, tid_events}: one store, never half */    \
	"movq %[te], %[x1]\n\t"                                                            \
	"punpcklqdq %[x1], %[x0]\n\t"                                                      \
	"movdqa %[x0], " EVR_RSEQ_S(EVR_OFF_W_HEAD) "(%[w])\n\t"                           \
	"movq " EVR_RSEQ_S(EVR_OFF_W_CTL) "(%[w]), %[a]\n\t"                               \
	"8:\n\t"                                                                           \
	"movq %[c], (%[a])\n\t"	/* commit: publish (or count a drop) */           \
	"2:\n\t"                                                                           \
	"movq $0, " EVR_RSEQ_S(EVR_OFF_RS_CS) "(%[rs])\n\t"

/* Operands common to the users of EVR_RSEQ_APPEND_ASM. */
#define EVR_RSEQ_APPEND_OUT(ts_)                                                           \
	[a] "=&r"(a_), [c] "=&r"(c_), [d] "=&r"(d_), [te] "=&r"(te_), [ts] "+&r"(ts_),     \
	[x0] "=&x"(x0_), [x1] "=&x"(x1_)
#define EVR_RSEQ_APPEND_IN(w_, rs_, cpu_, w0__, tid_)                                      \
	[rs] "r"(rs_), [cpu] "r"(cpu_), [w] "r"(w_), [w0] "rm"(w0__), [tid] "rm"(tid_),    \
	[pf] "i"(EVR_RING_PREFETCH)
#define EVR_RSEQ_APPEND_VARS                                                               \
	typedef long long evr_v2di_ __attribute__((vector_size(16)));                      \
	uint64_t a_, c_, d_, te_;                                                          \
	evr_v2di_ x0_, x1_
#define EVR_RSEQ_APPEND_USE                                                                \
	((void)a_, (void)c_, (void)d_, (void)te_, (void)x0_, (void)x1_)
/* The same for the sections that load the rings themselves (EVR_RSEQ_LOAD_RINGS);
 * *@rings is a memory operand, addressed from the event the caller holds
 * anyway: no register of its own for the section. */
#define EVR_RSEQ_RINGS_IN(rings_, rs_, cpu_, w0__, tid_)                                  \
	[rs] "r"(rs_), [cpu] "r"(cpu_), [rings] "m"(*(rings_)), [w0] "rm"(w0__),           \
	[tid] "rm"(tid_), [pf] "i"(EVR_RING_PREFETCH)
/* After the asm: its exits, as the return values of evr_ring_rseq_append(). */
#define EVR_RSEQ_APPEND_EXITS_(rs_, done)                                                  \
	EVR_RSEQ_APPEND_USE;                                                               \
	return (done);                                                                     \
restart:                                                                                   \
	return 1;                                                                          \
slow:                                                                                      \
	evr_rseq_clear_cs(rs_);                                                            \
	return 2
/* 4: dropped, the ring full (EVR_RSEQ_DROP_FULL). */
#define EVR_RSEQ_APPEND_EXITS(rs_) EVR_RSEQ_APPEND_EXITS_(rs_, te_ == UINT64_MAX ? 4 : 0)
/* And for those: 0 written or dropped (counted either way); the session has
 * no rings (any more), 3. */
#define EVR_RSEQ_RINGS_EXITS(rs_)                                                          \
	EVR_RSEQ_APPEND_EXITS_(rs_, 0);                                                    \
none:                                                                                      \
	evr_rseq_clear_cs(rs_);                                                            \
	return 3

/*
 * A payload of %[nq] words at %[src], copied from memory: the record's end and
 * the copy, a word at a time: a payload is
 * usually built just before, and a wider load that spans several of its
 * stores cannot be forwarded from the store buffer; it waits for them to
 * reach the cache, behind every older store, the ring's stores that miss
 * among them (measured: 16-byte moves made a 200-byte payload 4 ns slower
 * than 8-byte ones). Two words an iteration: two stores a cycle. The section
 * asks for four lines ahead (EVR_RSEQ_PF_BEFORE()), without a loop: a loop
 * asking for each line of the record cost more than it saved, 1.5 ns for 208
 * bytes and 2.5 ns for 400 (a loop of evr_event_write(), interleaved, fastest
 * of 10, the ring in cache); past 256 bytes the hardware's prefetcher follows
 * the stores.
 */
#define EVR_RSEQ_MEM_END "leaq 16(%[d],%[nq],8), %[c]\n\t"
#define EVR_RSEQ_MEM_COPY                                                                  \
	"xorl %k[a], %k[a]\n\t"                                                             \
	"testb $1, %b[nq]\n\t"                                                              \
	"jz 11f\n\t"                                                                        \
	"movq (%[src]), %[x0]\n\t"                                                         \
	"movq %[x0], 16(%[d])\n\t"                                                         \
	"movl $1, %k[a]\n\t"                                                                \
	"11:\n\t"                                                                           \
	"cmpq %[nq], %[a]\n\t"                                                              \
	"jae 13f\n\t"                                                                       \
	"12:\n\t"                                                                           \
	"movq (%[src],%[a],8), %[x0]\n\t"                                                  \
	"movq 8(%[src],%[a],8), %[x1]\n\t"                                                 \
	"movq %[x0], 16(%[d],%[a],8)\n\t"                                                  \
	"movq %[x1], 24(%[d],%[a],8)\n\t"                                                  \
	"addq $2, %[a]\n\t"                                                                 \
	"cmpq %[nq], %[a]\n\t"                                                              \
	"jb 12b\n\t"                                                                        \
	"13:\n\t"

/*
 * evr_ring_rseq_append() - append and publish, in one critical section on
 * ring @w, which belongs to @cpu: the record @r, its payload copied from memory.
 *
 * Return: 0 written and published, 1 restart (preempted, migrated or signalled
 * before the commit), 2 slow path needed, 4 dropped and counted (the ring
 * full, EVR_RSEQ_DROP_FULL).
 * Context: per-CPU session, RCU read side.
 */
static inline __attribute__((always_inline)) int
evr_ring_rseq_append(struct evr_ring_writer *w, struct rseq *rs, uint32_t cpu,
		     const struct evr_rseq_rec *r)
{
	EVR_RSEQ_APPEND_VARS;
	uint64_t ts = r->ts;

	/* volatile: with outputs, gcc would drop an asm goto whose outputs go unused. */
	__asm__ __volatile__ goto(
		EVR_RSEQ_APPEND_ASM("", EVR_RSEQ_MEM_END, EVR_RSEQ_PF_BEFORE("", "(%[a])"),
				    EVR_RSEQ_MEM_COPY)
		: EVR_RSEQ_APPEND_OUT(ts)
		: EVR_RSEQ_APPEND_IN(w, rs, cpu, r->w0, r->tid),
		  [src] "r"(r->src), [nq] "r"(r->nq)
		: "memory", "cc"
		: restart, slow);
	EVR_RSEQ_APPEND_EXITS(rs);
}

_Static_assert(sizeof(struct evr_ring_writer) == 1u << 8, "ring i at rings + (i << 8)");

/* The start of a section that loads the rings itself: %[w] = ring %[cpu] of *%[rings]. */
#define EVR_RSEQ_LOAD_RINGS                                                                \
	"movq %[rings], %[w]\n\t"                                                           \
	"testq %[w], %[w]\n\t"                                                              \
	"jz %l[none]\n\t"                                                                   \
	"movl %[cpu], %k[a]\n\t"                                                            \
	"shlq $8, %[a]\n\t"                                                                 \
	"addq %[a], %[w]\n\t"

/*
 * evr_ring_rseq_append_words_rcu() - evr_ring_rseq_append() for a payload of @k
 * (0..EVR_RSEQ_WORDS_MAX) 8-byte words passed by value, an EVENT record with
 * header word @w0 (its size field says how many payload bytes count),
 * timestamp @ts and thread @tid, into ring @cpu of the rings *@rings. Words
 * past @k are ignored.
 *
 * *@rings is loaded inside the critical section: the section is the read side
 * that protects them, and needs no RCU read lock. Whoever unpublishes the
 * rings (sets *@rings to something else) waits for evr_rseq_synchronize()
 * before freeing them: that aborts every section still running, and a
 * preempted one was aborted already.
 *
 * Return: as evr_ring_rseq_append(), but 0 for a drop as for a write (both
 * are counted), and 3 when *@rings is NULL.
 * Context: @cpu < evr_ring_percpu_min; the rings behind *@rings, when set, are
 * those of a per-CPU session.
 *
 * The asm needs @k as a literal (the record's size and which words it
 * stores are assembled in), and an "i" operand takes only what the compiler
 * sees as a constant: at -O0 nothing is propagated into an inlined function,
 * not even a constant argument. So there is one function per word count,
 * evr_ring_rseq_append_w<K>_rcu(), each with its K spelled out, and this one
 * picks one: with @k a constant, as in every caller at -O1 and above, the
 * switch folds away and the code is that function's alone.
 */
#define EVR_RSEQ_APPEND_WORDS_FN(K)                                                         \
	static inline __attribute__((always_inline)) int evr_ring_rseq_append_w##K##_rcu(   \
		struct evr_ring_writer *const _Atomic *rings, struct rseq *rs, uint32_t cpu, \
		uint64_t ts, uint64_t w0, uint32_t tid, uint64_t q0, uint64_t q1,          \
		uint64_t q2, uint64_t q3)                                                  \
	{                                                                                  \
		EVR_RSEQ_APPEND_VARS;                                                      \
		struct evr_ring_writer *w;                                                 \
                                                                                           \
		__asm__ __volatile__ goto(                                                 \
			EVR_RSEQ_APPEND_ASM(EVR_RSEQ_LOAD_RINGS,                            \
					    "leaq %c[rsz](%[d]), %[c]\n\t",                 \
					    "", /* a record of one or two lines */        \
					    ".if " #K " > 0\n\t"                            \
					    "movq %[q0], 16(%[d])\n\t"                      \
					    ".endif\n\t"                                    \
					    ".if " #K " > 1\n\t"                            \
					    "movq %[q1], 24(%[d])\n\t"                      \
					    ".endif\n\t"                                    \
					    ".if " #K " > 2\n\t"                            \
					    "movq %[q2], 32(%[d])\n\t"                      \
					    ".endif\n\t"                                    \
					    ".if " #K " > 3\n\t"                            \
					    "movq %[q3], 40(%[d])\n\t"                      \
					    ".endif\n\t")                                   \
			: EVR_RSEQ_APPEND_OUT(ts), [w] "=&r"(w)                            \
			: EVR_RSEQ_RINGS_IN(rings, rs, cpu, w0, tid),                      \
			  [rsz] "i"(EVR_REC_HDR_SIZE + 8 * (K)),                          \
			  [q0] "re"((K) > 0 ? q0 : 0), [q1] "re"((K) > 1 ? q1 : 0),        \
			  [q2] "re"((K) > 2 ? q2 : 0), [q3] "re"((K) > 3 ? q3 : 0)         \
			: "memory", "cc"                                                   \
			: restart, slow, none);                                            \
		(void)w;                                                                   \
		EVR_RSEQ_RINGS_EXITS(rs);                                                  \
	}

EVR_RSEQ_APPEND_WORDS_FN(0)
EVR_RSEQ_APPEND_WORDS_FN(1)
EVR_RSEQ_APPEND_WORDS_FN(2)
EVR_RSEQ_APPEND_WORDS_FN(3)
EVR_RSEQ_APPEND_WORDS_FN(4)
_Static_assert(EVR_RSEQ_WORDS_MAX == 4, "one evr_ring_rseq_append_w<K>_rcu() per word count");

static inline __attribute__((always_inline)) int
evr_ring_rseq_append_words_rcu(struct evr_ring_writer *const _Atomic *rings, struct rseq *rs,
			       uint32_t cpu, uint64_t ts, uint64_t w0, uint32_t tid, const int k,
			       uint64_t q0, uint64_t q1, uint64_t q2, uint64_t q3)
{
	switch (k) {
	case 0:
		return evr_ring_rseq_append_w0_rcu(rings, rs, cpu, ts, w0, tid, q0, q1, q2, q3);
	case 1:
		return evr_ring_rseq_append_w1_rcu(rings, rs, cpu, ts, w0, tid, q0, q1, q2, q3);
	case 2:
		return evr_ring_rseq_append_w2_rcu(rings, rs, cpu, ts, w0, tid, q0, q1, q2, q3);
	case 3:
		return evr_ring_rseq_append_w3_rcu(rings, rs, cpu, ts, w0, tid, q0, q1, q2, q3);
	default:
		return evr_ring_rseq_append_w4_rcu(rings, rs, cpu, ts, w0, tid, q0, q1, q2, q3);
	}
}

/*
 * evr_ring_rseq_append_mem_rcu() - evr_ring_rseq_append_words_rcu() for a
 * payload of @nq words in memory at @src (padded as struct evr_rseq_rec
 * says), with header word @w0: one critical section loads the rings *@rings,
 * appends the record, copies the payload and publishes.
 *
 * Return and Context: as evr_ring_rseq_append_words_rcu(); @src is borrowed.
 */
static inline __attribute__((always_inline)) int
evr_ring_rseq_append_mem_rcu(struct evr_ring_writer *const _Atomic *rings, struct rseq *rs,
			     uint32_t cpu, uint64_t ts, uint64_t w0, uint32_t tid,
			     const void *src, uint64_t nq)
{
	EVR_RSEQ_APPEND_VARS;
	struct evr_ring_writer *w;

	__asm__ __volatile__ goto(
		EVR_RSEQ_APPEND_ASM(EVR_RSEQ_LOAD_RINGS, EVR_RSEQ_MEM_END,
				    EVR_RSEQ_PF_BEFORE("", "(%[a])"), EVR_RSEQ_MEM_COPY)
		: EVR_RSEQ_APPEND_OUT(ts), [w] "=&r"(w)
		: EVR_RSEQ_RINGS_IN(rings, rs, cpu, w0, tid),
		  [src] "r"(src), [nq] "r"(nq)
		: "memory", "cc"
		: restart, slow, none);
	(void)w;
	EVR_RSEQ_RINGS_EXITS(rs);
}

/*
 * One 32-byte move from @src to @d through @y, at byte @o of the bytes, or
 * ending @o before their end (@n bytes); register names as the asm spells
 * them (also producer/write-v-asm.c's).
 */
#define EVR_RSEQ_MV32_R(src, d, y, o)                                                      \
	"vmovdqu " #o "(" src "), " y "\n\t"                                                \
	"vmovdqu " y ", " #o "(" d ")\n\t"
#define EVR_RSEQ_MV32_END_R(src, d, n, y, o)                                               \
	"vmovdqu -" #o "(" src "," n "), " y "\n\t"                                         \
	"vmovdqu " y ", -" #o "(" d "," n ")\n\t"
/*
 * 32 to 256 bytes, @mv(o) and @mve(o) being the two moves above: as many
 * moves as 32-byte pieces (n / 32 rounded up), half or one more from the start
 * and the rest ending at the end, then to @done; the last case falls through.
 * Every move costs a load and a store whether it overlaps another or not: 200
 * bytes take 7 where one from each end to 64, two to 128 and four to 256 took
 * 8, 129 to 160 bytes 5 instead of 8; up to 64 bytes, one test as before.
 * Labels 50 to 55.
 */
#define EVR_RSEQ_COPY_32_256(mv, mve, n, done)                                             \
	"cmpq $64, " n "\n\t"                                                               \
	"ja 50f\n\t"                                                                        \
	mv(0) mve(32)                                                                      \
	"jmp " done "\n\t"                                                                  \
	"50:\n\t"                                                                           \
	"cmpq $128, " n "\n\t"                                                              \
	"ja 52f\n\t"                                                                        \
	"cmpq $96, " n "\n\t"                                                               \
	"ja 51f\n\t"                                                                        \
	mv(0) mv(32) mve(32)                                                               \
	"jmp " done "\n\t"                                                                  \
	"51:\n\t"                                                                           \
	mv(0) mv(32) mve(64) mve(32)                                                       \
	"jmp " done "\n\t"                                                                  \
	"52:\n\t"                                                                           \
	"cmpq $192, " n "\n\t"                                                              \
	"ja 54f\n\t"                                                                        \
	"cmpq $160, " n "\n\t"                                                              \
	"ja 53f\n\t"                                                                        \
	mv(0) mv(32) mv(64) mve(64) mve(32)                                                \
	"jmp " done "\n\t"                                                                  \
	"53:\n\t"                                                                           \
	mv(0) mv(32) mv(64) mve(96) mve(64) mve(32)                                        \
	"jmp " done "\n\t"                                                                  \
	"54:\n\t"                                                                           \
	"cmpq $224, " n "\n\t"                                                              \
	"ja 55f\n\t"                                                                        \
	mv(0) mv(32) mv(64) mv(96) mve(96) mve(64) mve(32)                                 \
	"jmp " done "\n\t"                                                                  \
	"55:\n\t"                                                                           \
	mv(0) mv(32) mv(64) mv(96) mve(128) mve(96) mve(64) mve(32)
#define EVR_RSEQ_MV32(o) EVR_RSEQ_MV32_R("%[src]", "%[d]", "%%ymm15", o)
#define EVR_RSEQ_MV32_END(o) EVR_RSEQ_MV32_END_R("%[src]", "%[d]", "%[n]", "%%ymm14", o)

/*
 * The bytes of the var section: %[n] bytes from %[src] to %[d]. Loads never
 * go past src + n (the caller's memory may end there), stores never past the
 * record: moves from the start and moves ending at the last byte, which
 * overlap. Up to 256 bytes there is no loop: 32-byte moves where the CPU has
 * AVX2 (evr_ring_copy_avx2), as many as the bytes have 32-byte pieces
 * (EVR_RSEQ_COPY_32_256), so that a given size always takes the same
 * branches. Measured
 * on a 200-byte payload (evring-bench enabled_bytes200 and its writer alone):
 * the loop of 16-byte moves it replaces cost 1.8 ns an event more than the
 * same moves without the loop, and 16-byte moves 0.9 ns more than 32-byte
 * ones. Without AVX2, and past 256 bytes, a loop of 16- or 32-byte moves;
 * below 32 bytes, two 16-, 8- or 4-byte moves, or three single bytes.
 * Scratch: %[a], %[ts] (stored by then), %[x0], %[x1], ymm14, ymm15; the upper
 * halves are cleared (vzeroupper) after 32-byte moves. That is right only
 * because nothing else lives in a vector register across the section: its
 * one user, evr__event_write_v(), has no vector values of its own (keep it so).
 */
#define EVR_RSEQ_VAR_BYTES                                                                 \
	"cmpq $32, %[n]\n\t"                                                               \
	"jb 33f\n\t"                                                                        \
	"cmpb $0, %[avx2]\n\t"                                                             \
	"je 32f\n\t"                                                                        \
	"cmpq $256, %[n]\n\t"                                                              \
	"ja 42f\n\t"                                                                        \
	EVR_RSEQ_COPY_32_256(EVR_RSEQ_MV32, EVR_RSEQ_MV32_END, "%[n]", "38f")             \
	"jmp 38f\n\t"                                                                       \
	"42:\n\t"			/* more: 32 bytes an iteration, then the last 32 */ \
	"leaq -32(%[n]), %[a]\n\t"                                                         \
	"xorl %k[ts], %k[ts]\n\t"                                                           \
	"43:\n\t"                                                                           \
	"vmovdqu (%[src],%[ts]), %%ymm15\n\t"                                              \
	"vmovdqu %%ymm15, (%[d],%[ts])\n\t"                                                \
	"addq $32, %[ts]\n\t"                                                              \
	"cmpq %[a], %[ts]\n\t"                                                             \
	"jb 43b\n\t"                                                                        \
	EVR_RSEQ_MV32_END(32)                                                              \
	"38:\n\t"                                                                           \
	"vzeroupper\n\t"                                                                    \
	"jmp 39f\n\t"                                                                       \
	"32:\n\t"			/* no AVX2: 16 bytes an iteration, then the last 16 */ \
	"leaq -16(%[n]), %[a]\n\t"                                                         \
	"xorl %k[ts], %k[ts]\n\t"                                                           \
	"37:\n\t"                                                                           \
	"movdqu (%[src],%[ts]), %[x0]\n\t"                                                 \
	"movdqu %[x0], (%[d],%[ts])\n\t"                                                   \
	"addq $16, %[ts]\n\t"                                                              \
	"cmpq %[a], %[ts]\n\t"                                                             \
	"jb 37b\n\t"                                                                        \
	"movdqu (%[src],%[a]), %[x0]\n\t"                                                  \
	"movdqu %[x0], (%[d],%[a])\n\t"                                                    \
	"jmp 39f\n\t"                                                                       \
	"33:\n\t"                                                                           \
	"cmpq $16, %[n]\n\t"                                                               \
	"jb 34f\n\t"                                                                        \
	"movdqu (%[src]), %[x0]\n\t"                                                       \
	"movdqu -16(%[src],%[n]), %[x1]\n\t"                                               \
	"movdqu %[x0], (%[d])\n\t"                                                         \
	"movdqu %[x1], -16(%[d],%[n])\n\t"                                                 \
	"jmp 39f\n\t"                                                                       \
	"34:\n\t"                                                                           \
	"cmpq $8, %[n]\n\t"                                                                \
	"jb 35f\n\t"                                                                        \
	"movq (%[src]), %[x0]\n\t"                                                         \
	"movq -8(%[src],%[n]), %[x1]\n\t"                                                  \
	"movq %[x0], (%[d])\n\t"                                                           \
	"movq %[x1], -8(%[d],%[n])\n\t"                                                    \
	"jmp 39f\n\t"                                                                       \
	"35:\n\t"                                                                           \
	"cmpq $4, %[n]\n\t"                                                                \
	"jb 36f\n\t"                                                                        \
	"movl (%[src]), %k[a]\n\t"                                                         \
	"movl -4(%[src],%[n]), %k[ts]\n\t"                                                 \
	"movl %k[a], (%[d])\n\t"                                                           \
	"movl %k[ts], -4(%[d],%[n])\n\t"                                                   \
	"jmp 39f\n\t"                                                                       \
	"36:\n\t"                                                                           \
	"testq %[n], %[n]\n\t"                                                             \
	"jz 39f\n\t"                                                                        \
	"movzbl (%[src]), %k[a]\n\t"                                                       \
	"movb %b[a], (%[d])\n\t"                                                           \
	"movzbl -1(%[src],%[n]), %k[a]\n\t"                                                \
	"movb %b[a], -1(%[d],%[n])\n\t"                                                    \
	"movq %[n], %[ts]\n\t"                                                             \
	"shrq $1, %[ts]\n\t"                                                               \
	"movzbl (%[src],%[ts]), %k[a]\n\t"                                                 \
	"movb %b[a], (%[d],%[ts])\n\t"                                                     \
	"39:\n\t"

/*
 * The record's end for the var section: %[nb] is the padded payload size. Its
 * payload: the fixed fields, words %[p0] to %[p2] (%[P] bytes of them, at
 * most 24), then the bytes. The record's last word is zeroed first
 * and the fixed words hold zeros past %[P]: the bytes land over both, so the
 * padding stays zero.
 */
#define EVR_RSEQ_VAR_END                                                                   \
	"movq %[nb], %[c]\n\t"                                                             \
	"leaq 16(%[d],%[c]), %[c]\n\t"
#define EVR_RSEQ_VAR_COPY                                                                  \
	"movq %[nb], %[a]\n\t"                                                             \
	"movq $0, 8(%[d],%[a])\n\t"	/* the last word, padding included */              \
	"movq %[p0], %[a]\n\t"                                                             \
	"movq %[a], 16(%[d])\n\t"                                                          \
	"cmpq $8, %[P]\n\t"                                                                \
	"jbe 31f\n\t"                                                                       \
	"movq %[p1], %[a]\n\t"                                                             \
	"movq %[a], 24(%[d])\n\t"                                                          \
	"cmpq $16, %[P]\n\t"                                                               \
	"jbe 31f\n\t"                                                                       \
	"movq %[p2], %[a]\n\t"                                                             \
	"movq %[a], 32(%[d])\n\t"                                                          \
	"31:\n\t"                                                                           \
	"addq %[P], %[d]\n\t"                                                              \
	"addq $16, %[d]\n\t"		/* d = where the bytes go */                        \
	EVR_RSEQ_VAR_BYTES

/**
 * evr_ring_rseq_append_var_rcu() - evr_ring_rseq_append_words_rcu() for a
 * payload of fixed fields in the words @p0..@p2 (@plen bytes of them, 4 to 24,
 * zero past @plen) followed by @n bytes at @src: the generated fire functions
 * of events whose last field is a string or bytes. Header word @w0 says
 * @plen + @n bytes. The bytes come straight from where the caller keeps them
 * (a string, a buffer): no staging copy, whose stores the section's loads
 * would find still in the store buffer, wider ones unforwardable.
 *
 * The fixed words are register-or-memory operands, stored through a scratch
 * register: the section's own registers leave the compiler few, and it keeps
 * them where it has them. The four lines ahead that end where the record
 * does are asked for (EVR_RSEQ_PF_BEFORE()).
 *
 * Return and Context: as evr_ring_rseq_append_words_rcu(); @src is borrowed,
 * and only its @n bytes are read.
 */
static inline __attribute__((always_inline)) int
evr_ring_rseq_append_var_rcu(struct evr_ring_writer *const _Atomic *rings, struct rseq *rs,
			     uint32_t cpu, uint64_t ts, uint64_t w0, uint32_t tid,
			     uint64_t p0, uint64_t p1, uint64_t p2, uint64_t plen, const void *src,
			     uint64_t n)
{
	EVR_RSEQ_APPEND_VARS;
	struct evr_ring_writer *w;
	const uint64_t nb = (plen + n + 7u) & ~(uint64_t)7u;

	__asm__ __volatile__ goto(
		EVR_RSEQ_APPEND_ASM(EVR_RSEQ_LOAD_RINGS, EVR_RSEQ_VAR_END,
				    EVR_RSEQ_PF_BEFORE("", "(%[a])"), EVR_RSEQ_VAR_COPY)
		: EVR_RSEQ_APPEND_OUT(ts), [w] "=&r"(w)
		: EVR_RSEQ_RINGS_IN(rings, rs, cpu, w0, tid),
		  [src] "r"(src), [n] "r"(n), [nb] "rm"(nb), [P] "rm"(plen), [p0] "rm"(p0),
		  [p1] "rm"(p1), [p2] "rm"(p2), [avx2] "m"(evr_ring_copy_avx2)
		: "memory", "cc", "xmm14", "xmm15"
		: restart, slow, none);
	(void)w;
	EVR_RSEQ_RINGS_EXITS(rs);
}

#endif /* EVR_HAVE_RSEQ */

/**
 * evr_ring_rseq_write() - append one EVENT record to the ring of the CPU the
 * thread runs on, in a per-CPU session.
 * @rings: the session's rings, @nr of them, one per possible CPU.
 * @rs: this thread's rseq area (evr_rseq_area()).
 * @r: the record (evr_rseq_rec_init()); borrowed.
 *
 * Return: 0 written; -ENOSPC dropped (discard mode, the gating reader is behind),
 * -EBUSY dropped (ring locked by a slow path of this thread that a signal
 * handler interrupted, or by another thread's, preempted, that still held it
 * after EVR_RING_BUSY_YIELDS sched_yield()s),
 * -EAGAIN dropped (no rseq registration in this thread, or restarted
 * EVR_RSEQ_MAX_RESTARTS times); every drop is counted and reported in-band.
 * Context: any thread, signal handlers included; RCU read side; never blocks or
 * allocates; enters the kernel only for the doorbell at a packet switch, and to
 * yield to a preempted holder of the ring's lock.
 */
static inline __attribute__((always_inline)) int
evr_ring_rseq_write(struct evr_ring_writer *rings, uint32_t nr,
		    struct rseq *rs, const struct evr_rseq_rec *r)
{
#if EVR_HAVE_RSEQ
	for (int restarts = 0; restarts < EVR_RSEQ_MAX_RESTARTS; restarts++) {
		int32_t cpu = evr_rseq_cpu(rs);
		struct evr_ring_writer *w;
		int ret;

		if (EVR_UNLIKELY(cpu < 0 || (uint32_t)cpu >= nr)) {
			evr_ring_count_lost(&rings[0], 1);
			return -EAGAIN;
		}
		w = &rings[cpu];
		switch (evr_ring_rseq_append(w, rs, (uint32_t)cpu, r)) {
		case 0:
			return 0;
		case 1:
			continue;
		case 4:
			return -ENOSPC;
		default:
			break;
		}
		ret = evr_ring_rseq_write_slow(w, rs, (uint32_t)cpu, r);
		if (ret != -EAGAIN)
			return ret;
	}
	evr_ring_count_lost(&rings[(uint32_t)evr_rseq_cpu(rs) % nr], 1);
#else
	(void)rs;
	(void)r;
	evr_ring_count_lost(&rings[0], 1);
	(void)nr;
#endif
	return -EAGAIN;
}

#endif /* EVR_RING_RSEQ_H */
