// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Session memory: what consumers may make this process commit, and backing the
 * rings with pages ahead of the writers.
 *
 * Limits. A consumer that attaches chooses its session's size; without a limit
 * `--buffer-size 16G` made a traced process commit 8 GiB on a 2-CPU machine (and
 * a 64-CPU host would OOM). Sessions started through the agent are capped, one
 * by one (session_max) and all together (total_max); the defaults follow the
 * machine's RAM (total_max: a sixteenth of it, between 64 MiB and 1 GiB;
 * session_max: half of that), the program can set both (evr_session_limits_set(),
 * or EVR_MEMORY_MAX_SESSION / EVR_MEMORY_MAX_TOTAL in its environment), and a
 * session over a limit is refused with a line that names what was asked, the
 * limit and how to raise it. What counts is the rings' memory (what
 * `--buffer-size` means); each session's metadata area comes on top. A session
 * whose consumer named no ring size gets
 * the largest ring up to 32 MiB whose session fits under the per-session limit
 * and under half of what the total limit leaves (so that another consumer still
 * gets one): a ring must hold a disk's stall of a fast writer (a thread writes
 * into one ring; 32 MiB is 64 ms of a 500 MB/s stream, where the 4 MiB
 * default of before held 8 ms and `evring record`'s first example lost 40-60%
 * of its events; larger rings cost every event more once they outgrow the
 * cache: docs/recorder.md). The size granted is in StartSessionReply and
 * ListSessions. In-process sessions are the program's own
 * choice and are neither capped nor counted.
 *
 * Pages. Writers must not take page faults, so rings are backed before use, but
 * only those of CPUs online when the session starts (a VM may have many more
 * possible CPUs, whose rings are almost never written), and for agent sessions
 * a slice at a time between the agent's other work (evr_memory_populate_step()),
 * so that setting up a large session never makes the agent stop answering other
 * consumers. MADV_POPULATE_WRITE only faults pages in: it never changes their
 * contents, so writers may already be writing while it runs. Where the kernel
 * gives them and they cost no more, 2 MiB pages (populate_huge(),
 * EVR_HUGE_PAGES); every mapping of a session starts on a 2 MiB boundary for
 * them (shm.c).
 *
 * Locking: the limits and the bytes in use are under evr_registry_lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <urcu-bp.h>

#include "producer-internal.h"

#define MIB (1ull << 20)
#define DEFAULT_RING_MAX (32ull << 20)

/* 0: not set (the defaults). Written at load (evr_memory_init()): EVR_LOAD_DATA. */
EVR_LOAD_DATA static struct evr_session_limits limits;
static uint64_t in_use;				/* bytes of live agent sessions */
/* Sessions backed by huge pages (populate_huge()): EVR_HUGE_PAGES=0 never, =1
 * always, else while they cost no more than small ones. Written at load
 * (evr_memory_init()). */
enum { HUGE_AUTO, HUGE_OFF, HUGE_ON };
EVR_LOAD_DATA static int huge_pages;
static uint32_t in_use_sessions;

