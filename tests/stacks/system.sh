#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# record --sample-cpu --system (docs/system.md): a busy process WITHOUT libevring runs beside
# an instrumented one; the recording names it, and its share of the samples agrees within 10
# points with its share of the machine's CPU time over the same window, from /proc (its
# utime+stime against every CPU's time in /proc/stat, read before and after the recording).
# Two threads ping-ponging over pipes N times show N switches between them.
# Then the fallback: as uid 65534 with no capabilities the kernel refuses CPU-wide events
# (perf_event_paranoid > 0): one line says what is missing, and the recording still holds
# the samples of its own process.
source "$(dirname "$0")/lib.sh"
need_python

# Usage errors: one line each, exit status 2, before anything is attached.
st=0
"$EVRING" record --system -p 1 2>"$T/use.err" || st=$?
((st == 2)) && grep -q "^evring record: --system samples every CPU: give it with --sample-cpu$" \
	"$T/use.err" || fail "--system without --sample-cpu: status $st, $(cat "$T/use.err")"
st=0
"$EVRING" record --system --profile cpu-sampling --all 2>"$T/use.err" || st=$?
((st == 2)) && grep -q "not with --all or several -p/-n yet" "$T/use.err" ||
	fail "--system --all: status $st, $(cat "$T/use.err")"

[[ -r /proc/sys/kernel/perf_event_paranoid ]] ||
	skip "no /proc/sys/kernel/perf_event_paranoid: this kernel has no perf_event_open"
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)

start_busy_loop

b0=$(busy_ticks) a0=$(all_ticks) i0=$(idle_ticks)
st=0
"$EVRING" record --sample-cpu=999 --system --providers Spin -o "$T/sys.evtrace" \
	-- "$BIN/stacks-spin" 1500 >"$T/spin.out" 2>"$T/rec.err" || st=$?
b1=$(busy_ticks) a1=$(all_ticks) i1=$(idle_ticks)
if ((st != 0)) && grep -q "cannot sample" "$T/rec.err"; then
	skip "perf_events cannot be used here: $(grep -o 'cannot sample.*' "$T/rec.err" | head -1)"
fi
((st == 0)) || fail "record --sample-cpu --system failed: $(cat "$T/rec.err")"
if grep -q "system-wide sampling refused" "$T/rec.err"; then
	# Not root and no CAP_PERFMON: the fallback is all this user can have.
	grep -q "sampling process [0-9]* only" "$T/rec.err" || fail "no fallback: $(cat "$T/rec.err")"
	skip "system-wide sampling needs root or CAP_PERFMON here: $(grep refused "$T/rec.err")"
fi
grep -qE "evring record: [0-9]+ CPU samples \(every CPU, 999 Hz\)" "$T/rec.err" ||
	fail "no system-wide sampling summary: $(cat "$T/rec.err")"
"$EVRING" report --json "$T/sys.evtrace" >"$T/report.json" 2>"$T/report.err" ||
	fail "report --json failed: $(cat "$T/report.err")"
"$EVRING" report "$T/sys.evtrace" >"$T/report.txt" 2>>"$T/report.err" ||
	fail "report failed: $(cat "$T/report.err")"
grep -qE "^ +$BUSY +evr-busy +[0-9]+ +[0-9.]+%" "$T/report.txt" ||
	fail "the text report has no line for evr-busy ($BUSY): $(grep -A8 'CPU by process' "$T/report.txt")"

python3 - "$T/report.json" "$BUSY" "$((b1 - b0))" "$((a1 - a0))" "$((i1 - i0))" <<'PY'
import json, sys

rep = json.load(open(sys.argv[1]))
busy, d_busy, d_all, d_idle = (int(x) for x in sys.argv[2:6])
system = rep["cpu_samples"]["system"]
procs = {p["pid"]: p for p in system["processes"]}
assert busy in procs, f"the busy process {busy} has no samples: {system['processes'][:8]}"
p = procs[busy]
assert p["name"] == "evr-busy", f"pid {busy} is named {p['name']!r}, not evr-busy"
names = {q["name"] for q in system["processes"]}
assert "stacks-spin" in names, f"the instrumented program is not among {sorted(names)}"
# With kernel sampling every CPU's whole time is sampled (idle too); user-only sampling
# sees only the time that was not idle.
whole = d_all if system["kernel"] else d_all - d_idle
assert whole > 0 and d_busy > 0, f"no CPU time measured: busy {d_busy}, all {whole} ticks"
expected = 100.0 * d_busy / whole
print(f"evr-busy: {p['samples']} of {system['samples']} samples = {p['share']:.1f}%; "
      f"/proc: {d_busy} of {whole} ticks = {expected:.1f}%")
assert abs(p["share"] - expected) <= 10.0, f"share {p['share']:.1f}% vs /proc {expected:.1f}%"
# Every sample is some process's; each share is rounded to 0.01 (a loaded machine, the
# test suite's other processes, has hundreds of them in the window).
assert sum(q["samples"] for q in system["processes"]) == system["samples"], \
    "samples do not add up: %d of %d" % (sum(q["samples"] for q in system["processes"]),
                                         system["samples"])
tol = 0.005 * len(system["processes"]) + 0.01
assert abs(sum(q["share"] for q in system["processes"]) - 100.0) <= tol, "shares do not add up"
PY

