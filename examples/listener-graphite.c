// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * listener-graphite: a program that sends its own counters to Graphite, from
 * inside, with an in-process listener (<evring/listener.h>): the seed's
 * canonical example of consuming aggregated trace data in-process.
 *
 * A small "shop" takes orders on two threads. Its provider "Shop" has three
 * counters: orders (incrementing), order-latency (a histogram, microseconds)
 * and queue-depth (a gauge). A listener asks for the counters of Shop and of
 * the built-in Process provider every --interval, and its callback writes each
 * sample to carbon in the plaintext protocol:
 *
 *   PREFIX.Shop.orders.rate 1987.2 1795522273
 *   PREFIX.Shop.order-latency.p99 212 1795522273
 *
 * The callback runs on the listener's own thread, so a slow or absent Graphite
 * never holds up the threads taking orders: the writes block only that thread
 * (and the session drops, and counts, what it cannot keep). With no Graphite
 * listening, samples are dropped and counted, and the connection is tried
 * again at the next sample.
 *
 *   listener-graphite [--to HOST:PORT] [--prefix P] [--seconds N] [--interval MS]
 *
 * Prints "ready PID" when it runs, and at the end the orders it took and what
 * it sent: "orders N; sent L lines in S samples, D samples not sent".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <evring/listener.h>

#define SHOP_EVENTS(EVENT) EVENT(shop_order, "Order", 1, EVR_LEVEL_VERBOSE, 0x1, (u64, id))

EVR_PROVIDER_DECLARE(shop, SHOP_EVENTS)
EVR_PROVIDER_DEFINE(shop, "Shop", SHOP_EVENTS)

struct sender {
	const char *host, *port, *prefix;
	int fd;
	uint64_t lines, samples, unsent;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t orders_samples;	/* samples of "orders" so far (lock) */
};

struct stat_value {
	const char *stat;
	double v;
};

static struct evr_counter *orders, *latency, *depth;
static _Atomic uint64_t queued, taken;
static atomic_bool stop;

static double queue_depth(void *ctx)
{
	return (double)atomic_load_explicit(&queued, memory_order_relaxed);
}

/* A name as one Graphite path component: [A-Za-z0-9_-], anything else '_'. */
static void put_name(char **p, const char *end, const char *s, size_t n)
{
	for (size_t i = 0; i < n && *p < end; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '_';

		*(*p)++ = ok ? c : '_';
	}
}

