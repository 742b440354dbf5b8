#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Processes in containers (issue 30): workloads started in a pid and mount namespace of their
# own (`unshare --pid --mount --fork --mount-proc`, as root), each its namespace's process 1
# with its agent socket named 1.sock, are found and attached from the host by their host pid:
#   - C1 shares our runtime directory (the plain unshare of the issue): its 1.sock sits beside
#     the host's sockets and must not be taken for the socket of our process 1;
#   - C2 and C3 have a private one (a tmpfs over the same path in their mount namespace, as a
#     container image has its own /tmp): reached only through /proc/PID/root.
# `evring ps` lists them with both pids and no warning, and keeps listing a host workload
# whose socket a container's agent must not remove; `record -p HOSTPID` counts C1's events
# exactly; `record --all` finds C2 and C3 (C3 started during the recording) and counts C3
# exactly, having found it by the /proc check; clrtop -p and the overview show both pids. Refusals stay as strict: a process in
# another user namespace, and a directory in the container that others may write to, are
# refused with one line each; a socket served by a container's process is never called stale.
# Usage: container.sh EVRING WORKLOAD CLRTOP
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CLRTOP=$(realpath "${3:?usage: $0 EVRING WORKLOAD CLRTOP}")
need_python

[[ $(id -u) == 0 ]] || skip "needs root (unshare of a pid and a mount namespace)"
command -v unshare >/dev/null || skip "unshare not found"
unshare --pid --mount --fork --mount-proc true 2>/dev/null ||
	skip "unshare --pid --mount --fork --mount-proc is not permitted here"

