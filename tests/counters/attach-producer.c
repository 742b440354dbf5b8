// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Producer for counters_attach: a counter "attach" of provider "AttachCtr"
 * recorded with the value 2 until stdin reaches end of file. Prints
 * "ready PID" once the counter exists (the agent runs since the constructor).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <evring/evring.h>

static struct evr_event *const no_events[] = {NULL};
static struct evr_provider prov = {.name = "AttachCtr", .events = no_events};
static atomic_bool done;

static void *watch_stdin(void *arg)
{
	char buf[64];

	(void)arg;
	while (read(0, buf, sizeof(buf)) > 0)
		;
	atomic_store(&done, true);
	return NULL;
}

int main(void)
{
	struct evr_counter_desc d = {.name = "attach", .unit = "ms", .kind = EVR_COUNTER_MEAN};
	struct evr_counter *c;
	pthread_t t;

	if (evr_provider_register(&prov) < 0 || evr_counter_create(&prov, &d, &c) < 0) {
		fprintf(stderr, "attach-producer: cannot create the counter\n");
		return 1;
	}
	if (pthread_create(&t, NULL, watch_stdin, NULL)) {
		fprintf(stderr, "attach-producer: pthread_create failed\n");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!atomic_load(&done))
		evr_counter_record(c, 2.0);
	pthread_join(t, NULL);
	evr_counter_free(c);
	evr_provider_unregister(&prov);
	return 0;
}