# The profiles are the recorded process's: its binaries are the ones known. Every stack of
# the folded export is of one of its threads, and the busy loop's samples are not there.
"$EVRING" convert "$T/sys.evtrace" --format folded -o "$T/sys.folded" 2>"$T/conv.err" ||
	fail "convert --format folded failed: $(cat "$T/conv.err")"
"$EVRING" dump --json "$T/sys.evtrace" >"$T/sys.jsonl" 2>"$T/dump.err" ||
	fail "dump failed: $(cat "$T/dump.err")"
python3 - "$T/sys.jsonl" "$T/sys.folded" "$T/report.json" <<'PY'
import json, re, sys

rep = json.load(open(sys.argv[3]))
spin = [p["pid"] for p in rep["cpu_samples"]["system"]["processes"] if p["name"] == "stacks-spin"]
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
samples = [r for r in recs if r["type"] == "cpu_sample"]
own = {r["tid"] for r in samples if r["pid"] in spin}
others = {r["pid"] for r in samples} - set(spin)
assert own and others, f"samples of stacks-spin {len(own)} threads, of {len(others)} other processes"
lines = [l for l in open(sys.argv[2]) if l.strip()]
tids = {int(m.group(1)) for l in lines for m in [re.match(r"[^;]*\((\d+)\);", l)] if m}
assert lines and tids <= own, f"folded stacks of threads {sorted(tids - own)} not of stacks-spin"
PY

# Context switches: two threads ping-pong a byte over pipes N times on one CPU; each is
# switched out at least once per round trip, and the CPU-wide records name the thread on the other side.
N=2000
"$EVRING" record --sample-cpu=99 --system --providers Pingpong -o "$T/pp.evtrace" \
	-- "$BIN/stacks-pingpong" "$N" >"$T/pp.out" 2>"$T/pp.err" ||
	fail "record of the ping-pong failed: $(cat "$T/pp.err")"
read -r _ TA TB _ _ <"$T/pp.out" || fail "stacks-pingpong printed no thread ids"
"$EVRING" dump --json "$T/pp.evtrace" >"$T/pp.jsonl" 2>"$T/pp-dump.err" ||
	fail "dump failed: $(cat "$T/pp-dump.err")"
python3 - "$T/pp.jsonl" "$TA" "$TB" "$N" <<'PY'
import json, sys

recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
a, b, n = (int(x) for x in sys.argv[2:5])
assert not [r for r in recs if r["type"] == "samples_lost"], "switch records were lost"
outs = [r for r in recs if r["type"] == "switch_out"]
ins = [r for r in recs if r["type"] == "switch_in"]
out_a = sum(1 for r in outs if r["tid"] == a)
out_b = sum(1 for r in outs if r["tid"] == b)
direct = sum(1 for r in outs if (r["tid"], r["next_tid"]) in ((a, b), (b, a)))
direct_in = sum(1 for r in ins if (r["tid"], r["prev_tid"]) in ((a, b), (b, a)))
print(f"{n} round trips: thread A switched out {out_a} times, B {out_b}; "
      f"{direct} switches straight from one to the other ({direct_in} seen switching in)")
# A gives the CPU up in every round trip; B in every one but the last, after which it exits
# (a dying thread's last switch is not always reported).
assert out_a >= n and out_b >= n - 1, f"too few switches: A {out_a}, B {out_b} for {n} round trips"
# Other tasks may take the CPU between the two now and then, not in most round trips.
assert direct >= n and direct_in >= n, f"only {direct}/{direct_in} switches between the two"
PY

# The fallback, as an unprivileged user without capabilities.
if ((paranoid <= 0)); then
	echo "perf_event_paranoid is $paranoid: any user may sample every CPU, no fallback to see"
elif ! setpriv --help >/dev/null 2>&1 || [[ $(id -u) != 0 ]]; then
	echo "not root (or no setpriv): the unprivileged fallback is not run"
else
	record_as_nobody --sample-cpu=999 --system --providers Spin -o "$T/nobody/own.evtrace" \
		-- "$BIN/stacks-spin" 200
	((st == 0)) || fail "unprivileged record failed: $(cat "$T/own.err")"
	line=$(grep "system-wide sampling refused" "$T/own.err") ||
		fail "no message about the refusal: $(cat "$T/own.err")"
	[[ $line == *"perf_event_paranoid is $paranoid"* && $line == *"lacks CAP_PERFMON"* &&
		$line == *"sampling process "*" only" ]] ||
		fail "the message does not say what is missing: $line"
	echo "fallback: $line"
	grep -qE "evring record: [0-9]+ CPU samples \([0-9]+ threads, 999 Hz\)" "$T/own.err" ||
		fail "no per-process sampling after the fallback: $(cat "$T/own.err")"
	"$EVRING" report --json "$U/own.evtrace" >"$T/own.json" 2>"$T/own-report.err" ||
		fail "report of the fallback recording failed: $(cat "$T/own-report.err")"
	python3 - "$T/own.json" <<'PY'
import json, sys

cpu = json.load(open(sys.argv[1]))["cpu_samples"]
assert "system" not in cpu, "a per-process recording reports system-wide shares"
names = [f["name"] for f in cpu["functions"]]
assert cpu["samples"] > 0 and "spin_hot" in names[:3], f"no useful profile: {cpu['samples']} samples, {names[:5]}"
print(f"fallback recording: {cpu['samples']} samples, top {names[:3]}")
PY
fi
echo PASS
