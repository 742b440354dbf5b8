#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# JIT frames: minirt runs its methods through real JIT-compiled code and, with --perf-map,
# names that code in /tmp/perf-PID.map. Recorded with --stacks and --sample-cpu, every
# ExceptionThrown event (thrown from inside a method) shows method names among its frames,
# resolved from the perf map, and so do CPU samples of the workers. The trace keeps the map:
# with /tmp/perf-PID.map gone, dump still resolves them.
source "$(dirname "$0")/lib.sh"
need_python
MINIRT=$BIN/minirt
[[ -x $MINIRT ]] || MINIRT=$(dirname "$BIN")/bin/minirt
[[ -x $MINIRT ]] || skip "minirt not built"

cleanup_hook() {
	[[ -n ${PROG_PID:-} ]] && rm -f "/tmp/perf-$PROG_PID.map"
}
start_prog minirt "$MINIRT" --perf-map --phase exception-storm --threads 2
[[ -f /tmp/perf-$PROG_PID.map ]] || fail "minirt --perf-map made no /tmp/perf-$PROG_PID.map"
"$EVRING" record -p "$PROG_PID" --stacks --sample-cpu --providers 'MiniRT:0x8000:4' \
	--duration 1s -o "$T/jit.evtrace" 2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
kill "$PROG_PID"
wait "$PROG_PID" 2>/dev/null || true
"$EVRING" dump --json "$T/jit.evtrace" >"$T/with-map.jsonl"
rm -f "/tmp/perf-$PROG_PID.map"
"$EVRING" dump --json "$T/jit.evtrace" >"$T/from-trace.jsonl"
cmp -s "$T/with-map.jsonl" "$T/from-trace.jsonl" ||
	fail "the trace alone symbolizes differently than with /tmp/perf-PID.map"

python3 - "$T/from-trace.jsonl" <<'PY'
import json, re, sys

recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
method = re.compile(r"^MiniRT\.[A-Za-z]+\.[A-Za-z]+::[A-Za-z]+\+0x[0-9a-f]+ \(\[jit\]\)$|"
                    r"^System\.[A-Za-z.]+\.[A-Za-z`0-9]+::[A-Za-z]+\+0x[0-9a-f]+ \(\[jit\]\)$")
def jit_frames(r):
    return [f["frame"] for f in r.get("stack", []) if "[jit]" in f.get("frame", "")]
thrown = [r for r in recs if r.get("event") == "ExceptionThrown"]
assert thrown, "no ExceptionThrown events"
for r in thrown:
    j = jit_frames(r)
    assert j, f"an exception's stack has no JIT frame: {r.get('stack')}"
    bad = [f for f in j if not method.match(f)]
    assert not bad, f"JIT frames that are not method names: {bad}"
samples = [r for r in recs if r["type"] == "cpu_sample"]
with_jit = [r for r in samples if jit_frames(r)]
print(f"{len(thrown)} exceptions, each with JIT frames (e.g. {jit_frames(thrown[0])[:2]}); "
      f"{len(with_jit)} of {len(samples)} CPU samples in JIT code")
assert len(samples) < 100 or with_jit, "no CPU sample ran JIT-compiled code"
PY
echo PASS
