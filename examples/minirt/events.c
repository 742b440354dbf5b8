// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The MiniRT provider's definition, and the opcodes of its start/stop pairs.
 *
 * An EVENT line of EVR_PROVIDER_DEFINE() has no opcode column: every event it
 * defines has opcode 0 (info). Consumers pair begin/end events by opcode, so
 * before the provider registers (its constructor has the default priority;
 * this one runs first) each paired event gets a copy of its generated
 * descriptor with the opcode set. The copies are static, as the registry
 * keeps the pointer for as long as the provider is registered.
 */
#include "events.h"

EVR_PROVIDER_DEFINE(minirt_provider, "MiniRT", MINIRT_EVENTS)

enum { OP_START = 1, OP_STOP = 2 };

#define OPCODES(X)                                                       \
	X(ev_gc_start, OP_START) X(ev_gc_end, OP_STOP)                   \
	X(ev_gc_suspend_ee_begin, OP_START) X(ev_gc_suspend_ee_end, OP_STOP) \
	X(ev_gc_restart_ee_begin, OP_START) X(ev_gc_restart_ee_end, OP_STOP) \
	X(ev_tp_worker_start, OP_START) X(ev_tp_worker_stop, OP_STOP)   \
	X(ev_contention_start, OP_START) X(ev_contention_stop, OP_STOP) \
	X(ev_method_jitting_started, OP_START) X(ev_method_load_verbose, OP_STOP) \
	X(ev_exception_catch_start, OP_START) X(ev_exception_catch_stop, OP_STOP)

#define OPCODE_ENTRY(sym, op) { &sym##__event, op },
#define OPCODE_ONE(sym, op) +1

static const struct {
	struct evr_event *ev;
	uint8_t opcode;
} opcodes[] = { OPCODES(OPCODE_ENTRY) };

static struct evr_event_desc opcode_descs[0 OPCODES(OPCODE_ONE)];

__attribute__((constructor(101))) static void minirt_set_opcodes(void)
{
	for (size_t i = 0; i < sizeof(opcodes) / sizeof(opcodes[0]); i++) {
		opcode_descs[i] = *opcodes[i].ev->desc;
		opcode_descs[i].opcode = opcodes[i].opcode;
		opcodes[i].ev->desc = &opcode_descs[i];
	}
}
