#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record --all: five workloads in one trace file. Three run when the recording starts,
# two start during it (found through the runtime directory, attached, and only then do they
# write: --wait-sessions 1), one is SIGKILLed during it. Every process that finished counts
# exactly: its events + lost in the file == what it says it wrote; the killed one's Ticks are
# all there from 1 on, without loss, and the file notes that it died. Then dump --pid, the
# process table of report, report --json per process, and chrome's one pid per process.
# Synchronization is on lines only: the workloads' ready/done/emitted lines and record's
# "+ process PID" / "- process PID" lines.
source "$(dirname "$0")/lib.sh"
need_python

# wait_lines FD REGEX...: until a line matching each REGEX came from FD, in any order, now or
# earlier (every line read is kept in $T/rec.log).
wait_lines() {
	local fd=$1 re line missing
	shift
	touch "$T/rec.log"
	for re in "$@"; do
		until grep -qE -- "$re" "$T/rec.log"; do
			IFS= read -r -t 120 -u "$fd" line || fail "never saw '$re'"
			echo "record: $line"
			echo "$line" >>"$T/rec.log"
		done
	done
}

# Before the recording: two that finish (--events), one that runs until killed.
start_workload w1 --events 4000 --threads 2 --wait-sessions 1
P1=$WL_PID F1=$WL_FD
start_workload w2 --events 6000 --threads 1 --wait-sessions 1
P2=$WL_PID F2=$WL_FD
start_workload w3 --rate 20000 --threads 1 --wait-sessions 1 --report-every 1000
P3=$WL_PID F3=$WL_FD

start_record rec --all --buffer-size 64M -o "$T/all.evtrace"
wait_lines "$REC_FD" "^evring record: \+ process $P1 " "^evring record: \+ process $P2 " \
	"^evring record: \+ process $P3 "

# During the recording: two more, each attached before it writes its first event.
start_workload w4 --events 3000 --threads 2 --wait-sessions 1
P4=$WL_PID F4=$WL_FD
start_workload w5 --events 2000 --threads 1 --wait-sessions 1
P5=$WL_PID F5=$WL_FD
wait_lines "$REC_FD" "^evring record: \+ process $P4 " "^evring record: \+ process $P5 "

# One dies during the recording, after at least 2000 Ticks.
expect "$F3" "^emitted 2000\$" "2000 ticks from w3"
kill -9 "$P3"
for f in 1 2 4 5; do
	fdv=F$f
	expect "${!fdv}" "^done " "w$f's done line"
	echo "$LINE" >"$T/w$f.done"
done
wait_lines "$REC_FD" "^evring record: - process $P1 \(workload\) exited" \
	"^evring record: - process $P2 \(workload\) exited" \
	"^evring record: - process $P3 \(workload\) died" \
	"^evring record: - process $P4 \(workload\) exited" \
	"^evring record: - process $P5 \(workload\) exited"
kill -INT "$REC_PID"
finish_record "$REC_FD" "$T/rec.rest"
wait "$REC_PID" || fail "record --all exited with $?: $(cat "$T/rec.rest")"
cat "$T/rec.rest"
grep -qE "^evring record: [0-9]+ events, .* 5 processes, file " "$T/rec.rest" ||
	fail "no summary of 5 processes"

"$EVRING" report --json "$T/all.evtrace" >"$T/report.json" 2>"$T/report.err" ||
	fail "report --json: $(cat "$T/report.err")"
"$EVRING" report "$T/all.evtrace" >"$T/report.txt" 2>>"$T/report.err" ||
	fail "report: $(cat "$T/report.err")"
grep -q "^Processes (5;" "$T/report.txt" || fail "report has no table of 5 processes"
grep -q "^=== Totals ===" "$T/report.txt" || fail "report has no totals"
for p in "$P1" "$P2" "$P3" "$P4" "$P5"; do
	grep -q "^=== Process $p (workload), stream " "$T/report.txt" ||
		fail "report has no section for process $p"
