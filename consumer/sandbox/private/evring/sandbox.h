/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The consumers' confinement (libevring-sandbox, a static library): a seccomp
 * allow-list a tool enters once it has opened what it needs, and a broker for
 * the tools that must keep attaching to processes afterwards.
 *
 * Every consumer parses hostile input (agent messages, shared memory, trace
 * files). Once confined, a parser bug an attacker exploits cannot open a file,
 * create a socket, execute a program, map code or signal another process: the
 * system calls outside the list fail with EPERM (not a kill: a legitimate path
 * that was missed then ends as an ordinary one-line error, and a recorder still
 * completes its file).
 *
 * The broker is for tools that attach to processes found later (clrtop's
 * overview, evring ps) or create files as they go (CTF's stream files): a small
 * helper process forked before confinement that keeps those rights, and does
 * only these things on request, each with every check in the helper:
 *   - list the processes one may attach to (evr_process_list_checked());
 *   - connect to a process's agent (evr_client_open_socket(): the runtime
 *     directory and SO_PEERCRED checks), and pass the socket back; the Hello
 *     and everything after it is parsed by the confined tool;
 *   - create a new file in one directory fixed when the broker was made, by a
 *     name without '/' (O_EXCL: never an existing file).
 *   - open a process's perf map (/tmp/perf-PID.map) read-only, when its owner
 *     is the process's user: a JIT's map that appeared after the recorder was
 *     confined (`evring record --stacks/--sample-cpu`).
 * It parses nothing but these fixed-size requests, and confines itself too.
 */
#ifndef EVR_SANDBOX_H
#define EVR_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct evr_client;

/*
 * What a confined tool may still do. Always allowed: read, write and close
 * descriptors already open; memory (brk, mmap and mprotect without PROT_EXEC,
 * munmap, mremap, madvise); clocks and futexes; its own signals (sigaction,
 * sigprocmask, sigreturn, tgkill to itself for abort()); exit.
 */
enum evr_sandbox_allow {
	/* poll, ppoll, select, pselect6, epoll_wait/pwait, epoll_ctl (a set made
	 * before: record --all adds each new process's descriptors), nanosleep,
	 * clock_nanosleep, rt_sigtimedwait (sigwait() for signals it blocked) */
	EVR_SANDBOX_WAIT = 1u << 0,
	/* sendmsg, recvmsg, sendto, recvfrom, getsockopt, shutdown: sockets already open
	 * (the agent's control connection, a broker's socket) */
	EVR_SANDBOX_SOCKETS = 1u << 1,
	/* wait4 and waitid for a child's status; kill(child, SIGTERM) of the one child
	 * named in evr_sandbox_opts.child */
	EVR_SANDBOX_CHILD = 1u << 2,
	/* new threads: clone with CLONE_THREAD only (clone3 gets ENOSYS, so that glibc
	 * falls back to clone, whose flags a filter can see), set_robust_list, rseq,
	 * sched_yield, prctl(PR_SET_NAME) */
	EVR_SANDBOX_THREADS = 1u << 3,
	/* ioctl TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ, FIONREAD on descriptors
	 * already open, and kill() of itself (curses stops itself on Ctrl-Z): a
	 * full-screen terminal program */
	EVR_SANDBOX_TERMINAL = 1u << 4,
	/* map the session memory an agent sends (evr_client_start() once confined):
	 * fcntl(F_GET_SEALS) and lseek on it */
	EVR_SANDBOX_SESSIONS = 1u << 5,
	/*
	 * Files by path, for a tool that must keep opening things after start-up
	 * without a broker (the monitor: /proc of processes found later, the
	 * runtime directories, its trace files): openat/open, the stat family,
	 * statfs, getdents64, readlink, access, mkdir, unlink, rmdir, linkat (an
	 * unnamed file given a name), umask, lseek, fcntl, dup, pipe2, pwrite64,
	 * ftruncate, fsync, fdatasync, fadvise64, sendfile, and ioctl(TCGETS)
	 * (stdio asks whether a stream is a terminal).
	 */
	EVR_SANDBOX_FILES = 1u << 6,
	/*
	 * A network server that attaches to processes found later: accept and
	 * accept4 on the sockets it listens on (no new listening or Internet
	 * socket: socket() only for AF_UNIX, the agents, and AF_NETLINK, sock_diag
	 * naming a TCP peer's owner), connect, setsockopt, getsockname,
	 * getpeername, eventfd2, pidfd_open; what it asks about itself and the
	 * machine: getuid, geteuid, getgid, getegid, uname, sysinfo,
	 * sched_getaffinity, getrandom.
	 */
	EVR_SANDBOX_SERVER = 1u << 7,
	/*
	 * Thread-stack snapshots (evr_stacks_snapshot()): ptrace requests that
	 * stop, read and let go (SEIZE, ATTACH, INTERRUPT, GETREGS, GETFPREGS,
	 * GETREGSET, PEEKDATA, PEEKTEXT, PEEKUSER, DETACH), never one that writes
	 * into the traced process; process_vm_readv; wait4 for the stop.
	 */
	EVR_SANDBOX_PTRACE_READ = 1u << 8,
	/* fcntl(F_GETFL) and fcntl(F_SETFL) on descriptors already open: a recorder
	 * turning direct I/O (O_DIRECT) off and on again on its output; and its
	 * buffered writes' writeback: sync_file_range, fadvise64, getrusage (the
	 * kernel's time for them) */
	EVR_SANDBOX_FDFLAGS = 1u << 9,
	/* The recorder's io_uring engine (its ring is set up before the sandbox,
	 * restricted to vectored writes to the output and to registering its
	 * fixed buffer): io_uring_enter, io_uring_register (that buffer, once
	 * recording); lseek (SEEK_SET) to go on with buffered writes where the
	 * ring's writes ended, ftruncate to cut a failed file back to its last
	 * whole batch and the space allocated ahead to what was written,
	 * fallocate for that space where the writes go one at a time (no ring). */
	EVR_SANDBOX_URING = 1u << 10,
};

