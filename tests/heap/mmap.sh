#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Anonymous mmap/munmap as a kind of their own (heap-mmap: mappings of known sizes, kept,
# unmapped, unmapped in part), recorded from the start at 4 KiB: the report's "mmap" sites
# within 15% of the truth, mapped and still mapped at the end (a part unmapped counts
# out; mremap() is the unmap of the old range and the mapping of the new one, so a
# mapping grown counts at its new size and one moved and unmapped there is gone), a file mapping and the heap blocks not among them, nor the mappings among the heap
# sites; folded and speedscope in-use profiles with the kinds under frames of their own;
# pprof's samples labelled kind=mmap (checked with go tool pprof when present).
source "$(dirname "$0")/lib.sh"

"$EVRING" record --heap=4K --providers Heap -o "$T/m.evtrace" -- "$BIN/heap-mmap" \
	>"$T/prog.out" 2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
grep -q '^done$' "$T/prog.out" || fail "heap-mmap did not finish: $(cat "$T/prog.out")"
"$EVRING" report --json "$T/m.evtrace" >"$T/report.json" 2>"$T/report.err" ||
	fail "report --json: $(cat "$T/report.err")"
"$EVRING" report "$T/m.evtrace" >"$T/report.txt" 2>>"$T/report.err" ||
	fail "report: $(cat "$T/report.err")"
grep -q "^Anonymous mmap sites" "$T/report.txt" || fail "no mmap section: $(cat "$T/report.txt")"
python3 - "$T/report.json" <<'PY'
import json, sys
MiB = 1 << 20
h = json.load(open(sys.argv[1]))["heap"]
mm = {s["site"].split()[0]: s for s in h["mmap"]["sites"]}
heap = {s["site"].split()[0]: s for s in h["sites"]}
truth = {"map_keep": (32 * MiB, 32 * MiB), "map_churn": (16 * MiB, 0),
         "map_part": (16 * MiB, 4 * MiB),
         # 8 x (1 MiB mapped, then 2 MiB by mremap()), kept.
         "map_grow": (24 * MiB, 16 * MiB),
         # 8 x (a 3 MiB place, 1 MiB, moved there grown to 3 MiB), unmapped at the new place.
         "map_move": (56 * MiB, 0)}
for site, (mapped, inuse) in truth.items():
    assert site in mm, f"no mmap site {site}: {mm}"
    got = mm[site]["alloc_bytes"]
    assert abs(got - mapped) <= 0.15 * mapped, f"{site} mapped {got}, truth {mapped}"
    got = mm[site]["inuse_bytes"]
    assert abs(got - inuse) <= 0.15 * max(inuse, MiB), f"{site} still mapped {got}, truth {inuse}"
assert "map_file" not in mm, f"a file mapping counted: {mm}"
assert "keep_heap" not in mm and "keep_heap" in heap, f"kinds mixed: {mm} {heap}"
assert abs(heap["keep_heap"]["inuse_bytes"] - 4 * MiB) <= 0.15 * 4 * MiB, heap["keep_heap"]
assert not any(s.startswith("map_") for s in heap), f"mappings among heap sites: {heap}"
# 8 map_part mappings: a hole then the piece below it, 2 Munmaps each (all sampled at 4K).
assert h["mmap"]["munmaps"] >= 0.85 * (64 + 16), h["mmap"]
print({k: (v["alloc_bytes"], v["inuse_bytes"]) for k, v in mm.items()})
PY

# Folded stacks of what is in use: the kinds apart, under a frame of their own after the
# thread ("[heap]" or "[anonymous mmap]"), each site under its kind only; speedscope has
# the same frames.
"$EVRING" convert "$T/m.evtrace" --format folded -o "$T/m.folded" 2>"$T/fold.err" ||
	fail "convert --format folded: $(cat "$T/fold.err")"
"$EVRING" convert "$T/m.evtrace" --format speedscope -o "$T/m.speedscope.json" \
	2>>"$T/fold.err" || fail "convert --format speedscope: $(cat "$T/fold.err")"
python3 - "$T/m.folded" "$T/m.speedscope.json" <<'PY'
import json, sys
MiB = 1 << 20
kinds = {}
for l in open(sys.argv[1]):
    stack, n = l.rsplit(" ", 1)
    f = stack.split(";")
    assert len(f) >= 3 and f[1] in ("[heap]", "[anonymous mmap]"), f"no kind frame: {l}"
    # The site: the function main() called (map() and remap() are inlined frames below it).
    site = f[f.index("main") + 1]
    kinds.setdefault(site, {}).setdefault(f[1], 0)
    kinds[site][f[1]] += int(n)
assert set(kinds["map_keep"]) == {"[anonymous mmap]"}, kinds
assert set(kinds["map_grow"]) == {"[anonymous mmap]"}, kinds
assert set(kinds["keep_heap"]) == {"[heap]"}, kinds
assert abs(kinds["map_keep"]["[anonymous mmap]"] - 32 * MiB) <= 0.15 * 32 * MiB, kinds
assert abs(kinds["keep_heap"]["[heap]"] - 4 * MiB) <= 0.15 * 4 * MiB, kinds
names = {f["name"] for f in json.load(open(sys.argv[2]))["shared"]["frames"]}
assert {"[heap]", "[anonymous mmap]"} <= names, sorted(names)[:20]
PY

"$EVRING" convert "$T/m.evtrace" --format pprof -o "$T/m.pb.gz" 2>"$T/conv.err" ||
	fail "convert --format pprof: $(cat "$T/conv.err")"
((${#PPROF[@]})) || skip "no pprof reader (go tool pprof: Debian golang-go); evring's report checked"
"${PPROF[@]}" -tagfocus=kind=mmap -sample_index=inuse_space -top -unit=B -symbolize=none \
	"$T/m.pb.gz" >"$T/top.txt" 2>&1 || fail "pprof -tagfocus=kind=mmap: $(cat "$T/top.txt")"
grep -q "map_keep" "$T/top.txt" && grep -q "map_part" "$T/top.txt" ||
	fail "kind=mmap lacks the mappings: $(cat "$T/top.txt")"
! grep -q "keep_heap" "$T/top.txt" || fail "kind=mmap has heap blocks: $(cat "$T/top.txt")"
