// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The orchestrator's children and its event loop. The loop waits in poll() on
 * every child's report pipe, every child's pidfd (readable once it exits) and a
 * signalfd; its timeout is only ever the next scheduled action (spawning or
 * killing a churn consumer) or the caller's deadline, never a guess about when
 * something will have happened.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stress-orch.h"

extern char **environ;

#define REPORT_LINE_MAX 2048

void stress_violation(struct stress_orch *o, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fprintf(stderr, "evring-stress: VIOLATION: %s\n", text);
	if (o->nviol == o->capviol) {
		size_t n = o->capviol ? o->capviol * 2 : 16;
		char **v = realloc(o->viols, n * sizeof(*v));

		if (!v)
			return;	/* printed; the count below still says there was one */
		o->viols = v;
		o->capviol = n;
	}
	o->viols[o->nviol] = strdup(text);
	if (o->viols[o->nviol])
		o->nviol++;
}

/* Describe a wait status: "exit status 3", "killed by signal 11 (Segmentation fault)". */
static void status_str(int wstatus, char *buf, size_t len)
{
	if (WIFEXITED(wstatus))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(wstatus));
	else if (WIFSIGNALED(wstatus))
		snprintf(buf, len, "killed by signal %d (%s)%s", WTERMSIG(wstatus),
			 strsignal(WTERMSIG(wstatus)), WCOREDUMP(wstatus) ? ", core dumped" : "");
	else
		snprintf(buf, len, "wait status 0x%x", wstatus);
}

long stress_count_fds(pid_t pid)
{
	char path[64];
	struct dirent *de;
	long n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int stress_rss(pid_t pid, uint64_t *ret_bytes)
{
	unsigned long long size, resident;
	char path[64];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fscanf(f, "%llu %llu", &size, &resident);
	fclose(f);
	if (n != 2)
		return -EIO;
	*ret_bytes = (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}

void stress_unlink_socket(pid_t pid)
{
	const char *dir = getenv("EVR_RUNTIME_DIR");
	char path[4200];
	struct stat st;

	if (dir && *dir)
		snprintf(path, sizeof(path), "%s/%d.sock", dir, (int)pid);
	else
		snprintf(path, sizeof(path), "/tmp/evring-%u/%d.sock", (unsigned)geteuid(),
			 (int)pid);
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		(void)unlink(path);
}

/* ---- set-up ---- */

/* The anchor leads the children's process group and lives until we close its pipe. */
static int start_anchor(struct stress_orch *o)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid == 0) {
		char c;

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		while (read(p[0], &c, 1) != 0 && errno == EINTR)
			;
		_exit(0);
	}
	setpgid(pid, pid);
	close(p[0]);
	o->anchor = pid;
	o->anchor_fd = p[1];
	return 0;
}

int stress_orch_init(struct stress_orch *o)
{
	size_t n = 0, j = 0;
	sigset_t set;
	ssize_t len;
	int r;

	len = readlink("/proc/self/exe", o->exe, sizeof(o->exe) - 1);
	if (len < 0)
		return -errno;
	o->exe[len] = '\0';
	while (environ[n])
		n++;
	o->env_producer = calloc(n + 1, sizeof(char *));
	if (!o->env_producer)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "EVR_AGENT=", 10))
			o->env_producer[j++] = environ[i];
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	o->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (o->sigfd < 0)
		return -errno;
	/* A child that dies mid-write must not kill us with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	r = start_anchor(o);
	if (r < 0)
		return r;
	return 0;
}

static void child_close(struct stress_child *c)
{
	if (c->cmd_fd >= 0)
		close(c->cmd_fd);
	if (c->rep_fd >= 0)
		close(c->rep_fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->cmd_fd = c->rep_fd = c->pidfd = -1;
	free(c->buf);
	c->buf = NULL;
}

void stress_kill_all(struct stress_orch *o)
{
	if (o->anchor > 0) {
		kill(-o->anchor, SIGKILL);
		close(o->anchor_fd);
		waitpid(o->anchor, NULL, 0);
		o->anchor = 0;
	}
	for (size_t i = 0; i < o->nkids; i++) {
		struct stress_child *c = o->kids[i];

		if (c->exited)
			continue;
		/* In the group already, unless it died before joining it. */
		kill(c->pid, SIGKILL);
		if (waitpid(c->pid, &c->wstatus, 0) == c->pid)
			c->exited = true;
		child_close(c);
		if (c->role == ROLE_PRODUCER)
			stress_unlink_socket(c->pid);
	}
}

