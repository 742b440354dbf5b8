/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Between the watch's files: watch.c (processes, attaches, counters) and
 * notify.c (inotify on the runtime directories). Context: the owner's thread.
 */
#ifndef EVR_WATCH_INTERNAL_H
#define EVR_WATCH_INTERNAL_H

#include <evring/watch.h>

/* Open the inotify descriptor (w->notify_fd stays -1 when it cannot be). */
void evr_watch_notify_open(struct evr_watch *w);
/* Watch the runtime directories not watched yet (one made since, say). */
void evr_watch_notify_arm(struct evr_watch *w);
void evr_watch_notify_close(struct evr_watch *w);
/*
 * Did @pid's socket appear only now (a scan may have come between its bind and
 * its listen)? Then an attach refused (-ENOENT) is tried again, not failed.
 */
bool evr_watch_notify_fresh(struct evr_watch *w, pid_t pid, uint64_t now_ns);
/* A scan ended: forget the pending sockets whose attach ended (or that waited too long). */
void evr_watch_notify_scanned(struct evr_watch *w, uint64_t now_ns);

/* @pid is pending (a socket that appeared; @checked: found by the /proc check). */
void evr_watch_notify_pend(struct evr_watch *w, pid_t pid, bool checked, uint64_t now_ns);
/* How a scan that lists @pid for the first time found it (pending or not). */
enum evr_watch_found evr_watch_notify_found(const struct evr_watch *w, pid_t pid);
/* Start the /proc check (o.check_ms): its first look. */
void evr_watch_check_open(struct evr_watch *w);
void evr_watch_check_close(struct evr_watch *w);

#endif /* EVR_WATCH_INTERNAL_H */
