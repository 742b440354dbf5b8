#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What a new user of the profile formats tripped on (issue 28, items 5, 6, 7):
# - speedscope: each sampled profile spans the sum of its weights (startValue 0, endValue
#   = sum: speedscope lays samples end to end; the samples' wall-clock span left its Time
#   Order view blank), and the profile it opens on has the most samples;
# - Chrome JSON: every CPU sample carries the process's pid (speedscope said "pid NaN");
# - convert's summary says what it counts: events, CPU samples, alike across formats.
# (Item 5, pprof's main binary, is checked by pprof itself in pprof.sh.)
source "$(dirname "$0")/lib.sh"
need_python

"$EVRING" record --sample-cpu --providers Spin -o "$T/p.evtrace" -- "$BIN/stacks-spin" 200 \
	>/dev/null 2>"$T/rec.err" || {
	grep -q "perf_event_paranoid\|cpu-clock" "$T/rec.err" && skip "perf_events refused: $(cat "$T/rec.err")"
	fail "record failed: $(cat "$T/rec.err")"
}
"$EVRING" dump --json "$T/p.evtrace" >"$T/dump.jsonl"
for f in chrome folded speedscope pprof jsonl; do
	"$EVRING" convert "$T/p.evtrace" --format $f -o "$T/p.$f" 2>"$T/$f.err" ||
		fail "convert --format $f: $(cat "$T/$f.err")"
done
python3 - "$T" <<'PY'
import json, re, sys
T = sys.argv[1]
recs = [json.loads(l) for l in open(f"{T}/dump.jsonl")]
cpu = [r for r in recs if r["type"] == "cpu_sample" and r.get("stack")]
events = [r for r in recs if r["type"] == "event"]
assert cpu, f"no CPU samples: {len(recs)} records"

def summary(fmt):
    # The summary is convert's last line: a warning (addresses in no mapping, when a
    # frame-pointer walk crossed code without them) may come before it.
    s = open(f"{T}/{fmt}.err").read().splitlines()[-1]
    m = re.match(r"evring convert: (.*), (\d+) lost, .* of %s to " % fmt, s)
    assert m, f"{fmt}: summary {s!r}"
    return m.group(1)

for fmt in ("folded", "speedscope", "pprof"):
    assert summary(fmt) == f"{len(cpu)} CPU samples", f"{fmt}: {summary(fmt)!r}, {len(cpu)} CPU samples"
assert summary("chrome") == f"{len(events)} events, {len(cpu)} CPU samples", summary("chrome")
assert summary("jsonl") == f"{len(events)} events", summary("jsonl")

d = json.load(open(f"{T}/p.speedscope"))
counts = []
for p in d["profiles"]:
    assert p["type"] == "sampled"
    assert p["startValue"] == 0 and p["endValue"] == sum(p["weights"]), \
        (p["name"], p["startValue"], p["endValue"], sum(p["weights"]))
    counts.append(len(p["samples"]))
assert counts[d.get("activeProfileIndex", 0)] == max(counts), counts
assert sum(counts) == len(cpu), (counts, len(cpu))

c = json.load(open(f"{T}/p.chrome"))
samples = c["samples"]
assert len(samples) == len(cpu), (len(samples), len(cpu))
pids = {e["pid"] for e in c["traceEvents"] if "pid" in e}
assert all(isinstance(s.get("pid"), int) for s in samples), samples[0]
assert {s["pid"] for s in samples} <= pids, ({s["pid"] for s in samples}, pids)
print(f"{len(cpu)} CPU samples, {len(events)} events; speedscope profiles {counts}")
PY

echo PASS
