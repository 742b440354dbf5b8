/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The trace reader on a pipe or socket, read front to back (trace-stream.c). */
#ifndef EVR_TRACE_STREAM_H
#define EVR_TRACE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-state.h"

/* Read the file header and the chunks before the first EVENTS chunk. */
int evr_trace_stream_open(struct evr_trace_reader *r, char *errbuf, size_t errlen);

/*
 * Read the next chunk of the stream. Return: 1 a chunk was read, 0 the end
 * (EOF, or damage a stream cannot skip: truncated says where), -errno (errmsg).
 */
int evr_trace_stream_read(struct evr_trace_reader *r);

/* May the record at @ts_ns be returned now, or could the stream still bring an earlier one? */
bool evr_trace_stream_ready(const struct evr_trace_reader *r, uint64_t ts_ns);

/* The ring's next queued chunk may be parsed now (its times can be converted). */
bool evr_trace_stream_can_take(const struct evr_trace_reader *r, uint32_t ring);

/* Take the ring's next queued chunk into g->buf. Return: 1 taken, 0 none ready. */
int evr_trace_stream_take(struct evr_trace_reader *r, uint32_t ring, uint32_t *ret_len);

void evr_trace_stream_free(struct evr_trace_reader *r);

#endif /* EVR_TRACE_STREAM_H */
