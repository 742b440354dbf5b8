/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one C file that defines the provider, and a counter of it. */
#include "myapp-events.h"

EVR_PROVIDER_DEFINE(myapp, "MyApp", MYAPP_EVENTS)

static struct evr_counter *requests;

int myapp_counters_init(void);
void myapp_request_done(double ms);

int myapp_counters_init(void)
{
	struct evr_counter_desc d = { .name = "request-ms", .display_name = "Request time",
				      .unit = "ms", .kind = EVR_COUNTER_MEAN };

	return evr_counter_create(&myapp, &d, &requests);
}

void myapp_request_done(double ms)
{
	evr_counter_record(requests, ms);
}
