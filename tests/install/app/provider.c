/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "app-events.h"

EVR_PROVIDER_DEFINE(app, "InstallApp", APP_EVENTS)
