/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef EVR_REGISTRY_INTERNAL_H
#define EVR_REGISTRY_INTERNAL_H

#include <stdatomic.h>

#include <evring/evring.h>
#include <evring/session.h>

#define EVR_EVENT_F_BUILTIN	0x1u	/* Dynamic/Json: filtered per write */
#define EVR_EVENT_F_OWNED	0x2u	/* allocated by the registry */
/* Never written with a stack, even to a session that asks for stacks: the Heap
 * provider's Free and Munmap, which consumers match to their Alloc or Mmap by
 * address (the walk and its bytes would be paid for nothing). */
#define EVR_EVENT_F_NOSTACK	0x4u

/*
 * Registry-private metadata of one event: its packed evr.EventDesc (what goes
 * into session metadata areas and ListEvents replies) and the sessions whose
 * metadata area holds it. An event is only ever enabled in a session whose bit
 * is set here (the mask computation ANDs it in), so a consumer always finds the
 * description of a record's event (see <evring/abi.h>).
 */
struct evr_event_meta {
	uint8_t *pb;				/* packed evr.EventDesc, malloc'ed; NULL
						 * until a reader needs it (metadata.c) */
	uint32_t pb_len;
	uint64_t described;			/* bit i: in the metadata area of slot i */
};

struct evr_provider_priv {
	struct evr_provider *next;		/* registry list */
	struct evr_event **events;		/* every event, built-ins first */
	struct evr_event_meta *meta;		/* parallel to events */
	uint32_t nr, cap;
	struct evr_event *dynamic_ev;
	struct evr_event *json_ev;
	/* What each session slot asks of this provider; read by dynamic writes. */
	_Atomic uint64_t sess_keywords[EVR_MAX_SESSIONS];
	_Atomic uint32_t sess_level[EVR_MAX_SESSIONS];
	/* Sessions whose events of this provider carry the writer's stack, and how
	 * many frames each wants; read by write_rcu(). Such a session never gets an
	 * event's one-section shortcut (evr_event.percpu). */
	_Atomic uint64_t stack_slots;
	_Atomic uint8_t sess_stack_depth[EVR_MAX_SESSIONS];
	/* Some session has enabled this provider since it was registered: a writer
	 * may be inside a read-side section with its events. Registry lock. */
	bool ever_enabled;
};

/**
 * evr_stack_depth_arg() - the frames per event a provider spec's "stacks"
 * argument asks for: "0" (none), "1" (the session's depth, or the default),
 * or a depth 2..EVR_STACK_MAX_FRAMES.
 * @value: the argument, or NULL when absent.
 * @session_depth: the session's own stack depth (0: none).
 * Return: the depth (0: no stacks), or -EINVAL for another value.
 */
int evr_stack_depth_arg(const char *value, uint32_t session_depth)
	__attribute__((visibility("hidden")));

/* The first registered provider (list through priv->next). Context: registry lock. */
struct evr_provider *evr_registry_providers_locked(void) __attribute__((visibility("hidden")));

/* ---- metadata.c ---- */

/**
 * evr_meta_event_pack() - pack the evr.EventDesc of @ev (registered in @p).
 * @ret: its pb and pb_len are set on success; described is left as it is.
 * Return: 0, -ENOMEM.
 */
int evr_meta_event_pack(const struct evr_provider *p, const struct evr_event *ev,
			struct evr_event_meta *ret) __attribute__((visibility("hidden")));

/**
 * evr_meta_event_packed_locked() - make sure event @i of @p has its packed
 * description (p->priv->meta[i].pb), packing it on the first call: registration
 * does not pack (metadata.c).
 * Return: 0, -ENOMEM (nothing changed; a later call tries again).
 * Context: registry lock.
 */
int evr_meta_event_packed_locked(const struct evr_provider *p, uint32_t i)
	__attribute__((visibility("hidden")));

/**
 * evr_meta_describe_session_locked() - write the description of every event of
 * every provider @s names into its metadata area and set or clear @s's bit in
 * each event's described set. Before @s is published.
 * Context: registry lock.
 */
void evr_meta_describe_session_locked(struct evr_session *s) __attribute__((visibility("hidden")));

/**
 * evr_meta_describe_events_locked() - events [@first, nr) of @p were just
 * registered: append their descriptions to every live session that names @p,
 * before the masks are recomputed.
 * Context: registry lock.
 */
void evr_meta_describe_events_locked(struct evr_provider *p, uint32_t first)
	__attribute__((visibility("hidden")));

#endif /* EVR_REGISTRY_INTERNAL_H */
