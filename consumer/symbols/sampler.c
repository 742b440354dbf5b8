// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The CPU sampler: perf_events for one process, opened from the recorder
 * (shared/research/stacks.md §2, measured on this kind of VM).
 *
 * - Event: PERF_TYPE_SOFTWARE / PERF_COUNT_SW_CPU_CLOCK, an hrtimer on CPU time:
 *   virtual machines often have no hardware PMU. Frequency mode (freq=1).
 *   exclude_kernel and exclude_hv, as perf_event_paranoid 2 (the default)
 *   requires of a user watching their own process.
 * - Call chains: the kernel's frame-pointer walk of the user stack
 *   (PERF_SAMPLE_CALLCHAIN, up to 127 frames), ~150 bytes a sample where a
 *   copy of the user stack for DWARF unwinding costs ~8 KiB.
 * - Side band: context_switch (PERF_RECORD_SWITCH: on/off CPU per thread) and
 *   mmap2 with build IDs (new executable mappings), sample_id_all so that they
 *   carry a time. Timestamps use CLOCK_MONOTONIC (use_clockid), which is what
 *   the events' raw timestamps convert to: one timeline.
 * - One event per (thread, CPU) with inherit=1 so that threads created later
 *   are sampled too; the kernel refuses to mmap an inherited per-thread event
 *   opened for any CPU (cpu=-1), hence per CPU. The first event of each CPU
 *   owns a ring; the others write into it (PERF_EVENT_IOC_SET_OUTPUT).
 *
 * Ring protocol (uapi perf_event.h): the kernel writes records at data_head;
 * we load-acquire data_head, read records below it (a record may wrap the end
 * of the ring: it is copied out first), then store-release data_tail, which
 * frees the space. The mapping is writable, so the kernel never overwrites
 * unread data: it drops records and reports them with PERF_RECORD_LOST, which
 * becomes an EVR_SAMPLE_LOST record (exact loss accounting).
 */
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <evring/trace.h>

#include "sampler-internal.h"
#include "symbols-internal.h"

#define RING_PAGES 64u			/* data pages per CPU: 256 KiB, within perf_event_mlock_kb */
#define MAX_FDS 8192u
#define CHUNK_BYTES (1u << 20)		/* SAMPLES chunks are cut at this size */
#define REC_MAX 4096u			/* bytes of one perf record we copy out (127 frames fit) */

struct cpu_ring {
	int cpu;
	int leader;			/* fd owning the ring, -1 if none */
	struct perf_event_mmap_page *page;
	uint8_t *data;
	uint64_t size;			/* data bytes, a power of two */
};

struct evr_sampler {
	pid_t pid;
	uint32_t hz;
	int *fds;
	uint32_t nfds, capfds;
	uint32_t *tids;			/* threads opened */
	uint32_t ntids, captids;
	struct cpu_ring *rings;
	uint32_t nrings;
	size_t page;
	uint8_t *out;			/* the SAMPLES chunk being filled */
	size_t outlen;
	struct evr_modmap *newmods;	/* MMAP2 records since the last drain */
	struct evr_sampler_rec totals;
};