/* "512 MiB", "1.5 GiB", "4 KiB", "100 B" into @buf. */
const char *evr_memory_fmt(uint64_t n, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	unsigned int u = 0;

	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v == (double)(uint64_t)v)
		snprintf(buf, len, "%llu %s", (unsigned long long)v, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

static uint64_t default_total(void)
{
	struct sysinfo si;
	uint64_t ram, t;

	if (sysinfo(&si) < 0 || !si.totalram)
		return 256 * MIB;
	ram = (uint64_t)si.totalram * (si.mem_unit ? si.mem_unit : 1);
	t = ram / 16;
	return t < 64 * MIB ? 64 * MIB : t > 1024 * MIB ? 1024 * MIB : t;
}

/* The limits in force, under the registry lock. */
static void limits_locked(uint64_t *ret_session, uint64_t *ret_total)
{
	uint64_t total = limits.total_max ? limits.total_max : default_total();
	uint64_t session = limits.session_max ? limits.session_max : total / 2;

	*ret_session = session < total ? session : total;
	*ret_total = total;
}

void evr_session_limits_get(struct evr_session_limits *ret)
{
	if (!ret)
		return;
	pthread_mutex_lock(&evr_registry_lock);
	limits_locked(&ret->session_max, &ret->total_max);
	pthread_mutex_unlock(&evr_registry_lock);
}

int evr_session_limits_set(const struct evr_session_limits *l)
{
	if (!l)
		return -EINVAL;
	pthread_mutex_lock(&evr_registry_lock);
	limits = *l;
	pthread_mutex_unlock(&evr_registry_lock);
	return 0;
}

/* "64M", "2G", "4096", "1GiB": bytes; 0 for anything else. */
static uint64_t parse_size(const char *s)
{
	unsigned long long v;
	uint64_t mul = 1;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return 0;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	default: break;
	}
	if (mul > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
		end += strlen(end);
	if (*end || v > UINT64_MAX / mul)
		return 0;
	return v * mul;
}

void evr_memory_init(void)
{
	const char *huge = getenv("EVR_HUGE_PAGES");

	limits.session_max = parse_size(getenv("EVR_MEMORY_MAX_SESSION"));
	limits.total_max = parse_size(getenv("EVR_MEMORY_MAX_TOTAL"));
	huge_pages = !huge ? HUGE_AUTO : strcmp(huge, "1") == 0 ? HUGE_ON :
		     strcmp(huge, "0") == 0 ? HUGE_OFF : HUGE_AUTO;
}

/*
 * What counts against the limits: the rings, nr_rings * ring_size (saturating
 * instead of wrapping), what `--buffer-size` means. The header and the metadata
 * area (256 KiB by default, at most 16 MiB) come on top, and are in the size
 * reported as granted.
 */
static uint64_t ring_bytes(uint32_t nr_rings, uint64_t ring_size)
{
	if (nr_rings && ring_size > UINT64_MAX / nr_rings)
		return UINT64_MAX;
	return (uint64_t)nr_rings * ring_size;
}

uint64_t evr_memory_default_ring_locked(uint32_t nr_rings)
{
	uint64_t session, total, budget, ring = DEFAULT_RING_MAX;
	uint64_t min = (uint64_t)EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN;

	limits_locked(&session, &total);
	budget = in_use < total ? (total - in_use) / 2 : 0;
	if (session < budget)
		budget = session;
	while (ring > min && ring_bytes(nr_rings, ring) > budget)
		ring /= 2;
	return ring;
}

int evr_memory_admit_locked(uint32_t nr_rings, uint64_t ring_size, uint64_t *ret_bytes,
			    char *errbuf, size_t errlen)
{
	uint64_t session, total, bytes = ring_bytes(nr_rings, ring_size);
	char a[32], b[32], c[32], d[32];

	limits_locked(&session, &total);
	if (bytes > session) {
		snprintf(errbuf, errlen,
			 "a buffer of %s (%u rings of %s) is over process %d's limit of %s per "
			 "session; ask for less, or have the program raise it "
			 "(EVR_MEMORY_MAX_SESSION=SIZE in its environment, or evr_session_limits_set())",
			 evr_memory_fmt(bytes, a, sizeof(a)), nr_rings,
			 evr_memory_fmt(ring_size, b, sizeof(b)), (int)getpid(),
			 evr_memory_fmt(session, c, sizeof(c)));
		return -EFBIG;
	}
	if (in_use > total || bytes > total - in_use) {
		snprintf(errbuf, errlen,
			 "a buffer of %s would bring process %d's sessions to %s, over its limit "
			 "of %s for all sessions (%s used by %u); ask for less, wait for one to end, "
			 "or have the program raise it (EVR_MEMORY_MAX_TOTAL=SIZE in its "
			 "environment, or evr_session_limits_set())",
			 evr_memory_fmt(bytes, a, sizeof(a)), (int)getpid(),
			 evr_memory_fmt(in_use + bytes, b, sizeof(b)),
			 evr_memory_fmt(total, c, sizeof(c)), evr_memory_fmt(in_use, d, sizeof(d)),
			 in_use_sessions);
		return -ENOSPC;
	}
	in_use += bytes;
	in_use_sessions++;
	*ret_bytes = bytes;
	return 0;
}

void evr_memory_release_locked(uint64_t bytes)
{
	if (!bytes)
		return;
	in_use -= bytes;
	in_use_sessions--;
}

/* ---- pages -------------------------------------------------------------------- */

/* The online CPUs ("0-3,8-11") into @online; all of them if unknown. */
static void online_cpus(uint64_t online[EVR_MAX_RINGS / 64], uint32_t nr_rings)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	char buf[1024];
	const char *s = buf;

	memset(online, 0, EVR_MAX_RINGS / 8);
	if (!f || !fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	if (f)
		fclose(f);
	while (*s >= '0' && *s <= '9') {
		char *end;
		unsigned long lo = strtoul(s, &end, 10), hi = lo;

		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		for (unsigned long c = lo; c <= hi && c < nr_rings; c++)
			online[c / 64] |= 1ull << (c % 64);
		s = *end == ',' ? end + 1 : end;
	}
	/* Unknown (no sysfs): every ring, as before. */
	if (s == buf) {
		for (uint32_t c = 0; c < nr_rings; c++)
			online[c / 64] |= 1ull << (c % 64);
	}
}

void evr_memory_populate_init(struct evr_populate *p, struct evr_session *s)
{
	memset(p, 0, sizeof(*p));
	p->s = s;
	p->no_huge = huge_pages == HUGE_OFF;
	online_cpus(p->online, s->nr_rings);
}

#ifdef MADV_POPULATE_WRITE
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25	/* Linux 6.1 */
#endif

/*
 * Back the 2 MiB at @a, at offset @off of the ring, with one huge page where
 * the kernel gives one: a page faulted in, then MADV_COLLAPSE around it (Linux
 * 6.1; it works whatever shmem_enabled says, "deny" apart), then mapped whole
 * here. A consumer then reads, pins, writes, unmaps and frees 2 MiB pages
 * (docs/recorder.md, "What the recorder costs").
 *
 * What it costs this process: finding and zeroing a huge page instead of 512
 * small ones, usually less (on the Intel guest 0.12-0.47 ms a chunk against
 * 0.70-1.12 for small pages), but 1.8-8.3 ms a chunk in some hours there (its
 * host takes back the memory the guest frees, and gives huge blocks back
 * slowly). So by default (EVR_HUGE_PAGES unset) a session goes on with huge
 * pages only while a chunk costs at most twice what its small pages have cost
 * per 2 MiB (1 ms before any); EVR_HUGE_PAGES=1 keeps them whatever the cost,
 * =0 never tries.
 *
 * Only ahead of the writers, on the ring's first lap: a collapse locks the
 * pages it replaces while it copies them, and a writer touching one would
 * wait; and a chunk the writers have written (faulting its pages in
 * themselves, ahead of the backing) would be copied, at this process's
 * expense (on the Intel guest that made 0.13-s recordings of a 12 M events/s
 * writer cost the traced process 7-20 ns an event more). The writers of a
 * ring write at its head, moving up: a chunk is collapsed if it starts at
 * least two chunks above the head, and left to small pages (the caller's)
 * otherwise.
 * Return: true backed.
 */
static bool populate_huge(struct evr_populate *p, const struct evr_shm_hdr *h, uint8_t *a,
			  uint64_t off)
{
	uint64_t head = __atomic_load_n(&evr_shm_ring_ctl(h, p->ring)->head, __ATOMIC_RELAXED);
	uint64_t t0, cost, limit;

	if (p->no_huge || head >= h->ring_size || off < head + 2 * EVR_SHM_HUGE_SIZE)
		return false;
	t0 = evr_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID);
	if (madvise(a, 4096, MADV_POPULATE_WRITE) < 0)
		return false;
	if (madvise(a, EVR_SHM_HUGE_SIZE, MADV_COLLAPSE) < 0) {
		/* EINVAL: not this kernel, or not this memory (shmem "deny"); EPERM:
		 * a seccomp filter of the program's. Those are for good; no room
		 * for a huge page now (ENOMEM, EAGAIN) is this chunk's. */
		if (errno == EINVAL || errno == EPERM || errno == ENOSYS)
			p->no_huge = true;
		return false;
	}
	/* The collapse unmapped the range here: map the huge page at once. */
	(void)madvise(a, EVR_SHM_HUGE_SIZE, MADV_POPULATE_WRITE);
	cost = evr_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	limit = p->small_bytes ? 2 * p->small_ns * EVR_SHM_HUGE_SIZE / p->small_bytes : 1000000u;
	if (huge_pages == HUGE_AUTO && cost > limit)
		p->no_huge = true;
	return true;
}

