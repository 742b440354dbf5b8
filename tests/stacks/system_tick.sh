#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# record --sample-cpu=timer-tick --system (docs/system.md "Cost"): every Nth scheduler tick
# of each busy CPU (timer:hrtimer_expire_entry of the tick's timer). A busy shell loop WITHOUT
# libevring runs beside an instrumented program; the recording names it, its share of the
# samples agrees within 15 points with its share of the machine's busy (non-idle) CPU time
# from /proc (read before and after: that window holds the recorder's start and end too),
# and its sample count (and every process's) with its CPU time (the machine's busy time) at
# the recorded rate, within 0.4-1.6 times: the kernel sampling every tick would give 3 times
# as many at HZ 250; sampling every 3rd timer interrupt (the ticks and every other hrtimer's)
# gave 71% of the samples for 49% of the busy time. Its samples start with user frames,
# never the tracepoint's kernel address.
# report and dump say which source took the samples. Skipped where the tracepoint or
# system-wide perf events are not there or not permitted.
source "$(dirname "$0")/lib.sh"
need_python

# Usage errors: one line each, exit status 2, before anything is attached.
st=0
"$EVRING" record --sample-cpu=timer-tick -p 1 2>"$T/use.err" || st=$?
((st == 2)) && grep -q "^evring record: --sample-cpu=timer-tick samples every CPU's timer ticks: give it with --system$" \
	"$T/use.err" || fail "timer-tick without --system: status $st, $(cat "$T/use.err")"
st=0
"$EVRING" record --sample-cpu=timer-tick:0 --system -p 1 2>"$T/use.err" || st=$?
((st == 2)) && grep -q "'0' is not a number from 1 to 100000 (Hz)" "$T/use.err" ||
	fail "timer-tick:0: status $st, $(cat "$T/use.err")"

[[ -r /proc/sys/kernel/perf_event_paranoid ]] ||
	skip "no /proc/sys/kernel/perf_event_paranoid: this kernel has no perf_event_open"

start_busy_loop

b0=$(busy_ticks) a0=$(all_ticks) i0=$(idle_ticks)
st=0
"$EVRING" record --sample-cpu=timer-tick --system --providers Spin -o "$T/tick.evtrace" \
	-- "$BIN/stacks-spin" 3000 >"$T/spin.out" 2>"$T/rec.err" || st=$?
b1=$(busy_ticks) a1=$(all_ticks) i1=$(idle_ticks)
if ((st != 0)); then
	for why in "the timer-tick source" "system-wide sampling refused" "cannot sample"; do
		grep -q "$why" "$T/rec.err" && skip "$(grep -m1 "$why" "$T/rec.err")"
	done
	fail "record --sample-cpu=timer-tick --system failed: $(cat "$T/rec.err")"
fi
summary=$(grep -E "evring record: [0-9]+ CPU samples \(every CPU, timer ticks, every (one|[0-9]+(st|nd|rd|th)) \([0-9]+ Hz\)\)" "$T/rec.err") ||
	fail "no timer-tick sampling summary: $(cat "$T/rec.err")"
echo "$summary"
"$EVRING" report --json "$T/tick.evtrace" >"$T/report.json" 2>"$T/report.err" ||
	fail "report --json failed: $(cat "$T/report.err")"
"$EVRING" report "$T/tick.evtrace" >"$T/report.txt" 2>>"$T/report.err" ||
	fail "report failed: $(cat "$T/report.err")"
grep -qE "^CPU by process \(every CPU, [0-9]+ samples of timer ticks, every [^)]*\([0-9]+ Hz\), shares of busy CPU time" \
	"$T/report.txt" || fail "the text report does not say the source: $(grep 'CPU by process' "$T/report.txt")"
grep -qE "^ +$BUSY +evr-busy +[0-9]+ +[0-9.]+%" "$T/report.txt" ||
	fail "the text report has no line for evr-busy ($BUSY): $(grep -A8 'CPU by process' "$T/report.txt")"
"$EVRING" dump "$T/tick.evtrace" >"$T/dump.txt" 2>"$T/dump.err" ||
	fail "dump failed: $(cat "$T/dump.err")"
