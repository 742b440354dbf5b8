#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# convert --format pprof, validated by pprof itself (`go tool pprof`, Debian golang-go;
# scripts/setup --optional installs it; skipped without it): a CPU profile of stacks-spin
# reads back with spin_hot at the top of `-top` (from evring's own symbols: -symbolize=none),
# as many samples as the trace has CPU samples, their CPU time in the default sample type,
# the callers spin_work < main, the thread labels and the mapping of the program with its
# build ID, first of the mappings even when the first sample is in libc. --event-stacks: one event per Round, all from spin_round (the fire function,
# inlined: a frame of its own, marked so) in spin_work at the line of its call. JIT frames of minirt
# (recorded with --perf-map) show as method names. A trace without samples: a clear error.
source "$(dirname "$0")/lib.sh"
need_python

PPROF=()
if command -v go >/dev/null 2>&1 && go tool pprof -h >/dev/null 2>&1; then
	PPROF=(go tool pprof)
elif command -v pprof >/dev/null 2>&1; then
	PPROF=(pprof)
else
	skip "no pprof reader: go tool pprof (Debian golang-go, scripts/setup --optional) or pprof not found"
fi
# pprof keeps nothing outside $T.
export HOME=$T PPROF_TMPDIR=$T

"$EVRING" record --stacks --sample-cpu --providers Spin -o "$T/p.evtrace" -- "$BIN/stacks-spin" 200 \
	>/dev/null 2>"$T/rec.err" || {
	grep -q "perf_event_paranoid\|cpu-clock" "$T/rec.err" && skip "perf_events refused: $(cat "$T/rec.err")"
	fail "record failed: $(cat "$T/rec.err")"
}
"$EVRING" convert "$T/p.evtrace" --format pprof -o "$T/cpu.pb.gz" 2>"$T/conv.err" ||
	fail "convert --format pprof failed: $(cat "$T/conv.err")"
# The summary: the CPU samples written and the file's size (in B below 1 KiB).
size=$(stat -c %s "$T/cpu.pb.gz")
((size < 1024)) && want="$size B" || want="[0-9.]+ KiB"
grep -qE "^evring convert: [1-9][0-9]* CPU samples, 0 lost, $want of pprof to $T/cpu.pb.gz in " \
	"$T/conv.err" || fail "summary ($size bytes written): $(cat "$T/conv.err")"
[[ $(head -c2 "$T/cpu.pb.gz" | od -An -tx1 | tr -d ' ') == 1f8b ]] || fail "not a gzip file"
"$EVRING" convert "$T/p.evtrace" --format pprof --event-stacks -o "$T/ev.pb.gz" -q
"$EVRING" dump --json "$T/p.evtrace" >"$T/p.jsonl"

"${PPROF[@]}" -top -symbolize=none "$T/cpu.pb.gz" >"$T/top.txt" 2>"$T/top.err" ||
	fail "pprof -top cannot read the profile: $(cat "$T/top.err")"
"${PPROF[@]}" -top "$T/cpu.pb.gz" >"$T/top-sym.txt" 2>"$T/top-sym.err" ||
	fail "pprof -top (with its own symbolization) failed: $(cat "$T/top-sym.err")"
"${PPROF[@]}" -raw -symbolize=none "$T/cpu.pb.gz" >"$T/raw.txt" 2>&1 || fail "pprof -raw: $(cat "$T/raw.txt")"
"${PPROF[@]}" -traces -symbolize=none "$T/cpu.pb.gz" >"$T/traces.txt" 2>&1 || fail "pprof -traces failed"
"${PPROF[@]}" -top -symbolize=none "$T/ev.pb.gz" >"$T/ev-top.txt" 2>&1 || fail "pprof -top events: $(cat "$T/ev-top.txt")"
"${PPROF[@]}" -traces -symbolize=none "$T/ev.pb.gz" >"$T/ev-traces.txt" 2>&1 || fail "pprof -traces events failed"
"${PPROF[@]}" -raw -symbolize=none "$T/ev.pb.gz" >"$T/ev-raw.txt" 2>&1 || fail "pprof -raw events failed"
# The line of spin_work that writes the event (through spin_round(), the inlined fire function).
call_line=$(grep -n "^	spin_round(round);" "$(dirname "$0")/spin.c" | cut -d: -f1)
[[ -n $call_line ]] || fail "spin.c: no spin_round(round) call"

