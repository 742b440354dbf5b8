#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# record --sample-cpu on a program that spends ~90% of its CPU in spin_hot(): the samples
# are in the trace with the events, spin_hot is the top of the profile with its callers
# (spin_work < main), the sleeping thread has context switches and nothing is lost.
# As stacks_sample_cpu_perf (sample_cpu_perf.sh sets EVR_SAMPLE_CPU_VS_PERF=1), also: the
# share of spin_hot agrees with `perf record`/`perf report` within 10 points (user-mode
# cpu-clock, as evring samples); that test skips, with the reason, where perf cannot run.
source "$(dirname "$0")/lib.sh"
need_python

st=0
"$EVRING" record --sample-cpu=999 --providers Spin -o "$T/spin.evtrace" -- "$BIN/stacks-spin" 300 \
	>"$T/spin.out" 2>"$T/rec.err" || st=$?
if ((st != 0)) && grep -q "perf_event_paranoid\|cpu-clock" "$T/rec.err"; then
	skip "perf_events refused here: $(grep -o 'cannot sample.*' "$T/rec.err" | head -1)"
fi
((st == 0)) || fail "record --sample-cpu failed: $(cat "$T/rec.err")"
grep -qE "evring record: [0-9]+ CPU samples \([0-9]+ threads, 999 Hz\), 0 lost" "$T/rec.err" ||
	fail "no sampling summary: $(cat "$T/rec.err")"
"$EVRING" dump --json "$T/spin.evtrace" >"$T/spin.jsonl" 2>"$T/dump.err" ||
	fail "dump failed: $(cat "$T/dump.err")"

perf_share=""
if [[ ${EVR_SAMPLE_CPU_VS_PERF:-0} == 1 ]]; then
	command -v perf >/dev/null || skip "perf not found (Debian linux-perf): no comparison with perf"
	perf record -q -e cpu-clock:u -F 999 -g -o "$T/perf.data" -- "$BIN/stacks-spin" 300 \
		>/dev/null 2>"$T/perf.err" ||
		skip "perf record cannot run here: $(head -1 "$T/perf.err")"
	perf report -i "$T/perf.data" --stdio --no-children --sort sym -q 2>/dev/null >"$T/perf.txt" || true
	perf_share=$(awk '/spin_hot/ { sub("%", "", $1); print $1; exit }' "$T/perf.txt")
	[[ -n $perf_share ]] || fail "perf report shows no spin_hot: $(head -5 "$T/perf.txt")"
fi

cpu_ms=$(awk '/^rounds/ { print $4 }' "$T/spin.out")
[[ -n $cpu_ms ]] || fail "the program did not report its CPU time"
python3 - "$T/spin.jsonl" "$perf_share" "$cpu_ms" <<'PY'
import collections, json, re, sys

recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
samples = [r for r in recs if r["type"] == "cpu_sample"]
events = [r for r in recs if r["type"] == "event"]
switches = [r for r in recs if r["type"] in ("switch_in", "switch_out")]
assert not [r for r in recs if r["type"] in ("lost", "samples_lost")], "lost samples or events"
# One sample per ms of CPU time the process got (999 Hz); at least half of them.
expected = int(sys.argv[3]) * 999 / 1000
assert len(samples) >= expected / 2, f"only {len(samples)} samples for {expected:.0f} expected"
assert events, "no events from the program"
ts = [r["ts"] for r in recs]
assert ts == sorted(ts), "samples and events are not on one timeline"
def fn(f):
    return re.sub(r"\+0x[0-9a-f]+ \(.*\)$", "", f.get("frame", "?"))
top = collections.Counter(fn(s["stack"][0]) for s in samples if s.get("stack"))
name, count = top.most_common(1)[0]
share = 100.0 * top["spin_hot"] / len(samples)
print(f"{len(samples)} samples, {len(switches)} switches, {len(events)} events; top: {top.most_common(3)}")
assert name == "spin_hot", f"top of the profile is {name}"
chains = collections.Counter(tuple(fn(f) for f in s["stack"][:3]) for s in samples if s.get("stack"))
assert chains.most_common(1)[0][0] == ("spin_hot", "spin_work", "main"), chains.most_common(3)
main_tid = samples[0]["tid"]
assert [r for r in switches if r["tid"] != main_tid], "no context switches of the sleeping thread"
if sys.argv[2]:
    perf = float(sys.argv[2])
    print(f"spin_hot: {share:.1f}% of evring's samples, {perf:.1f}% of perf's")
    assert abs(share - perf) <= 10.0, f"evring {share:.1f}% vs perf {perf:.1f}%"
else:
    print(f"spin_hot: {share:.1f}% of evring's samples (compared with perf by stacks_sample_cpu_perf)")
PY
echo PASS