static int connect_to(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *a;
	int fd = -1;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	for (a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

/* The listener's callback: one sample, its lines, one write. */
static void on_counter(const struct evr_counter_sample *s, void *ctx)
{
	struct sender *g = ctx;
	char buf[2048], path[512], *p = path, *end = path + sizeof(path) - 1;
	struct stat_value v[5];
	int nv = 0, len = 0;
	time_t ts = time(NULL);

	put_name(&p, end, g->prefix, strlen(g->prefix));
	*p++ = '.';
	put_name(&p, end, s->provider, strlen(s->provider));
	*p++ = '.';
	put_name(&p, end, s->name, s->name_len);
	*p = 0;
	switch (s->kind) {
	case EVR_SAMPLE_RATE:
		v[nv++] = (struct stat_value){ "rate", s->rate_per_s };
		v[nv++] = (struct stat_value){ "increment", s->increment };
		break;
	case EVR_SAMPLE_HISTOGRAM:
		v[nv++] = (struct stat_value){ "count", (double)s->count };
		if (s->count) {
			v[nv++] = (struct stat_value){ "p50", s->p50 };
			v[nv++] = (struct stat_value){ "p90", s->p90 };
			v[nv++] = (struct stat_value){ "p99", s->p99 };
		}
		break;
	case EVR_SAMPLE_MEAN:
		v[nv++] = (struct stat_value){ "count", (double)s->count };
		if (s->count)
			v[nv++] = (struct stat_value){ "mean", s->mean };
		break;
	default:
		v[nv++] = (struct stat_value){ "value", s->value };
	}
	for (int i = 0; i < nv; i++)
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, "%s.%s %.17g %lld\n", path,
				v[i].stat, v[i].v, (long long)ts);
	if (g->fd < 0)
		g->fd = connect_to(g->host, g->port);
	if (g->fd >= 0 && send(g->fd, buf, (size_t)len, MSG_NOSIGNAL) == len) {
		g->lines += (uint64_t)nv;
		g->samples++;
	} else {
		/* Down or gone: this sample is not sent; try again with the next. */
		if (g->fd >= 0)
			close(g->fd);
		g->fd = -1;
		g->unsent++;
	}
	if (!strcmp(s->provider, "Shop") && s->name_len == 6 && !memcmp(s->name, "orders", 6)) {
		pthread_mutex_lock(&g->lock);
		g->orders_samples++;
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
	}
}

static void *clerk(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	while (!atomic_load(&stop)) {
		struct timespec t0, t1, pause = { 0, 200000 + (rand_r(&seed) % 800) * 1000 };
		uint64_t id = atomic_fetch_add(&taken, 1);

		atomic_fetch_add(&queued, 1);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		nanosleep(&pause, NULL);	/* the work of taking an order */
		clock_gettime(CLOCK_MONOTONIC, &t1);
		shop_order(id);
		evr_counter_add(orders, 1);
		evr_histogram_record(latency, (double)(t1.tv_sec - t0.tv_sec) * 1e6 +
						      (double)(t1.tv_nsec - t0.tv_nsec) / 1e3);
		atomic_fetch_sub(&queued, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 's' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct evr_counter_desc d_orders = { .name = "orders", .display_name = "Orders taken",
					     .kind = EVR_COUNTER_INCREMENT };
	struct evr_counter_desc d_latency = { .name = "order-latency", .unit = "us",
					      .display_name = "Order latency",
					      .kind = EVR_COUNTER_HISTOGRAM };
	struct evr_counter_desc d_depth = { .name = "queue-depth", .display_name = "Queue depth",
					    .kind = EVR_COUNTER_GAUGE, .poll = queue_depth };
	struct sender g = { .host = "127.0.0.1", .port = "2003", .prefix = "shop", .fd = -1,
			    .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	uint64_t seen;
	struct evr_listener_opts o = { .providers = "Shop:0x0:0,Process:0x0:0",
				       .counter_interval_ms = 1000, .on_counter = on_counter,
				       .ctx = &g };
	struct evr_listener *l;
	static char target[300];
	double seconds = 10;
	pthread_t th[2];
	char err[256];
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		char *colon;

		switch (c) {
		case 't':
			snprintf(target, sizeof(target), "%s", optarg);
			colon = strrchr(target, ':');
			if (!colon || colon == target) {
				fprintf(stderr, "listener-graphite: --to HOST:PORT\n");
				return 2;
			}
			*colon = 0;
			g.host = target;
			g.port = colon + 1;
			break;
		case 'p':
			g.prefix = optarg;
			break;
		case 's':
			seconds = atof(optarg);
			break;
		case 'i':
			o.counter_interval_ms = (uint32_t)atoi(optarg);
			break;
		default:
			fprintf(stderr, "Usage: listener-graphite [--to HOST:PORT] [--prefix P] "
				"[--seconds N] [--interval MS]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (evr_counter_create(&shop, &d_orders, &orders) < 0 ||
	    evr_counter_create(&shop, &d_latency, &latency) < 0 ||
	    evr_counter_create(&shop, &d_depth, &depth) < 0) {
		fprintf(stderr, "listener-graphite: cannot create the counters\n");
		return 1;
	}
	if (evr_listener_new(&o, &l, err, sizeof(err)) < 0) {
		fprintf(stderr, "listener-graphite: %s\n", err);
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, clerk, (void *)(i + 1));
	{
		struct timespec t = { (time_t)seconds,
				      (long)((seconds - (double)(time_t)seconds) * 1e9) };

		nanosleep(&t, NULL);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* The orders taken since the last sample go out with the next one: wait
	 * for it, so that Graphite has every order. */
	pthread_mutex_lock(&g.lock);
	seen = g.orders_samples;
	while (g.orders_samples == seen)
		pthread_cond_wait(&g.cond, &g.lock);
	pthread_mutex_unlock(&g.lock);
	evr_listener_free(l);
	if (g.fd >= 0)
		close(g.fd);
	printf("orders %" PRIu64 "; sent %" PRIu64 " lines in %" PRIu64 " samples, %" PRIu64
	       " samples not sent\n", atomic_load(&taken), g.lines, g.samples, g.unsent);
	evr_counter_free(orders);
	evr_counter_free(latency);
	evr_counter_free(depth);
	return 0;
}
