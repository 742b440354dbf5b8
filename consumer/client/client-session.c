// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: the session of a client connection. Start (map the
 * memfd, which evr_shm_session_map() checks for seals and a consistent
 * header), read records decoded against the metadata area, or raw spans, wait
 * on doorbell + pidfd + control socket, and follow the producer's fate:
 *
 *   IDLE --start--> LIVE --stop, or the producer ended it--> ENDED
 *                        --pidfd readable or control EOF--> GONE
 *
 * After ENDED or GONE everything published is drained; losses the producer
 * could not report in-band come from its ring counters.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <evring/clock-sync.h>
#include <evring/mono-time.h>

#include "client-internal.h"

#define fail evr_client_fail

void evr_client_read_meta(struct evr_client *c)
{
	uint64_t pos = c->meta_pos;
	const void *data;
	uint32_t kind, len;
	int ret;

	if (!c->hdr || c->meta_broken)
		return;
	while ((ret = evr_shm_meta_next(c->hdr, &pos, &kind, &data, &len)) == 1) {
		/* A description that does not validate is skipped: its events decode
		 * as unknown, which evr_event_to_json() shows as raw payloads. */
		if (kind == EVR_META_EVENT)
			(void)evr_schema_set_add_pb(c->schemas, data, len);
		c->meta_pos = pos;
	}
	if (ret < 0)
		c->meta_broken = true;
}

int evr_client_start(struct evr_client *c, const struct evr_attach_opts *opts, char *errbuf,
		     size_t errlen)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__StartSession m = EVR__START_SESSION__INIT;
	struct evr_shm_hdr *hdr;
	Evr__Reply *r;
	int fds[2], err;

	if (!c || !opts)
		return -EINVAL;
	if (c->state != EVR_CLIENT_IDLE)
		return fail(errbuf, errlen, -EBUSY, "this connection already has a session");
	if (!opts->providers || !*opts->providers)
		return fail(errbuf, errlen, -EINVAL, "no providers given");
	m.providers = (char *)opts->providers;
	m.has_ring_size = opts->ring_size != 0;
	m.ring_size = opts->ring_size;
	m.has_packet_size = opts->packet_size != 0;
	m.packet_size = opts->packet_size;
	m.has_mode = true;
	m.mode = opts->mode;
	m.has_meta_size = opts->meta_size != 0;
	m.meta_size = opts->meta_size;
	m.has_counter_interval_ms = opts->counter_interval_ms != 0;
	m.counter_interval_ms = opts->counter_interval_ms;
	m.has_stacks = opts->stack_depth != 0;
	m.stacks = opts->stack_depth != 0;
	m.has_stack_depth = opts->stack_depth != 0;
	m.stack_depth = opts->stack_depth;
	req.body_case = EVR__REQUEST__BODY_START;
	req.start = &m;
	err = evr_client_transact(c, &req, EVR__REPLY__BODY_START, EVR_CLIENT_SESSION_TIMEOUT_MS,
				  fds, 2, &r, errbuf, errlen);
	if (err < 0)
		return err;
	evr_pb_reply_free(r);
	err = evr_shm_session_map(fds[0], &hdr);
	close(fds[0]);
	if (err < 0) {
		close(fds[1]);
		if (err == -EPERM)
			return fail(errbuf, errlen, -EPERM,
				    "process %d sent session memory that is not sealed", (int)c->pid);
		return fail(errbuf, errlen, err,
			    "process %d sent session memory that does not validate: %s", (int)c->pid,
			    strerror(-err));
	}
	/* The clock is used for every record: copy it once, and refuse a shift
	 * that evr_clock_to_mono_ns() could not take (checked on the copy: the
	 * producer may rewrite the header meanwhile). */
	c->clock = hdr->clock;
	/* The producer writes the pid it knows itself by: in a pid namespace of
	 * its own (a container), not the one we know it by (Hello's ns_pid). */
	if (hdr->producer_pid != (c->info.ns_pid ? c->info.ns_pid : (uint32_t)c->pid) ||
	    c->clock.shift > 63) {
		evr_shm_session_unmap(hdr);
		close(fds[1]);
		return fail(errbuf, errlen, -EBADMSG,
			    "process %d sent session memory that does not validate", (int)c->pid);
	}
	c->hdr = hdr;
	c->sync_next_ts = UINT64_MAX;
	if (c->clock.kind == EVR_CLOCK_TSC && c->clock.ticks_per_sec) {
		struct evr_trace_sync p;

		evr_clock_sync_init(&c->sync, &c->clock);
		evr_clock_sync_point(&c->sync, 0, &p);
		c->sync_next_ts = p.ts + c->clock.ticks_per_sec;
	}
	c->doorbell_fd = fds[1];
	c->state = EVR_CLIENT_LIVE;
	evr_client_read_meta(c);
	return 0;
}

