/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libevring-export's private helpers (report-util.c): JSON and HTML string
 * escaping of untrusted bytes, field values as JSON (integers beyond 2^53 as
 * strings), the u32-keyed hash table, the error message buffer, and numbers
 * for people.
 */
#ifndef EVR_EXPORT_INTERNAL_H
#define EVR_EXPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <evring/export.h>

/* ---- strings ----------------------------------------------------------------- */

int evr_rpt_json_cstr(struct evr_strbuf *sb, const char *s);

/*
 * Append @v as a JSON value, as evr_event_to_json() does, except that integers
 * a double cannot hold exactly (beyond +-2^53) are strings, so that JSON
 * readers that parse numbers as doubles (browsers, Perfetto) keep them exact.
 * Return: 0 or -ENOMEM.
 */
int evr_rpt_json_value(struct evr_strbuf *sb, const struct evr_field_value *v);

/*
 * evr_rpt_fmt_double() - @v exactly as snprintf("%.17g") writes it (what every
 * JSON output of evring writes for a double: it reads back to the same value),
 * without printf for the values traces hold most (normal numbers from 1e-4 to
 * 1e16: digits computed with exact 128-bit integer arithmetic).
 * @buf: at least 32 bytes. Return: the length written.
 */
int evr_rpt_fmt_double(char *buf, double v);

/*
 * evr_rpt_json_double() - append @v as a JSON number (evr_rpt_fmt_double()),
 * or null when it is NaN or an infinity: JSON has no spelling for them, and
 * null is what every JSON writer of evring puts there (evr_event_to_json()).
 * Return: 0 or -ENOMEM.
 */
int evr_rpt_json_double(struct evr_strbuf *sb, double v);

/*
 * Append the fields of an EVENT view as JSON members (no braces): "name":value,...
 * An undescribed event gives "rid":N,"payload":"HEX"; a payload that does not
 * decode gives "payload":"HEX","error":"...". Sets *@ret_bad for both.
 * Return: 0 or -ENOMEM.
 */
int evr_rpt_json_fields(struct evr_strbuf *sb, const struct evr_event_view *v, bool *ret_bad);

/* evr_rpt_html_str() and evr_rpt_html_cstr() are public: <evring/export.h>. */

/* ---- u32 -> pointer hash ------------------------------------------------------- */

/* The value of @key, or NULL. */
void *evr_rpt_map_get(const struct evr_rpt_map *m, uint32_t key);
/* Insert or replace. Return: 0 or -ENOMEM. */
int evr_rpt_map_put(struct evr_rpt_map *m, uint32_t key, void *val);
/* Frees the table, not the values. */
void evr_rpt_map_fini(struct evr_rpt_map *m);

/* ---- errors and numbers --------------------------------------------------------- */

/*
 * Format a one-line reason into @buf (if not NULL and @len > 0) and return
 * @err, so that a failure reads `return evr_export_fail(err, errlen, -EIO, ...)`.
 */
__attribute__((format(printf, 4, 5)))
int evr_export_fail(char *buf, size_t len, int err, const char *fmt, ...);

#endif /* EVR_EXPORT_INTERNAL_H */
