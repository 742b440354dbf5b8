/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Payload decoding with a reason, for renderers that show why a payload failed. */
#ifndef EVR_DECODE_INTERNAL_H
#define EVR_DECODE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <evring/schema.h>

/*
 * evr_decode_fields_why() - evr_decode_fields(), and on -EBADMSG one line in
 * @why (e.g. "payload ends inside field 'size' (u64)").
 */
int evr_decode_fields_why(const struct evr_schema_event *ev, const void *payload, uint32_t len,
			  struct evr_field_value *vals, char *why, size_t whylen);

#endif /* EVR_DECODE_INTERNAL_H */
