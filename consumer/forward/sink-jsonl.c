// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The jsonl sink: one JSON object per line, for jq, Vector, Fluent Bit. The
 * objects are `evring dump --json`'s (evr_event_to_json()) with the producer's
 * pid first: {"pid":4242,"type":"event","ts":...,"fields":{...}}, and
 * {"pid":4242,"type":"lost",...} where the producer dropped events.
 *
 *   --to jsonl:PATH      a file (created or truncated; append=1 appends)
 *   --to jsonl:-         stdout (also the default without PATH)
 *   queue=SIZE           the outbox (default 8M)
 *
 * The worker writes in pieces of at most 4 KiB after poll() says the file
 * takes more, so that a reader on a pipe that stops reading (a stalled jq)
 * blocks neither the forwarder nor, past the flush deadline, its exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <evring/abi.h>

#include "forward.h"

#define OUTBOX_BYTES (8u << 20)
#define PIECE 4096u

struct jsonl {
	struct evr_fwd_sink *s;
	int fd;
	bool own_fd;
	struct evr_strbuf sb;
};

/*
 * Write @n bytes, waiting for the file in slices so that cancellation is seen.
 * Return: 0, or -errno with the bytes written before in @ret_done.
 */
static int write_all(struct jsonl *j, const char *p, size_t n, size_t *ret_done)
{
	*ret_done = 0;
	while (n) {
		struct pollfd pfd = { .fd = j->fd, .events = POLLOUT };
		ssize_t w;
		int r = poll(&pfd, 1, 100);

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0) {
			if (evr_fwd_outbox_cancelled(j->s->outbox))
				return -ECANCELED;
			continue;
		}
		w = write(j->fd, p, n < PIECE ? n : PIECE);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
		*ret_done += (size_t)w;
	}
	return 0;
}

static int deliver(void *ctx, const char *const *msg, const uint32_t *len,
		   const uint32_t *weight, uint32_t n)
{
	struct jsonl *j = ctx;
	const char *path = j->s->spec.arg && strcmp(j->s->spec.arg, "-") ? j->s->spec.arg : "stdout";
	size_t total = 0, done;
	uint32_t whole = 0;
	int r;

	(void)weight;
	if (atomic_load_explicit(&j->s->error, memory_order_relaxed))
		return -ECANCELED;
	for (uint32_t i = 0; i < n; i++)
		total += len[i];
	/* The batch's messages lie back to back: one write for all. */
	r = write_all(j, msg[0], total, &done);
	if (r == 0)
		return (int)n;
	/* The lines written whole count as sent; one cut at the flush deadline or
	 * by an error is lost with the rest. */
	for (total = 0; whole < n && total + len[whole] <= done; whole++)
		total += len[whole];
	if (r != -ECANCELED)
		evr_fwd_sink_fail(j->s, r, "cannot write %s: %s", path, strerror(-r));
	/* The outbox counts what follows as dropped once it sees the cancellation
	 * or the error (deliver() returns -ECANCELED next time). */
	return whole ? (int)whole : -ECANCELED;
}

static int jsonl_check(struct evr_fwd_sink *s, char *err, size_t errlen)
{
	size_t q;

	return evr_fwd_queue_size(s, OUTBOX_BYTES, &q, err, errlen);
}

static int jsonl_open(struct evr_fwd_sink *s, char *err, size_t errlen)
{
	const char *path = s->spec.arg;
	const char *append = evr_fwd_spec_get(&s->spec, "append");
	struct jsonl *j;
	size_t qsize;
	int r;

	r = evr_fwd_queue_size(s, OUTBOX_BYTES, &qsize, err, errlen);
	if (r < 0)
		return r;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->s = s;
	j->fd = STDOUT_FILENO;
	if (path && *path && strcmp(path, "-")) {
		int flags = O_WRONLY | O_CREAT | O_CLOEXEC;

		flags |= append && strcmp(append, "0") ? O_APPEND : O_TRUNC;
		j->fd = open(path, flags, 0644);
		if (j->fd < 0) {
			r = -errno;
			snprintf(err, errlen, "--to %s: cannot open %s: %s", s->spec.text, path,
				 strerror(errno));
			free(j);
			return r;
		}
		j->own_fd = true;
	}
	r = evr_fwd_outbox_new(qsize, EVR_FWD_DROP_NEWEST, deliver, j, &s->outbox);
	if (r < 0) {
		snprintf(err, errlen, "--to %s: cannot start its writer: %s", s->spec.text,
			 strerror(-r));
		if (j->own_fd)
			close(j->fd);
		free(j);
		return r;
	}
	s->priv = j;
	return 0;
}

/* {"pid":P, then the object of evr_event_to_json() without its '{'. */
static void push_view(struct evr_fwd_sink *s, const struct evr_fwd_event *e)
{
	struct jsonl *j = s->priv;
	size_t start;

	j->sb.len = 0;
	if (evr_strbuf_printf(&j->sb, "{\"pid\":%d,", (int)e->src->pid) < 0)
		goto too_large;
	start = j->sb.len;
	if (evr_event_to_json(e->v, &j->sb) < 0 || j->sb.len == start)
		goto too_large;
	/* Drop the object's own '{' by moving the prefix over it. */
	memmove(j->sb.buf + 1, j->sb.buf, start);
	if (evr_strbuf_append(&j->sb, "\n", 1) < 0)
		goto too_large;
	/* Failures are counted by the outbox (full) or as too large. */
	if (evr_fwd_outbox_push(s->outbox, j->sb.buf + 1, (uint32_t)(j->sb.len - 1), 1) ==
	    -EMSGSIZE)
		s->st.too_large++;
	return;
too_large:
	s->st.too_large++;
}

static void jsonl_event(struct evr_fwd_sink *s, const struct evr_fwd_event *e)
{
	push_view(s, e);
}

static void jsonl_counter(struct evr_fwd_sink *s, const struct evr_fwd_counter *c)
{
	push_view(s, c->e);
}

static void jsonl_close(struct evr_fwd_sink *s, uint64_t deadline_ns)
{
	struct jsonl *j = s->priv;

	if (!j)
		return;
	evr_fwd_outbox_close(s->outbox, deadline_ns);
	if (j->own_fd && close(j->fd) < 0 && !atomic_load(&s->error))
		evr_fwd_sink_fail(s, -errno, "cannot write %s: %s", s->spec.arg, strerror(errno));
	free(j->sb.buf);
	free(j);
	s->priv = NULL;
}

static const char *const jsonl_keys[] = { "append", "queue", NULL };

const struct evr_fwd_sink_ops evr_fwd_sink_jsonl = {
	.kind = "jsonl",
	.keys = jsonl_keys,
	.what = EVR_FWD_ALL,
	.default_level = -1,
	.check = jsonl_check,
	.open = jsonl_open,
	.event = jsonl_event,
	.counter = jsonl_counter,
	.lost = jsonl_event,
	.close = jsonl_close,
};
