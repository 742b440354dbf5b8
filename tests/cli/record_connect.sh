#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record -- PROGRAM with a program that never connects (issue 14, defect 8): after
# --connect-timeout evring says so, then asks the program to stop with SIGTERM (never
# SIGKILL) and reports what became of it; a program that ignores SIGTERM runs on, and evring
# says so. The program's own wait (EVR_CONNECT_TIMEOUT_MS) is set to the same value.
source "$(dirname "$0")/lib.sh"

# line_of FILE REGEX: the number of the first line of FILE matching REGEX (fails if none).
line_of() {
	local n
	n=$(grep -n -m1 -E "$2" "$1" | cut -d: -f1)
	[[ -n $n ]] || fail "no line matching '$2' in: $(cat "$1")"
	echo "$n"
}

# 1. It handles SIGTERM: it gets to clean up, and its exit status is reported.
st=0
"$EVRING" record --connect-timeout 1s -o "$T/a.evtrace" -- bash -c \
	'trap "kill \$! 2>/dev/null; echo cleaned up >&2; exit 3" TERM; sleep 1000 & wait' \
	2>"$T/a.err" || st=$?
cat "$T/a.err"
[[ $st == 1 ]] || fail "exit status $st"
said=$(line_of "$T/a.err" "^evring record: bash \(pid [0-9]+\) did not connect within 1 s: is it \
linked with libevring, and its agent enabled \(EVR_AGENT\)\?\$")
stopping=$(line_of "$T/a.err" "^evring record: stopping bash \(pid [0-9]+\) with SIGTERM: it \
cannot be traced\$")
cleaned=$(line_of "$T/a.err" "^cleaned up\$")
status=$(line_of "$T/a.err" "^evring record: bash \(pid [0-9]+\) exited with status 3\$")
((said < stopping && stopping < cleaned && cleaned < status)) ||
	fail "not said before it was done (lines $said, $stopping, $cleaned, $status)"
! grep -qi "kill" "$T/a.err" || fail "killed"
[[ ! -e $T/a.evtrace ]] || fail "an empty trace file was left behind"

# 2. It ignores SIGTERM: it runs on, and evring says so with its pid.
st=0
"$EVRING" record --connect-timeout 300ms -o "$T/b.evtrace" -- bash -c \
	'trap "" TERM; echo "pid $$" >&2; exec sleep 1000' \
	2>"$T/b.err" || st=$?
cat "$T/b.err"
[[ $st == 1 ]] || fail "exit status $st"
pid=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$T/b.err")
[[ -n $pid ]] || fail "the program did not start"
KILL_AT_EXIT+=("$pid")
grep -qE "^evring record: bash \(pid $pid\) did not stop within 5 s of SIGTERM; it runs on, \
untraced\$" "$T/b.err" || fail "not said that it runs on"
kill -0 "$pid" 2>/dev/null || fail "the program that ignores SIGTERM was stopped anyway"
kill -9 "$pid"

# 3. The program waits as long as evring does.
"$EVRING" record --connect-timeout 1500ms -o "$T/c.evtrace" -- env >"$T/env.out" \
	2>"$T/c.err" && fail "record of env succeeded"
grep -qx "EVR_CONNECT_TIMEOUT_MS=1500" "$T/env.out" ||
	fail "the program's EVR_CONNECT_TIMEOUT_MS: $(grep EVR_CONNECT "$T/env.out")"
grep -q "exited with status 0 before connecting" "$T/c.err" || fail "$(cat "$T/c.err")"

# 4. The option: a range, and only with -- PROGRAM; a program that connects is traced.
st=0
"$EVRING" record --connect-timeout 10ms -o "$T/d.evtrace" -- true 2>"$T/d.err" || st=$?
[[ $st == 2 ]] && grep -q "^evring record: --connect-timeout 10ms is not between 100ms and 1h$" \
	"$T/d.err" || fail "10ms: $st $(cat "$T/d.err")"
st=0
"$EVRING" record -p $$ --connect-timeout 1s -o "$T/e.evtrace" 2>"$T/e.err" || st=$?
[[ $st == 2 ]] && grep -q "connect-timeout is for -- PROGRAM" "$T/e.err" ||
	fail "-p with --connect-timeout: $st $(cat "$T/e.err")"
"$EVRING" record --connect-timeout 60s --providers Demo -o "$T/f.evtrace" -- "$WORKLOAD" \
	--events 100 >/dev/null 2>"$T/f.err" || fail "a program that connects: $(cat "$T/f.err")"
grep -q "workload exited with status 0" "$T/f.err" || fail "$(cat "$T/f.err")"
echo "PASS"
