// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perf events on one process's threads, one ring per CPU (perf record -p
 * style), shared by the CPU sampler and the system-call tracer.
 *
 * - One event per (thread, CPU, attr) with inherit=1 so that threads created
 *   later are covered too; the kernel refuses to mmap an inherited per-thread
 *   event opened for any CPU (cpu=-1), hence per CPU. The first event of each
 *   CPU owns a ring; the others write into it (PERF_EVENT_IOC_SET_OUTPUT).
 * - The threads that exist are listed from /proc/PID/task twice: threads
 *   created while the first pass opened the others.
 * - cpu_wide (system-wide sampling): one event per CPU with pid -1 instead,
 *   which needs CAP_PERFMON or perf_event_paranoid <= 0.
 *
 * Ring protocol (uapi perf_event.h): the kernel writes records at data_head;
 * we load-acquire data_head, read records below it (a record may wrap the end
 * of the ring: it is copied out first), then store-release data_tail, which
 * frees the space. The mapping is writable, so the kernel never overwrites
 * unread data: it drops records and reports them with PERF_RECORD_LOST.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perf-ring-internal.h"

#define MAX_FDS 8192u
#define REC_MAX 4096u			/* bytes of one perf record we copy out */

struct cpu_ring {
	int cpu;
	int leader;			/* fd owning the ring, -1 if none */
	struct perf_event_mmap_page *page;
	uint8_t *data;
	uint64_t size;			/* data bytes, a power of two */
};

struct evr_perf_set {
	struct evr_perf_set_opts o;
	int *fds;
	uint32_t *fd_tid;		/* per fd: the thread (-1: every one) */
	uint16_t *fd_attr;		/* per fd: its index in o.attrs */
	uint32_t nfds, capfds;
	uint32_t *tids;			/* threads opened */
	uint32_t ntids, captids;
	struct cpu_ring *rings;
	uint32_t nrings;
	size_t page;
};

