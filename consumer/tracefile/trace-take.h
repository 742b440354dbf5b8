/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The trace reader's small chunks (trace-take.c): the file header and the
 * payloads taken whole into the reader (process, session, metadata, threads,
 * sync points, losses, END), for the scan, the stream and the salvage code.
 */
#ifndef EVR_TRACE_TAKE_H
#define EVR_TRACE_TAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-state.h"

/* Validate (and repair one bit of) the file header; set hdr_size, make the schema set. */
int evr_trace_check_file_hdr(struct evr_trace_reader *r, struct evr_trace_file_hdr *fh,
			     char *errbuf, size_t errlen);

/* The chunk kinds read whole while scanning (all but EVENTS and unknown ones). */
bool evr_trace_small_kind(uint32_t kind);

/* Take a small chunk's checked payload (process, session, metadata...). */
int evr_trace_scan_small(struct evr_trace_reader *r, uint64_t off,
			 const struct evr_trace_chunk_hdr *h, const uint8_t *p, char *errbuf,
			 size_t errlen);

/* Sort the thread names by tid and keep the last one of each tid. */
void evr_trace_threads_finish(struct evr_trace_reader *r);

/* Decode a SESSION / METADATA payload (also for the salvage code). */
int evr_trace_take_session(struct evr_trace_reader *r, const uint8_t *data, uint32_t len,
			   char *errbuf, size_t errlen, uint64_t off);
int evr_trace_take_metadata_lenient(struct evr_trace_reader *r, const uint8_t *data, uint32_t len,
				    uint32_t *ret_used, uint32_t *ret_skipped);

#endif /* EVR_TRACE_TAKE_H */