void stress_orch_fini(struct stress_orch *o)
{
	stress_kill_all(o);
	for (size_t i = 0; i < o->nkids; i++) {
		child_close(o->kids[i]);
		free(o->kids[i]->rep.count);
		free(o->kids[i]->rep.max);
		free(o->kids[i]);
	}
	free(o->kids);
	if (o->prod)
		for (uint32_t p = 0; p < o->o.producers; p++) {
			evr_client_free(o->prod[p].monitor);
			free(o->prod[p].emitted);
		}
	free(o->prod);
	free(o->stable);
	for (size_t i = 0; i < o->nviol; i++)
		free(o->viols[i]);
	free(o->viols);
	free(o->env_producer);
	if (o->sigfd >= 0)
		close(o->sigfd);
}

/* ---- children ---- */

struct stress_child *stress_spawn(struct stress_orch *o, enum stress_role role, uint32_t producer,
				  const char *name, char *const extra[])
{
	char *argv[40], parent[24];
	int cmd[2] = { -1, -1 }, rep[2] = { -1, -1 };
	struct stress_child *c;
	size_t n = 0;
	pid_t pid;

	if (o->nkids == o->capkids) {
		size_t cap = o->capkids ? o->capkids * 2 : 64;
		struct stress_child **v = realloc(o->kids, cap * sizeof(*v));

		if (!v)
			return NULL;
		o->kids = v;
		o->capkids = cap;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->buf = malloc(REPORT_LINE_MAX);
	if (!c->buf)
		goto fail;
	c->role = role;
	c->producer = producer;
	c->pidfd = c->cmd_fd = c->rep_fd = -1;
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	argv[n++] = "evring-stress";
	argv[n++] = "--child";
	argv[n++] = role == ROLE_PRODUCER ? "producer" : "consumer";
	argv[n++] = "--parent";
	argv[n++] = parent;
	for (size_t i = 0; extra[i] && n < 39; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	if (pipe2(cmd, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0)
		goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		sigset_t all;
		int a, b;

		setpgid(0, o->anchor);
		/* Above the fixed numbers first, so that dup2 cannot clobber one. */
		a = fcntl(cmd[0], F_DUPFD_CLOEXEC, 10);
		b = fcntl(rep[1], F_DUPFD_CLOEXEC, 10);
		if (a < 0 || b < 0 || dup2(a, STRESS_CMD_FD) < 0 || dup2(b, STRESS_REP_FD) < 0)
			_exit(127);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		signal(SIGPIPE, SIG_DFL);
		execve(o->exe, argv, role == ROLE_PRODUCER ? o->env_producer : environ);
		_exit(127);
	}
	/* Both sides set the group, so it holds whichever runs first. */
	setpgid(pid, o->anchor);
	close(cmd[0]);
	close(rep[1]);
	c->pid = pid;
	c->cmd_fd = cmd[1];
	c->rep_fd = rep[0];
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (c->pidfd < 0) {
		/* Not expected on Linux >= 5.3; without it we could not see the exit. */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		child_close(c);
		free(c);
		return NULL;
	}
	o->kids[o->nkids++] = c;
	return c;
fail:
	for (int i = 0; i < 2; i++) {
		if (cmd[i] >= 0)
			close(cmd[i]);
		if (rep[i] >= 0)
			close(rep[i]);
	}
	free(c->buf);
	free(c);
	return NULL;
}

int stress_send(struct stress_orch *o, struct stress_child *c, const char *line)
{
	char buf[128];
	int r;

	if (c->exited || c->cmd_fd < 0)
		return -ESRCH;
	snprintf(buf, sizeof(buf), "%s\n", line);
	r = stress_write_all(c->cmd_fd, buf, strlen(buf));
	/* EPIPE: it died; its exit is reported when the pidfd says so. */
	return r;
}

/* ---- report lines ---- */

static void producer_line(struct stress_orch *o, struct stress_child *c, char *line)
{
	struct stress_producer *p = &o->prod[c->producer];
	unsigned idx, t, k;
	unsigned long long a, b, e;

	if (!strcmp(line, "ready")) {
		p->ready = true;
	} else if (sscanf(line, "progress %u %llu %llu", &idx, &a, &b) == 3 &&
		   idx < STRESS_NSAMPLES) {
		p->have[idx] = true;
		p->count[idx] = a;
		p->ns[idx] = b;
	} else if (sscanf(line, "count %u %u %llu", &t, &k, &a) == 3 && t < o->o.threads &&
		   k < STRESS_NKINDS) {
		p->emitted[t * STRESS_NKINDS + k] = a;
	} else if (sscanf(line, "halted %llu %llu %llu", &a, &b, &e) == 3) {
		p->halted = true;
		p->total = a;
		p->errors = e;
		p->have[STRESS_NSAMPLES - 1] = true;
		p->count[STRESS_NSAMPLES - 1] = a;
		p->ns[STRESS_NSAMPLES - 1] = b;
	} else if (!strncmp(line, "error ", 6)) {
		stress_violation(o, "%s (pid %d): %s", c->name, (int)c->pid, line + 6);
		o->abort = true;
	} else {
		stress_violation(o, "%s (pid %d): unexpected report \"%s\"", c->name, (int)c->pid,
				 line);
	}
}

static void consumer_line(struct stress_orch *o, struct stress_child *c, char *line)
{
	struct stress_creport *r = &c->rep;
	unsigned t, k, sid, nr, g;
	unsigned long long cnt, mn, mx, miss, a, b;

	if (sscanf(line, "started %u %u %llu", &sid, &nr, &a) == 3) {
		c->started = true;
		c->session_id = sid;
		c->attach_ns = a;
		/* Some churn consumers are killed mid-stream, at a random moment. */
		if (c->role == ROLE_CHURN && !c->kill_at && stress_rand(&o->rng) % 100 < 30)
			c->kill_at = stress_now_ns() + stress_rand(&o->rng) % 300000000u;
	} else if (!strncmp(line, "error ", 6)) {
		c->failed = true;
		stress_violation(o, "%s (pid %d): %s", c->name, (int)c->pid, line + 6);
		if (c->role == ROLE_STABLE)
			o->abort = true;
	} else if (sscanf(line, "report %llu %llu %u", &a, &b, &g) == 3) {
		r->have = true;
		r->received = a;
		r->lost = b;
		r->gapcheck = g != 0;
	} else if (sscanf(line, "tk %u %u %llu %llu %llu %llu", &t, &k, &cnt, &mn, &mx, &miss) == 6 &&
		   t < o->o.threads && k < STRESS_NKINDS && r->count) {
		r->count[t * STRESS_NKINDS + k] = cnt;
		r->max[t * STRESS_NKINDS + k] = mx;
		r->missing += miss;
		(void)mn;
	} else if (!strncmp(line, "viol ", 5)) {
		r->nviol++;
		c->nbad++;
		stress_violation(o, "%s (pid %d, %s, filter \"%s\"): %s", c->name, (int)c->pid,
				 c->mode == EVR_MODE_OVERWRITE ? "overwrite" : "discard",
				 stress_filters[c->filter].spec, line + 5);
	} else if (!strcmp(line, "end")) {
		r->ended = true;
	} else {
		stress_violation(o, "%s (pid %d): unexpected report \"%s\"", c->name, (int)c->pid,
				 line);
	}
}

/* Read what the child wrote; return false at EOF (or an error). */
static bool child_read(struct stress_orch *o, struct stress_child *c)
{
	ssize_t n;
	char *nl;

	if (c->rep_fd < 0)
		return false;
	n = read(c->rep_fd, c->buf + c->blen, REPORT_LINE_MAX - 1 - c->blen);
	if (n < 0 && errno == EINTR)
		return true;
	if (n <= 0) {
		close(c->rep_fd);
		c->rep_fd = -1;
		return false;
	}
	c->blen += (size_t)n;
	while ((nl = memchr(c->buf, '\n', c->blen))) {
		*nl = '\0';
		if (c->role == ROLE_PRODUCER)
			producer_line(o, c, c->buf);
		else
			consumer_line(o, c, c->buf);
		c->blen -= (size_t)(nl + 1 - c->buf);
		memmove(c->buf, nl + 1, c->blen);
	}
	if (c->blen == REPORT_LINE_MAX - 1) {
		stress_violation(o, "%s (pid %d): report line too long", c->name, (int)c->pid);
		c->blen = 0;
	}
	return true;
}

static void child_exited(struct stress_orch *o, struct stress_child *c)
{
	char st[96];
	bool exit0;

	/* Everything it wrote is in the pipe: read it before judging the exit. */
	while (child_read(o, c))
		;
	if (waitpid(c->pid, &c->wstatus, 0) != c->pid)
		c->wstatus = 0;
	c->exited = true;
	child_close(c);
	status_str(c->wstatus, st, sizeof(st));
	exit0 = WIFEXITED(c->wstatus) && WEXITSTATUS(c->wstatus) == 0;
	switch (c->role) {
	case ROLE_PRODUCER:
		if (WIFSIGNALED(c->wstatus))
			stress_unlink_socket(c->pid);
		if (!c->told || !exit0) {
			stress_violation(o, "%s (pid %d) %s: %s", c->name, (int)c->pid,
					 c->told ? "failed" : "exited unexpectedly", st);
			o->abort = true;
		}
		break;
	case ROLE_STABLE:
		c->nbad += !c->told || !exit0 || !c->rep.ended;
		if (!c->told) {
			stress_violation(o, "%s (pid %d) exited before it was stopped: %s", c->name,
					 (int)c->pid, st);
			o->abort = true;
		} else if (!exit0) {
			stress_violation(o, "%s (pid %d) failed: %s", c->name, (int)c->pid, st);
		} else if (!c->rep.ended) {
			stress_violation(o, "%s (pid %d) exited without a complete report (%s)",
					 c->name, (int)c->pid, st);
		}
		break;
	case ROLE_CHURN:
		o->prod[c->producer].live_churn--;
		if (c->killed && WIFSIGNALED(c->wstatus) && WTERMSIG(c->wstatus) == SIGKILL) {
			o->churn_killed++;
		} else if (!exit0) {
			c->nbad++;
			stress_violation(o, "%s (pid %d) failed: %s", c->name, (int)c->pid, st);
		} else if (!c->rep.ended) {
			c->nbad++;
			stress_violation(o, "%s (pid %d) exited without a complete report (%s)",
					 c->name, (int)c->pid, st);
		} else {
			o->churn_finished++;
			o->churn_closed += !c->rep.gapcheck;
			o->churn_received += c->rep.received;
			o->churn_lost += c->rep.lost;
		}
		break;
	}
}

/* ---- churn ---- */

static const uint64_t churn_ring_sizes[] = { 64u << 10, 128u << 10, 256u << 10, 512u << 10 };

/* Format @v into @buf and return it, for an argv entry. */
static char *fmt_u64(char *buf, size_t len, uint64_t v)
{
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

struct stress_child *stress_spawn_consumer(struct stress_orch *o, enum stress_role role,
					   uint32_t producer, const char *name,
					   const struct stress_consumer_spec *spec)
{
	char a_pid[24], a_filter[24], a_mode[24], a_ring[24], a_pkt[24], a_thr[24], a_ms[24],
		a_ev[24];
	char *argv[24];
	struct stress_child *c;
	size_t n = 0;

	snprintf(a_pid, sizeof(a_pid), "%d", (int)o->prod[producer].child->pid);
	argv[n++] = "--pid";
	argv[n++] = a_pid;
	argv[n++] = "--filter";
	argv[n++] = fmt_u64(a_filter, sizeof(a_filter), spec->filter);
	argv[n++] = "--mode";
	argv[n++] = fmt_u64(a_mode, sizeof(a_mode), spec->mode);
	argv[n++] = "--ring-size";
	argv[n++] = fmt_u64(a_ring, sizeof(a_ring), spec->ring_size);
	argv[n++] = "--packet-size";
	argv[n++] = fmt_u64(a_pkt, sizeof(a_pkt), spec->packet_size);
	argv[n++] = "--threads";
	argv[n++] = fmt_u64(a_thr, sizeof(a_thr), o->o.threads);
	if (spec->churn) {
		argv[n++] = "--churn";
		argv[n++] = "--max-ms";
		argv[n++] = fmt_u64(a_ms, sizeof(a_ms), spec->max_ms);
		argv[n++] = "--max-events";
		argv[n++] = fmt_u64(a_ev, sizeof(a_ev), spec->max_events);
		if (spec->detach_close)
			argv[n++] = "--detach-close";
	}
	if (spec->fault) {
		argv[n++] = "--inject-fault";
		argv[n++] = (char *)spec->fault;
	}
	argv[n] = NULL;
	c = stress_spawn(o, role, producer, name, argv);
	if (!c)
		return NULL;
	c->filter = spec->filter;
	c->mode = spec->mode;
	c->ring_size = spec->ring_size;
	c->packet_size = spec->packet_size;
	c->detach_close = spec->detach_close;
	c->rep.count = calloc((size_t)o->o.threads * STRESS_NKINDS, sizeof(uint64_t));
	c->rep.max = calloc((size_t)o->o.threads * STRESS_NKINDS, sizeof(uint64_t));
	return c;
}

static void churn_spawn(struct stress_orch *o, uint32_t p)
{
	struct stress_producer *pr = &o->prod[p];
	struct stress_consumer_spec spec = { .churn = true };
	char name[32];
	struct stress_child *c;

	/* The draws stay in this order so that a --seed replays the same run. */
	spec.ring_size = churn_ring_sizes[stress_rand(&o->rng) % 4];
	spec.packet_size =
		spec.ring_size >= (128u << 10) && stress_rand(&o->rng) % 2 ? 32u << 10 : 0;
	spec.filter = (unsigned)(stress_rand(&o->rng) % STRESS_NFILTERS);
	spec.mode = (uint32_t)(stress_rand(&o->rng) % 2);
	spec.detach_close = stress_rand(&o->rng) % 4 == 0;
	spec.max_ms = 10 + stress_rand(&o->rng) % 490;
	spec.max_events = 1000 + stress_rand(&o->rng) % 300000;
	snprintf(name, sizeof(name), "p%u.c%u", p, pr->churn_seq++);
	c = stress_spawn_consumer(o, ROLE_CHURN, p, name, &spec);
	if (!c) {
		stress_violation(o, "could not start churn consumer %s: %s", name, strerror(errno));
		return;
	}
	pr->live_churn++;
	o->churn_spawned++;
	/* A few die before they even start their session. */
	if (stress_rand(&o->rng) % 100 < 5)
		c->kill_at = stress_now_ns() + stress_rand(&o->rng) % 5000000u;
}

/* Spawn and kill what is due; return when the next churn action is due. */
static uint64_t churn_tick(struct stress_orch *o, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (uint32_t p = 0; o->churn_on && p < o->o.producers; p++) {
		struct stress_producer *pr = &o->prod[p];

		if (now >= pr->next_churn) {
			if (pr->live_churn < o->o.churn)
				churn_spawn(o, p);
			pr->next_churn = now + 20000000u + stress_rand(&o->rng) % 180000000u;
		}
		if (pr->next_churn < next)
			next = pr->next_churn;
	}
	for (size_t i = 0; i < o->nkids; i++) {
		struct stress_child *c = o->kids[i];

		if (c->role != ROLE_CHURN || c->exited || c->killed || !c->kill_at)
			continue;
		if (now >= c->kill_at) {
			kill(c->pid, SIGKILL);
			c->killed = true;
		} else if (c->kill_at < next) {
			next = c->kill_at;
		}
	}
	return next;
}

/* ---- the loop ---- */

int stress_pump(struct stress_orch *o, uint64_t deadline, stress_pred_fn *pred)
{
	struct pollfd *pfd = NULL;
	struct stress_child **who = NULL;
	size_t cap = 0;
	int ret = 0;

	for (;;) {
		uint64_t now, next;
		size_t n = 0;
		int timeout, r;

		if (o->abort) {
			ret = -ECANCELED;
			break;
		}
		if (pred && pred(o))
			break;
		now = stress_now_ns();
		if (now >= deadline) {
			ret = pred ? -ETIMEDOUT : 0;
			break;
		}
		next = churn_tick(o, now);
		if (next > deadline)
			next = deadline;
		timeout = next <= now ? 0 : (int)((next - now + 999999u) / 1000000u);
		if (cap < 2 * o->nkids + 1) {
			cap = 2 * o->nkids + 16;
			free(pfd);
			free(who);
			pfd = calloc(cap, sizeof(*pfd));
			who = calloc(cap, sizeof(*who));
			if (!pfd || !who) {
				ret = -ENOMEM;
				break;
			}
		}
		pfd[n].fd = o->sigfd;
		pfd[n].events = POLLIN;
		who[n++] = NULL;
		for (size_t i = 0; i < o->nkids; i++) {
			struct stress_child *c = o->kids[i];

			if (c->exited)
				continue;
			if (c->rep_fd >= 0) {
				pfd[n].fd = c->rep_fd;
				pfd[n].events = POLLIN;
				who[n++] = c;
			}
			/* Told apart from the report pipe by its fd number. */
			pfd[n].fd = c->pidfd;
			pfd[n].events = POLLIN;
			who[n++] = c;
		}
		r = poll(pfd, n, timeout);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		for (size_t i = 0; i < n && r > 0; i++) {
			struct stress_child *c = who[i];

			if (!pfd[i].revents)
				continue;
			if (!c) {
				struct signalfd_siginfo si;

				if (read(o->sigfd, &si, sizeof(si)) == sizeof(si)) {
					o->interrupted = (int)si.ssi_signo;
					o->abort = true;
				}
			} else if (c->exited) {
				continue;
			} else if (pfd[i].fd == c->pidfd) {
				child_exited(o, c);
			} else {
				child_read(o, c);
			}
		}
	}
	free(pfd);
	free(who);
	return ret;
}