done
"$EVRING" dump "$T/all.evtrace" >"$T/all.txt" 2>"$T/dump.err" || fail "dump: $(cat "$T/dump.err")"
for f in 1 3 4; do
	pv=P$f
	"$EVRING" dump --json --pid "${!pv}" "$T/all.evtrace" >"$T/w$f.jsonl" 2>"$T/dump.err" ||
		fail "dump --pid ${!pv}: $(cat "$T/dump.err")"
done
"$EVRING" convert -q "$T/all.evtrace" -f chrome -o "$T/all.json" || fail "convert chrome"

python3 - "$T" "$P1" "$P2" "$P3" "$P4" "$P5" <<'EOF'
import collections, json, re, sys
t, pids = sys.argv[1], [int(p) for p in sys.argv[2:]]
killed = pids[2]
rep = json.load(open(f"{t}/report.json"))
procs = {p["pid"]: p for p in rep["processes"]}
assert sorted(procs) == sorted(pids), f"report's processes {sorted(procs)} != {sorted(pids)}"
assert len({p["stream"] for p in procs.values()}) == 5, "two processes share a stream"
for i, pid in enumerate(pids):
    p = procs[pid]
    if pid == killed:
        assert p["end"] == "died", f"{pid}: end {p['end']}"
        continue
    m = re.match(r"^done (\d+) (\d+)$", open(f"{t}/w{i + 1}.done").read().strip())
    emitted = int(m[2])
    assert p["end"] == "exited", f"{pid}: end {p['end']}"
    assert p["events"] + p["lost"] == emitted, \
        f"{pid}: {p['events']} events + {p['lost']} lost != {emitted} emitted"
    assert p["cmdline"].endswith("--wait-sessions 1"), p["cmdline"]
    print(f"process {pid}: {p['events']} + {p['lost']} lost == {emitted} emitted, {p['end']}")
tot = rep["totals"]
assert tot["processes"] == 5 and tot["events"] == sum(p["events"] for p in procs.values())
# The killed one: every Tick from 1 on, none lost, its events as report counts them.
seqs, n, lost = [], 0, 0
for line in open(f"{t}/w3.jsonl"):
    e = json.loads(line)
    assert e["pid"] == killed, e
    if e["type"] == "lost":
        lost += e["count"]
        continue
    n += 1
    if e["event"] == "Tick":
        seqs.append(e["fields"]["seq"])
assert lost == 0 and procs[killed]["lost"] == 0, "the killed process lost events"
assert n == procs[killed]["events"], f"dump --pid shows {n}, report {procs[killed]['events']}"
assert len(seqs) >= 2000 and sorted(seqs) == list(range(1, len(seqs) + 1)), "ticks with gaps"
print(f"process {killed} (killed): {n} events, Ticks 1..{len(seqs)}, none lost")
# dump --pid shows that process only, as many as report says.
w4 = [json.loads(line) for line in open(f"{t}/w4.jsonl")]
assert all(e["pid"] == pids[3] for e in w4), "dump --pid shows another process"
n4 = sum(1 for e in w4 if e["type"] != "lost")
assert n4 == procs[pids[3]]["events"], f"dump --pid {pids[3]}: {n4} events"
# dump (all): each line has its process, in time order.
count = collections.Counter()
for line in open(f"{t}/all.txt"):
    count[int(re.search(r" pid=(\d+) ", line)[1])] += 1
for pid in pids:
    assert count[pid] >= procs[pid]["events"], f"dump: {count[pid]} lines of {pid}"
# Chrome: one process (track group) per pid, named.
ch = json.load(open(f"{t}/all.json"))
named = {e["pid"] for e in ch["traceEvents"] if e.get("name") == "process_name"}
assert named == set(pids), f"chrome process_name pids {named}"
assert sorted(ch["otherData"]["pids"]) == sorted(pids)
print("PASS")
EOF
