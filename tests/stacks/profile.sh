#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Profiles from a trace with CPU samples and event stacks: convert --format folded (every
# line "frames COUNT", counts summing to the samples' CPU time, spin_hot the heaviest leaf),
# --format speedscope (checked against speedscope's file format: schema, frame indexes in
# range, as many weights as samples), --event-stacks (ending in the inlined fire function,
# a frame of its own), and report --html with its flame graphs (inline
# SVG, nothing fetched), convert --format chrome with stackFrames/sf and samples. A trace
# without samples or stacks: a clear error.
source "$(dirname "$0")/lib.sh"
need_python

"$EVRING" record --stacks --sample-cpu --providers Spin -o "$T/p.evtrace" -- "$BIN/stacks-spin" 150 \
	>/dev/null 2>"$T/rec.err" || {
	grep -q "perf_event_paranoid\|cpu-clock" "$T/rec.err" && skip "perf_events refused: $(cat "$T/rec.err")"
	fail "record failed: $(cat "$T/rec.err")"
}
"$EVRING" convert "$T/p.evtrace" --format folded -o "$T/p.folded" -q
"$EVRING" convert "$T/p.evtrace" --format speedscope -o "$T/p.speedscope.json" -q
"$EVRING" convert "$T/p.evtrace" --format folded --event-stacks -o "$T/ev.folded" -q
"$EVRING" dump --json "$T/p.evtrace" >"$T/p.jsonl"
"$EVRING" report "$T/p.evtrace" --html "$T/p.html" >/dev/null
"$EVRING" convert "$T/p.evtrace" --format chrome -o "$T/p.json" -q

python3 - "$T" <<'PY'
import json, re, sys
T = sys.argv[1]
recs = [json.loads(l) for l in open(f"{T}/p.jsonl")]
samples = [r for r in recs if r["type"] == "cpu_sample" and r.get("stack")]
period = sum(r["period_ns"] for r in samples)

lines = open(f"{T}/p.folded").read().splitlines()
assert lines, "empty folded output"
total, leaves = 0, {}
for l in lines:
    m = re.match(r"^([^;]+(;[^;]+)*) ([0-9]+)$", l)
    assert m, f"not a folded line: {l!r}"
    total += int(m.group(3))
    leaf = m.group(1).split(";")[-1]
    leaves[leaf] = leaves.get(leaf, 0) + int(m.group(3))
assert total == period, f"folded counts {total} != samples' CPU time {period}"
assert max(leaves, key=leaves.get) == "spin_hot", leaves
assert any(";main;spin_work;spin_hot " in l for l in lines), lines[:3]

d = json.load(open(f"{T}/p.speedscope.json"))
assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
frames = d["shared"]["frames"]
assert all(isinstance(f["name"], str) for f in frames)
n = 0
for p in d["profiles"]:
    assert p["type"] == "sampled" and p["unit"] == "nanoseconds"
    assert p["endValue"] >= p["startValue"] == 0
    assert len(p["samples"]) == len(p["weights"]), p["name"]
    for s in p["samples"]:
        assert all(0 <= i < len(frames) for i in s)
    n += len(p["samples"])
assert n == len(samples), f"speedscope has {n} samples, the trace {len(samples)}"

ev = open(f"{T}/ev.folded").read().splitlines()
rounds = sum(1 for r in recs if r.get("event") == "Round")
assert sum(int(l.rsplit(" ", 1)[1]) for l in ev) == rounds, "event stacks do not count every event"
# Each event stack ends in its fire function, which the header inlined into spin_work:
# a frame of its own, from debug info.
assert all(l.rsplit(" ", 1)[0].endswith(";main;spin_work;spin_round") for l in ev), ev

html = open(f"{T}/p.html").read()
for title in ("CPU flame graph", "Event stacks"):
    assert f"<h2>{title}</h2>" in html, f"no {title} in the report"
assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="flamegraph"') == 2
assert ">spin_hot</text>" in html or ">spin_hot<" in html
# Flame graph titles in units a person reads ("(79.1 ms)"), not "(79079079 nanoseconds)".
assert "nanoseconds)" not in html and "nanoseconds," not in html, "raw nanoseconds in a title"
assert re.search(r"\((\d+(\.\d+)?) (ns|\u00b5s|ms|s)\)</text>", html), "no human time in a title"
assert not re.search(r"(src|href)=\"https?:", html), "the page fetches something"
# Chrome JSON: events carry "sf" into stackFrames, CPU samples are top-level "samples".
c = json.load(open(f"{T}/p.json"))
sf = c["stackFrames"]
def chain(i):
    out, seen = [], set()
    while i:
        assert i not in seen, "a cycle in stackFrames"
        seen.add(i)
        f = sf[str(i)]
        out.append(f["name"])
        i = int(f.get("parent", 0))
    return out
assert all(int(k) >= 1 for k in sf), "stackFrames ids start at 1"
evs = [e for e in c["traceEvents"] if e.get("cat") == "Spin"]
assert evs and all("sf" in e for e in evs), "an event without its stack"
assert all(chain(e["sf"])[:3] == ["spin_round", "spin_work", "main"] for e in evs), chain(evs[0]["sf"])
assert len(c["samples"]) == len(samples), f'{len(c["samples"])} Chrome samples, {len(samples)} in the trace'
assert sum(1 for s in c["samples"] if chain(s["sf"])[0] == "spin_hot") > len(samples) / 2
print(f"{len(lines)} folded stacks, {len(samples)} samples, {len(ev)} event stacks: ok")
PY

# Nothing to profile: one line naming the cause.
"$EVRING" record --providers Spin -o "$T/plain.evtrace" -- "$BIN/stacks-spin" 5 >/dev/null 2>&1
st=0; "$EVRING" convert "$T/plain.evtrace" --format folded -o "$T/x" 2>"$T/err" || st=$?
[[ $st == 1 ]] && grep -q "has no event stacks to profile (record with --sample-cpu or --stacks)" \
	"$T/err" || fail "no samples: status $st: $(cat "$T/err")"
echo PASS