static int perf_open(struct perf_event_attr *a, pid_t tid, int cpu)
{
	long fd = syscall(SYS_perf_event_open, a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

static void attr_init(struct perf_event_attr *a, uint32_t hz)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = hz;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			 PERF_SAMPLE_CALLCHAIN;
	a->disabled = 1;
	a->inherit = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->exclude_callchain_kernel = 1;
	a->sample_max_stack = 127;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->context_switch = 1;
	a->mmap2 = 1;
	a->build_id = 1;
	a->sample_id_all = 1;
	/* We read on the recorder's own schedule: no wake-ups. */
	a->watermark = 1;
	a->wakeup_watermark = (RING_PAGES * 4096u) / 2;
}

static int push_fd(struct evr_sampler *s, int fd)
{
	if (s->nfds == s->capfds) {
		uint32_t cap = s->capfds ? s->capfds * 2 : 64;
		int *v = realloc(s->fds, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->fds = v;
		s->capfds = cap;
	}
	s->fds[s->nfds++] = fd;
	return 0;
}

static bool have_tid(const struct evr_sampler *s, uint32_t tid)
{
	for (uint32_t i = 0; i < s->ntids; i++)
		if (s->tids[i] == tid)
			return true;
	return false;
}

static const char *open_hint(int err)
{
	switch (err) {
	case EACCES:
	case EPERM:
		return " (kernel.perf_event_paranoid forbids it, or seccomp does: set the sysctl "
		       "to 2 or lower, or run with CAP_PERFMON)";
	case ENOENT:
	case EOPNOTSUPP:
		return " (this kernel has no software cpu-clock event)";
	case EMFILE:
	case ENFILE:
		return " (one descriptor per thread and CPU: raise the open files limit)";
	default:
		return "";
	}
}

/* Open (and enable) thread @tid on every ring. -ESRCH: it exited meanwhile (not an error). */
static int open_thread(struct evr_sampler *s, uint32_t tid, char *errbuf, size_t errlen)
{
	struct perf_event_attr a;
	int err;

	attr_init(&a, s->hz);
	for (uint32_t i = 0; i < s->nrings; i++) {
		struct cpu_ring *r = &s->rings[i];
		int fd = perf_open(&a, (pid_t)tid, r->cpu);

		if (fd == -ESRCH)
			return -ESRCH;
		if (fd == -ENODEV && r->leader < 0)
			continue;	/* a possible CPU that is offline */
		if (fd < 0) {
			snprintf(errbuf, errlen, "cannot sample thread %u of process %d: %s%s", tid,
				 (int)s->pid, strerror(-fd), open_hint(-fd));
			return fd;
		}
		if (s->nfds >= MAX_FDS || push_fd(s, fd) < 0) {
			close(fd);
			snprintf(errbuf, errlen, "too many threads to sample (%u descriptors)", MAX_FDS);
			return -EMFILE;
		}
		if (r->leader < 0) {
			size_t len = (1 + RING_PAGES) * s->page;
			void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

			if (m == MAP_FAILED) {
				err = -errno;
				snprintf(errbuf, errlen, "cannot map the sampling ring of CPU %d: %s%s",
					 r->cpu, strerror(-err),
					 err == -EPERM ? " (over the perf_event_mlock_kb limit)" : "");
				return err;
			}
			r->leader = fd;
			r->page = m;
			r->data = (uint8_t *)m + s->page;
			r->size = RING_PAGES * s->page;
		} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->leader) < 0) {
			err = -errno;
			snprintf(errbuf, errlen, "cannot share the sampling ring of CPU %d: %s",
				 r->cpu, strerror(-err));
			return err;
		}
		if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
			err = -errno;
			snprintf(errbuf, errlen, "cannot start sampling: %s", strerror(-err));
			return err;
		}
	}
	if (s->ntids == s->captids) {
		uint32_t cap = s->captids ? s->captids * 2 : 64;
		uint32_t *v = realloc(s->tids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->tids = v;
		s->captids = cap;
	}
	s->tids[s->ntids++] = tid;
	return 0;
}

/* Open every thread not opened yet. Return: threads added, or -errno. */
static int scan_threads(struct evr_sampler *s, char *errbuf, size_t errlen)
{
	char path[64];
	struct dirent *d;
	int added = 0, err = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)s->pid);
	dir = opendir(path);
	if (!dir) {
		snprintf(errbuf, errlen, "process %d exited", (int)s->pid);
		return -ESRCH;
	}
	while ((d = readdir(dir))) {
		char *end;
		unsigned long tid = strtoul(d->d_name, &end, 10);

		if (*end || !tid || have_tid(s, (uint32_t)tid))
			continue;
		err = open_thread(s, (uint32_t)tid, errbuf, errlen);
		if (err == -ESRCH) {
			err = 0;
			continue;
		}
		if (err < 0)
			break;
		added++;
	}
	closedir(dir);
	return err < 0 ? err : added;
}

int evr_sampler_new(pid_t pid, uint32_t hz, struct evr_sampler **ret, char *errbuf,
		    size_t errlen)
{
	struct evr_sampler *s;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int err, added;

	if (!hz || hz > 100000) {
		snprintf(errbuf, errlen, "sampling frequency %u Hz is not within 1-100000", hz);
		return -EINVAL;
	}
	err = evr_proc_check_access(pid, "you can sample only your own processes", errbuf,
				    errlen);
	if (err < 0)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pid = pid;
	s->hz = hz;
	s->page = (size_t)sysconf(_SC_PAGESIZE);
	s->nrings = ncpu > 0 ? (uint32_t)ncpu : 1;
	s->rings = calloc(s->nrings, sizeof(*s->rings));
	s->out = malloc(CHUNK_BYTES + REC_MAX);
	err = evr_modmap_new(&s->newmods);
	if (!s->rings || !s->out || err < 0) {
		err = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < s->nrings; i++) {
		s->rings[i].cpu = (int)i;
		s->rings[i].leader = -1;
	}
	s->totals.freq_hz = hz;
	s->totals.event = 1;
	/* Twice: threads created while the first pass opened the others. The
	 * events' inherit flag covers the threads created after that. */
	for (int pass = 0; pass < 2; pass++) {
		added = scan_threads(s, errbuf, errlen);
		if (added < 0) {
			err = added;
			goto fail;
		}
	}
	if (!s->ntids) {
		snprintf(errbuf, errlen, "process %d exited", (int)pid);
		err = -ESRCH;
		goto fail;
	}
	for (uint32_t i = 0; i < s->nrings; i++)
		s->totals.cpus += s->rings[i].leader >= 0;
	s->totals.threads = s->ntids;
	*ret = s;
	return 0;
fail:
	evr_sampler_free(s);
	return err;
}