/* Back @len bytes at @a with small pages, timing them for populate_huge().
 * Best effort: without it (Linux < 5.14) or out of memory, writers fault pages
 * in as they reach them. Return: false refused. */
static bool populate_small(struct evr_populate *p, uint8_t *a, uint64_t len)
{
	uint64_t t0 = p->no_huge ? 0 : evr_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID);

	if (madvise(a, len, MADV_POPULATE_WRITE) < 0)
		return false;
	if (!p->no_huge) {
		p->small_ns += evr_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		p->small_bytes += len;
	}
	return true;
}
#endif /* MADV_POPULATE_WRITE */

bool evr_memory_populate_step(struct evr_populate *p, uint64_t budget)
{
	const struct evr_shm_hdr *h;

	if (!p->s || p->done)
		return false;
	h = evr_session_shm(p->s);
	while (budget && p->ring < h->nr_rings) {
		uint64_t len;
#ifdef MADV_POPULATE_WRITE
		uint64_t to;
		uint8_t *a;
#endif

		if (!(p->online[p->ring / 64] & (1ull << (p->ring % 64))) || p->off >= h->ring_size) {
			p->ring++;
			p->off = 0;
			continue;
		}
		len = h->ring_size - p->off < budget ? h->ring_size - p->off : budget;
#ifdef MADV_POPULATE_WRITE
		/* Huge pages where a whole aligned 2 MiB of the ring is next (even
		 * past the budget, which is a pace, not a bound: cut, the chunk would
		 * be small pages for good), small ones up to the next such boundary
		 * otherwise. */
		a = evr_shm_ring_data(h, p->ring) + p->off;
		to = EVR_SHM_HUGE_SIZE - ((uintptr_t)a & (EVR_SHM_HUGE_SIZE - 1));
		if (to == EVR_SHM_HUGE_SIZE && h->ring_size - p->off >= EVR_SHM_HUGE_SIZE &&
		    populate_huge(p, h, a, p->off)) {
			len = EVR_SHM_HUGE_SIZE;
		} else {
			len = len < to ? len : to;
			if (!populate_small(p, a, len)) {
				p->done = true;
				return false;
			}
		}
#endif
		p->populated += len;
		p->off += len;
		budget -= len < budget ? len : budget;
	}
	p->done = p->ring >= h->nr_rings;
	return !p->done;
}

