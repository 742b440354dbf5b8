// SPDX-License-Identifier: LGPL-2.1-or-later
/* The MiniRT provider's definition (its events are in events.h). */
#include "events.h"

EVR_PROVIDER_DEFINE(minirt_provider, "MiniRT", MINIRT_EVENTS)