void evr_sampler_free(struct evr_sampler *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	for (uint32_t i = 0; s->rings && i < s->nrings; i++)
		if (s->rings[i].page)
			munmap(s->rings[i].page, (1 + RING_PAGES) * s->page);
	free(s->fds);
	free(s->tids);
	free(s->rings);
	free(s->out);
	evr_modmap_free(s->newmods);
	free(s);
}

void evr_sampler_totals(const struct evr_sampler *s, struct evr_sampler_totals *ret)
{
	ret->samples = s->totals.samples;
	ret->lost = s->totals.lost;
	ret->switches = s->totals.switches;
	ret->threads = s->ntids;
}

/* ---- reading the rings ------------------------------------------------------- */

static int flush_out(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = 0;

	if (s->outlen)
		err = emit(ctx, EVR_CHUNK_SAMPLES, s->out, s->outlen);
	s->outlen = 0;
	return err;
}

static int put_rec(struct evr_sampler *s, const struct evr_sample_rec *r, const uint64_t *ips,
		   evr_sideband_emit_fn *emit, void *ctx)
{
	size_t need = sizeof(*r) + 8u * r->nframes;
	int err;

	if (s->outlen + need > CHUNK_BYTES) {
		err = flush_out(s, emit, ctx);
		if (err)
			return err;
	}
	memcpy(s->out + s->outlen, r, sizeof(*r));
	if (r->nframes && ips)
		memcpy(s->out + s->outlen + sizeof(*r), ips, 8u * r->nframes);
	s->outlen += need;
	return 0;
}

/* The trailing sample_id of a side-band record (sample_id_all): tid, time, cpu, identifier. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};

static bool tail_id(const uint8_t *rec, uint32_t size, struct sample_id *ret)
{
	if (size < sizeof(struct perf_event_header) + sizeof(*ret))
		return false;
	memcpy(ret, rec + size - sizeof(*ret), sizeof(*ret));
	return true;
}

static int parse_sample(struct evr_sampler *s, const uint8_t *rec, uint32_t size,
			evr_sideband_emit_fn *emit, void *ctx)
{
	/* IDENTIFIER, IP, TID, TIME, CPU, PERIOD, CALLCHAIN, in that order. */
	struct {
		uint64_t id, ip;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
		uint64_t period, nr;
	} f;
	uint64_t ips[128];
	const uint8_t *cc;
	struct evr_sample_rec r = { 0 };
	uint32_t n = 0;

	if (size < sizeof(struct perf_event_header) + sizeof(f))
		return 0;
	memcpy(&f, rec + sizeof(struct perf_event_header), sizeof(f));
	cc = rec + sizeof(struct perf_event_header) + sizeof(f);
	if (f.nr > (size - sizeof(struct perf_event_header) - sizeof(f)) / 8)
		return 0;
	for (uint64_t i = 0; i < f.nr && n < 128; i++) {
		uint64_t ip;

		memcpy(&ip, cc + 8 * i, 8);
		/* PERF_CONTEXT_USER and the other context markers are not addresses. */
		if (ip >= (uint64_t)PERF_CONTEXT_MAX)
			continue;
		ips[n++] = ip;
	}
	if (!n && f.ip)
		ips[n++] = f.ip;
	r.time_ns = f.time;
	r.pid = f.pid;
	r.tid = f.tid;
	r.cpu = f.cpu;
	r.type = EVR_SAMPLE_CPU;
	r.nframes = (uint16_t)n;
	r.value = f.period;
	s->totals.samples++;
	return put_rec(s, &r, ips, emit, ctx);
}

static int parse_mmap2(struct evr_sampler *s, const uint8_t *rec, uint32_t size, uint16_t misc)
{
	struct {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		union {
			struct {
				uint32_t maj, min;
				uint64_t ino, ino_generation;
			};
			struct {
				uint8_t build_id_size;
				uint8_t res1;
				uint16_t res2;
				uint8_t build_id[20];
			};
		};
		uint32_t prot, flags;
	} m;
	struct evr_module mod = { 0 };
	struct sample_id sid = { 0 };
	const char *name;
	size_t room;
	int kind;

	if (size < sizeof(struct perf_event_header) + sizeof(m))
		return 0;
	memcpy(&m, rec + sizeof(struct perf_event_header), sizeof(m));
	name = (const char *)rec + sizeof(struct perf_event_header) + sizeof(m);
	room = size - sizeof(struct perf_event_header) - sizeof(m);
	if (!memchr(name, '\0', room) || !(m.prot & PROT_EXEC) || !m.len)
		return 0;
	kind = evr_module_kind(name);
	if (kind < 0)
		return 0;
	mod.flags = (uint8_t)kind;
	if (kind == EVR_MODULE_ANON)
		name = "[anon]";
	tail_id(rec, size, &sid);
	mod.start = m.addr;
	mod.end = m.addr + m.len;
	mod.pgoff = m.pgoff;
	mod.time_ns = sid.time;
	mod.pid = m.pid;
	if (!mod.flags && (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) &&
	    m.build_id_size <= EVR_BUILD_ID_MAX) {
		mod.build_id_len = m.build_id_size;
		memcpy(mod.build_id, m.build_id, m.build_id_size);
	}
	mod.path = (char *)name;
	return evr_modmap_add(s->newmods, &mod);
}