void evr_memory_populate_all(struct evr_session *s)
{
	struct evr_populate p;

	evr_memory_populate_init(&p, s);
	while (evr_memory_populate_step(&p, UINT64_MAX))
		;
}

/* ---- the first write to each page, ahead of the writers ------------------------- */

/*
 * Where a hypervisor shadows the guest's page tables (Firecracker under PVM, where
 * this was measured: "Hypervisor detected: PVM" in the kernel log), the first
 * user-space write to each 4 KiB page through a mapping traps to the host, 8-21 us of
 * the writing thread's time, even after MADV_POPULATE_WRITE; the second write costs
 * ~40 ns, and a page any thread of the process wrote once is warm for all of them
 * (the shadow is per address space). On a ring's first lap a writer pays it once a
 * page: a Heap session's sampled allocations, one slow write every ~43 Alloc events
 * (docs/memory.md, "Where a sample's time goes"). Writing every page of every ring
 * when the session starts (f78a7e3, reverted) cost a recorder's 64 MiB session
 * ~280 ms of the agent's CPU at its start, mostly for pages no writer ever reached.
 *
 * So the agent writes pages a window ahead of each ring's head as the head moves:
 * the pages [round_up(head), round_up(head) + EVR_TOUCH_WINDOW) of the first lap,
 * each once, the ring's pages below the head being the writer's own. A ring no writer
 * has reached (head 0) is left alone, and a ring whose first lap is warm (the window
 * reached its end, or the head did) is never looked at again, nor are the rings of
 * CPUs offline at the start (not backed either: evr_memory_populate_step()).
 *
 * When: while some ring of a live session is in its first lap, the agent looks again
 * when the fastest head, at the pace it moved since the last look, will have used a
 * quarter of its window, every 2 ms at the most often (EVR_TOUCH_PERIOD_MIN_NS, also
 * the first looks at a new session, whose writers may start at once); while no head
 * moves, after four looks, half as often each time, down to every 128 ms; with no
 * ring in its first lap, never: a program nobody traces, or whose sessions' rings
 * are warm, has no wake-up for it.
 *
 * Sizes, from the cost: at 8-16 us a page one thread writes at most 250-500 MB/s of
 * pages. A Heap session at the default rate writes ~8 MB/s a ring (two threads
 * allocating at full speed, evring-bench-heap): a look every ~4 ms, each writing the
 * ~8 pages the head moved into, so that a look that comes late (the agent shares the
 * CPUs with the program) still finds the window ahead. A faster stream (over 16 MB/s
 * a ring) brings the looks to every 2 ms, and one over 64 MB/s outruns the window
 * between two of them: its writer pays the pages past the window, as it paid all of
 * them before, and a look is bounded, 32 pages a ring (~0.5 ms here). The window
 * written past the last head of a session that stops is the waste, 32 pages a ring
 * at most. Each page costs the agent what it would have cost the writer; the looks
 * themselves cost ~20-30 us each on this guest (a timer's wake-up and epoll_wait()).
 *
 * The write is a locked OR of zero on the page's first byte (lock orb; an atomic
 * fetch-or elsewhere): the ring's writer may be storing to that byte at the same
 * moment (the window starts at the head), and a locked read-modify-write is one
 * indivisible access, so the writer's store lands either before it (and is written
 * back unchanged) or after it; a plain load and store could put back a byte the
 * writer had just changed. It changes no byte a reader can see. The sanitizers do not
 * see the inline assembly (nothing of the writer's is accessed in C here but the
 * published head, an atomic load).
 *
 * Lifetime: the turn runs inside an RCU read-side section and takes the sessions from
 * the live table; evr_session_stop() unpublishes a session and waits for a grace
 * period before its rings can be unmapped (evr_session_destroy()), so a session being
 * stopped while the agent writes its pages waits for the turn (bounded: 32 pages a
 * ring) and is never unmapped under it. Nothing the writers take is taken: not a
 * ring's lock, not the registry lock.
 */
