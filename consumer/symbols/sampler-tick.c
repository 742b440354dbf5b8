// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The timer-tick source's setup (sampler.c, --sample-cpu=timer-tick): the
 * kernel's HZ, the tracepoint timer:hrtimer_expire_entry's id under tracefs,
 * and the filter that keeps the tick's own hrtimer (docs/system.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "sampler-internal.h"

#define TICK_HZ_ASSUMED 250u		/* the kernel's HZ where its config cannot be read */

/* CONFIG_HZ in a kernel config's line @line, or 0. */
static unsigned config_hz(const char *line)
{
	unsigned hz;

	return sscanf(line, "CONFIG_HZ=%u", &hz) == 1 && hz >= 24 && hz <= 10000 ? hz : 0;
}

/*
 * The kernel's tick rate on a busy CPU: CONFIG_HZ from
 * /proc/config.gz or /boot/config-RELEASE, else TICK_HZ_ASSUMED (counting the
 * tracepoint for a moment would need a CPU known to stay busy meanwhile).
 */
unsigned evr_tick_kernel_hz(void)
{
	char line[256], path[128];
	unsigned hz = 0;
	FILE *f;
	gzFile gz = gzopen("/proc/config.gz", "rbe");

	if (gz) {
		while (!hz && gzgets(gz, line, sizeof(line)))
			hz = config_hz(line);
		gzclose(gz);
	}
	if (!hz) {
		struct utsname u;

		if (uname(&u) == 0) {
			snprintf(path, sizeof(path), "/boot/config-%s", u.release);
			f = fopen(path, "re");
			if (f) {
				while (!hz && fgets(line, sizeof(line), f))
					hz = config_hz(line);
				fclose(f);
			}
		}
	}
	return hz ? hz : TICK_HZ_ASSUMED;
}

#define TICK_EVENT "timer/hrtimer_expire_entry"

/* The id of TICK_EVENT under tracefs mount @dir: >= 0, -errno. */
static long tick_id_in(const char *dir)
{
	char path[PATH_MAX], buf[32];
	ssize_t n;
	long id;
	int fd;

	snprintf(path, sizeof(path), "%s/events/" TICK_EVENT "/id", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	id = strtol(buf, NULL, 10);
	return id > 0 ? id : -EIO;
}

/* The tracepoint's id, or -errno with @errbuf saying what is missing on one line. */
long evr_tick_tracepoint_id(char *errbuf, size_t errlen)
{
	static const char *const where[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char line[1024], mnt[512], type[64];
	bool tracefs = false;
	long id = -ENOENT;
	FILE *f;

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]) && id == -ENOENT; i++) {
		char events[PATH_MAX];

		id = tick_id_in(where[i]);
		snprintf(events, sizeof(events), "%s/events", where[i]);
		tracefs |= access(events, F_OK) == 0;
		if (id == -EACCES || id == -EPERM) {
			snprintf(errbuf, errlen, "the timer-tick source: cannot read %s/events/"
				 TICK_EVENT "/id: permission denied (tracefs is root's: run as "
				 "root, or make it readable to you)", where[i]);
			return id;
		}
	}
	/* Mounted somewhere else. */
	f = id == -ENOENT ? fopen("/proc/mounts", "re") : NULL;
	while (f && id == -ENOENT && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %511s %63s", mnt, type) == 2 && !strcmp(type, "tracefs")) {
			tracefs = true;
			id = tick_id_in(mnt);
		}
	if (f)
		fclose(f);
	if (id >= 0)
		return id;
	if (!tracefs)
		snprintf(errbuf, errlen, "the timer-tick source needs tracefs, which is not "
			 "mounted (no /sys/kernel/tracing/events): as root, mount -t tracefs "
			 "nodev /sys/kernel/tracing");
	else
		snprintf(errbuf, errlen, "the timer-tick source needs the tracepoint "
			 "timer:hrtimer_expire_entry, which this kernel lacks: sample with "
			 "cpu-clock");
	return id;
}

/*
 * The filter that keeps the tick's hrtimer of TICK_EVENT's hits: its
 * handler's address from /proc/kallsyms (tick_nohz_handler in recent kernels,
 * tick_sched_timer in older ones), or, where kptr_restrict hides addresses,
 * its name (newer kernels filter a function field by symbol; an older one
 * refuses the filter, which the error says). Return: 0, -ENOENT (@errbuf said).
 */
int evr_tick_filter(char *buf, size_t len, char *errbuf, size_t errlen)
{
	char line[512], name[256], kind;
	unsigned long long addr;
	FILE *f = fopen("/proc/kallsyms", "re");
	bool hidden = false;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &kind, name) != 3 ||
		    (strcmp(name, "tick_nohz_handler") && strcmp(name, "tick_sched_timer")))
			continue;
		if (!addr) {
			hidden = true;
			continue;
		}
		fclose(f);
		snprintf(buf, len, "function == 0x%llx", addr);
		return 0;
	}
	if (f)
		fclose(f);
	if (hidden) {
		snprintf(buf, len, "function.function == tick_nohz_handler");
		return 0;
	}
	snprintf(errbuf, errlen, "the timer-tick source needs the address of the tick's timer "
		 "handler (tick_nohz_handler or tick_sched_timer), which /proc/kallsyms does not "
		 "list");
	return -ENOENT;
}
