/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The trace reader's time-ordered merge of the rings (trace-merge.c). */
#ifndef EVR_TRACE_MERGE_H
#define EVR_TRACE_MERGE_H

#include "trace-state.h"

/* Free the merge's per-ring buffers and heap (evr_trace_reader_free()). */
void evr_trace_merge_free(struct evr_trace_reader *r);

#endif /* EVR_TRACE_MERGE_H */
