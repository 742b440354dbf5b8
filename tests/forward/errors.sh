#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring forward's errors: each is one line naming the cause, with exit status 2 for a bad
# command line (before anything is attached or created) and 1 for work that failed.
source "$(dirname "$0")/lib.sh"

# expect_error STATUS REGEX ARGS...: forward ARGS must exit STATUS with one line matching.
expect_error() {
	local want=$1 re=$2 st=0
	shift 2
	"$EVRING" forward "$@" >"$T/out" 2>"$T/err" || st=$?
	((st == want)) || fail "forward $*: exit $st, expected $want: $(cat "$T/err")"
	[[ $(wc -l <"$T/err") == 1 ]] || fail "forward $*: not one line: $(cat "$T/err")"
	grep -qE "^evring forward: $re" "$T/err" || fail "forward $*: $(cat "$T/err")"
}

start_workload wl --rate 100
cd "$T"
expect_error 2 "say where to" -p "$WL_PID"
expect_error 2 "say what to forward" --to jsonl:-
expect_error 2 "--to nosuch: unknown sink 'nosuch'" -p "$WL_PID" --to nosuch
expect_error 2 "--to jsonl:x,bogus=1: jsonl has no option 'bogus'" -p "$WL_PID" \
	--to jsonl:x,bogus=1
expect_error 2 "--to jsonl:x,level=loud: level=loud is not a level" -p "$WL_PID" \
	--to jsonl:x,level=loud
expect_error 2 "--to jsonl:x,what=some: what=some" -p "$WL_PID" --to jsonl:x,what=some
expect_error 2 "--to jsonl:x,max-rate=0: max-rate=0 is not a rate" -p "$WL_PID" \
	--to jsonl:x,max-rate=0
expect_error 2 "--to jsonl:x,nokey: 'nokey' is not KEY=VALUE" -p "$WL_PID" --to jsonl:x,nokey
expect_error 2 "--pid: 'abc' is not a process id" -p abc --to jsonl:-
expect_error 2 "-- PROGRAM and -p, -n or --all exclude each other" -p "$WL_PID" --to jsonl:- -- true
expect_error 2 "--counter-interval 1ms is not between 10ms and 1h" -p "$WL_PID" --to jsonl:- \
	--counter-interval 1ms
[[ ! -e $T/x ]] || fail "a usage error created a sink's file"
expect_error 1 "--to jsonl:$T/no/such/dir: cannot open $T/no/such/dir: No such file" \
	-p "$WL_PID" --to "jsonl:$T/no/such/dir"
# A pid that cannot exist (above pid_max) and one of a process without libevring.
expect_error 1 "no process 1073741823" -p 1073741823 --to jsonl:-
expect_error 1 "process 1 .*" -p 1 --to jsonl:-
expect_error 1 "cannot run .*no-such-program" --to jsonl:- -- "$T/no-such-program"
kill -0 "$WL_PID" || fail "the workload died"
echo PASS
