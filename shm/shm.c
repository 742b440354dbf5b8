// SPDX-License-Identifier: LGPL-2.1-or-later
/* Session memory: memfd creation and sealing, mapping, header validation. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/shm.h>

#include "shm-internal.h"

#define EVR_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* ---- the mappings this process knows (shm-internal.h) ---------------------------- */

/*
 * One per mapping made by evr_shm_session_create() or evr_shm_session_map(),
 * until evr_shm_session_unmap(). Besides the geometry, the producer's own
 * metadata write position: meta_head in the header is what it publishes, not
 * what it trusts. A process has a handful of mappings (one per session), and
 * they are looked up only off the hot paths (set-up, metadata, unmap).
 */
struct shm_known {
	struct shm_known *next;
	const struct evr_shm_hdr *h;
	struct evr_shm_hdr geo;
	uint64_t meta_head;
	size_t headroom;		/* reserved below h (evr_shm_session_map()) */
};

static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shm_known *known;

/*
 * fork() while another thread holds known_lock must not leave the child's copy
 * held. No prepare handler that takes it: the producer's own fork handlers take
 * the registry lock, under which known_lock is taken, and the order in which
 * libraries register handlers is not ours to choose. The list is consistent at
 * every instruction (one store links or unlinks an entry), so the child only
 * needs a fresh lock.
 */
static void known_fork_child(void)
{
	pthread_mutex_init(&known_lock, NULL);
}

__attribute__((constructor)) static void known_init(void)
{
	pthread_atfork(NULL, NULL, known_fork_child);
}

/* Context: known_lock held. */
static struct shm_known *known_find_locked(const struct evr_shm_hdr *h)
{
	for (struct shm_known *k = known; k; k = k->next)
		if (k->h == h)
			return k;
	return NULL;
}

static int known_add(const struct evr_shm_hdr *h, const struct evr_shm_hdr *geo,
		     size_t headroom)
{
	struct shm_known *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->h = h;
	k->geo = *geo;
	k->headroom = headroom;
	pthread_mutex_lock(&known_lock);
	k->next = known;
	known = k;
	pthread_mutex_unlock(&known_lock);
	return 0;
}

void evr_shm_geometry_of(const struct evr_shm_hdr *h, struct evr_shm_hdr *ret)
{
	struct shm_known *k;

	pthread_mutex_lock(&known_lock);
	k = known_find_locked(h);
	if (k)
		*ret = k->geo;
	else
		memcpy(ret, h, sizeof(*ret));
	pthread_mutex_unlock(&known_lock);
}

uint32_t evr_shm_nr_rings(const struct evr_shm_hdr *h)
{
	struct evr_shm_hdr geo;

	if (!h)
		return 0;
	evr_shm_geometry_of(h, &geo);
	return geo.nr_rings;
}

uint32_t evr_shm_read_heads(const struct evr_shm_hdr *h, uint64_t *ret, uint32_t max)
{
	struct evr_shm_hdr geo;
	uint32_t n;

	if (!h || !ret)
		return 0;
	evr_shm_geometry_of(h, &geo);
	n = geo.nr_rings < max ? geo.nr_rings : max;
	for (uint32_t i = 0; i < n; i++)
		/* Pairs with the writers' store-release of head. */
		ret[i] = __atomic_load_n(&evr_shm_geo_ctl(h, &geo, i)->head, __ATOMIC_ACQUIRE);
	return n;
}

static bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

__attribute__((format(printf, 3, 4)))
static int fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int evr_shm_geometry_check(const struct evr_shm_geometry *g, char *errbuf, size_t errlen)
{
	if (!g)
		return -EINVAL;
	if (g->nr_rings < 1 || g->nr_rings > EVR_MAX_RINGS)
		return fail(errbuf, errlen, "ring count %u is not between 1 and 1024", g->nr_rings);
	if (!is_pow2(g->packet_size) || g->packet_size < EVR_PACKET_SIZE_MIN ||
	    g->packet_size > EVR_PACKET_SIZE_MAX)
		return fail(errbuf, errlen,
			    "packet size %u is not a power of two between 16 KiB and 64 KiB",
			    g->packet_size);
	if (!is_pow2(g->ring_size) || g->ring_size > EVR_RING_SIZE_MAX)
		return fail(errbuf, errlen, "ring size %llu is not a power of two up to 4 GiB",
			    (unsigned long long)g->ring_size);
	if (g->ring_size < (uint64_t)g->packet_size * EVR_RING_PACKETS_MIN)
		return fail(errbuf, errlen, "ring size %llu is less than 4 packets",
			    (unsigned long long)g->ring_size);
	if (g->mode != EVR_MODE_DISCARD && g->mode != EVR_MODE_OVERWRITE)
		return fail(errbuf, errlen, "mode %u is neither discard nor overwrite", g->mode);
	if (g->meta_size && (g->meta_size % 4096 || g->meta_size < EVR_META_SIZE_MIN ||
			     g->meta_size > EVR_META_SIZE_MAX))
		return fail(errbuf, errlen,
			    "metadata size %u is not a multiple of 4 KiB between 4 KiB and 16 MiB",
			    g->meta_size);
	if ((uint64_t)g->nr_rings * g->ring_size > (1ull << 40))
		return fail(errbuf, errlen, "session of %llu bytes is too large",
			    (unsigned long long)(g->nr_rings * g->ring_size));
	return 0;
}

