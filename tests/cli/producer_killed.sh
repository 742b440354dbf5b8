#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The producer is SIGKILLed while evring record runs: record drains what was published,
# finishes a valid file, exits 0 and says the process died; dump reads every Tick the
# producer reported as written before it died.
source "$(dirname "$0")/lib.sh"
need_python
K=2000

# One thread: "emitted K" then means Ticks 1..K are all written.
start_workload wl --rate 40000 --threads 1 --wait-sessions 1 --report-every 1000
"$EVRING" record -p "$WL_PID" --providers Demo --buffer-size 64M -o "$T/k.evtrace" \
	2>"$T/rec.err" &
R=$!
expect "$WL_FD" "^emitted $K\$"
kill -9 "$WL_PID"
wait "$R" || fail "record exited with $? after the producer died: $(cat "$T/rec.err")"
cat "$T/rec.err"
grep -q "^evring record: process $WL_PID died" "$T/rec.err" ||
	fail "the summary does not say the process died"
grep -qE "^evring record: [0-9]+ events, .* [0-9]+ lost, " "$T/rec.err" || fail "summary"
"$EVRING" dump "$T/k.evtrace" >"$T/k.txt" 2>"$T/dump.err" || fail "dump: $(cat "$T/dump.err")"
grep -q truncated "$T/dump.err" && fail "the file of a finished recording reads as truncated"
check_dump --text "$T/k.txt" --ticks-from-1 "$K" --no-lost
echo "PASS"
