#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record --all: the records of a process that went quiet reach the file while the
# recording runs, from its packet still open (the flush every 250 ms), not only once a packet
# completes or the recording ends; and every event of it counts. The recorder's loop sleeps on
# the processes' doorbells and steps a process only when a packet of it completes, it dies or
# its recorder's own flush is due (docs/recorder.md "Several processes in one file"): this
# checks that the flush of a quiet process is not forgotten, next to a busy one (whose
# packets complete all the time, and which is looked at every 10 ms instead).
# The quiet workload writes 40 Ticks or more and is then stopped (SIGSTOP): nothing completes
# its packet from then on, so only a flush brings those Ticks to the file, which dump reads
# while the recording runs (up to its last whole chunk). Synchronization is on lines and on
# what the file holds; the file is looked at every 0.2 s or so, for 60 s at most.
source "$(dirname "$0")/lib.sh"
need_python

start_workload quiet --threads 1 --rate 50 --wait-sessions 1 --report-every 40
P=$WL_PID F=$WL_FD
start_workload busy --threads 1 --rate 5000 --wait-sessions 1
B=$WL_PID BF=$WL_FD
start_record rec --all -o "$T/idle.evtrace"
seen=
for _ in 1 2; do
	expect "$REC_FD" "^evring record: \+ process ($P|$B) " "'+ process' for both workloads"
	seen+=" ${BASH_REMATCH[1]}"
done
[[ " $seen " == *" $P "* && " $seen " == *" $B "* ]] || fail "attached:$seen, not $P and $B"

expect "$F" "^emitted 40\$" "40 Ticks from the quiet workload"
kill -STOP "$P"
# max_tick: the highest Tick seq of the quiet process in the file so far.
max_tick() {
	"$EVRING" dump --json --pid "$P" "$T/idle.evtrace" 2>/dev/null | python3 -c '
import json, sys
print(max([json.loads(l)["fields"]["seq"] for l in sys.stdin
           if json.loads(l).get("event") == "Tick"] or [0]))'
}
n=0
t0=$SECONDS
while ((SECONDS - t0 < 60)); do
	n=$(max_tick)
	((n >= 40)) && break
	sleep 0.2
done
((n >= 40)) || fail "the stopped process's Ticks are not in the file while recording (last: $n)"
echo "Ticks 1..$n of the stopped process are in the file while the recording runs"

kill -CONT "$P"
kill -INT "$P" "$B"
expect "$F" "^done " "the quiet workload's done line"
echo "$LINE" >"$T/quiet.done"
expect "$BF" "^done " "the busy workload's done line"
echo "$LINE" >"$T/busy.done"
# Both exit: the recorder notes it (their sessions end), then it is stopped.
for _ in 1 2; do
	expect "$REC_FD" "^evring record: - process ($P|$B) \(workload\) exited" "'- process'"
done
kill -INT "$REC_PID"
finish_record "$REC_FD" "$T/rec.rest"
wait "$REC_PID" || fail "record --all exited with $?: $(cat "$T/rec.rest")"
"$EVRING" report --json "$T/idle.evtrace" >"$T/report.json" 2>"$T/report.err" ||
	fail "report --json: $(cat "$T/report.err")"
python3 - "$T" "$P" "$B" <<'EOF'
import json, re, sys
t, quiet, busy = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
procs = {p["pid"]: p for p in json.load(open(f"{t}/report.json"))["processes"]}
for pid, name in ((quiet, "quiet"), (busy, "busy")):
    emitted = int(re.match(r"^done (\d+) (\d+)$", open(f"{t}/{name}.done").read().strip())[2])
    p = procs[pid]
    assert p["end"] == "exited", f"{name} {pid}: end {p['end']}"
    assert p["events"] + p["lost"] == emitted, \
        f"{name} {pid}: {p['events']} events + {p['lost']} lost != {emitted} emitted"
    print(f"{name} {pid}: {p['events']} + {p['lost']} lost == {emitted} emitted")
print("PASS")
EOF