static uint64_t meta_off(uint32_t nr_rings)
{
	uint64_t page = 4096;
	uint64_t end = EVR_SHM_HDR_SIZE + (uint64_t)nr_rings * EVR_RING_CTL_SIZE;

	return (end + page - 1) & ~(page - 1);
}

uint64_t evr_shm_session_size(const struct evr_shm_geometry *g)
{
	uint64_t meta_size = g->meta_size ? g->meta_size : EVR_META_SIZE_DEFAULT;

	return meta_off(g->nr_rings) + meta_size + (uint64_t)g->nr_rings * g->ring_size;
}

/*
 * Map @len bytes of @fd at an address that is a multiple of EVR_SHM_HUGE_SIZE,
 * with @below bytes of address space reserved right under it (PROT_NONE, no
 * memory): the session's huge pages (producer/memory.c) map whole in every
 * process, the producer's and the consumers', only where the address and the
 * file offset agree modulo 2 MiB. Return: the mapping, or MAP_FAILED (errno).
 */
static void *map_aligned(int fd, size_t len, size_t below)
{
	const uintptr_t align = EVR_SHM_HUGE_SIZE;
	size_t span = below + len + align;
	uint8_t *room = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			     -1, 0);
	uint8_t *at, *end;
	void *map;

	if (room == MAP_FAILED)
		return MAP_FAILED;
	at = (uint8_t *)(((uintptr_t)room + below + align - 1) & ~(align - 1));
	map = mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	if (map == MAP_FAILED) {
		int err = errno;

		munmap(room, span);
		errno = err;
		return MAP_FAILED;
	}
	/* The slack on either side back. */
	end = room + span;
	if (at - below > room)
		munmap(room, (size_t)(at - below - room));
	if (at + len < end)
		munmap(at + len, (size_t)(end - (at + len)));
	return map;
}

int evr_shm_session_create(const struct evr_shm_geometry *g, int *ret_fd,
			   struct evr_shm_hdr **ret_hdr)
{
	struct evr_shm_hdr *h;
	uint64_t total, meta_size;
	void *map;
	int fd, ret;

	if (!ret_fd || !ret_hdr)
		return -EINVAL;
	ret = evr_shm_geometry_check(g, NULL, 0);
	if (ret < 0)
		return ret;
	meta_size = g->meta_size ? g->meta_size : EVR_META_SIZE_DEFAULT;
	total = evr_shm_session_size(g);

	fd = memfd_create("evring-session", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)total) < 0 || fcntl(fd, F_ADD_SEALS, EVR_SEALS) < 0) {
		ret = -errno;
		goto err_close;
	}
	map = map_aligned(fd, total, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_close;
	}
	h = map;
	h->magic = EVR_SHM_MAGIC;
	h->abi_version = EVR_ABI_VERSION;
	h->hdr_size = EVR_SHM_HDR_SIZE;
	h->total_size = total;
	h->nr_rings = g->nr_rings;
	h->mode = g->mode;
	h->ring_size = g->ring_size;
	h->packet_size = g->packet_size;
	h->ring_ctl_size = EVR_RING_CTL_SIZE;
	h->ring_ctl_off = EVR_SHM_HDR_SIZE;
	h->meta_off = meta_off(g->nr_rings);
	h->meta_size = meta_size;
	h->ring_data_off = h->meta_off + meta_size;
	h->producer_pid = (uint32_t)getpid();
	h->session_id = g->session_id;
	h->session_serial = g->session_serial;
	h->clock = g->clock;
	ret = known_add(h, h, 0);
	if (ret < 0) {
		munmap(map, total);
		goto err_close;
	}
	for (uint32_t i = 0; i < g->nr_rings; i++) {
		struct evr_ring_ctl *c = evr_shm_ring_ctl(h, i);
		c->ring_index = i;
		c->cpu = i;
	}
	/*
	 * The rings are not backed here: the producer decides which, and when, so
	 * that page faults stay off the write path without committing rings that
	 * will never be written, or blocking on gigabytes (producer/memory.c).
	 */
	*ret_fd = fd;
	*ret_hdr = h;
	return 0;

