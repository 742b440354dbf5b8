#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record -p A -p B -p C, ended while B is stopped (SIGSTOP, as a debugger or Ctrl-Z
# would): the end asks every process to stop its session at once and waits for the answers
# under one deadline, and a process that left a question unanswered (its last thread list)
# is not waited for at all: its rings are read from its memory as they are (docs/recorder.md
# "Several processes in one file"). Before, each stopped process cost a 30 s wait for its
# answer, one after the other.
# What is checked, without timing anything: once the recorder said that B left its thread
# list unanswered, it ends without waiting for B's answer to the stop (it says so), and no
# other process is in that line; every event of B up to its
# stop is in the file (B writes "stopped TICKS EVENTS" and then stops itself: events + lost
# == EVENTS, Ticks 1..TICKS); C, which exited meanwhile, counts exactly too; A, which ran on
# and answered, has Ticks 1..N without a gap and no loss.
source "$(dirname "$0")/lib.sh"
need_python

start_workload a --threads 1 --rate 1000 --wait-sessions 1
PA=$WL_PID FA=$WL_FD
start_workload b --threads 1 --rate 400 --wait-sessions 1 --stop-at 200
PB=$WL_PID FB=$WL_FD
start_workload c --threads 1 --rate 1000 --events 500 --wait-sessions 1
PC=$WL_PID FC=$WL_FD

start_record rec -p "$PA" -p "$PB" -p "$PC" --buffer-size 64M -o "$T/abc.evtrace"
expect "$FB" "^stopped 200 ([0-9]+)\$" "b's stopped line"
EB=${BASH_REMATCH[1]}
# The line comes just before its raise(SIGSTOP): wait for the stop itself (state T).
for _ in $(seq 200); do
	[[ $(awk '{print $3}' /proc/"$PB"/stat) == T ]] && break
	sleep 0.05
done
[[ $(awk '{print $3}' /proc/"$PB"/stat) == T ]] || fail "b did not stop"
expect "$FC" "^done 500 " "c's done line"
EC=${LINE##* }
# C's end, and the recorder's note that B did not answer its thread list (asked every 2 s
# at most): from then on B is known unresponsive, in whichever order the two lines come.
seen=
for _ in 1 2; do
	expect "$REC_FD" "^evring record: (- process $PC \(workload\) exited|warning: process \
$PB: did not answer within [0-9]+ ms \(stopped\?\))" "c's end and b's unanswered thread list"
	seen+=" ${BASH_REMATCH[1]:0:1}"
done
[[ $seen == *-* && $seen == *w* ]] || fail "lines seen:$seen"
kill -INT "$REC_PID"
finish_record "$REC_FD" "$T/rec.rest"
st=0
wait "$REC_PID" || st=$?
cat "$T/rec.rest"
[[ $st == 0 ]] || fail "record exited with $st"
kill -CONT "$PB"

grep -qE "^evring record: \? process $PB \(workload\) did not answer the stop \(not waited for: a \
question had gone unanswered\): read as it was, [0-9]+ events, 0 lost\$" "$T/rec.rest" ||
	fail "no line saying that b was not waited for"
n=$(grep -c "^evring record: ? process " "$T/rec.rest" || true)
[[ $n == 1 ]] || fail "$n processes did not answer the stop, not b alone"
grep -q "^evring record: 1 of 3 processes did not answer the stop; stopping took " \
	"$T/rec.rest" || fail "no count of the processes that did not answer"

"$EVRING" report --json "$T/abc.evtrace" >"$T/r.json" || fail "report --json"
"$EVRING" dump --json "$T/abc.evtrace" >"$T/d.json" || fail "dump --json"
python3 - "$T" "$PA" "$PB" "$EB" "$PC" "$EC" <<'PY'
import collections, json, sys
t, pa, pb, eb, pc, ec = sys.argv[1], *map(int, sys.argv[2:])
procs = {p["pid"]: p for p in json.load(open(f"{t}/r.json"))["processes"]}
assert sorted(procs) == sorted([pa, pb, pc]), procs.keys()
ticks = collections.defaultdict(list)
for l in open(f"{t}/d.json"):
    e = json.loads(l)
    if e.get("event") == "Tick":
        ticks[e["pid"]].append(e["fields"]["seq"])
for pid, emitted, name in ((pb, eb, "b (stopped)"), (pc, ec, "c (exited)")):
    p = procs[pid]
    assert p["events"] + p["lost"] == emitted, \
        f"{name}: {p['events']} + {p['lost']} lost != {emitted} emitted"
    print(f"{name}: {p['events']} + {p['lost']} lost == {emitted} emitted, end {p['end']}")
assert sorted(ticks[pb]) == list(range(1, 201)), f"b's Ticks: {len(ticks[pb])}"
assert sorted(ticks[pc]) == list(range(1, 501)), f"c's Ticks: {len(ticks[pc])}"
assert procs[pc]["end"] == "exited", procs[pc]["end"]
a = sorted(ticks[pa])
assert a and a == list(range(1, len(a) + 1)), "a's Ticks have a gap"
assert procs[pa]["lost"] == 0, procs[pa]["lost"]
print(f"a (ran on): Ticks 1..{len(a)}, 0 lost")
print("PASS")
PY