grep -qE " pid=$BUSY tid=$BUSY CPU-SAMPLE timer-tick period=[0-9]+ns$" "$T/dump.txt" ||
	fail "dump shows no timer-tick sample of evr-busy: $(grep -m3 CPU-SAMPLE "$T/dump.txt")"
"$EVRING" dump --json "$T/tick.evtrace" >"$T/dump.jsonl" 2>"$T/dump.err" ||
	fail "dump --json failed: $(cat "$T/dump.err")"

python3 - "$T/report.json" "$T/dump.jsonl" "$BUSY" "$((b1 - b0))" "$((a1 - a0))" \
	"$((i1 - i0))" "$(getconf CLK_TCK)" <<'PY'
import json, re, sys

rep = json.load(open(sys.argv[1]))
busy, d_busy, d_all, d_idle, tck = (int(x) for x in sys.argv[3:8])
cpu = rep["cpu_samples"]
m = re.fullmatch(r"timer ticks, every (one|(\d+)(st|nd|rd|th)) \((\d+) Hz\)", cpu["source"])
assert m and int(m.group(4)) == cpu["freq_hz"] > 0, f"source {cpu['source']!r}, freq_hz {cpu['freq_hz']}"
hz = cpu["freq_hz"]
system = cpu["system"]
procs = {p["pid"]: p for p in system["processes"]}
assert busy in procs, f"the busy process {busy} has no samples: {system['processes'][:8]}"
p = procs[busy]
assert p["name"] == "evr-busy", f"pid {busy} is named {p['name']!r}, not evr-busy"
# No tick on an idle CPU: the samples share out the busy time.
whole = d_all - d_idle
assert whole > 0 and d_busy > 0, f"no CPU time measured: busy {d_busy}, all {whole} ticks"
expected = 100.0 * d_busy / whole
want = d_busy / tck * hz
print(f"evr-busy: {p['samples']} of {system['samples']} samples = {p['share']:.1f}%; "
      f"/proc: {d_busy} of {whole} busy ticks = {expected:.1f}%, "
      f"{d_busy / tck:.2f} s of CPU at {hz} Hz = {want:.0f} samples")
assert abs(p["share"] - expected) <= 15.0, f"share {p['share']:.1f}% vs /proc {expected:.1f}%"
assert 0.4 * want <= p["samples"] <= 1.6 * want, \
    f"{p['samples']} samples for {d_busy / tck:.2f} s of CPU at {hz} Hz: not every Nth tick"
# Every process's samples against the machine's busy time, likewise.
want_all = whole / tck * hz
assert 0.4 * want_all <= system["samples"] <= 1.6 * want_all, \
    f"{system['samples']} samples for {whole / tck:.2f} s of busy CPU at {hz} Hz: not every Nth tick"

recs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
samples = [r for r in recs if r["type"] == "cpu_sample"]
assert samples and all(r.get("source") == "timer-tick" for r in samples), "a sample without its source"
mine = [r for r in samples if r["pid"] == busy]
assert mine and all(r.get("stack") for r in mine), "a sample of the busy loop without user frames"
# Kernel frames come first in a chain (later ones are what a frame-pointer walk read off the
# user stack, garbage included): the innermost frame is the interrupted user code's.
kernel = [r for r in samples if r.get("stack") and int(r["stack"][0]["pc"], 16) >> 63]
assert not kernel, f"kernel frames (the interrupt's) in {len(kernel)} samples: {kernel[:2]}"
PY
# Refused: as uid 65534 with no capabilities (tracefs is root's, CPU-wide events need
# CAP_PERFMON) one line says what is missing, and the recording fails (no fallback to the
# recorded process, as cpu-clock has: the source is every CPU's ticks).
if [[ $(id -u) == 0 ]] && setpriv --help >/dev/null 2>&1; then
	record_as_nobody --sample-cpu=timer-tick --system --providers Spin \
		-o "$T/nobody/own.evtrace" -- "$BIN/stacks-spin" 200
	((st == 1)) || fail "unprivileged record: status $st, $(cat "$T/own.err")"
	line=$(grep -E "the timer-tick source: cannot read .*: permission denied|system-wide sampling refused" \
		"$T/own.err") || fail "no line says what is missing: $(cat "$T/own.err")"
	echo "unprivileged: $line"
fi
echo PASS
