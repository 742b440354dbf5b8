// SPDX-License-Identifier: LGPL-2.1-or-later
#include "bench-events.h"

EVR_PROVIDER_DEFINE(bench_provider, "Bench", BENCH_EVENTS)