static int perf_open(const struct perf_event_attr *a, pid_t tid, int cpu)
{
	long fd = syscall(SYS_perf_event_open, a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

static int push_fd(struct evr_perf_set *ps, int fd, uint32_t tid, uint16_t attr)
{
	if (ps->nfds == ps->capfds) {
		uint32_t cap = ps->capfds ? ps->capfds * 2 : 64;
		int *v = realloc(ps->fds, cap * sizeof(*v));
		uint32_t *t;
		uint16_t *a;

		if (!v)
			return -ENOMEM;
		ps->fds = v;
		t = realloc(ps->fd_tid, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		ps->fd_tid = t;
		a = realloc(ps->fd_attr, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		ps->fd_attr = a;
		ps->capfds = cap;
	}
	ps->fd_tid[ps->nfds] = tid;
	ps->fd_attr[ps->nfds] = attr;
	ps->fds[ps->nfds++] = fd;
	return 0;
}

static bool have_tid(const struct evr_perf_set *ps, uint32_t tid)
{
	for (uint32_t i = 0; i < ps->ntids; i++)
		if (ps->tids[i] == tid)
			return true;
	return false;
}

/* Event @a for @tid into ring @r: the ring's first event maps it. */
static int open_one(struct evr_perf_set *ps, struct cpu_ring *r, const struct perf_event_attr *a,
		    uint32_t tid, char *errbuf, size_t errlen)
{
	int fd = perf_open(a, (pid_t)tid, r->cpu), err;

	if (fd == -ESRCH || (fd == -ENODEV && r->leader < 0))
		return fd;	/* it exited; or a possible CPU that is offline */
	if (fd < 0 && ps->o.cpu_wide) {
		snprintf(errbuf, errlen, "cannot %s CPU %d: %s%s", ps->o.what, r->cpu,
			 strerror(-fd), ps->o.hint ? ps->o.hint(-fd) : "");
		return fd;
	}
	if (fd < 0) {
		snprintf(errbuf, errlen, "cannot %s thread %u of process %d: %s%s", ps->o.what,
			 tid, (int)ps->o.pid, strerror(-fd), ps->o.hint ? ps->o.hint(-fd) : "");
		return fd;
	}
	if (ps->nfds >= MAX_FDS || push_fd(ps, fd, tid, (uint16_t)(a - ps->o.attrs)) < 0) {
		close(fd);
		snprintf(errbuf, errlen, "too many threads (%u perf descriptors) to %s process %d",
			 MAX_FDS, ps->o.what, (int)ps->o.pid);
		return -EMFILE;
	}
	if (r->leader < 0) {
		size_t len = (1 + ps->o.ring_pages) * ps->page;
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (m == MAP_FAILED) {
			err = -errno;
			snprintf(errbuf, errlen, "cannot map the perf ring of CPU %d: %s%s", r->cpu,
				 strerror(-err),
				 err == -EPERM ? " (over the perf_event_mlock_kb limit)" : "");
			return err;
		}
		r->leader = fd;
		r->page = m;
		r->data = (uint8_t *)m + ps->page;
		r->size = ps->o.ring_pages * ps->page;
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->leader) < 0) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot share the perf ring of CPU %d: %s", r->cpu,
			 strerror(-err));
		return err;
	}
	if (ps->o.filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, ps->o.filter) < 0) {
		err = -errno;
		snprintf(errbuf, errlen, "the kernel refused the filter '%s' of a perf event: %s",
			 ps->o.filter, strerror(-err));
		return err;
	}
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot enable a perf event: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* Open (and enable) thread @tid on every ring. -ESRCH: it exited meanwhile (not an error). */
static int open_thread(struct evr_perf_set *ps, uint32_t tid, char *errbuf, size_t errlen)
{
	for (uint32_t i = 0; i < ps->nrings; i++) {
		for (uint32_t k = 0; k < ps->o.nattrs; k++) {
			int err = open_one(ps, &ps->rings[i], &ps->o.attrs[k], tid, errbuf, errlen);

			if (err == -ENODEV)
				break;
			if (err < 0)
				return err;
		}
	}
	if (ps->ntids == ps->captids) {
		uint32_t cap = ps->captids ? ps->captids * 2 : 64;
		uint32_t *v = realloc(ps->tids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ps->tids = v;
		ps->captids = cap;
	}
	ps->tids[ps->ntids++] = tid;
	return 0;
}

/* Open every thread not opened yet. Return: threads added, or -errno. */
static int scan_threads(struct evr_perf_set *ps, char *errbuf, size_t errlen)
{
	char path[64];
	struct dirent *d;
	int added = 0, err = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)ps->o.pid);
	dir = opendir(path);
	if (!dir) {
		snprintf(errbuf, errlen, "process %d exited", (int)ps->o.pid);
		return -ESRCH;
	}
	while ((d = readdir(dir))) {
		char *end;
		unsigned long tid = strtoul(d->d_name, &end, 10);

		if (*end || !tid || have_tid(ps, (uint32_t)tid))
			continue;
		err = open_thread(ps, (uint32_t)tid, errbuf, errlen);
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

int evr_perf_set_new(const struct evr_perf_set_opts *o, struct evr_perf_set **ret,
		     char *errbuf, size_t errlen)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct evr_perf_set *ps = calloc(1, sizeof(*ps));
	int err;

	if (!ps)
		return -ENOMEM;
	ps->o = *o;
	ps->page = (size_t)sysconf(_SC_PAGESIZE);
	ps->nrings = ncpu > 0 ? (uint32_t)ncpu : 1;
	ps->rings = calloc(ps->nrings, sizeof(*ps->rings));
	if (!ps->rings) {
		err = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < ps->nrings; i++) {
		ps->rings[i].cpu = (int)i;
		ps->rings[i].leader = -1;
	}
	if (o->cpu_wide) {
		/* pid -1 on each CPU: every task that runs there, threads to come included. */
		for (uint32_t i = 0; i < ps->nrings; i++) {
			for (uint32_t k = 0; k < o->nattrs; k++) {
				err = open_one(ps, &ps->rings[i], &o->attrs[k], (uint32_t)-1, errbuf,
					       errlen);
				if (err == -ENODEV)
					break;
				if (err < 0)
					goto fail;
			}
		}
		*ret = ps;
		return 0;
	}
	for (int pass = 0; pass < 2; pass++) {
		err = scan_threads(ps, errbuf, errlen);
		if (err < 0)
			goto fail;
	}
	if (!ps->ntids) {
		snprintf(errbuf, errlen, "process %d exited", (int)o->pid);
		err = -ESRCH;
		goto fail;
	}
	*ret = ps;
	return 0;
fail:
	evr_perf_set_free(ps);
	return err;
}

void evr_perf_set_free(struct evr_perf_set *ps)
{
	if (!ps)
		return;
	for (uint32_t i = 0; i < ps->nfds; i++)
		close(ps->fds[i]);
	for (uint32_t i = 0; ps->rings && i < ps->nrings; i++)
		if (ps->rings[i].page)
			munmap(ps->rings[i].page, (1 + ps->o.ring_pages) * ps->page);
	free(ps->fds);
	free(ps->fd_tid);
	free(ps->fd_attr);
	free(ps->tids);
	free(ps->rings);
	free(ps);
}

uint32_t evr_perf_set_threads(const struct evr_perf_set *ps)
{
	return ps->ntids;
}

uint32_t evr_perf_set_cpus(const struct evr_perf_set *ps)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < ps->nrings; i++)
		n += ps->rings[i].leader >= 0;
	return n;
}