# start_container NAME shared|private|open ARGS...: the workload with ARGS as process 1 of a
# pid and mount namespace of its own; its stdout on a fifo (CT_FD). private: a tmpfs of mode
# 0700 over $EVR_RUNTIME_DIR inside; open: the same with mode 1777 (a directory the agent
# refuses). Waits for "ready 1"; sets CT_PID (its pid here).
start_container() {
	local name=$1 mode=$2 upid i
	shift 2
	mkfifo "$T/$name.out"
	case $mode in
	shared)
		unshare --pid --mount --fork --kill-child --mount-proc "$WORKLOAD" "$@" \
			>"$T/$name.out" 2>"$T/$name.err" & ;;
	private | open)
		local m=0700
		[[ $mode == open ]] && m=1777
		# shellcheck disable=SC2016 # expanded by the inner sh
		unshare --pid --mount --fork --kill-child --mount-proc sh -c \
			'mount -t tmpfs -o "mode=$1" evr-ctr "$EVR_RUNTIME_DIR" || exit 3
			shift; exec "$@"' sh "$m" "$WORKLOAD" "$@" >"$T/$name.out" 2>"$T/$name.err" & ;;
	esac
	upid=$!
	KILL_AT_EXIT+=("$upid")
	exec {CT_FD}<"$T/$name.out"
	# Its child, while it waits for the fifo's reader or runs: before its "ready" line, after
	# which one that waits for a session may be done before we look (record --all).
	CT_PID=
	for ((i = 0; i < 100000 && ${#CT_PID} == 0; i++)); do
		CT_PID=$(tr -d ' \n' </proc/"$upid"/task/"$upid"/children)
	done
	[[ -n $CT_PID ]] || fail "no child of unshare $upid"
	KILL_AT_EXIT+=("$CT_PID")
	[[ $(awk '/^NSpid:/ { print $NF }' /proc/"$CT_PID"/status) == 1 ]] ||
		fail "$name ($CT_PID) is not process 1 of its pid namespace"
	# open: the agent refuses the directory (no socket), but the program runs all the same.
	expect "$CT_FD" "^ready 1\$" "'ready 1' from $name"
	echo "$name: pid $CT_PID here, 1 in its namespace ($mode runtime directory)"
}

# A host workload first: the containers' agents start after it, and must leave its socket be.
start_workload host --rate 100 --threads 1
HP=$WL_PID
N1=20000
start_container c1 shared --events "$N1" --threads 2 --wait-sessions 1
C1=$CT_PID C1_FD=$CT_FD
start_container c2 private --rate 200 --threads 1
C2=$CT_PID
[[ -S $EVR_RUNTIME_DIR/1.sock ]] || fail "C1's socket is not 1.sock in the shared directory"
[[ -S $EVR_RUNTIME_DIR/$HP.sock ]] || fail "a container's agent removed the host's socket"

# 1. ps: both pids for each, the host's too, nothing about 1.sock, no pid 1.
"$EVRING" ps >"$T/ps.out" 2>"$T/ps.err" || fail "ps: $(cat "$T/ps.err")"
cat "$T/ps.out" "$T/ps.err"
[[ ! -s $T/ps.err ]] || fail "ps warns: $(cat "$T/ps.err")"
grep -qE "^ *$C1 \(ns 1\) +0 +[a-z]+ +.*workload" "$T/ps.out" || fail "ps does not list C1 ($C1)"
grep -qE "^ *$C2 \(ns 1\) +0 +[a-z]+ +.*workload" "$T/ps.out" || fail "ps does not list C2 ($C2)"
grep -qE "^ *$HP +0 +[a-z]+ +.*workload" "$T/ps.out" || fail "ps does not list the host's $HP"
! grep -qE "^ +1 " "$T/ps.out" || fail "ps lists a process 1"
[[ $(($(wc -l <"$T/ps.out") - 1)) == 3 ]] || fail "ps lists more than the three workloads"
"$EVRING" ps --json >"$T/ps.json" || fail "ps --json"
python3 - "$T/ps.json" "$C1" "$C2" "$HP" <<'EOF'
import json, sys
procs = {p["pid"]: p for p in map(json.loads, open(sys.argv[1]))}
c1, c2, hp = map(int, sys.argv[2:])
assert sorted(procs) == sorted([c1, c2, hp]), sorted(procs)
assert procs[c1]["ns_pid"] == 1 and procs[c2]["ns_pid"] == 1, procs
assert "ns_pid" not in procs[hp], procs[hp]
EOF

# 2. The pid the container knows itself by is not ours: asking for process 1 gets a line
# that says who serves 1.sock and how to reach it, never to remove it.
one_line 1 "^evring record: refusing $EVR_RUNTIME_DIR/1.sock: it is served by process $C1 of \
uid 0, not by process 1 \(uid 0\): process $C1 runs in a pid namespace of its own, where it is \
process 1; attach to it as process $C1\$" "$EVRING" record -p 1 -o "$T/one.evtrace"
! grep -qi "remove\|stale" "$T/err" || fail "the refusal tells to remove a live socket"

# 3. record -p HOSTPID: every event of C1 counted.
"$EVRING" record -p "$C1" --providers Demo --buffer-size 64M -o "$T/c1.evtrace" \
	2>"$T/c1.err" || fail "record -p $C1 exited with $?: $(cat "$T/c1.err")"
cat "$T/c1.err"
expect "$C1_FD" "^done $N1 " "C1's 'done' line"
echo "$LINE" >"$T/c1.done"
check_accounting c1 "$N1" "$T/c1.done" "$T/c1.err" "$T/c1.evtrace"
grep -q "^evring record: process $C1 exited (it ended the session)$" "$T/c1.err" ||
	fail "record does not name C1 by its pid here"
"$EVRING" report --json "$T/c1.evtrace" >"$T/c1.json" || fail "report --json"
python3 - "$T/c1.json" "$C1" <<'EOF'
import json, sys
rep, pid = json.load(open(sys.argv[1])), int(sys.argv[2])
assert rep["process"]["pid"] == pid, rep["process"]
EOF

# 4. clrtop: -p HOSTPID, and the overview, show both pids.
"$CLRTOP" -b -n 1 -d 0.2 -p "$C2" >"$T/top.txt" </dev/null 2>"$T/top.err" ||
	fail "clrtop -p $C2: $(cat "$T/top.err")"
cat "$T/top.txt"
grep -q "^PID $C2 (ns 1)  workload  live  " "$T/top.txt" || fail "clrtop -p does not show both pids"
"$CLRTOP" -b -n 1 -d 0.2 >"$T/over.txt" </dev/null 2>"$T/over.err" ||
	fail "clrtop overview: $(cat "$T/over.err")"
cat "$T/over.txt"
grep -qE "^ +$C2 workload \(ns 1\) " "$T/over.txt" || fail "the overview does not show C2 with both pids"
grep -qE "^ +$HP workload " "$T/over.txt" || fail "the overview does not show the host's workload"

# The monitor: its process list and a process's page give both pids.
if command -v curl >/dev/null; then
	mkfifo "$T/monitor.out"
	"$EVRING" monitor --listen 127.0.0.1:0 >"$T/monitor.out" 2>"$T/monitor.err" &
	KILL_AT_EXIT+=("$!")
	exec {mfd}<"$T/monitor.out"
	IFS= read -r -t 60 -u "$mfd" U || fail "the monitor printed no URL: $(cat "$T/monitor.err")"
	curl -sS --max-time 60 -o "$T/mon.json" "$U/processes" || fail "GET /processes"
	curl -sS --max-time 60 -o "$T/mon1.json" "$U/processes/$C2" || fail "GET /processes/$C2"
	python3 - "$T/mon.json" "$T/mon1.json" "$C2" "$HP" <<'EOF2'
import json, sys
procs = {p["pid"]: p for p in json.load(open(sys.argv[1]))}
one, c2, hp = json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
assert procs[c2]["ns_pid"] == 1 and "ns_pid" not in procs[hp], procs
assert one["pid"] == c2 and one["ns_pid"] == 1, one
EOF2
	# Its session on C2, as ps shows it: the agent cannot see the monitor's pid.
	"$EVRING" ps --sessions >"$T/pss.out" || fail "ps --sessions"
	grep -A3 "^ *$C2 (ns 1) " "$T/pss.out" |
		grep -q "client evring monitor (outside its pid namespace)" ||
		fail "ps --sessions: $(cat "$T/pss.out")"
	kill "$!" 2>/dev/null || true
else
	echo "(no curl: the monitor's lists are not checked)"
fi

# 5. record --all: C2 and the host's workload at once, C3 (private directory) started during
# the recording, found by the /proc check (a look at /proc's pids every 50 ms: its directory
# is not ours to watch), attached before it writes, counted exactly. The periodic rescan,
# which found it before (within a second), is put off for 10 minutes here
# (EVR_WATCH_RESCAN_MS): the check alone can find C3, and record's line says it did.
N3=3000
EVR_WATCH_RESCAN_MS=600000 start_record all --all --providers Demo --buffer-size 64M \
	-o "$T/all.evtrace"
touch "$T/rec.log"
wait_line() {
	until grep -qE -- "$1" "$T/rec.log"; do
		IFS= read -r -t 120 -u "$REC_FD" line || fail "never saw '$1'"
		echo "record: $line"
		echo "$line" >>"$T/rec.log"
	done
}
wait_line "^evring record: \+ process $C2 "
wait_line "^evring record: \+ process $HP "
start_container c3 private --events "$N3" --threads 1 --wait-sessions 1
C3=$CT_PID C3_FD=$CT_FD
wait_line "^evring record: \+ process $C3 "
grep -qE "^evring record: \+ process $C3 \(workload\), stream [0-9]+, found by the /proc check\$" \
	"$T/rec.log" || fail "C3 was not found by the /proc check: $(grep "process $C3 " "$T/rec.log")"
grep -qE "^evring record: \+ process $C2 \(workload\), stream [0-9]+, found by the first listing\$" \
	"$T/rec.log" || fail "C2 was not found by the first listing"
expect "$C3_FD" "^done $N3 " "C3's 'done' line"
echo "$LINE" >"$T/c3.done"
wait_line "^evring record: - process $C3 \(workload\) exited"
kill -INT "$REC_PID"
finish_record "$REC_FD" "$T/all.rest"
wait "$REC_PID" || fail "record --all exited with $?: $(cat "$T/all.rest")"
cat "$T/all.rest"
"$EVRING" report --json "$T/all.evtrace" >"$T/all.json" || fail "report --json (all)"
python3 - "$T/all.json" "$C3" "$C2" "$HP" "$T/c3.done" <<'EOF'
import json, re, sys
rep = json.load(open(sys.argv[1]))
c3, c2, hp = map(int, sys.argv[2:5])
procs = {p["pid"]: p for p in rep["processes"]}
assert {c3, c2, hp} <= set(procs), sorted(procs)
emitted = int(re.match(r"^done \d+ (\d+)$", open(sys.argv[5]).read().strip())[1])
p = procs[c3]
assert p["events"] + p["lost"] == emitted, f"{p['events']} + {p['lost']} lost != {emitted}"
print(f"C3 ({c3}): {p['events']} events + {p['lost']} lost == {emitted} emitted")
EOF

# 6. The default directories, chosen inside: EVR_RUNTIME_DIR unset in the container, which has
# a /run/user/0 of its own (private /run), so its agent listens in /run/user/0/evring there.
mkfifo "$T/c5.out"
# shellcheck disable=SC2016 # expanded by the inner sh
unshare --pid --mount --fork --kill-child --mount-proc sh -c \
	'mount -t tmpfs -o mode=0755 evr-run /run && mkdir -p -m 0700 /run/user/0 || exit 3
	unset EVR_RUNTIME_DIR; exec "$@"' sh "$WORKLOAD" --events 1000 --threads 1 --wait-sessions 1 \
	>"$T/c5.out" 2>"$T/c5.err" &
upid=$!
KILL_AT_EXIT+=("$upid")
exec {c5fd}<"$T/c5.out"
expect "$c5fd" "^ready 1\$" "'ready 1' from c5"
C5=$(tr -d ' \n' </proc/"$upid"/task/"$upid"/children)
[[ -S /proc/$C5/root/run/user/0/evring/1.sock ]] || fail "C5 does not listen in /run/user/0/evring"
"$EVRING" record -p "$C5" --providers Demo -o "$T/c5.evtrace" 2>"$T/c5.rec" ||
	fail "record -p $C5 (default directories): $(cat "$T/c5.rec")"
expect "$c5fd" "^done 1000 " "C5's 'done' line"
echo "$LINE" >"$T/c5.done"
check_accounting c5 1000 "$T/c5.done" "$T/c5.rec" "$T/c5.evtrace"

# A runtime directory reached through an absolute symbolic link inside the container: resolved
# against the container's root (on the host, $T/ctr stays empty: resolved against ours, the
# directory would not be found).
mkdir "$T/ctr"
mkfifo "$T/c6.out"
# shellcheck disable=SC2016 # expanded by the inner sh
unshare --pid --mount --fork --kill-child --mount-proc sh -c \
	'mount -t tmpfs -o mode=0755 evr-ctr "$1" && mkdir -m 0700 "$1/real" &&
	ln -s "$1/real" "$1/link" || exit 3
	EVR_RUNTIME_DIR=$1/link/rt; export EVR_RUNTIME_DIR; shift; exec "$@"' sh "$T/ctr" \
	"$WORKLOAD" --rate 100 --threads 1 >"$T/c6.out" 2>"$T/c6.err" &
upid=$!
KILL_AT_EXIT+=("$upid")
exec {c6fd}<"$T/c6.out"
expect "$c6fd" "^ready 1\$" "'ready 1' from c6"
C6=$(tr -d ' \n' </proc/"$upid"/task/"$upid"/children)
[[ -z $(ls -A "$T/ctr") ]] || fail "the container's tmpfs is visible here"
"$EVRING" record -p "$C6" --providers Demo --duration 200ms -o "$T/c6.evtrace" 2>"$T/c6.rec" ||
	fail "record -p $C6 (a link in the container): $(cat "$T/c6.rec")"

# 7. Refusals as strict as at home. A directory in the container that others may write to:
start_container c4 open --rate 100 --threads 1
C4=$CT_PID
one_line 1 "^evring record: process $C4 \(workload, process 1 in its pid namespace\): refusing \
/proc/$C4/root$EVR_RUNTIME_DIR: its mode 1777 lets other users create sockets in it" \
	"$EVRING" record -p "$C4" -o "$T/c4.evtrace"
# A process in another user namespace (root there, someone else here):
if unshare --user --map-root-user --pid --fork --mount-proc true 2>/dev/null; then
	mkfifo "$T/u.out"
	unshare --user --map-root-user --pid --mount --fork --kill-child --mount-proc \
		"$WORKLOAD" --rate 100 --threads 1 >"$T/u.out" 2>"$T/u.err" &
	upid=$!
	KILL_AT_EXIT+=("$upid")
	exec {ufd}<"$T/u.out"
	expect "$ufd" "^ready 1\$" "'ready 1' from the workload in a user namespace"
	U=$(tr -d ' \n' </proc/"$upid"/task/"$upid"/children)
	one_line 1 "^evring record: process $U \(workload, process 1 in its pid namespace\) runs in \
another user namespace" "$EVRING" record -p "$U" -o "$T/u.evtrace"
	"$EVRING" ps >"$T/ps2.out" 2>"$T/ps2.err" || fail "ps: $(cat "$T/ps2.err")"
	! grep -qE "^ *$U " "$T/ps2.out" || fail "ps lists the process in another user namespace"
else
	echo "(no user namespaces here: that refusal is not checked)"
fi
echo "PASS"
