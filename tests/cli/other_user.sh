#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Another user's process: evring record refuses with the client library's one line.
# Needs root (to run evring as uid 65534 with setpriv); skipped otherwise.
source "$(dirname "$0")/lib.sh"

[[ $(id -u) == 0 ]] || skip "needs root to run evring as another user"
command -v setpriv >/dev/null || skip "setpriv not found"
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
"${as_nobody[@]}" "$EVRING" --help >/dev/null 2>&1 ||
	skip "uid 65534 cannot run $EVRING (a directory on the way is not searchable)"

start_workload wl --rate 1000 --threads 1
st=0
(cd / && "${as_nobody[@]}" env EVR_RUNTIME_DIR=/nonexistent "$EVRING" record -p "$WL_PID" \
	-o /dev/null) >"$T/out" 2>"$T/err" || st=$?
cat "$T/err"
[[ $st == 1 ]] || fail "exit status $st"
[[ $(wc -l <"$T/err") == 1 ]] || fail "not one line"
grep -q "process $WL_PID belongs to user root (uid 0); you can attach only to your own processes" \
	"$T/err" || fail "not the refusal"
echo "PASS"
