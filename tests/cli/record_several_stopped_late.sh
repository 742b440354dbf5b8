#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record -p A -p D -p E -p F, ended right after E and F were stopped (SIGSTOP, as a
# debugger or Ctrl-Z would), D having stopped itself a while before: the end's last look at
# each process's threads is asked of every process before any answer is waited for
# (evr_recorder_stop_begin()), so the processes stopped since their last look cost one
# 100 ms wait in all, not one each (docs/recorder.md "Several processes in one file").
# What is checked, without timing anything: the three stopped processes are said not to
# have answered the stop (E and F waited for a grace, unless a look was under way as they
# stopped, and given up as soon as the wait saw them stopped; D not waited for at all,
# unless the looks fell so that none saw it stopped), and
# only they; D's every event up to its stop is in the file (Ticks 1..200, events + lost ==
# emitted); E's and F's Ticks run from 1 without a gap; A, which ran on and answered, has
# Ticks 1..N without a gap and no loss.
source "$(dirname "$0")/lib.sh"
need_python

start_workload a --threads 1 --rate 1000 --wait-sessions 1
PA=$WL_PID
start_workload d --threads 1 --rate 400 --wait-sessions 1 --stop-at 200
PD=$WL_PID FD=$WL_FD
start_workload e --threads 1 --rate 400 --wait-sessions 1
PE=$WL_PID
start_workload f --threads 1 --rate 400 --wait-sessions 1
PF=$WL_PID

start_record rec -p "$PA" -p "$PD" -p "$PE" -p "$PF" --buffer-size 64M -o "$T/adef.evtrace"
expect "$FD" "^stopped 200 ([0-9]+)\$" "d's stopped line"
ED=${BASH_REMATCH[1]}
# Is process $1 stopped (state T)? Waits for it, 10 s at most: a signal takes effect when
# the process next runs, which on a loaded machine may be a while.
stopped() {
	for _ in $(seq 1000); do
		[[ $(awk '{print $3}' /proc/"$1"/stat) == T ]] && return 0
		sleep 0.01
	done
	return 1
}
# Its line comes just before its raise(SIGSTOP): wait for the stop itself.
stopped "$PD" || fail "d did not stop"
# E and F stop now, and the recording ends as soon as they have: a look at their threads
# in between (every 2 s) is unlikely, and would only make them known not to answer. Not
# waiting for the stops would let one still answer its last look and then, stopped, not
# its stop: waited for the whole 30 s (docs/recorder.md).
kill -STOP "$PE" "$PF"
stopped "$PE" || fail "e did not stop"
stopped "$PF" || fail "f did not stop"
kill -INT "$REC_PID"
finish_record "$REC_FD" "$T/rec.rest"
st=0
wait "$REC_PID" || st=$?
cat "$T/rec.rest"
[[ $st == 0 ]] || fail "record exited with $st"
kill -CONT "$PD" "$PE" "$PF"

for p in "$PD" "$PE" "$PF"; do
	grep -qE "^evring record: \? process $p \(workload\) did not answer the stop \((waited \
for|not waited for: a question had gone unanswered|stopped: not waited for further)\): read as it was, [0-9]+ events, [0-9]+ \
lost\$" "$T/rec.rest" || fail "no line saying that process $p did not answer the stop"
done
n=$(grep -c "^evring record: ? process " "$T/rec.rest" || true)
[[ $n == 3 ]] || fail "$n processes did not answer the stop, not d, e and f alone"
grep -q "^evring record: 3 of 4 processes did not answer the stop; stopping took " \
	"$T/rec.rest" || fail "no count of the processes that did not answer"

"$EVRING" report --json "$T/adef.evtrace" >"$T/r.json" || fail "report --json"
"$EVRING" dump --json "$T/adef.evtrace" >"$T/d.json" || fail "dump --json"
python3 - "$T" "$PA" "$PD" "$ED" "$PE" "$PF" <<'PY'
import collections, json, sys
t, pa, pd, ed, pe, pf = sys.argv[1], *map(int, sys.argv[2:])
procs = {p["pid"]: p for p in json.load(open(f"{t}/r.json"))["processes"]}
assert sorted(procs) == sorted([pa, pd, pe, pf]), procs.keys()
ticks = collections.defaultdict(list)
for l in open(f"{t}/d.json"):
    e = json.loads(l)
    if e.get("event") == "Tick":
        ticks[e["pid"]].append(e["fields"]["seq"])
p = procs[pd]
assert p["events"] + p["lost"] == ed, f"d: {p['events']} + {p['lost']} lost != {ed} emitted"
assert sorted(ticks[pd]) == list(range(1, 201)), f"d's Ticks: {len(ticks[pd])}"
print(f"d (stopped itself): {p['events']} + {p['lost']} lost == {ed} emitted, Ticks 1..200")
for pid, name in ((pe, "e"), (pf, "f"), (pa, "a")):
    s = sorted(ticks[pid])
    assert s and s == list(range(1, len(s) + 1)), f"{name}'s Ticks have a gap"
    print(f"{name}: Ticks 1..{len(s)}, {procs[pid]['lost']} lost")
assert procs[pa]["lost"] == 0, procs[pa]["lost"]
print("PASS")
PY
