// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * JSON lines: one object per event and line, exactly what `evring dump --json`
 * prints (evr_event_to_json()), LOST records included, so that a converted
 * file and a dump read the same.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export-internal.h"

int evr_convert_jsonl(struct evr_trace_reader *r, FILE *out, struct evr_convert_stats *ret,
		      char *errbuf, size_t errlen)
{
	struct evr_convert_stats st = { 0 };
	struct evr_strbuf sb = { 0 };
	struct evr_event_view v;
	int err;

	while ((err = evr_trace_reader_next(r, &v)) == 1) {
		sb.len = 0;
		err = evr_event_to_json(&v, &sb);
		if (err < 0)
			break;
		if (evr_strbuf_append(&sb, "\n", 1) < 0) {
			err = -ENOMEM;
			break;
		}
		if (fwrite(sb.buf, 1, sb.len, out) != sb.len)
			break;
		st.bytes += sb.len;
		if (v.type == EVR_REC_LOST) {
			st.lost = evr_trace_lost_add(st.lost, v.lost);
		} else {
			st.events++;
			if (!v.schema)
				st.undecodable++;
		}
	}
	free(sb.buf);
	if (err < 0)
		return evr_export_fail(errbuf, errlen, err, "%s", err == -ENOMEM ? "out of memory"
				       : evr_trace_reader_errmsg(r));
	if (fflush(out) != 0 || ferror(out)) {
		err = errno ? -errno : -EIO;
		return evr_export_fail(errbuf, errlen, err, "cannot write the output: %s",
				       strerror(-err));
	}
	*ret = st;
	return 0;
}