#define EVR_TOUCH_PAGE		4096u
#define EVR_TOUCH_WINDOW	(128u << 10)
#define EVR_TOUCH_PERIOD_MIN_NS	(2ull * 1000000u)
#define EVR_TOUCH_PERIOD_MAX_NS	(128ull * 1000000u)
/* Turns without a head moving before the period starts to double. */
#define EVR_TOUCH_IDLE_TURNS	4u

struct touch_ring {
	uint8_t *data;			/* the ring's bytes */
	const uint64_t *head;		/* its published head (evr_ring_ctl.head) */
	uint64_t warm;			/* first-lap bytes below which every page is written */
	uint64_t seen;			/* the head at the last look */
};

/* What the agent knows of the session in each slot. The agent thread's alone. */
static struct touch_session {
	const struct evr_session *s;	/* NULL: none known */
	uint64_t serial;
	uint64_t ring_size;
	uint32_t nr_rings;
	uint32_t pending;		/* rings whose first lap is not warm */
	struct touch_ring *rings;
} touch[EVR_MAX_SESSIONS];
static uint32_t touch_idle;		/* turns in a row without a head moving */
static uint64_t touch_due = UINT64_MAX;	/* the next turn, CLOCK_MONOTONIC ns */
static uint64_t touch_last;		/* the last turn; 0: none since the agent had nothing */
static uint64_t touch_period;		/* ns from the last turn to the next */

static inline void touch_page(uint8_t *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("lock orb $0, %0" : "+m"(*p) : : "memory");
#else
	(void)__atomic_fetch_or(p, 0, __ATOMIC_RELAXED);
#endif
}

static void touch_forget(struct touch_session *t)
{
	free(t->rings);
	memset(t, 0, sizeof(*t));
}

/* Learn the live session @s. Return: false without memory (the writers then pay). */
static bool touch_learn(struct touch_session *t, const struct evr_session *s)
{
	uint64_t online[EVR_MAX_RINGS / 64];

	touch_forget(t);
	t->rings = calloc(s->nr_rings, sizeof(*t->rings));
	if (!t->rings)
		return false;
	t->s = s;
	t->serial = s->serial;
	t->nr_rings = s->nr_rings;
	/* The writers' own copies, set once before the session was published. */
	t->ring_size = s->rings[0].ring_mask + 1;
	online_cpus(online, s->nr_rings);
	for (uint32_t r = 0; r < t->nr_rings; r++) {
		struct touch_ring *tr = &t->rings[r];

		tr->data = s->rings[r].data;
		tr->head = &s->rings[r].ctl->head;
		if (online[r / 64] & (1ull << (r % 64)))
			t->pending++;
		else
			tr->warm = t->ring_size;
	}
	return true;
}

