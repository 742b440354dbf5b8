#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Socket squatting (issue 14, defect 1), done as a hostile second user would: uid 65534
# creates /tmp/evring-0 first (mode 0777) and plants a fake agent socket for root's process
# in it. `evring ps`, `evring record -p` and `clrtop -p` must refuse it, saying what is wrong
# (owner, mode, path) and how to fix it, and never show what the fake sends. Also: a
# planted socket in a trusted directory whose SO_PEERCRED is not the process asked for, a
# directory of ours that others may write to, the fix the message suggests, and the
# /run/user/UID/evring directory.
# Runs in a private mount namespace with its own /tmp and /run/user, so that the default
# directories can be squatted without touching anyone else's. Needs root.
# Usage: squat.sh EVRING WORKLOAD CLRTOP FAKE_AGENT
set -euo pipefail

if [[ ${EVR_SQUAT_NS:-} != 1 ]]; then
	if [[ $(id -u) != 0 ]]; then
		echo "SKIP: needs root (to act as another user, in a private /tmp)" >&2
		exit 77
	fi
	for t in unshare setpriv mount; do
		command -v "$t" >/dev/null || { echo "SKIP: $t not found" >&2; exit 77; }
	done
	if ! unshare --mount --propagation private true 2>/dev/null; then
		echo "SKIP: cannot create a mount namespace here" >&2
		exit 77
	fi
	EVR_SQUAT_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
# What this test needs from the real /tmp (a checkout or build under /tmp: the script itself,
# its library, the binaries) stays visible: bound back in through a descriptor of the old /tmp.
exec {OLDTMP}</tmp
keep=()
for p in "$(dirname "$0")" "$@"; do
	p=$(realpath -m "$p")
	[[ $p == /tmp/?* ]] && keep+=("$(cut -d/ -f3 <<<"$p")")
done
if ! mount -t tmpfs -o mode=1777 evr-squat-tmp /tmp; then
	echo "SKIP: cannot mount a private /tmp" >&2
	exit 77
fi
for k in "${keep[@]}"; do
	mkdir -p "/tmp/$k"
	mount --no-canonicalize --bind "/proc/self/fd/$OLDTMP/$k" "/tmp/$k" ||
		{ echo "squat: cannot keep /tmp/$k visible in the private /tmp" >&2; exit 1; }
done
exec {OLDTMP}<&-
RUNUSER=0
if [[ -d /run/user ]] && mount -t tmpfs -o mode=0755 evr-squat-run /run/user; then
	RUNUSER=1
fi

source "$(dirname "$0")/lib.sh"
CLRTOP=$(realpath "${3:?usage: $0 EVRING WORKLOAD CLRTOP FAKE_AGENT}")
FAKE=$(realpath "${4:?usage: $0 EVRING WORKLOAD CLRTOP FAKE_AGENT}")
# The default directories, not the test's private one.
unset EVR_RUNTIME_DIR
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
st=0
"${as_nobody[@]}" "$FAKE" >/dev/null 2>&1 || st=$?
[[ $st == 2 ]] || skip "uid 65534 cannot run $FAKE (a directory on the way is not searchable)"

# start_fake NAME SOCKET PID [as_nobody]: a fake agent, waits until it listens.
start_fake() {
	local name=$1 sock=$2 pid=$3
	shift 3
	mkfifo "$T/$name.out"
	"$@" "$FAKE" "$sock" "$pid" >"$T/$name.out" 2>&1 &
	KILL_AT_EXIT+=("$!")
	exec {FAKE_FD}<"$T/$name.out"
	expect "$FAKE_FD" "^listening\$" "the fake agent $name listening"
}

# refused NAME WANT CMD...: CMD fails with exit status 1 and one line of stderr containing
# WANT; nothing the fake agent sent appears anywhere.
refused() {
	local name=$1 want=$2 st=0
	shift 2
	"$@" >"$T/$name.out" 2>"$T/$name.err" || st=$?
	cat "$T/$name.err"
	! grep -q FAKE "$T/$name.out" "$T/$name.err" || fail "$name shows what the fake agent sent"
	[[ $st == 1 ]] || fail "$name: exit status $st"
	[[ $(wc -l <"$T/$name.err") == 1 ]] || fail "$name: not one line of error"
	grep -qF -- "$want" "$T/$name.err" || fail "$name does not say: $want"
}

# 1. uid 65534 creates /tmp/evring-0 before root's process starts, and plants a fake agent.
"${as_nobody[@]}" mkdir -m 0777 /tmp/evring-0
start_workload wl --rate 100 --threads 1
grep -qF "no libevring agent, consumers cannot attach: refusing /tmp/evring-0: it belongs to \
uid 65534 (nobody), not to uid 0 (root)" "$T/wl.err" ||
	fail "the program does not learn why it has no agent: $(cat "$T/wl.err")"
