// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The monitor's connections, as seen before and beside libmicrohttpd: who is
 * connected, from where, and until when. Against a client that holds many
 * connections open without finishing a request (slowloris), before it could
 * be asked for a key:
 *
 * - every connection has a deadline for its request's headers (--header-timeout,
 *   30 s in all, counted from the accept or from the previous answer, as
 *   Kestrel does); MHD's idle timeout alone lets a client that sends a byte now
 *   and then stay for ever;
 * - a peer that is not a local process of our user (asked of the kernel at the
 *   accept) is a stranger: strangers get at most --max-peer-connections
 *   connections per address, and all of them together at most max-connections
 *   less a reserve, so that our own user and key holders always find room;
 *   a stranger that presents the key stops counting as one;
 * - refusals and timeouts are logged at most once a second, with a count.
 *
 * A housekeeping thread ends connections past their deadline by shutting down
 * their socket: through a dup of it, kept until MHD says the connection is
 * closed, so the number can never belong to another file by then. Streams set
 * a deadline too (their duration, plus the idle timeout for a client that does
 * not read). The same thread runs its owner's chore (main.c: kept traces' expiry).
 *
 * Everything here is under conns_lock; the callbacks run on MHD's threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "monitor.h"

#define TICK_MS 250

/* At most one line a second per kind; the lines between are counted. */
static void ratelog(struct evr_mon *m, enum evr_mon_refusal kind, const char *what)
{
	uint64_t now_s = evr_mono_ns() / 1000000000u;
	struct evr_mon_ratelog *rl = &m->conns.log[kind];

	rl->pending++;
	if (rl->last_s == now_s)
		return;
	fprintf(stderr, "evring monitor: %s (%llu since the last such line)\n", what,
		(unsigned long long)rl->pending);
	rl->pending = 0;
	rl->last_s = now_s;
}

static bool same_peer(const struct evr_mon_conn *a, const struct evr_mon_conn *b)
{
	return a->peer_len == b->peer_len && !memcmp(a->peer, b->peer, a->peer_len);
}

/* The peer's address from @sa (@len bytes) into @c; none for other families. */
static void peer_from(const struct sockaddr *sa, socklen_t len, struct evr_mon_conn *c)
{
	c->peer_len = 0;
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		memcpy(c->peer, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		c->peer_len = 4;
	} else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		memcpy(c->peer, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		c->peer_len = 16;
	}
}

static void peer_of(int fd, struct evr_mon_conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	c->peer_len = 0;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	peer_from((const struct sockaddr *)&ss, sl, c);
}

static unsigned reserve_of(const struct evr_mon *m)
{
	unsigned r = m->o.max_connections / 4;

	return r > 64 ? 64 : r ? r : 1;
}

/*
 * Would a stranger's connection like @c be refused? Counts and logs the refusal.
 * Under conns_lock.
 */
static bool stranger_refused(struct evr_mon *m, const struct evr_mon_conn *c)
{
	struct evr_mon_conns *cs = &m->conns;
	unsigned same = 0;

	for (struct evr_mon_conn *o = cs->head; o; o = o->next)
		same += o->stranger && same_peer(o, c);
	if (same >= m->o.max_peer_connections) {
		cs->refused_peer++;
		ratelog(m, EVR_MON_REFUSED_PEER, "refused a connection: the peer has "
			"--max-peer-connections open already");
		return true;
	}
	if (cs->strangers + reserve_of(m) >= m->o.max_connections) {
		cs->refused_total++;
		ratelog(m, EVR_MON_REFUSED_TOTAL, "refused a connection: the connections "
			"not of this user fill --max-connections less the reserve");
		return true;
	}
	return false;
}

/*
 * Refused here, a stranger's connection never gets a thread: after the open
 * (below), MHD had given it one already, and a burst of refusals piled up
 * threads for a moment (40 over the base for 200 connections, monitor_slowloris).
 */
