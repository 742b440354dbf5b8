#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# record --perf-counters on a thread that makes a known number of page faults and context
# switches (stacks-faults: 4000 fresh pages, 1000 blocking round trips): the thread's
# COUNTER records add up to at least that, and to what the kernel's rusage counted for the
# thread within a few (its exit path); the records are in dump, report and Chrome. Then the
# hardware events: without a PMU (a VM like ours) `--sample-cpu=cycles` and
# `--perf-counters=cycles,...` say "no hardware PMU here" in one line and sample the
# software cpu-clock, count the software events; with one, cycles are counted.
source "$(dirname "$0")/lib.sh"
need_python

PAGES=4000 ROUNDS=1000
st=0
"$EVRING" record --perf-counters=page-faults,context-switches,task-clock,cpu-migrations \
	--providers Faults -o "$T/f.evtrace" -- "$BIN/stacks-faults" $PAGES $ROUNDS \
	>"$T/f.out" 2>"$T/rec.err" || st=$?
if ((st != 0)) && grep -q "perf_event_paranoid" "$T/rec.err"; then
	skip "perf_events refused here: $(grep -o 'cannot count.*' "$T/rec.err" | head -1)"
fi
((st == 0)) || fail "record --perf-counters failed: $(cat "$T/rec.err")"
grep -qE "evring record: [0-9]+ per-thread counter records \(page-faults,context-switches,task-clock,cpu-migrations; [0-9]+ threads at the start" "$T/rec.err" ||
	fail "no counters summary: $(cat "$T/rec.err")"
user_only=0
grep -q "user space only" "$T/rec.err" && user_only=1
read -r _ TID _ FAULTS _ SWITCHES <"$T/f.out" || fail "stacks-faults printed nothing"
"$EVRING" dump --json "$T/f.evtrace" >"$T/f.jsonl" 2>"$T/dump.err" ||
	fail "dump failed: $(cat "$T/dump.err")"
"$EVRING" report --json "$T/f.evtrace" >"$T/report.json" 2>"$T/report.err" ||
	fail "report failed: $(cat "$T/report.err")"
"$EVRING" report "$T/f.evtrace" >"$T/report.txt" 2>>"$T/report.err" ||
	fail "report failed: $(cat "$T/report.err")"
"$EVRING" convert --format chrome -o "$T/f.json" "$T/f.evtrace" 2>"$T/conv.err" ||
	fail "convert failed: $(cat "$T/conv.err")"
grep -q "Counters per thread" "$T/report.txt" || fail "report has no counters: $(cat "$T/report.txt")"
python3 - "$T/f.jsonl" "$T/report.json" "$T/f.json" "$TID" "$FAULTS" "$SWITCHES" $PAGES $ROUNDS $user_only <<'PY'
import collections, json, sys

recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
tid, faults, switches, pages, rounds, user_only = (int(x) for x in sys.argv[4:10])
sums = collections.Counter()
for r in recs:
    if r["type"] == "counter":
        sums[(r["tid"], r["counter"])] += r["value"]
print(f"thread {tid}: perf {sums[(tid, 'page-faults')]} faults, "
      f"{sums[(tid, 'context-switches')]} switches; rusage {faults} faults, {switches} switches")
pf = sums[(tid, "page-faults")]
assert pf >= pages, f"{pf} page faults counted, the thread made at least {pages}"
assert abs(pf - faults) <= 16, f"{pf} page faults counted, rusage says {faults}"
cs = sums[(tid, "context-switches")]
if user_only:
    assert cs == 0, f"user-space-only counting saw {cs} context switches"
else:
    # Its first read() may find the main thread's byte already there: rounds - 1 blocks.
    assert cs >= rounds - 1, f"{cs} context switches counted, the thread blocked {rounds} times"
    assert abs(cs - switches) <= 16, f"{cs} context switches counted, rusage says {switches}"
assert sums[(tid, "task-clock")] > 0, "no task-clock for the thread"
rep = json.load(open(sys.argv[2]))
th = [t for t in rep["counters"]["threads"] if t["tid"] == tid]
assert th and th[0]["page-faults"] == pf, f"report's counters: {rep['counters']}"
chrome = json.load(open(sys.argv[3]))
evs = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
cev = [e for e in evs if e.get("ph") == "C" and e.get("tid") == tid and "page-faults" in e.get("args", {})]
assert cev and cev[-1]["args"]["page-faults"] == pf, f"Chrome counter events: {cev[-3:]}"
PY

# report's switch view: the thread's switch-outs from --sample-cpu's switch records,
# at least ROUNDS of them, and as many as its context-switches counter says.
"$EVRING" record --sample-cpu=99 --perf-counters=context-switches --providers Faults \
	-o "$T/sw.evtrace" -- "$BIN/stacks-faults" 100 $ROUNDS >"$T/sw.out" 2>"$T/sw.err" ||
	fail "record --sample-cpu --perf-counters failed: $(cat "$T/sw.err")"
read -r _ TID _ <"$T/sw.out" || fail "stacks-faults printed nothing"
"$EVRING" report --json "$T/sw.evtrace" >"$T/sw.json" 2>"$T/report.err" ||
	fail "report failed: $(cat "$T/report.err")"