uint64_t evr_perf_set_fill(const struct evr_perf_set *ps, uint64_t *ring_size)
{
	uint64_t most = 0;

	*ring_size = ps->o.ring_pages * ps->page;
	for (uint32_t i = 0; i < ps->nrings; i++) {
		const struct cpu_ring *r = &ps->rings[i];
		uint64_t n;

		if (!r->page)
			continue;
		n = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE) - r->page->data_tail;
		if (n > most)
			most = n;
	}
	return most;
}

const int *evr_perf_set_fds(const struct evr_perf_set *ps, uint32_t *n)
{
	*n = ps->nfds;
	return ps->fds;
}

uint32_t evr_perf_set_fd_attr(const struct evr_perf_set *ps, uint32_t i, uint32_t *ret_tid)
{
	*ret_tid = ps->fd_tid[i];
	return ps->fd_attr[i];
}

static int drain_ring(struct cpu_ring *r, evr_perf_rec_fn *fn, void *ctx)
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
		if (h.size <= REC_MAX && off + h.size <= r->size) {
			/*
			 * Read in place: only a record that wraps is copied out. A busy
			 * machine's context switches are tens of thousands of records a
			 * second, each of which was copied twice.
			 */
			err = fn(ctx, r->data + off, &h);
			if (err)
				break;
		} else if (h.size <= REC_MAX) {
			first = (uint32_t)(r->size - off);
			memcpy(rec, r->data + off, first);
			memcpy(rec + first, r->data, h.size - first);
			err = fn(ctx, rec, &h);
			if (err)
				break;
		}
		tail += h.size;
	}
	/* Pairs with the kernel's read of data_tail before it overwrites: we are done with it. */
	__atomic_store_n(&r->page->data_tail, tail, __ATOMIC_RELEASE);
	return err;
}

int evr_perf_set_drain(struct evr_perf_set *ps, evr_perf_rec_fn *fn, void *ctx)
{
	int err = 0;

	for (uint32_t i = 0; i < ps->nrings && !err; i++)
		if (ps->rings[i].page)
			err = drain_ring(&ps->rings[i], fn, ctx);
	return err;
}