struct evr_sandbox_opts {
	uint32_t allow;			/* enum evr_sandbox_allow bits */
	pid_t child;			/* EVR_SANDBOX_CHILD: the one child it may SIGTERM; 0: none */
};

/**
 * evr_sandbox_enter() - allow only what @o names (above) from now on, in every
 * thread of the process (threads started before are confined too).
 * Return: 0, or -errno with one line in @errbuf ("cannot install the seccomp
 * sandbox: ...").
 * Context: once every file and socket the tool needs is open; sets
 * no_new_privs.
 */
int evr_sandbox_enter(const struct evr_sandbox_opts *o, char *errbuf, size_t errlen);

/*
 * Try to open a file as an attacker who took over the process would: 0 if it
 * was refused with EPERM (confined), else -errno... of the open, or -EEXIST if
 * it succeeded. @ret_what: "open(/etc/passwd): Operation not permitted".
 */
int evr_sandbox_probe(char *ret_what, size_t len);

/* ---- the broker ----------------------------------------------------------- */

struct evr_broker;

/**
 * evr_broker_new() - fork the helper.
 * @dir: the one directory evr_broker_create() creates files in, opened now
 *       (the helper keeps that descriptor); NULL: no file creation.
 * @ret: free with evr_broker_free() (the helper exits when its socket closes,
 *       and when this process dies).
 * Return: 0, or -errno with one line in @errbuf.
 * Context: before any thread is started (fork), and before evr_sandbox_enter().
 * The helper keeps only its socket, @dir and the standard descriptors.
 */
int evr_broker_new(const char *dir, struct evr_broker **ret, char *errbuf, size_t errlen);

/* Accepts NULL. */
void evr_broker_free(struct evr_broker *b);

/**
 * evr_broker_attach() - evr_client_connect() through the helper: it finds and
 * checks process @pid's agent socket and connects; the Hello is said here.
 * @ret: free with evr_client_free().
 * Return: 0, or -errno with one line in @errbuf, as evr_client_connect().
 * Context: any thread (requests are serialized).
 */
int evr_broker_attach(struct evr_broker *b, pid_t pid, const char *client_name,
		      struct evr_client **ret, char *errbuf, size_t errlen);

/**
 * evr_broker_process_list() - evr_process_list_checked() done by the helper.
 * @ret: malloc'ed, sorted pids; @ret_n their number (at most 16384).
 * Return: the number of runtime directories refused (@errbuf says the first),
 * or -errno.
 */
int evr_broker_process_list(struct evr_broker *b, pid_t **ret, uint32_t *ret_n, char *errbuf,
			    size_t errlen);

/**
 * evr_broker_proc_check() - evr_proc_check_run() done by the helper, on a check
 * it keeps for this broker (made at the first call).
 * @ret: at most @cap pids (up to 64 a call); @ret_pending: the processes the
 * check still awaits (evr_proc_check_pending()).
 * Return: 0, or -errno with one line in @errbuf.
 */
int evr_broker_proc_check(struct evr_broker *b, pid_t *ret, uint32_t cap, uint32_t *ret_n,
			  uint32_t *ret_pending, char *errbuf, size_t errlen);

/**
 * evr_broker_create() - create file @name (no '/', not "." or "..") in the
 * broker's directory, which must not exist yet: O_WRONLY | O_CREAT | O_EXCL,
 * mode 0644 (less the umask), close-on-exec.
 * Return: the new descriptor, or -errno with one line in @errbuf.
 */
int evr_broker_create(struct evr_broker *b, const char *name, char *errbuf, size_t errlen);

/**
 * evr_broker_open_perf_map() - open /tmp/perf-@pid.map read-only (never through
 * a symbolic link), if it is a regular file owned by @owner (the traced
 * process's user): for a recorder that must read a JIT's perf map created
 * after it was confined.
 * Return: the descriptor, or -errno with one line in @errbuf (-ENOENT: no map).
 */
int evr_broker_open_perf_map(struct evr_broker *b, pid_t pid, uid_t owner, char *errbuf,
			     size_t errlen);

#endif /* EVR_SANDBOX_H */