python3 - "$T" "$call_line" <<'PY'
import json, re, sys
T = sys.argv[1]
call_line = int(sys.argv[2])
recs = [json.loads(l) for l in open(f"{T}/p.jsonl")]
samples = [r for r in recs if r["type"] == "cpu_sample" and r.get("stack")]
rounds = sum(1 for r in recs if r.get("event") == "Round")
period = sum(r["period_ns"] for r in samples)

def top_rows(path):
    """pprof -top's table: (flat, name) per row, in its order (heaviest flat first)."""
    rows, on = [], False
    for l in open(path):
        if re.match(r"\s+flat\s+flat%", l):
            on = True
            continue
        if on and l.strip():
            f = l.split()
            rows.append((f[0], " ".join(f[5:])))
    return rows

for path in ("top.txt", "top-sym.txt"):
    text = open(f"{T}/{path}").read()
    rows = top_rows(f"{T}/{path}")
    assert rows, f"{path}: pprof shows no functions:\n{text}"
    assert rows[0][1] == "spin_hot", f"{path}: top of pprof's profile is {rows[0]}:\n{text}"
    assert "Type: cpu" in text, text
    names = [n for _, n in rows]
    assert "spin_work" in names and "main" in names, names

raw = open(f"{T}/raw.txt").read()
# Samples: "COUNT NANOS: loc loc ..." lines; their sum is every CPU sample of the trace.
counts = [(int(m.group(1)), int(m.group(2))) for m in
          re.finditer(r"^\s+(\d+)\s+(\d+): [\d ]+$", raw, re.M)]
assert sum(c for c, _ in counts) == len(samples), \
    f"pprof has {sum(c for c, _ in counts)} samples, the trace {len(samples)}"
assert sum(n for _, n in counts) == period, f"CPU time {sum(n for _, n in counts)} != {period}"
assert "samples/count cpu/nanoseconds[dflt]" in raw, raw[:500]
assert re.search(r"^\s+thread:\[stacks-spin\]$", raw, re.M), "no thread label"
assert re.search(r"^\s+tid:\[\d+\]$", raw, re.M), "no tid label"
maps = re.findall(r"^\d+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+) ([0-9a-f]*)", raw, re.M)
prog = [m for m in maps if m[0].endswith("/stacks-spin")]
assert prog and len(prog[0][1]) == 40, f"no mapping of the program with its build ID: {maps}"
assert re.search(r"^\s+\d+: 0x[0-9a-f]+ M=\d+ spin_hot \S+spin\.c:\d+", raw, re.M), \
    "spin_hot's location has no mapping, function or line"
tr = open(f"{T}/traces.txt").read()
assert re.search(r"spin_hot\n\s+spin_work\n\s+main\n", tr), tr[:800]

ev = top_rows(f"{T}/ev-top.txt")
evtext = open(f"{T}/ev-top.txt").read()
assert "Type: events" in evtext, evtext
# Each event stack starts in the fire function the compiler inlined into spin_work: a
# Location with two Lines, the inlined function first (pprof marks it), then its caller at
# the line of the call.
assert ev and ev[0] == (str(rounds), "spin_round (inline)"), f"event stacks: {ev[:3]}, {rounds} rounds"
evtr = open(f"{T}/ev-traces.txt").read()
assert re.search(r"spin_round \(inline\)\n\s+spin_work\n\s+main\n", evtr), evtr[:800]
evraw = open(f"{T}/ev-raw.txt").read()
assert re.search(r"^\s+\d+: 0x[0-9a-f]+ M=\d+ spin_round \S+:\d+ s=\d+\n\s+spin_work \S+spin\.c:%d s=\d+$"
                 % call_line, evraw, re.M), evraw[:1500]
