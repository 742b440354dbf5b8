#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record -p A -p B: two processes in one trace, drained by one loop; the recording
# ends by itself when the last of them exits. Each counts exactly (events + lost == what it
# wrote), dump --pid shows one process only, dump alone both with their pids, and the
# side bands that --all cannot have say so (record_several_stacks.sh has them with -p -p).
source "$(dirname "$0")/lib.sh"
need_python

# Confined once recording (a broker connects for it). Before the workloads: --all would
# attach to them.
"$EVRING" record --all --duration 1ms --debug-sandbox-probe -o "$T/p.evtrace" 2>"$T/p.err" ||
	fail "record --all --debug-sandbox-probe: $(cat "$T/p.err")"
grep -q "^evring record: sandbox probe: open(/etc/passwd): Operation not permitted" "$T/p.err" ||
	fail "record --all is not confined: $(cat "$T/p.err")"

start_workload a --events 5000 --threads 2 --wait-sessions 1
PA=$WL_PID FA=$WL_FD
start_workload b --events 3000 --threads 1 --wait-sessions 1
PB=$WL_PID FB=$WL_FD

# What is for one process is refused with one line, before anything is attached.
one_line 2 "^evring record: --stacks: not with --all \(a process found while recording is \
attached inside the sandbox, which reads no process's maps nor opens perf events\): name them \
with -p/-n\$" "$EVRING" record --all --stacks -o "$T/x.evtrace"
one_line 2 "^evring record: -- PROGRAM and -p, -n or --all exclude each other\$" \
	"$EVRING" record --all -o "$T/x.evtrace" -- /bin/true
[[ ! -e $T/x.evtrace ]] || fail "a refused recording left a file"

"$EVRING" record -p "$PA" -p "$PB" --buffer-size 64M -o "$T/ab.evtrace" 2>"$T/rec.err" ||
	fail "record -p -p: $(cat "$T/rec.err")"
cat "$T/rec.err"
expect "$FA" "^done 5000 " "a's done line"
EA=${LINE##* }
expect "$FB" "^done 3000 " "b's done line"
EB=${LINE##* }
grep -qE "^evring record: [0-9]+ events, .* 2 processes, file " "$T/rec.err" || fail "summary"
# Its own CPU, for the whole recording (docs/recorder.md, "What the recorder costs").
grep -qE "^evring record: CPU [0-9.]+ ms: [0-9.]+ ms to start, [0-9.]+ ms recording \([0-9.]+ ns an event\), [0-9.]+ ms to finish$" \
	"$T/rec.err" || fail "no CPU line: $(cat "$T/rec.err")"

"$EVRING" report --json "$T/ab.evtrace" >"$T/r.json" || fail "report --json"
"$EVRING" dump "$T/ab.evtrace" >"$T/ab.txt" || fail "dump"
"$EVRING" dump --pid "$PB" "$T/ab.evtrace" >"$T/b.txt" || fail "dump --pid"
one_line 1 "^evring dump: .*ab.evtrace: no process 1 in the trace \(its processes: $PA, $PB\)\$" \
	"$EVRING" dump --pid 1 "$T/ab.evtrace"
# From a pipe: said in one line (the processes' chunks are kept apart in a file only).
st=0
cat "$T/ab.evtrace" | "$EVRING" dump - >/dev/null 2>"$T/pipe.err" || st=$?
[[ $st == 1 ]] && grep -q "several processes (format 2) is read from a file, not a pipe" \
	"$T/pipe.err" || fail "dump - of a pipe: status $st: $(cat "$T/pipe.err")"
# report copies a pipe into a file first, and reads it.
cat "$T/ab.evtrace" | "$EVRING" report --json - >"$T/r2.json" || fail "report - from a pipe"
cmp -s <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"])' "$T/r2.json") \
	<(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"])' "$T/r.json") ||
	fail "report from a pipe differs"

python3 - "$T" "$PA" "$EA" "$PB" "$EB" <<'PY'
import json, re, sys
t, pa, ea, pb, eb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rep = json.load(open(f"{t}/r.json"))
procs = {p["pid"]: p for p in rep["processes"]}
assert sorted(procs) == sorted([pa, pb]), procs.keys()
for pid, emitted in ((pa, ea), (pb, eb)):
    p = procs[pid]
    assert p["events"] + p["lost"] == emitted, f"{pid}: {p['events']} + {p['lost']} != {emitted}"
    assert p["end"] == "exited", p["end"]
    print(f"process {pid}: {p['events']} + {p['lost']} lost == {emitted}")
lines = open(f"{t}/b.txt").read().splitlines()
assert lines and all(f" pid={pb} " in l for l in lines), "dump --pid shows another process"
assert sum(1 for l in lines if " LOST " not in l) == procs[pb]["events"]
both = open(f"{t}/ab.txt").read().splitlines()
n = {pa: 0, pb: 0}
last = -1.0
for l in both:
    n[int(re.search(r" pid=(\d+) ", l)[1])] += " LOST " not in l
    ts = float(l.split()[0])
    assert ts >= last, f"dump out of time order at {l!r}"
    last = ts
assert n[pa] == procs[pa]["events"] and n[pb] == procs[pb]["events"], n
print("PASS")
PY