err_close:
	close(fd);
	return ret;
}

int evr_shm_session_validate(const struct evr_shm_hdr *h, uint64_t map_size)
{
	struct evr_shm_geometry g;

	if (!h || map_size < EVR_SHM_HDR_SIZE)
		return -EBADMSG;
	if (h->magic != EVR_SHM_MAGIC || h->abi_version != EVR_ABI_VERSION ||
	    h->hdr_size != EVR_SHM_HDR_SIZE || h->ring_ctl_size != EVR_RING_CTL_SIZE)
		return -EBADMSG;
	g = (struct evr_shm_geometry){
		.nr_rings = h->nr_rings,
		.packet_size = h->packet_size,
		.ring_size = h->ring_size,
		.mode = h->mode,
	};
	if (evr_shm_geometry_check(&g, NULL, 0) < 0)
		return -EBADMSG;
	if (h->meta_size % 4096 || h->meta_size < EVR_META_SIZE_MIN ||
	    h->meta_size > EVR_META_SIZE_MAX)
		return -EBADMSG;
	if (h->ring_ctl_off != EVR_SHM_HDR_SIZE || h->meta_off != meta_off(h->nr_rings) ||
	    h->ring_data_off != h->meta_off + h->meta_size ||
	    h->total_size != h->ring_data_off + (uint64_t)h->nr_rings * h->ring_size ||
	    h->total_size > map_size)
		return -EBADMSG;
	if (h->clock.kind != EVR_CLOCK_MONOTONIC && h->clock.kind != EVR_CLOCK_TSC)
		return -EBADMSG;
	return 0;
}

int evr_shm_session_map(int fd, struct evr_shm_hdr **ret_hdr)
{
	struct evr_shm_hdr geo;
	struct { off_t st_size; } st;
	void *map, *room;
	int seals, ret;

	if (fd < 0 || !ret_hdr)
		return -EINVAL;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return -errno;
	if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EPERM;
	/*
	 * Sealed: the size can no longer change. lseek() rather than fstat(): a
	 * confined consumer may be allowed the one, never a stat of any path
	 * (glibc's fstat() is newfstatat(), which takes a path).
	 */
	st.st_size = lseek(fd, 0, SEEK_END);
	if (st.st_size < 0)
		return -errno;
	if (st.st_size < (off_t)EVR_SHM_HDR_SIZE)
		return -EBADMSG;
	/* The session right above its headroom, an address range only (no
	 * memory, no commit charge). */
	map = map_aligned(fd, (size_t)st.st_size, EVR_SHM_MAP_HEADROOM);
	if (map == MAP_FAILED)
		return -errno;
	room = (uint8_t *)map - EVR_SHM_MAP_HEADROOM;
	/* Validate a copy, and keep that copy: the producer may rewrite the header
	 * between any two reads of it. */
	memcpy(&geo, map, sizeof(geo));
	ret = evr_shm_session_validate(&geo, (uint64_t)st.st_size);
	if (ret == 0 && geo.total_size != (uint64_t)st.st_size)
		ret = -EBADMSG;
	if (ret == 0)
		ret = known_add(map, &geo, EVR_SHM_MAP_HEADROOM);
	if (ret < 0) {
		munmap(room, EVR_SHM_MAP_HEADROOM + (size_t)st.st_size);
		return ret;
	}
	*ret_hdr = map;
	return 0;
}

void evr_shm_session_unmap(struct evr_shm_hdr *h)
{
	struct shm_known **pk, *k = NULL;
	uint64_t size;
	size_t room;

	if (!h)
		return;
	pthread_mutex_lock(&known_lock);
	for (pk = &known; *pk; pk = &(*pk)->next) {
		if ((*pk)->h == h) {
			k = *pk;
			*pk = k->next;
			break;
		}
	}
	pthread_mutex_unlock(&known_lock);
	/* The size this process mapped, not what the header says now; its
	 * headroom with it (whatever a consumer put there, it gave back). */
	size = k ? k->geo.total_size : h->total_size;
	room = k ? k->headroom : 0;
	free(k);
	munmap((uint8_t *)h - room, room + size);
}

