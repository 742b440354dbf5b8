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

int evr_convert_jsonl_procs(struct evr_trace_reader *const *rs, const uint32_t *pids, uint32_t n,
			    FILE *out, struct evr_convert_stats *cs, char *err, size_t errlen)
{
	struct evr_event_view *v = calloc(n ? n : 1, sizeof(*v));
	int *st = calloc(n ? n : 1, sizeof(*st));
	struct evr_strbuf sb = { 0 };
	int ret = 0;

	*cs = (struct evr_convert_stats){ 0 };

	if (!v || !st) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		st[i] = evr_trace_reader_next(rs[i], &v[i]);
	for (;;) {
		int64_t k = -1;

		for (uint32_t i = 0; i < n; i++) {
			if (st[i] < 0) {
				snprintf(err, errlen, "%s", evr_trace_reader_errmsg(rs[i]));
				ret = st[i];
				goto out;
			}
			if (st[i] == 1 && (k < 0 || v[i].ts_ns < v[k].ts_ns))
				k = i;
		}
		if (k < 0)
			break;
		sb.len = 0;
		ret = evr_event_to_json(&v[k], &sb);
		if (ret < 0)
			goto out;
		if (v[k].type == EVR_REC_LOST)
			cs->lost = evr_trace_lost_add(cs->lost, v[k].lost);
		else
			cs->events++;
		if (sb.len && sb.buf[0] == '{') {
			int w = fprintf(out, "{\"pid\":%u,%.*s\n", pids[k], (int)(sb.len - 1),
					sb.buf + 1);

			if (w < 0) {
				ret = -EIO;
				goto out;
			}
			cs->bytes += (uint64_t)w;
		}
		st[k] = evr_trace_reader_next(rs[k], &v[k]);
	}
	if (fflush(out) != 0 || ferror(out))
		ret = -EIO;
out:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	else if (ret == -EIO)
		snprintf(err, errlen, "cannot write the output: %s", strerror(errno ? errno : EIO));
	free(sb.buf);
	free(v);
	free(st);
	return ret;
}
