#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clrtop -b: plain-text snapshots without a terminal. -p PID shows minirt's System.Runtime
# and Process counters with numbers; --counters keeps only the named ones; the overview
# lists the process; a watched process that exits is shown as exited and ends the run.
source "$(dirname "$0")/lib.sh"

start_minirt
pid=$MINIRT_PID

"$CLRTOP" -b -n 3 -d 0.2 -p "$pid" >"$T/b.txt" </dev/null || fail "clrtop -b -p failed"
cat "$T/b.txt"
[[ $(grep -c '^=== clrtop .* snapshot [0-9]/3 ' "$T/b.txt") == 3 ]] || fail "not 3 snapshots"
[[ $(grep -c "^PID $pid  minirt  live  " "$T/b.txt") == 3 ]] || fail "no process header"
for c in "GC Heap Size" "Gen 0 GC Count" "ThreadPool Queue Length" "% Time in GC" \
	"Allocation Rate" "Work Item Duration" "CPU usage" "Working set" "Threads"; do
	[[ $(grep -cE "^    $c +[0-9-]" "$T/b.txt") == 3 ]] || fail "no value for '$c' in each snapshot"
done
grep -Eq '^  System\.Runtime$' "$T/b.txt" || fail "no System.Runtime group"
grep -Eq '^  Process$' "$T/b.txt" || fail "no Process group"
grep -Eq '^    Working set +[0-9.]+ (KiB|MiB|GiB)' "$T/b.txt" || fail "working set without a unit"
grep -Eq '^    CPU usage +[0-9.]+%' "$T/b.txt" || fail "cpu usage without %"

# --counters: only the counters asked for.
"$CLRTOP" -b -n 2 -d 0.2 -p "$pid" --counters 'System.Runtime[gc-heap-size],Process[threads]' \
	>"$T/f.txt" </dev/null || fail "clrtop --counters failed"
cat "$T/f.txt"
n=$(grep -c '^    ' "$T/f.txt")
[[ $n == 4 ]] || fail "--counters: $n counter lines in 2 snapshots, want 4"
grep -q '^    GC Heap Size ' "$T/f.txt" || fail "--counters: no GC Heap Size"
grep -q '^    Threads ' "$T/f.txt" || fail "--counters: no Threads"

# The overview, in plain text: minirt's row with its runtime columns.
"$CLRTOP" -b -n 2 -d 0.2 >"$T/o.txt" </dev/null || fail "clrtop -b (overview) failed"
cat "$T/o.txt"
grep -Eq "^ +$pid minirt +[0-9.]+ +[0-9.]+ (B|KiB|MiB|GiB) +[0-9]+ +[0-9.]+ (B|KiB|MiB)" \
	"$T/o.txt" || fail "the overview has no full row for minirt"

# The watched process exits: the last snapshot says so, and clrtop ends by itself.
mkfifo "$T/live.out"
"$CLRTOP" -b -d 0.2 -p "$pid" >"$T/live.out" </dev/null &
clr=$!
KILL_AT_EXIT+=("$clr")
exec {fd}<"$T/live.out"
expect "$fd" "^PID $pid  minirt  live  [1-9]" "a first snapshot"
stop_process "$pid"
expect "$fd" "^PID $pid  minirt  exited" "minirt shown as exited"
cat <&"$fd" >/dev/null
wait "$clr" || fail "clrtop exited with status $? after minirt ended"
echo "clrtop batch: ok"