bool evr_mon_conn_admit(struct evr_mon *m, const struct sockaddr *sa, socklen_t len)
{
	struct evr_mon_conn probe = { 0 };
	bool refused;

	if (!sa)
		return true;
	/* What evr_mon_peer_is_local_user() would ask the socket about: the open's. */
	peer_from(sa, len, &probe);
	if (!probe.peer_len || evr_mon_addr_is_loopback(sa, len))
		return true;
	pthread_mutex_lock(&m->conns.lock);
	refused = stranger_refused(m, &probe);
	pthread_mutex_unlock(&m->conns.lock);
	return !refused;
}

struct evr_mon_conn *evr_mon_conn_open(struct evr_mon *m, int fd)
{
	struct evr_mon_conn *c = calloc(1, sizeof(*c));
	struct evr_mon_conns *cs = &m->conns;

	if (!c)
		return NULL;
	c->fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	c->local_user = fd >= 0 && evr_mon_peer_is_local_user(fd) == 1;
	peer_of(fd, c);
	pthread_mutex_lock(&cs->lock);
	c->deadline_ns = evr_mono_ns() + (uint64_t)m->o.header_timeout_s * 1000000000u;
	if (!c->local_user) {
		if (stranger_refused(m, c)) {
			c->refused = true;
		} else {
			c->stranger = true;
			cs->strangers++;
		}
	}
	c->next = cs->head;
	if (cs->head)
		cs->head->prev = c;
	cs->head = c;
	pthread_mutex_unlock(&cs->lock);
	/* MHD reads an end of file at once and closes the connection. */
	if (c->refused && c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	return c;
}

void evr_mon_conn_close(struct evr_mon *m, struct evr_mon_conn *c)
{
	struct evr_mon_conns *cs = &m->conns;

	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		cs->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->stranger)
		cs->strangers--;
	pthread_mutex_unlock(&cs->lock);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

void evr_mon_conn_authenticated(struct evr_mon *m, struct evr_mon_conn *c)
{
	pthread_mutex_lock(&m->conns.lock);
	if (c->stranger) {
		c->stranger = false;
		m->conns.strangers--;
	}
	pthread_mutex_unlock(&m->conns.lock);
}

void evr_mon_conn_set_deadline(struct evr_mon *m, struct evr_mon_conn *c, uint64_t ns)
{
	if (!c)
		return;
	pthread_mutex_lock(&m->conns.lock);
	c->deadline_ns = ns;
	pthread_mutex_unlock(&m->conns.lock);
}

static void *housekeeper(void *arg)
{
	struct evr_mon *m = arg;
	struct evr_mon_conns *cs = &m->conns;

	pthread_mutex_lock(&cs->lock);
	while (!cs->stop) {
		struct timespec ts;
		uint64_t now = evr_mono_ns();

		for (struct evr_mon_conn *c = cs->head; c; c = c->next) {
			if (!c->deadline_ns || now < c->deadline_ns)
				continue;
			c->deadline_ns = 0;
			cs->timed_out++;
			ratelog(m, EVR_MON_TIMED_OUT, "closed a connection past its deadline "
				"(--header-timeout for a request's headers, or a stream's end)");
			if (c->fd >= 0)
				shutdown(c->fd, SHUT_RDWR);
		}
		pthread_mutex_unlock(&cs->lock);
		if (cs->chore)
			cs->chore(m);
		pthread_mutex_lock(&cs->lock);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!cs->stop)
			pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

int evr_mon_conns_start(struct evr_mon *m)
{
	struct evr_mon_conns *cs = &m->conns;
	pthread_condattr_t ca;
	int r;

	pthread_mutex_init(&cs->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->wake, &ca);
	pthread_condattr_destroy(&ca);
	cs->inited = true;
	r = pthread_create(&cs->thread, NULL, housekeeper, m);
	if (r)
		return -r;
	cs->started = true;
	return 0;
}

void evr_mon_conns_stop(struct evr_mon *m)
{
	struct evr_mon_conns *cs = &m->conns;

	if (!cs->inited)
		return;
	if (cs->started) {
		pthread_mutex_lock(&cs->lock);
		cs->stop = true;
		pthread_cond_signal(&cs->wake);
		pthread_mutex_unlock(&cs->lock);
		pthread_join(cs->thread, NULL);
		cs->started = false;
	}
}
