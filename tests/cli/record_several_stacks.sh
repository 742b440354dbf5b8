#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record -p A -p B --stacks: each process's stream has its own side band (its module
# map), so every event of each carries its call stack, symbolized against that process's
# binaries: folded stacks per pid sum to that process's events, name the workload's
# functions, and each process counts exactly (events + lost == what it wrote).
source "$(dirname "$0")/lib.sh"
need_python

start_workload a --events 2000 --threads 2 --wait-sessions 1
PA=$WL_PID FA=$WL_FD
start_workload b --events 1000 --threads 1 --wait-sessions 1
PB=$WL_PID FB=$WL_FD

"$EVRING" record -p "$PA" -p "$PB" --stacks --providers Demo --buffer-size 64M \
	-o "$T/ab.evtrace" 2>"$T/rec.err" || fail "record -p -p --stacks: $(cat "$T/rec.err")"
cat "$T/rec.err"
expect "$FA" "^done 2000 " "a's done line"
EA=${LINE##* }
expect "$FB" "^done 1000 " "b's done line"
EB=${LINE##* }
"$EVRING" report --json "$T/ab.evtrace" >"$T/r.json" || fail "report --json"
for p in "$PA" "$PB"; do
	"$EVRING" convert -q -f folded --pid "$p" "$T/ab.evtrace" -o "$T/$p.folded" ||
		fail "convert -f folded --pid $p"
done
python3 - "$T" "$PA:$EA" "$PB:$EB" <<'PY' || fail "stacks per process"
import json, sys
t = sys.argv[1]
procs = {p["pid"]: p for p in json.load(open(f"{t}/r.json"))["processes"]}
for a in sys.argv[2:]:
    pid, emitted = (int(x) for x in a.split(":"))
    p = procs[pid]
    assert p["events"] + p["lost"] == emitted, f"{pid}: {p['events']} + {p['lost']} != {emitted}"
    stacks, n, funcs = 0, 0, set()
    for line in open(f"{t}/{pid}.folded"):
        frames, count = line.rsplit(" ", 1)
        stacks += int(count)
        funcs.update(frames.split(";"))
    assert stacks == p["events"], f"{pid}: {stacks} stacks for {p['events']} events"
    assert "demo_tick" in funcs and "worker" in funcs, f"{pid}: not symbolized: {sorted(funcs)[:10]}"
    print(f"process {pid}: {p['events']} events + {p['lost']} lost == {emitted}, each with its stack")
PY
echo PASS