"$EVRING" report "$T/sw.evtrace" >"$T/sw.txt" 2>>"$T/report.err" || fail "report failed"
grep -q "Context switches per thread" "$T/sw.txt" || fail "no switch view: $(cat "$T/sw.txt")"
python3 - "$T/sw.json" "$TID" $ROUNDS $user_only <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
tid, rounds, user_only = map(int, sys.argv[2:5])
sw = [s for s in rep["cpu_samples"]["switches"] if s["tid"] == tid]
assert sw, f"no switches of thread {tid}: {rep['cpu_samples']['switches'][:5]}"
sw = sw[0]
# Each round leaves the CPU once at least: blocked in read(), or preempted by the thread
# its write() woke; but the first, whose read() may find the byte already written.
assert sw["switches"] >= rounds - 1 and sw["switches"] == sw["blocked"] + sw["preempted"], sw
if not user_only:
    cs = [t for t in rep["counters"]["threads"] if t["tid"] == tid][0]["context-switches"]
    assert abs(cs - sw["switches"]) <= 2, f"counter {cs}, switch records {sw}"
print(f"switches of thread {tid}: {sw}")
PY

# The hardware events.
pmu=0
ls /sys/bus/event_source/devices | grep -Eq '^(cpu|cpu_core|cpu_atom|armv[0-9].*)$' && pmu=1
"$EVRING" record --sample-cpu=cycles:199 --perf-counters=cycles,page-faults --providers Faults \
	-o "$T/hw.evtrace" -- "$BIN/stacks-faults" 100 10 >"$T/hw.out" 2>"$T/hw.err" ||
	fail "record --sample-cpu=cycles failed: $(cat "$T/hw.err")"
"$EVRING" dump --json "$T/hw.evtrace" >"$T/hw.jsonl" 2>"$T/dump.err" ||
	fail "dump failed: $(cat "$T/dump.err")"
read -r _ TID _ <"$T/hw.out" || fail "stacks-faults printed nothing"
grep -qE "CPU samples \([0-9]+ threads, 199 Hz\)" "$T/hw.err" || fail "no sampling: $(cat "$T/hw.err")"
if ((pmu == 0)); then
	n=$(grep -c "no hardware PMU here" "$T/hw.err" || true)
	((n == 1)) || fail "expected one 'no hardware PMU here' line, got $n: $(cat "$T/hw.err")"
	grep -qE "^evring record: no hardware PMU here \(.*\): sampling the software cpu-clock, counting software events only$" "$T/hw.err" ||
		fail "the line does not say what was done instead: $(cat "$T/hw.err")"
	grep -q "per-thread counter records (page-faults;" "$T/hw.err" ||
		fail "the software counter was not kept: $(cat "$T/hw.err")"
	echo "no PMU here: $(grep 'no hardware PMU' "$T/hw.err")"
else
	! grep -q "no hardware PMU here" "$T/hw.err" || fail "a PMU is here: $(cat "$T/hw.err")"
	python3 - "$T/hw.jsonl" "$TID" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
tid = int(sys.argv[2])
cyc = sum(r["value"] for r in recs if r["type"] == "counter" and r["tid"] == tid and r["counter"] == "cycles")
assert cyc > 0, "no cycles counted for the thread"
print(f"cycles of thread {tid}: {cyc}")
PY
fi
# Without CAP_PERFMON and CAP_SYS_ADMIN (root with both dropped) at perf_event_paranoid >= 2:
# counting in the kernel is refused, so user space only, said in the summary: the page
# faults are still counted, the context switches (in the kernel) read 0.
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
if command -v setpriv >/dev/null && ((EUID == 0 && paranoid >= 2)); then
	setpriv --bounding-set -perfmon,-sys_admin --inh-caps -perfmon,-sys_admin \
		"$EVRING" record --perf-counters=page-faults,context-switches --providers Faults \
		-o "$T/nocap.evtrace" -- "$BIN/stacks-faults" $PAGES 10 >"$T/nocap.out" \
		2>"$T/nocap.err" || fail "record without CAP_PERFMON failed: $(cat "$T/nocap.err")"
	grep -q "; user space only: kernel.perf_event_paranoid forbids counting in the kernel" \
		"$T/nocap.err" || fail "no user-space-only note: $(cat "$T/nocap.err")"
	read -r _ TID _ <"$T/nocap.out" || fail "stacks-faults printed nothing"
	"$EVRING" dump --json "$T/nocap.evtrace" >"$T/nocap.jsonl" 2>"$T/dump.err" ||
		fail "dump failed: $(cat "$T/dump.err")"
	python3 - "$T/nocap.jsonl" "$TID" $PAGES <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
tid, pages = int(sys.argv[2]), int(sys.argv[3])
def total(name):
    return sum(r["value"] for r in recs if r["type"] == "counter" and r["tid"] == tid and r["counter"] == name)
assert total("page-faults") >= pages, f"{total('page-faults')} page faults in user space only"
assert total("context-switches") == 0, "context switches counted in user space only"
print(f"without CAP_PERFMON: {total('page-faults')} page faults, user space only")
PY
fi

# A clear error for an event evring does not know.
if "$EVRING" record --sample-cpu=bogus -p 1 -o "$T/x.evtrace" 2>"$T/bad.err"; then
	fail "--sample-cpu=bogus was accepted"
fi
grep -q "'bogus' is no counter known here" "$T/bad.err" || fail "unclear error: $(cat "$T/bad.err")"
echo PASS
