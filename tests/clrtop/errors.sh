#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clrtop's errors: one line naming the cause; exit 1 for a process it cannot watch, 2 for
# a bad command line.
source "$(dirname "$0")/lib.sh"

# run_err STATUS REGEX ARGS...: clrtop ARGS must exit with STATUS and say REGEX on stderr.
run_err() {
	local want=$1 re=$2 st=0
	shift 2
	"$CLRTOP" "$@" >"$T/out" 2>"$T/err" </dev/null || st=$?
	[[ $st == "$want" ]] || { cat "$T/err" >&2; fail "clrtop $*: exit status $st, want $want"; }
	grep -Eq -- "$re" "$T/err" || { cat "$T/err" >&2; fail "clrtop $*: no '$re' on stderr"; }
	echo "clrtop $*: $(head -1 "$T/err")"
}

# A pid that no longer exists: a child that has been reaped.
true &
gone=$!
wait "$gone"
run_err 1 "^clrtop: process $gone does not exist\$" -b -n 1 -p "$gone"

# A process without libevring's agent.
sleep 600 &
plain=$!
KILL_AT_EXIT+=("$plain")
# The forked shell is "bash" until it has exec'd sleep: wait for the exec itself.
for ((i = 0; i < 100000; i++)); do
	[[ $(</proc/$plain/comm) == sleep ]] && break
done
[[ $(cat /proc/$plain/comm) == sleep ]] || fail "sleep $plain did not start"
run_err 1 "^clrtop: process $plain \(sleep\) does not run libevring's agent" -b -n 1 -p "$plain"

start_minirt
run_err 2 "^clrtop: --counters: '\[' after System.Runtime is never closed" \
	-b -n 1 -p "$MINIRT_PID" --counters 'System.Runtime[gc-heap-size'
run_err 2 "^clrtop: --counters: empty counter name" -b -p "$MINIRT_PID" --counters 'Process[]'
run_err 2 "^clrtop: --counters: a provider name is missing" --counters ',Process'
run_err 2 "^clrtop: -d: 'abc' is not a duration" -b -d abc
run_err 2 "^clrtop: -d: '0' is not a duration" -b -d 0
# The option as typed, not -d (issue 14, defect 7).
run_err 2 "^clrtop: --refresh-interval: 'abc' is not a duration" -b --refresh-interval abc
run_err 2 "^clrtop: --delay: '2:00:00' is not a duration from 0.01 to 3600" -b --delay 2:00:00
# dotnet-counters users type TimeSpans.
"$CLRTOP" -b -n 1 --refresh-interval 00:00:01 -p "$MINIRT_PID" >"$T/out" 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "--refresh-interval 00:00:01 is refused"; }
grep -q "interval 1s ===" "$T/out" || { cat "$T/out" >&2; fail "--refresh-interval 00:00:01 is not 1 s"; }
# Counters and providers the process does not have: a warning naming what it has.
"$CLRTOP" -b -n 2 -d 0.2 -p "$MINIRT_PID" --counters 'System.Runtime[cpu-usage,gc-heap-size],NoSuch' \
	>"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "clrtop with unknown counters failed"; }
cat "$T/err"
grep -q "^clrtop: warning: process $MINIRT_PID (minirt): --counters: the process has no counters of provider NoSuch (yet; its counters are in: .*System.Runtime" "$T/err" ||
	fail "no warning about provider NoSuch"
grep -q "^clrtop: warning: process $MINIRT_PID (minirt): --counters: System.Runtime has no counter cpu-usage (it has: .*gc-heap-size" "$T/err" ||
	fail "no warning about System.Runtime[cpu-usage]"
# Only unknown counters of a known provider: nothing to show, so the warning matters most
# (issue 28, item 3: it used to say nothing, the interval being counted from shown samples).
"$CLRTOP" -b -n 2 -d 0.2 -p "$MINIRT_PID" --counters 'System.Runtime[nosuch]' \
	>"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "clrtop with an unknown counter failed"; }
grep -q "^clrtop: warning: process $MINIRT_PID (minirt): --counters: System.Runtime has no counter nosuch (it has: .*gc-heap-size" "$T/err" ||
	{ cat "$T/err" "$T/out" >&2; fail "no warning about System.Runtime[nosuch] alone"; }
run_err 2 "^clrtop: -p: 'x1' is not a process id" -p x1
run_err 2 "^clrtop: -n: '0' is not a positive number" -n 0
run_err 2 "^clrtop: --format: 'xml' is not csv or json" --format xml
run_err 2 "^clrtop: -o needs --format" -o "$T/x.csv"
run_err 2 "^clrtop: unknown option '--nosuch'" --nosuch
run_err 2 "^Try 'clrtop --help'" -q
run_err 2 "^clrtop: option '-d' needs a value" -d
run_err 1 "^clrtop: cannot create $T/no/such/dir.csv: No such file or directory" \
	-b -n 1 -p "$MINIRT_PID" --format csv -o "$T/no/such/dir.csv"
"$CLRTOP" --help | grep -q '^Usage: clrtop' || fail "--help"
echo "clrtop errors: ok"
