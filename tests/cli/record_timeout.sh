#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `timeout 60 evring record ...`, a common way to record for a while: when its time is up,
# timeout(1) sends its signal to the recorder and then again to its whole process group, the
# recorder included. The recorder took the repeat for a second Ctrl-C ("leave now") whenever it
# had handled the first before the second came, and exited 143 with the file unfinished (a CI
# run saw it as exit 130 with SIGINT). Here timeout is signalled as its timer would (the same
# path in timeout(1)), ten times: every recording ends with status 0, its summary line and a
# file that reads whole. The rule itself (a repeat from the same sender within a second is the
# same request, another sender's is "leave now") is test_cli_util's, deterministically.
source "$(dirname "$0")/lib.sh"
command -v timeout >/dev/null || skip "no timeout(1)"

start_workload wl --threads 1 --rate 20000 --wait-sessions 1
for round in $(seq 10); do
	sig=TERM
	((round % 2)) && sig=INT
	mkfifo "$T/$round.err"
	timeout --preserve-status -s "$sig" 600 "$EVRING" record -p "$WL_PID" --buffer-size 4M \
		-o "$T/$round.evtrace" 2>"$T/$round.err" &
	tpid=$!
	KILL_AT_EXIT+=("$tpid")
	exec {fd}<"$T/$round.err"
	expect "$fd" "^evring record: recording " "evring record starting (round $round)"
	kill -"$sig" "$tpid"
	finish_record "$fd" "$T/$round.rest"
	exec {fd}<&-
	st=0
	wait "$tpid" || st=$?
	[[ $st == 0 ]] || fail "round $round: record under timeout(1) exited with $st after SIG$sig \
(128+signal: it took timeout's repeat for a second Ctrl-C): $(cat "$T/$round.rest")"
	grep -qE "^evring record: [0-9]+ events, " "$T/$round.rest" ||
		fail "round $round: no summary line: $(cat "$T/$round.rest")"
	"$EVRING" report "$T/$round.evtrace" >"$T/$round.report" 2>"$T/$round.rerr" ||
		fail "round $round: report: $(cat "$T/$round.rerr")"
	[[ ! -s $T/$round.rerr ]] || fail "round $round: report said: $(cat "$T/$round.rerr")"
done
echo PASS