start_fake fake1 "/tmp/evring-0/$WL_PID.sock" "$WL_PID" "${as_nobody[@]}"
SQUAT="refusing /tmp/evring-0: it belongs to uid 65534 (nobody), not to uid 0 (root) whose \
agents it should hold (mode 0777); another user may have created it to impersonate evring \
agents: remove it (as root: rm -r /tmp/evring-0), then restart the traced process"
refused record "process $WL_PID (workload): $SQUAT" "$EVRING" record -p "$WL_PID" -o "$T/r.evtrace"
refused clrtop "$SQUAT" "$CLRTOP" -p "$WL_PID" -b -n 1
st=0
"$EVRING" ps >"$T/ps.out" 2>"$T/ps.err" || st=$?
cat "$T/ps.out" "$T/ps.err"
! grep -q FAKE "$T/ps.out" "$T/ps.err" || fail "ps shows what the fake agent sent"
[[ $st == 0 ]] || fail "ps: exit status $st"
grep -qxF "evring ps: warning: $SQUAT" "$T/ps.err" || fail "ps does not say why"
! grep -q "^ *$WL_PID " "$T/ps.out" || fail "ps lists the squatted process"

# 2. The fix the message gives works: remove the directory, restart the process.
rm -r /tmp/evring-0
kill "$WL_PID"
start_workload wl2 --rate 100 --threads 1
"$EVRING" record -p "$WL_PID" --providers Demo --duration 200ms -o "$T/ok.evtrace" \
	2>"$T/ok.err" || fail "record after the fix: $(cat "$T/ok.err")"
"$EVRING" ps >"$T/ps2.out" 2>"$T/ps2.err" || fail "ps after the fix"
grep -q "^ *$WL_PID .*workload" "$T/ps2.out" || fail "ps does not list $WL_PID: $(cat "$T/ps2.out")"
[[ ! -s $T/ps2.err ]] || fail "ps warns: $(cat "$T/ps2.err")"

# 3. A socket in our own trusted directory that is not served by the process it names: a
# fake agent (of our own uid) on the socket of a process without libevring.
sleep 1000 &
OTHER=$!
KILL_AT_EXIT+=("$OTHER")
start_fake fake2 "/tmp/evring-0/$OTHER.sock" "$OTHER"
refused record-peer "refusing /tmp/evring-0/$OTHER.sock: it is served by process" \
	"$EVRING" record -p "$OTHER" -o "$T/p.evtrace"
grep -qF "of uid 0, not by process $OTHER (uid 0)" "$T/record-peer.err" || fail "peer message"

# 4. Our own directory, but others may write to it.
chmod 0777 /tmp/evring-0
refused record-mode "refusing /tmp/evring-0: its mode 0777 lets other users create sockets in \
it (evring needs 0700); run chmod 0700 /tmp/evring-0" \
	"$EVRING" record -p "$WL_PID" -o "$T/m.evtrace"
chmod 0700 /tmp/evring-0

# 5. /run/user/0 (what logind creates): agents listen in /run/user/0/evring, consumers find
# them there first, and a squatted /tmp/evring-0 no longer matters to them.
if [[ $RUNUSER == 1 ]]; then
	mkdir -m 0700 /run/user/0
	rm -r /tmp/evring-0
	"${as_nobody[@]}" mkdir -m 0777 /tmp/evring-0
	start_workload wl3 --rate 100 --threads 1
	[[ -S /run/user/0/evring/$WL_PID.sock ]] || fail "no socket in /run/user/0/evring"
	[[ $(stat -c %a /run/user/0/evring) == 700 ]] || fail "/run/user/0/evring is not 0700"
	"$EVRING" record -p "$WL_PID" --providers Demo --duration 200ms -o "$T/run.evtrace" \
		2>"$T/run.err" || fail "record in /run/user: $(cat "$T/run.err")"
	"$EVRING" ps >"$T/ps3.out" 2>"$T/ps3.err" || fail "ps"
	grep -q "^ *$WL_PID .*workload" "$T/ps3.out" || fail "ps does not list $WL_PID"
	grep -qF "warning: refusing /tmp/evring-0: it belongs to uid 65534" "$T/ps3.err" ||
		fail "ps does not warn about the squatted directory: $(cat "$T/ps3.err")"
	echo "PASS"
else
	echo "SKIP: no /run/user here (the checks before this passed; the /run/user/UID/evring" \
		"case is not checked)"
	exit 77
fi