void *evr_shm_session_headroom(const struct evr_shm_hdr *h, size_t *ret_len)
{
	struct shm_known *k;
	size_t room = 0;

	pthread_mutex_lock(&known_lock);
	k = known_find_locked(h);
	if (k)
		room = k->headroom;
	pthread_mutex_unlock(&known_lock);
	if (ret_len)
		*ret_len = room;
	return room ? (uint8_t *)h - room : NULL;
}

/*
 * Metadata area protocol: the producer is the only writer (under its registry
 * lock). It writes an entry's header and payload below meta_size, then
 * store-releases meta_head past it. Readers load-acquire meta_head and parse only
 * below it; they never trust an entry's size beyond what was published.
 */
int evr_shm_meta_append(struct evr_shm_hdr *h, uint32_t kind, const void *data, uint32_t len)
{
	uint64_t head, need, size, off;
	struct evr_meta_entry *e;
	struct shm_known *k;
	int ret = 0;

	if (!h || (len && !data))
		return -EINVAL;
	pthread_mutex_lock(&known_lock);
	k = known_find_locked(h);
	/* A consumer can write the header: the position and bounds are our own. */
	if (k) {
		head = k->meta_head;
		size = k->geo.meta_size;
		off = k->geo.meta_off;
	} else {
		head = atomic_load_explicit((_Atomic uint64_t *)&h->meta_head,
					    memory_order_relaxed);
		size = h->meta_size;
		off = h->meta_off;
	}
	need = evr_align8(sizeof(*e) + (uint64_t)len);
	if (head > size || need > size - head) {
		atomic_fetch_add_explicit((_Atomic uint64_t *)&h->meta_dropped, 1,
					  memory_order_relaxed);
		ret = -ENOSPC;
		goto out;
	}
	e = (struct evr_meta_entry *)((uint8_t *)h + off + head);
	e->size = len;
	e->kind = kind;
	if (len)
		memcpy(e + 1, data, len);
	if (k)
		k->meta_head = head + need;
	/* Pairs with the acquire load of meta_head in evr_shm_meta_next(). */
	atomic_store_explicit((_Atomic uint64_t *)&h->meta_head, head + need, memory_order_release);
out:
	pthread_mutex_unlock(&known_lock);
	return ret;
}

int evr_shm_meta_next(const struct evr_shm_hdr *h, uint64_t *pos, uint32_t *ret_kind,
		      const void **ret_data, uint32_t *ret_len)
{
	const struct evr_meta_entry *e;
	struct evr_shm_hdr geo;
	uint64_t head, p;
	uint32_t size, kind;

	if (!h || !pos || !ret_kind || !ret_data || !ret_len)
		return -EINVAL;
	/* Pairs with the store-release in evr_shm_meta_append(). */
	head = atomic_load_explicit((_Atomic uint64_t *)&h->meta_head, memory_order_acquire);
	/*
	 * Nothing new, the common case (a recorder looks before each span): no
	 * look-up of the geometry, a lock and a walk of every mapped session. A
	 * cursor is only ever moved over valid entries, so it is within the area.
	 */
	if (head == *pos && *pos % 8 == 0)
		return 0;
	/* The area's bounds as validated; head and the entries are the producer's. */
	evr_shm_geometry_of(h, &geo);
	if (head > geo.meta_size)
		return -EBADMSG;
	p = *pos;
	if (p % 8 || p > head)
		return -EBADMSG;
	if (p == head)
		return 0;
	if (head - p < sizeof(*e))
		return -EBADMSG;
	e = (const struct evr_meta_entry *)((const uint8_t *)h + geo.meta_off + p);
	/* Each read once: the producer may be rewriting the entry. */
	size = __atomic_load_n(&e->size, __ATOMIC_RELAXED);
	kind = __atomic_load_n(&e->kind, __ATOMIC_RELAXED);
	if (size > head - p - sizeof(*e))
		return -EBADMSG;
	*ret_kind = kind;
	*ret_len = size;
	*ret_data = e + 1;
	*pos = p + evr_align8(sizeof(*e) + (uint64_t)size);
	return 1;
}
