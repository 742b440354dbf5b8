#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring report on a CPU-sampled trace (issue 28, item 4): the text and --json give the
# CPU sample count and the top functions with self and total CPU time, as perf report and
# pprof -top do, computed here again from dump --json's symbolized stacks; --html FILE
# writes the page and nothing on stdout.
source "$(dirname "$0")/lib.sh"
need_python

"$EVRING" record --sample-cpu --providers Spin -o "$T/p.evtrace" -- "$BIN/stacks-spin" 200 \
	>/dev/null 2>"$T/rec.err" || {
	grep -q "perf_event_paranoid\|cpu-clock" "$T/rec.err" && skip "perf_events refused: $(cat "$T/rec.err")"
	fail "record failed: $(cat "$T/rec.err")"
}
"$EVRING" dump --json "$T/p.evtrace" >"$T/dump.jsonl"
"$EVRING" report "$T/p.evtrace" >"$T/report.txt" 2>"$T/report.err" || fail "report: $(cat "$T/report.err")"
"$EVRING" report --json "$T/p.evtrace" >"$T/report.json" || fail "report --json"
"$EVRING" report --html "$T/r.html" "$T/p.evtrace" >"$T/html.out" 2>"$T/html.err" ||
	fail "report --html: $(cat "$T/html.err")"
[[ ! -s $T/html.out ]] || fail "report --html also printed $(wc -c <"$T/html.out") bytes on stdout"
grep -q "CPU flame graph" "$T/r.html" || fail "the page has no CPU flame graph"

python3 - "$T" <<'PY'
import json, re, sys
T = sys.argv[1]
recs = [json.loads(l) for l in open(f"{T}/dump.jsonl")]
cpu = [r for r in recs if r["type"] == "cpu_sample" and r.get("stack")]
assert cpu, "no CPU samples"

def fn(frame):
    # An address in no mapping (a walk that crossed code without frame pointers)
    # has no "frame", only its "pc".
    if "frame" not in frame:
        return frame["pc"]
    return re.sub(r"\+0x[0-9a-f]+( \(.*\))?$", "", frame["frame"])

self_ns, total_ns = {}, {}
for s in cpu:
    names = [fn(f) for f in s["stack"]]
    self_ns[names[0]] = self_ns.get(names[0], 0) + s["period_ns"]
    for n in set(names):
        total_ns[n] = total_ns.get(n, 0) + s["period_ns"]
all_ns = sum(s["period_ns"] for s in cpu)

d = json.load(open(f"{T}/report.json"))["cpu_samples"]
assert d["samples"] == len(cpu), (d["samples"], len(cpu))
assert d["cpu_ns"] == all_ns, (d["cpu_ns"], all_ns)
top = d["functions"]
assert top[0]["name"] == "spin_hot", top[:3]
for f in top:
    if f["name"] in ("spin_hot", "spin_cold", "spin_work", "main"):
        assert f["self_ns"] == self_ns.get(f["name"], 0), (f, self_ns)
        assert f["total_ns"] == total_ns[f["name"]], (f, total_ns)
assert [f["name"] for f in top if f["name"] == "main"], top

text = open(f"{T}/report.txt").read()
m = re.search(r"^CPU samples: (\d+) \(", text, re.M)
assert m and int(m.group(1)) == len(cpu), text[-800:]
rows = re.findall(r"^\s+(\S+ \S+|0)\s+([\d.]+)%\s+(\S+ \S+|0)\s+([\d.]+)%\s+(\S+)$", text, re.M)
assert rows and rows[0][4] == "spin_hot", rows[:3]
hot = f"{100 * self_ns['spin_hot'] / all_ns:.2f}"
assert rows[0][1] == hot, (rows[0], hot)
main = [r for r in rows if r[4] == "main"]
assert main and main[0][3] == f"{100 * total_ns['main'] / all_ns:.2f}", main
print(f"report: {len(cpu)} CPU samples, spin_hot {hot}% self; main {main[0][3]}% total")
PY
# No samples: the section says how to get them.
"$EVRING" record --providers Spin -o "$T/plain.evtrace" -- "$BIN/stacks-spin" 5 >/dev/null 2>&1
"$EVRING" report "$T/plain.evtrace" | grep -q "^CPU samples: none (record with --sample-cpu" ||
	fail "no CPU section for a trace without samples"
echo PASS
