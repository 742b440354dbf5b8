#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record -p A -p H, where H answers its last thread list at the end and is stopped
# right after, before it answers the stop: the workload's --stop-on-end stops the whole
# process (SIGSTOP) from Demo's enable callback, which the agent calls as it stops the
# session, before it answers. Nothing outside can tell that from a slow answer but the
# process's state: the wait for the stop looks at /proc/PID/stat every 100 ms and gives a
# stopped process up (docs/recorder.md "Several processes in one file"). Before, the
# recording waited the stop's whole 30 s deadline for it: record runs under `timeout 25`
# here, a guard against that hang (not a measure of speed: it ends well within a second).
# Checked: record exits 0, H alone is said not to have answered, as stopped; H's Ticks
# are exactly 1..200 and its events + lost equal what it wrote; A's run from 1 without a
# gap or a loss. Both ways of reaching a process: through the broker (which opens
# /proc/PID/stat for the confined recorder) and directly (--no-sandbox).
source "$(dirname "$0")/lib.sh"
need_python

run() {
	local label=$1 st=0 eh
	shift
	start_workload "$label.a" --threads 1 --rate 1000 --wait-sessions 1
	local pa=$WL_PID
	start_workload "$label.h" --threads 1 --rate 2000 --wait-sessions 1 --stop-on-end 200
	local ph=$WL_PID fh=$WL_FD

	mkfifo "$T/$label.err"
	timeout -s KILL 25 "$EVRING" record -p "$pa" -p "$ph" --buffer-size 16M "$@" \
		-o "$T/$label.evtrace" 2>"$T/$label.err" &
	REC_PID=$!
	KILL_AT_EXIT+=("$REC_PID")
	exec {REC_FD}<"$T/$label.err"
	expect "$REC_FD" "^evring record: recording " "evring record starting ($label)"
	expect "$fh" "^held 200 ([0-9]+)\$" "h's held line ($label)"
	eh=${BASH_REMATCH[1]}
	kill -INT "$REC_PID"
	finish_record "$REC_FD" "$T/$label.rest"
	wait "$REC_PID" || st=$?
	cat "$T/$label.rest"
	[[ $st == 0 ]] || fail "record ($label) exited with $st (137: still waiting for the \
stopped process after 25 s)"
	[[ $(awk '{print $3}' /proc/"$ph"/stat) == T ]] || fail "h is not stopped ($label)"
	kill -CONT "$ph"

	grep -qE "^evring record: \? process $ph \(workload\) did not answer the stop \(stopped: \
not waited for further\): read as it was, [0-9]+ events, [0-9]+ lost\$" "$T/$label.rest" ||
		fail "no line saying that process $ph was stopped at the stop ($label)"
	n=$(grep -c "^evring record: ? process " "$T/$label.rest" || true)
	[[ $n == 1 ]] || fail "$n processes did not answer the stop, not h alone ($label)"

	"$EVRING" report --json "$T/$label.evtrace" >"$T/$label.r.json" || fail "report --json"
	"$EVRING" dump --json "$T/$label.evtrace" >"$T/$label.d.json" || fail "dump --json"
	python3 - "$T/$label" "$pa" "$ph" "$eh" <<'PY'
import collections, json, sys
t, pa, ph, eh = sys.argv[1], *map(int, sys.argv[2:])
procs = {p["pid"]: p for p in json.load(open(f"{t}.r.json"))["processes"]}
assert sorted(procs) == sorted([pa, ph]), procs.keys()
ticks = collections.defaultdict(list)
for l in open(f"{t}.d.json"):
    e = json.loads(l)
    if e.get("event") == "Tick":
        ticks[e["pid"]].append(e["fields"]["seq"])
p = procs[ph]
assert p["events"] + p["lost"] == eh, f"h: {p['events']} + {p['lost']} lost != {eh} written"
assert sorted(ticks[ph]) == list(range(1, 201)), f"h's Ticks: {len(ticks[ph])}"
s = sorted(ticks[pa])
assert s and s == list(range(1, len(s) + 1)), "a's Ticks have a gap"
assert procs[pa]["lost"] == 0, procs[pa]["lost"]
print(f"h: {p['events']} + {p['lost']} lost == {eh} written, Ticks 1..200; a: Ticks 1..{len(s)}")
PY
}

run broker
run direct --no-sandbox
echo PASS
