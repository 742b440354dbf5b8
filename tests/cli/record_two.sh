#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Two evring record sessions at once on one process, with different providers, levels and
# loss modes: each file holds exactly what its own filter selects, complete.
source "$(dirname "$0")/lib.sh"
need_python
N=10000

start_workload wl --events "$N" --threads 2 --wait-sessions 2 --pin
"$EVRING" record -p "$WL_PID" --providers 'Demo:0x5:4' --mode overwrite --buffer-size 64M \
	-o "$T/a.evtrace" 2>"$T/a.err" &
A=$!
"$EVRING" record -p "$WL_PID" --providers 'Demo:0x2:5' --mode discard --buffer-size 64M \
	-o "$T/b.evtrace" 2>"$T/b.err" &
B=$!
wait "$A" || fail "record A: $(cat "$T/a.err")"
wait "$B" || fail "record B: $(cat "$T/b.err")"
cat "$T/a.err" "$T/b.err"

"$EVRING" dump "$T/a.evtrace" >"$T/a.txt" || fail "dump A"
"$EVRING" dump "$T/b.evtrace" >"$T/b.txt" || fail "dump B"
# A: requests (0x1) and ticks (0x4) at info; not Alloc (0x2, verbose) nor Phase (0x8).
check_dump --text "$T/a.txt" --ticks "$N" --no-lost --only RequestStart,RequestStop,Tick \
	--count RequestStart="$N" --count RequestStop="$N"
# B: memory (0x2) at verbose only.
check_dump --text "$T/b.txt" --no-lost --only Alloc --count Alloc="$N"
echo "PASS"