print(f"pprof: spin_hot on top of {len(samples)} samples ({period} ns); {rounds} event stacks")
PY

# JIT code: minirt's methods by name, from the perf map the trace keeps.
MINIRT=$BIN/minirt
[[ -x $MINIRT ]] || MINIRT=$(dirname "$BIN")/bin/minirt
if [[ -x $MINIRT ]]; then
	cleanup_hook() {
		[[ -n ${PROG_PID:-} ]] && rm -f "/tmp/perf-$PROG_PID.map"
	}
	start_prog minirt "$MINIRT" --perf-map --phase exception-storm --threads 2
	"$EVRING" record -p "$PROG_PID" --sample-cpu --duration 1s -o "$T/jit.evtrace" 2>"$T/jrec.err" ||
		fail "record minirt failed: $(cat "$T/jrec.err")"
	kill "$PROG_PID"
	wait "$PROG_PID" 2>/dev/null || true
	rm -f "/tmp/perf-$PROG_PID.map"
	"$EVRING" convert "$T/jit.evtrace" --format pprof -o "$T/jit.pb.gz" -q
	"${PPROF[@]}" -top -symbolize=none -nodecount=1000 "$T/jit.pb.gz" >"$T/jit-top.txt" 2>&1 ||
		fail "pprof -top (minirt): $(cat "$T/jit-top.txt")"
	grep -qE " (MiniRT|System)\.[A-Za-z.]+::[A-Za-z]+$" "$T/jit-top.txt" ||
		fail "no JIT method name in pprof's profile of minirt: $(head -30 "$T/jit-top.txt")"
else
	echo "note: minirt not built: JIT frames not checked"
fi

# The program is pprof's main binary (the first Mapping, "File:"), even when its first
# sample is in libc (issue 28, item 5): stacks-memset spends nearly all its CPU in memset.
"$EVRING" record --sample-cpu --providers Memset -o "$T/m.evtrace" -- "$BIN/stacks-memset" \
	>/dev/null 2>"$T/mrec.err" || fail "record stacks-memset failed: $(cat "$T/mrec.err")"
"$EVRING" convert "$T/m.evtrace" --format pprof -o "$T/m.pb.gz" -q 2>/dev/null ||
	fail "convert stacks-memset to pprof failed"
"${PPROF[@]}" -raw -symbolize=none "$T/m.pb.gz" >"$T/m.raw" 2>&1 || fail "pprof -raw: $(cat "$T/m.raw")"
"${PPROF[@]}" -top -symbolize=none "$T/m.pb.gz" >"$T/m.top" 2>&1 || fail "pprof -top: $(cat "$T/m.top")"
grep -q "libc.so" "$T/m.raw" || fail "no sample in libc: $(head -20 "$T/m.top")"
first=$(sed -n '/^Mappings/{n;p;q}' "$T/m.raw")
[[ $first == "1: "*"/stacks-memset "* ]] || fail "pprof's first mapping is not the program: $first"
grep -q "^File: stacks-memset$" "$T/m.top" || fail "pprof names the main binary: $(grep ^File "$T/m.top")"
echo "pprof: $first"

# Nothing to profile: one line naming the cause, no file content.
"$EVRING" record --providers Spin -o "$T/plain.evtrace" -- "$BIN/stacks-spin" 5 >/dev/null 2>&1
st=0; "$EVRING" convert "$T/plain.evtrace" --format pprof -o "$T/x.pb.gz" 2>"$T/err" || st=$?
[[ $st == 1 && $(wc -l <"$T/err") == 1 ]] &&
	grep -q "has no event stacks to profile (record with --sample-cpu or --stacks)" "$T/err" ||
	fail "no samples: status $st: $(cat "$T/err")"
[[ ! -s $T/x.pb.gz ]] || fail "a profile was written for a trace without stacks"
echo PASS
