// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A process whose threads sit in known functions, for `evring stacks` tests:
 * park_in_read() blocks reading a pipe nobody writes, park_in_cond() waits on a
 * condition variable nobody signals, park_in_sleep() sleeps in nanosleep() (from
 * sleep_forever(), inlined into it), and
 * spin_here() (with --spin) burns CPU in a loop. Each thread says it is about
 * to block; "ready PID" is printed once all have, and the test then waits for
 * the threads' kernel state to show them blocked. With --churn, one more thread keeps starting threads that exit at once (threads
 * dying during a snapshot). Built with frame pointers and debug information.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int parked;
static volatile unsigned long sink;

static void announce(void)
{
	pthread_mutex_lock(&lock);
	parked++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static void park_in_read(void)
{
	char c;

	announce();
	while (read(pipefd[0], &c, 1) != 0)
		;
}

__attribute__((noinline)) static void park_in_cond(void)
{
	pthread_mutex_lock(&lock);
	parked++;
	pthread_cond_broadcast(&cond);
	for (;;)
		pthread_cond_wait(&never, &lock);
}

/* Inlined into park_in_sleep() even at -O0: the frame of park_in_sleep() holds
 * this function, which debug info describes as inlined there. */
static inline __attribute__((always_inline)) void sleep_forever(void)
{
	struct timespec ts = { 3600, 0 };

	for (;;)
		nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void park_in_sleep(void)
{
	announce();
	sleep_forever();
}

__attribute__((noinline)) static void spin_here(void)
{
	announce();
	for (unsigned long i = 0;; i++)
		sink += i * 7;
}

static void *reader_main(void *a)
{
	(void)a;
	park_in_read();
	return NULL;
}

static void *cond_main(void *a)
{
	(void)a;
	park_in_cond();
	return NULL;
}

static void *sleeper_main(void *a)
{
	(void)a;
	park_in_sleep();
	return NULL;
}

static void *spinner_main(void *a)
{
	(void)a;
	spin_here();
	return NULL;
}

static void *short_lived(void *a)
{
	return a;
}

static void *churn_main(void *a)
{
	pthread_t t;

	(void)a;
	announce();
	for (;;) {
		if (pthread_create(&t, NULL, short_lived, NULL) == 0)
			pthread_join(t, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*fns[5])(void *) = { reader_main, cond_main, sleeper_main, NULL, NULL };
	const char *names[5] = { "p-reader", "p-cond", "p-sleeper", NULL, NULL };
	int n = 3;
	pthread_t t;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--spin") == 0) {
			fns[n] = spinner_main;
			names[n++] = "p-spinner";
		} else if (strcmp(argv[i], "--churn") == 0) {
			fns[n] = churn_main;
			names[n++] = "p-churn";
		}
	}
	if (pipe(pipefd) < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		if (pthread_create(&t, NULL, fns[i], NULL) != 0)
			return 1;
		pthread_setname_np(t, names[i]);
	}
	pthread_mutex_lock(&lock);
	while (parked < n)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	park_in_read();
	return 0;
}