/* One look at @t's rings. Return: the most a head moved since the last one, bytes. */
static uint64_t touch_session_turn(struct touch_session *t)
{
	uint64_t moved = 0;

	for (uint32_t r = 0; r < t->nr_rings && t->pending; r++) {
		struct touch_ring *tr = &t->rings[r];
		uint64_t head, from, end;

		if (tr->warm >= t->ring_size)
			continue;
		/* Consumers may write it (it is in their mapping): whatever it says, only
		 * this ring's first lap is written below. */
		head = __atomic_load_n(tr->head, __ATOMIC_RELAXED);
		if (head != tr->seen) {
			if (head > tr->seen && head - tr->seen > moved)
				moved = head - tr->seen;
			else if (!moved)
				moved = 1;	/* written by a consumer: a move all the same */
			tr->seen = head;
		}
		if (!head)
			continue;		/* no writer yet */
		from = head < t->ring_size ? (head + EVR_TOUCH_PAGE - 1) & ~(uint64_t)(EVR_TOUCH_PAGE - 1)
					   : t->ring_size;
		end = t->ring_size - from > EVR_TOUCH_WINDOW ? from + EVR_TOUCH_WINDOW : t->ring_size;
		for (uint64_t off = from > tr->warm ? from : tr->warm; off < end; off += EVR_TOUCH_PAGE)
			touch_page(tr->data + off);
		if (end > tr->warm)
			tr->warm = end;
		if (tr->warm >= t->ring_size)
			t->pending--;
	}
	return moved;
}

uint64_t evr_memory_touch_turn(uint64_t now, bool kicked)
{
	const struct evr_session_table *tab;
	bool pending = false, fresh = false;
	uint64_t moved = 0, period;

	if (!kicked && now < touch_due)
		return touch_due;
	urcu_bp_read_lock();
	tab = evr_session_table_get_rcu();
	for (uint32_t i = 0; i < EVR_MAX_SESSIONS; i++) {
		const struct evr_session *s = tab->slot[i];
		struct touch_session *t = &touch[i];

		if (!s) {
			if (t->s)
				touch_forget(t);
			continue;
		}
		if (t->s != s || t->serial != s->serial) {
			if (!touch_learn(t, s))
				continue;
			fresh = true;	/* a new session: its writers may start at once */
		}
		if (t->pending) {
			uint64_t m = touch_session_turn(t);

			moved = m > moved ? m : moved;
		}
		pending |= t->pending != 0;
	}
	urcu_bp_read_unlock();
	if (!pending) {
		touch_idle = 0;
		touch_last = 0;
		touch_due = UINT64_MAX;
		return touch_due;
	}
	if (fresh || !touch_last || now <= touch_last) {
		touch_idle = 0;
		period = EVR_TOUCH_PERIOD_MIN_NS;
	} else if (moved) {
		/* Back when the fastest head has used a quarter of its window, at this
		 * pace: the agent's wake-ups, ~20-30 us each here, follow the writers. */
		touch_idle = 0;
		period = (now - touch_last) * (EVR_TOUCH_WINDOW / 4) / moved;
	} else {
		period = touch_period;
		if (++touch_idle > EVR_TOUCH_IDLE_TURNS)
			period *= 2;
	}
	period = period < EVR_TOUCH_PERIOD_MIN_NS ? EVR_TOUCH_PERIOD_MIN_NS
	       : period > EVR_TOUCH_PERIOD_MAX_NS ? EVR_TOUCH_PERIOD_MAX_NS : period;
	touch_period = period;
	touch_last = now;
	touch_due = now + period;
	return touch_due;
}

void evr_memory_touch_reset_in_child(void)
{
	for (uint32_t i = 0; i < EVR_MAX_SESSIONS; i++)
		touch_forget(&touch[i]);
	touch_idle = 0;
	touch_last = 0;
	touch_due = UINT64_MAX;
}
