#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# convert --format chrome of a heap recording (heap-mmap: heap blocks and anonymous
# mappings, some unmapped in part): the counter tracks "Heap in use (estimated)" and
# "Anonymous mmap in use (estimated)" hold, at every point, the sum of what the sampled
# blocks alive stand for, recomputed here from the Heap provider's own instant events in
# the same file (Alloc/Free/Mmap/Munmap: address, size, rate); their last values are the
# report's in-use totals.
source "$(dirname "$0")/lib.sh"

"$EVRING" record --heap=4K --providers Heap -o "$T/m.evtrace" -- "$BIN/heap-mmap" \
	>"$T/prog.out" 2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
"$EVRING" convert "$T/m.evtrace" --format chrome -o "$T/m.json" 2>"$T/conv.err" ||
	fail "convert --format chrome: $(cat "$T/conv.err")"
"$EVRING" report --json "$T/m.evtrace" >"$T/report.json" 2>"$T/report.err" ||
	fail "report --json: $(cat "$T/report.err")"
python3 - "$T/m.json" "$T/report.json" <<'PY'
import json, math, sys
tr = json.load(open(sys.argv[1]))
rep = json.load(open(sys.argv[2]))["heap"]
TRACK = {"Heap in use (estimated)": 0, "Anonymous mmap in use (estimated)": 1}
num = lambda x: int(x, 16) if isinstance(x, str) else int(x)
live, inuse, checked, last = {}, [0.0, 0.0], [0, 0], [None, None]
expect = []  # (kind, value) after each event that changed an estimate, in file order
for e in tr["traceEvents"]:
    if e.get("ph") == "C" and e["name"] in TRACK:
        k = TRACK[e["name"]]
        assert expect, f"a counter sample with no Heap event before it: {e}"
        want_k, want = expect.pop(0)
        assert want_k == k, f"counter of the wrong kind: {e}, expected kind {want_k}"
        got = e["args"]["bytes"]
        assert abs(got - want) <= max(1.0, 1e-9 * want), f"{e['name']} at {e['ts']}: {got}, samples say {want}"
        checked[k] += 1
        last[k] = got
        continue
    if e.get("ph") != "i" or e.get("cat") != "Heap":
        continue
    ev, a = e["name"].split("/")[-1], e["args"]
    mm = ev in ("Mmap", "Munmap")
    key = (mm, num(a["address"]))
    before = inuse[mm]
    if key in live and ev == "Munmap" and 0 < num(a["size"]) < live[key][0]:
        size, b = live[key]
        rest = b * ((size - num(a["size"])) / size)  # as the converter computes it
        inuse[mm] -= b - rest
        live[key] = (size - num(a["size"]), rest)
    elif key in live:
        inuse[mm] -= live.pop(key)[1]
    if ev in ("Alloc", "Mmap") and not num(a["flags"]) & 1:
        size, rate = num(a["size"]), num(a["rate"])
        s = size or 1
        b = size / -math.expm1(-s / rate) if rate > 1 else size
        live[key] = (size, b)
        inuse[mm] += b
    if inuse[mm] < 0.5:
        inuse[mm] = 0.0
    if inuse[mm] != before:
        expect.append((int(mm), round(inuse[mm])))
assert not expect, f"{len(expect)} estimate changes without their counter sample"
assert checked[0] > 500 and checked[1] > 50, f"counter samples checked: {checked}"
assert abs(last[0] - rep["inuse_bytes"]) <= 1, (last, rep["inuse_bytes"])
assert abs(last[1] - rep["mmap"]["inuse_bytes"]) <= 1, (last, rep["mmap"])
print("counter samples checked:", checked, "last:", last)
PY