int evr_client_stop_send(struct evr_client *c, char *errbuf, size_t errlen)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__StopSession m = EVR__STOP_SESSION__INIT;
	int err;

	if (!c)
		return -EINVAL;
	if (c->state == EVR_CLIENT_IDLE)
		return fail(errbuf, errlen, -EINVAL, "no session to stop");
	if (c->state != EVR_CLIENT_LIVE || c->stop_sent)
		return 0;
	req.body_case = EVR__REQUEST__BODY_STOP;
	req.stop = &m;
	/* A few bytes into a socket buffer that a stopped agent leaves as good as
	 * empty: never a wait in practice, and none allowed (0). */
	err = evr_client_send(c, &req, 0, errbuf, errlen);
	if (err < 0) {
		evr_client_refresh_state(c);
		return err;
	}
	c->stop_sent = true;
	c->stop_closed = err == 1;
	return 0;
}

int evr_client_stop_wait(struct evr_client *c, int timeout_ms, char *errbuf, size_t errlen)
{
	Evr__Reply *r;
	int err;

	if (!c)
		return -EINVAL;
	if (!c->stop_sent)
		return c->state == EVR_CLIENT_IDLE ?
		       fail(errbuf, errlen, -EINVAL, "no session to stop") : 0;
	c->stop_sent = false;
	err = evr_client_recv(c, EVR__REPLY__BODY_STOP, c->stop_closed ? -1 :
			      timeout_ms < 0 ? 0 : timeout_ms, NULL, 0, &r, errbuf, errlen);
	if (err < 0) {
		evr_client_refresh_state(c);
		return err;
	}
	evr_pb_reply_free(r);
	c->state = EVR_CLIENT_ENDED;
	return 0;
}

int evr_client_stop(struct evr_client *c, char *errbuf, size_t errlen)
{
	int err;

	if (!c)
		return -EINVAL;
	if (c->state == EVR_CLIENT_LIVE && !c->stop_sent) {
		err = evr_client_stop_send(c, errbuf, errlen);
		if (err < 0)
			return err;
	}
	return evr_client_stop_wait(c, EVR_CLIENT_SESSION_TIMEOUT_MS, errbuf, errlen);
}

bool evr_client_seen_stopped(const struct evr_client *c)
{
	return c && c->seen_stopped;
}

bool evr_client_unanswered(const struct evr_client *c)
{
	return c && c->stale_replies > 0;
}

/*
 * As evr_client_refresh_state(), for readers that found nothing: the ended
 * flag every time, the system call once per EVR_CLIENT_ALIVE_CHECK_NS.
 */
void evr_client_refresh_state_lazy(struct evr_client *c)
{
	if (c->state != EVR_CLIENT_LIVE)
		return;
	if (!c->sock_eof && !__atomic_load_n(&c->hdr->ended, __ATOMIC_ACQUIRE) &&
	    (c->alive_watched || evr_mono_ns() - c->alive_checked_ns < EVR_CLIENT_ALIVE_CHECK_NS))
		return;
	evr_client_refresh_state(c);
}

/* ---- state ------------------------------------------------------------------------------ */

static void set_gone(struct evr_client *c)
{
	c->state = EVR_CLIENT_GONE;
	if (c->reader)
		evr_reader_producer_gone(c->reader);
	if (c->spans)
		evr_span_reader_producer_gone(c->spans);
}

