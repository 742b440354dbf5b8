/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef EVR_REGISTRY_INTERNAL_H
#define EVR_REGISTRY_INTERNAL_H

#include <stdatomic.h>

#include <evring/evring.h>
#include <evring/session.h>

#define EVR_EVENT_F_BUILTIN	0x1u	/* Dynamic/Json: filtered per write */
#define EVR_EVENT_F_OWNED	0x2u	/* allocated by the registry */

struct evr_provider_priv {
	struct evr_provider *next;		/* registry list */
	struct evr_event **events;		/* every event, built-ins first */
	uint32_t nr, cap;
	struct evr_event *dynamic_ev;
	struct evr_event *json_ev;
	/* What each session slot asks of this provider; read by dynamic writes. */
	_Atomic uint64_t sess_keywords[EVR_MAX_SESSIONS];
	_Atomic uint32_t sess_level[EVR_MAX_SESSIONS];
};

#endif /* EVR_REGISTRY_INTERNAL_H */