static int parse_rec(struct evr_sampler *s, const uint8_t *rec, evr_sideband_emit_fn *emit,
		     void *ctx)
{
	struct perf_event_header h;
	struct evr_sample_rec r = { 0 };
	struct sample_id sid;

	memcpy(&h, rec, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		return parse_sample(s, rec, h.size, emit, ctx);
	case PERF_RECORD_SWITCH:
		if (!tail_id(rec, h.size, &sid))
			return 0;
		r.time_ns = sid.time;
		r.pid = sid.pid;
		r.tid = sid.tid;
		r.cpu = sid.cpu;
		r.type = (h.misc & PERF_RECORD_MISC_SWITCH_OUT) ? EVR_SAMPLE_SWITCH_OUT
								 : EVR_SAMPLE_SWITCH_IN;
		r.value = (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? 1 : 0;
		s->totals.switches++;
		return put_rec(s, &r, NULL, emit, ctx);
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES: {
		uint64_t v[2] = { 0, 0 };
		uint32_t off = h.type == PERF_RECORD_LOST ? 8 : 0;

		if (h.size < sizeof(h) + off + 8)
			return 0;
		memcpy(&v[1], rec + sizeof(h) + off, 8);
		if (tail_id(rec, h.size, &sid)) {
			r.time_ns = sid.time;
			r.cpu = sid.cpu;
		}
		r.type = EVR_SAMPLE_LOST;
		r.value = v[1];
		s->totals.lost += v[1];
		return put_rec(s, &r, NULL, emit, ctx);
	}
	case PERF_RECORD_MMAP2:
		return parse_mmap2(s, rec, h.size, h.misc);
	case PERF_RECORD_THROTTLE:
		s->totals.throttled++;
		return 0;
	default:
		return 0;
	}
}

static int drain_ring(struct evr_sampler *s, struct cpu_ring *r, evr_sideband_emit_fn *emit,
		      void *ctx)
{
	uint8_t rec[REC_MAX];
	/* Pairs with the kernel's store of data_head after it wrote the records. */
	uint64_t head = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->page->data_tail;
	uint64_t mask = r->size - 1;
	int err = 0;

	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		uint64_t off = tail & mask;
		uint32_t first;

		/* A record may wrap the end of the ring: copy it out in two parts. */
		first = (uint32_t)(r->size - off < sizeof(h) ? r->size - off : sizeof(h));
		memcpy(&h, r->data + off, first);
		memcpy((uint8_t *)&h + first, r->data, sizeof(h) - first);
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (h.size <= REC_MAX) {
			first = (uint32_t)(r->size - off < h.size ? r->size - off : h.size);
			memcpy(rec, r->data + off, first);
			memcpy(rec + first, r->data, h.size - first);
			err = parse_rec(s, rec, emit, ctx);
			if (err)
				break;
		}
		tail += h.size;
	}
	/* Pairs with the kernel's read of data_tail before it overwrites: we are done with it. */
	__atomic_store_n(&r->page->data_tail, tail, __ATOMIC_RELEASE);
	return err;
}

int evr_sampler_drain(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = 0;

	for (uint32_t i = 0; i < s->nrings && !err; i++)
		if (s->rings[i].page)
			err = drain_ring(s, &s->rings[i], emit, ctx);
	if (!err)
		err = flush_out(s, emit, ctx);
	if (!err && s->newmods->n) {
		void *buf;
		size_t len;

		err = evr_modmap_encode(s->newmods, &buf, &len);
		if (!err) {
			err = emit(ctx, EVR_CHUNK_MODULES, buf, len);
			free(buf);
		}
		for (size_t i = 0; i < s->newmods->n; i++)
			free(s->newmods->v[i].path);
		s->newmods->n = 0;
	}
	return err;
}

int evr_sampler_finish(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = evr_sampler_drain(s, emit, ctx);

	s->totals.threads = s->ntids;
	if (!err)
		err = emit(ctx, EVR_CHUNK_SAMPLER, &s->totals, sizeof(s->totals));
	return err;
}