void evr_client_refresh_state(struct evr_client *c)
{
	struct pollfd pfd[2];
	nfds_t n = 0;

	if (c->state != EVR_CLIENT_LIVE)
		return;
	/* Pairs with the store-release of ended by the producer's session stop. */
	if (__atomic_load_n(&c->hdr->ended, __ATOMIC_ACQUIRE)) {
		c->state = EVR_CLIENT_ENDED;
		return;
	}
	if (c->sock_eof) {
		set_gone(c);
		return;
	}
	c->alive_checked_ns = evr_mono_ns();
	if (c->pidfd >= 0)
		pfd[n++] = (struct pollfd){ .fd = c->pidfd, .events = POLLIN };
	if (c->sock >= 0)
		pfd[n++] = (struct pollfd){ .fd = c->sock, .events = POLLIN | POLLRDHUP };
	if (!n || poll(pfd, n, 0) <= 0)
		return;
	if (c->pidfd >= 0 && (pfd[0].revents & POLLIN)) {
		set_gone(c);
		return;
	}
	if (c->sock >= 0 && pfd[n - 1].revents) {
		/* The agent sends nothing unasked: this is EOF (or junk we keep). */
		int ret = evr_frame_rx_read(&c->rx, c->sock);

		evr_frame_rx_drop_fds(&c->rx);
		if (ret == 0 || (ret < 0 && ret != -EAGAIN)) {
			c->sock_eof = true;
			/* The producer may have ended it just before closing. */
			if (__atomic_load_n(&c->hdr->ended, __ATOMIC_ACQUIRE))
				c->state = EVR_CLIENT_ENDED;
			else
				set_gone(c);
		}
	}
}

enum evr_client_state evr_client_state(const struct evr_client *c)
{
	if (!c)
		return EVR_CLIENT_IDLE;
	/* Pairs with the store-release of ended by the producer's session stop. */
	if (c->state == EVR_CLIENT_LIVE && __atomic_load_n(&c->hdr->ended, __ATOMIC_ACQUIRE))
		return EVR_CLIENT_ENDED;
	return c->state;
}

bool evr_client_drained(const struct evr_client *c)
{
	if (!c || (c->state != EVR_CLIENT_ENDED && c->state != EVR_CLIENT_GONE))
		return false;
	if (c->reader)
		return evr_reader_ended(c->reader);
	if (c->spans)
		return evr_span_reader_drained(c->spans);
	return false;
}

const struct evr_schema_set *evr_client_schemas(const struct evr_client *c)
{
	return c ? c->schemas : NULL;
}

const struct evr_shm_hdr *evr_client_shm(const struct evr_client *c)
{
	return c ? c->hdr : NULL;
}

int evr_client_meta_next(struct evr_client *c, uint64_t *pos, uint32_t *ret_kind,
			 const void **ret_data, uint32_t *ret_len)
{
	if (!c || !c->hdr)
		return -EINVAL;
	return evr_shm_meta_next(c->hdr, pos, ret_kind, ret_data, ret_len);
}

/* ---- records ----------------------------------------------------------------------------- */

/* Read from the start; in discard mode, hold the writers back (gating). */
static uint32_t reader_flags(const struct evr_client *c)
{
	return EVR_READER_FROM_START | (c->hdr->mode == EVR_MODE_DISCARD ? EVR_READER_GATING : 0);
}

static int use_records(struct evr_client *c)
{
	int err;

	if (!c || c->state == EVR_CLIENT_IDLE || c->spans)
		return -EINVAL;
	if (c->reader)
		return 0;
	err = evr_reader_new(c->hdr, c->doorbell_fd, reader_flags(c), &c->reader);
	if (err < 0)
		return err;
	if (c->state == EVR_CLIENT_GONE)
		evr_reader_producer_gone(c->reader);
	return 0;
}

/*
 * A record a second past the last sync point: take another and convert on the
 * line through the last two (anchored at the newer one, where records are
 * converted next). After a jump, the new point and the previous rate.
 */
static void client_resync(struct evr_client *c)
{
	struct evr_trace_sync q, p = c->sync.prev;
	struct evr_clock_calib line;

	evr_clock_sync_point(&c->sync, 0, &q);
	c->sync_next_ts = q.ts + c->hdr->clock.ticks_per_sec;
	if (!(q.flags & EVR_SYNC_DISCONT) && q.ts > p.ts && q.mono_ns >= p.mono_ns) {
		evr_trace_line_through(p.ts, p.mono_ns, q.ts, q.mono_ns, &line);
		c->clock.mult = line.mult;
		c->clock.shift = line.shift;
	}
	c->clock.ts_base = q.ts;
	c->clock.mono_base = q.mono_ns;
	c->clock.real_base = q.real_ns;
}

