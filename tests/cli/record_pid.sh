#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record -p on a running workload that writes exactly N iterations, then dump:
# every Tick 1..N with a valid checksum, the late Phase event decoded, nothing lost, the
# summary's event count equal to what dump prints, dump --json parseable with the
# documented fields, timestamps in order.
source "$(dirname "$0")/lib.sh"
need_python
N=20000

# --pin: each of the two writers on its own CPU. Where they shared one on a loaded machine
# (ctest -j3 on 2 vCPUs), a writer preempted in its slow path now and then made the other
# drop a burst of events on that CPU's ring, counted as lost (README, "How the data path
# works"); this test is about the recording being complete, not about the scheduler.
start_workload wl --events "$N" --threads 2 --wait-sessions 1 --late-after 5000 --pin
"$EVRING" record -p "$WL_PID" --providers Demo --buffer-size 64M -o "$T/a.evtrace" \
	2>"$T/rec.err" || fail "record exited with $?: $(cat "$T/rec.err")"
cat "$T/rec.err"
expect "$WL_FD" "^done $N " "the workload's 'done' line"

summary=$(grep -E '^evring record: [0-9]+ events, ' "$T/rec.err") || fail "no summary line"
[[ $summary =~ ^evring\ record:\ ([0-9]+)\ events,\ .*\ ([0-9]+)\ lost,\ .*file\ $T/a.evtrace$ ]] ||
	fail "summary line: $summary"
events=${BASH_REMATCH[1]}
[[ ${BASH_REMATCH[2]} == 0 ]] || fail "events were lost: $summary"
grep -q "^evring record: process $WL_PID exited (it ended the session)$" "$T/rec.err" ||
	fail "the summary does not say the process exited"

"$EVRING" dump "$T/a.evtrace" >"$T/a.txt" 2>"$T/dump.err" || fail "dump: $(cat "$T/dump.err")"
[[ ! -s $T/dump.err ]] || fail "dump printed on stderr: $(cat "$T/dump.err")"
check_dump --text "$T/a.txt" --ticks "$N" --no-lost --total "$events" \
	--only RequestStart,RequestStop,Alloc,Tick,Phase \
	--require RequestStart,RequestStop,Alloc,Tick,Phase \
	--count RequestStart="$N" --count Alloc="$N"
head -3 "$T/a.txt"

"$EVRING" dump --json "$T/a.evtrace" >"$T/a.json" || fail "dump --json failed"
check_dump --json "$T/a.json" --ticks "$N" --no-lost --total "$events" \
	--require RequestStart,RequestStop,Alloc,Tick,Phase
[[ $(wc -l <"$T/a.json") == $(wc -l <"$T/a.txt") ]] || fail "text and JSON dumps differ in length"

# Relative time starts at 0; --absolute is wall-clock time near now.
[[ $(head -c 12 "$T/a.txt") == 0.000000000\  ]] || fail "the first event is not at time 0"
"$EVRING" dump --absolute "$T/a.evtrace" >"$T/abs.txt" || fail "dump --absolute failed"
abs=$(head -1 "$T/abs.txt" | cut -d. -f1)
now=$(date +%s)
((abs > now - 3600 && abs <= now)) || fail "--absolute time $abs is not near now ($now)"
echo "PASS"
