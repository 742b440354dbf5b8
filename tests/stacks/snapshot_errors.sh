#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring stacks on bad input: bad options (exit 2), no such process and another user's
# process (exit 1, one line naming the pid), and threads that come and go during the
# snapshots (every snapshot succeeds; a thread that died mid-snapshot is either absent
# or reported as exited, never a failure).
source "$(dirname "$0")/lib.sh"
need_python

st=0; "$EVRING" stacks >/dev/null 2>"$T/err" || st=$?
[[ $st == 2 ]] && grep -q -- "-p PID is required" "$T/err" || fail "missing -p: $st $(cat "$T/err")"
st=0; "$EVRING" stacks -p 1 --depth 0 >/dev/null 2>"$T/err" || st=$?
[[ $st == 2 ]] && grep -q -- "--depth: '0' is not a number from 1 to 1024" "$T/err" ||
	fail "bad depth: $st $(cat "$T/err")"

# A pid that does not exist: one just reaped.
true & dead=$!
wait "$dead"
st=0; "$EVRING" stacks -p "$dead" >/dev/null 2>"$T/err" || st=$?
[[ $st == 1 && $(wc -l <"$T/err") == 1 ]] || fail "dead pid: status $st: $(cat "$T/err")"
grep -q "evring stacks: no process $dead" "$T/err" || fail "dead pid: $(cat "$T/err")"

# Churning threads: 10 snapshots, each must succeed and be valid JSON.
start_prog churn "$BIN/stacks-parked" --churn
for ((i = 0; i < 10; i++)); do
	"$EVRING" stacks -p "$PROG_PID" --json >"$T/churn.json" 2>"$T/churn.err" ||
		fail "snapshot $i of a churning process failed: $(cat "$T/churn.err")"
	python3 - "$T/churn.json" <<'PY' || fail "snapshot $i: bad JSON"
import json, sys
d = json.load(open(sys.argv[1]))
for t in d["threads"]:
    assert t["error"] is None or t["error"] == "thread exited during the snapshot", t
    assert t["error"] is not None or len(t["frames"]) > 0, t
PY
done

# Another user's process: refused before any ptrace, naming the owner.
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
	as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	if "${as_nobody[@]}" "$EVRING" --help >/dev/null 2>&1; then
		st=0
		(cd / && "${as_nobody[@]}" "$EVRING" stacks -p "$PROG_PID") >/dev/null 2>"$T/err" || st=$?
		[[ $st == 1 && $(wc -l <"$T/err") == 1 ]] || fail "other user: $st $(cat "$T/err")"
		grep -q "process $PROG_PID belongs to user root (uid 0); you can see the stacks of your own processes only" \
			"$T/err" || fail "other user: $(cat "$T/err")"
	else
		echo "note: uid 65534 cannot run $EVRING; other-user case not run"
	fi
else
	echo "note: not root: the other-user case needs root to switch users"
fi
echo PASS