int evr_client_next(struct evr_client *c, struct evr_event_view *ret)
{
	struct evr_record rec;
	int n, err;

	if (!ret)
		return -EINVAL;
	err = use_records(c);
	if (err < 0)
		return err;
	n = evr_reader_next(c->reader, &rec);
	if (n == 0 && c->state == EVR_CLIENT_LIVE) {
		evr_client_refresh_state_lazy(c);
		if (c->state != EVR_CLIENT_LIVE)
			n = evr_reader_next(c->reader, &rec);
	}
	if (n <= 0)
		return n;
	memset(ret, 0, sizeof(*ret));
	ret->type = rec.type;
	ret->ring = rec.ring;
	ret->tid = rec.tid;
	if (__builtin_expect(rec.ts >= c->sync_next_ts, 0))
		client_resync(c);
	ret->ts_ns = evr_clock_to_mono_ns(&c->clock, rec.ts);
	if (rec.type == EVR_REC_LOST) {
		ret->lost = rec.lost;
		return 1;
	}
	ret->rid = rec.event_id;
	ret->payload = rec.payload;
	ret->len = rec.len;
	if (rec.flags & EVR_REC_F_STACK) {
		struct evr_stack_hdr sh;

		/* The stack block precedes the payload (<evring/abi.h>); a block that
		 * does not fit leaves the record undecodable, as a bad payload would. */
		if (rec.len >= sizeof(sh)) {
			memcpy(&sh, rec.payload, sizeof(sh));
			if (sh.nframes <= EVR_STACK_MAX_FRAMES &&
			    rec.len - sizeof(sh) >= 8u * sh.nframes) {
				ret->nframes = sh.nframes;
				ret->stack_flags = sh.flags;
				ret->frames = (const uint8_t *)rec.payload + sizeof(sh);
				ret->payload = (const uint8_t *)rec.payload + sizeof(sh) +
					       8u * sh.nframes;
				ret->len = rec.len - (uint32_t)sizeof(sh) - 8u * sh.nframes;
			}
		}
	}
	ret->schema = evr_schema_set_lookup(c->schemas, rec.event_id);
	if (!ret->schema) {
		/* Described before its first record was written (<evring/abi.h>). */
		evr_client_read_meta(c);
		ret->schema = evr_schema_set_lookup(c->schemas, rec.event_id);
	}
	return 1;
}

void evr_client_release(struct evr_client *c)
{
	if (c && c->reader)
		evr_reader_release(c->reader);
}

/* ---- waiting ------------------------------------------------------------------------------ */

int evr_client_wait(struct evr_client *c, int timeout_ms)
{
	return evr_client_wait_fd(c, -1, timeout_ms);
}

int evr_client_wait_fd(struct evr_client *c, int fd, int timeout_ms)
{
	struct pollfd extra[3];
	unsigned int n = 0;
	int ret;

	if (!c || c->state == EVR_CLIENT_IDLE)
		return -EINVAL;
	evr_client_refresh_state(c);
	if (c->state != EVR_CLIENT_LIVE)
		return 1;	/* drain what is left */
	/* Nothing read yet: do not choose between records and spans here. */
	if (!c->reader && !c->spans)
		return 1;
	/* Idle is when a TSC that went back (no record reaches the next point's
	 * time then) is noticed: by the clocks, not the records. */
	if (c->reader && c->sync_next_ts != UINT64_MAX) {
		if (evr_clock_sync_due(&c->sync, evr_mono_ns()))
			client_resync(c);
	}
	if (c->pidfd >= 0)
		extra[n++] = (struct pollfd){ .fd = c->pidfd, .events = POLLIN };
	if (c->sock >= 0 && !c->sock_eof)
		extra[n++] = (struct pollfd){ .fd = c->sock, .events = POLLIN | POLLRDHUP };
	if (fd >= 0)
		extra[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (c->spans)
		ret = evr_span_reader_wait_fds(c->spans, c->doorbell_fd, extra, n, timeout_ms);
	else
		ret = evr_reader_wait_fds(c->reader, extra, n, timeout_ms);
	if (ret < 0)
		return ret;
	evr_client_refresh_state(c);
	if (c->state != EVR_CLIENT_LIVE)
		return 1;
	return ret;
}

void evr_client_wait_set(const struct evr_client *c, struct evr_client_wait_set *ret)
{
	if (!ret)
		return;
	*ret = (struct evr_client_wait_set){ .doorbell = -1, .pidfd = -1, .sock = -1 };
	if (!c || c->state == EVR_CLIENT_IDLE)
		return;
	ret->doorbell = c->doorbell_fd;
	ret->pidfd = c->pidfd;
	ret->sock = c->sock_eof ? -1 : c->sock;
}

void evr_client_watch_alive(struct evr_client *c)
{
	if (c)
		c->alive_watched = true;
}

void evr_client_check_alive(struct evr_client *c)
{
	if (c)
		evr_client_refresh_state(c);
}

/* ---- spans ---------------------------------------------------------------------------------- */

static int use_spans(struct evr_client *c)
{
	int err;

	if (!c || c->state == EVR_CLIENT_IDLE || c->reader)
		return -EINVAL;
	if (c->spans)
		return 0;
	err = evr_span_reader_new(c->hdr, reader_flags(c), &c->spans);
	if (err < 0)
		return err;
	if (c->state == EVR_CLIENT_GONE)
		evr_span_reader_producer_gone(c->spans);
	return 0;
}

int evr_client_span_get(struct evr_client *c, uint32_t flags, struct evr_span *ret)
{
	uint32_t sflags = flags & EVR_CLIENT_SPAN_WHOLE ? EVR_SPAN_WHOLE : 0;
	struct evr_shm_span sp;
	int n, err;

	if (!ret || (flags & ~EVR_CLIENT_SPAN_WHOLE))
		return -EINVAL;
	err = use_spans(c);
	if (err < 0)
		return err;
	n = evr_span_reader_get(c->spans, sflags, &sp);
	if (n == 0 && c->state == EVR_CLIENT_LIVE) {
		/* A system call, but only when the rings had nothing ready, and
		 * at most every EVR_CLIENT_ALIVE_CHECK_NS. */
		evr_client_refresh_state_lazy(c);
		if (c->state != EVR_CLIENT_LIVE)
			n = evr_span_reader_get(c->spans, sflags, &sp);
	}
	if (n <= 0)
		return n;
	*ret = (struct evr_span){ .ring = sp.ring, .pos = sp.pos, .data = sp.data, .len = sp.len,
				  .events = sp.events, .lost = sp.lost };
	return 1;
}

int evr_client_span_arm(struct evr_client *c)
{
	int err = use_spans(c);

	if (err < 0)
		return err;
	if (c->state != EVR_CLIENT_LIVE)
		return 1;
	return evr_span_reader_arm(c->spans);
}

int evr_client_span_next(struct evr_client *c, struct evr_span *ret)
{
	return evr_client_span_get(c, 0, ret);
}

int evr_client_span_done(struct evr_client *c, const struct evr_span *sp)
{
	struct evr_shm_span s;

	if (!c || !sp || !c->spans)
		return -EINVAL;
	s = (struct evr_shm_span){ .ring = sp->ring, .pos = sp->pos, .data = sp->data,
				   .len = sp->len };
	return evr_span_reader_done(c->spans, &s);
}

int evr_client_span_hold(struct evr_client *c, bool on)
{
	int err = use_spans(c);

	if (err < 0)
		return err;
	evr_span_reader_hold(c->spans, on);
	return 0;
}

void evr_client_span_release(struct evr_client *c)
{
	if (c)
		evr_span_reader_release(c->spans);
}

uint64_t evr_client_span_pos(const struct evr_client *c, uint32_t ring)
{
	return c ? evr_span_reader_pos(c->spans, ring) : 0;
}

void evr_client_span_release_to(struct evr_client *c, uint32_t ring, uint64_t pos)
{
	if (c)
		evr_span_reader_release_to(c->spans, ring, pos);
}

uint64_t evr_client_span_backlog(const struct evr_client *c)
{
	return c ? evr_span_reader_backlog(c->spans) : 0;
}

uint64_t evr_client_span_unread(const struct evr_client *c)
{
	return c ? evr_span_reader_unread(c->spans) : 0;
}

int evr_client_span_final_lost(struct evr_client *c, uint32_t ring, uint64_t *ret_count)
{
	if (!c || !c->spans)
		return -EINVAL;
	return evr_span_reader_final_lost(c->spans, ring, ret_count);
}

int evr_span_count(const struct evr_span *sp, uint64_t *ret_events, uint64_t *ret_lost)
{
	if (!sp || !ret_events || !ret_lost)
		return -EINVAL;
	return evr_span_walk(sp->data, sp->len, sp->pos, ret_events, ret_lost);
}
