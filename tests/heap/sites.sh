#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A heap profile of heap-sites (three sites of known sizes), attached by PID while it runs
# (MODE pid) or from its start (MODE launch): alloc_space per site within 15% of the truth
# (sampling every 16 KiB: the smallest site gets ~640 samples, 4% of relative error per SD),
# inuse_space with keep_1k and keep_16 and not churn_64k nor batch_16k, from evring's own estimate and
# from `go tool pprof -sample_index=...` reading the file; report's heap section agrees, and
# the folded stacks of the heap in use.
source "$(dirname "$0")/lib.sh"

if [[ $MODE == pid ]]; then
	mkfifo "$T/in" "$T/out"
	"$BIN/heap-sites" wait <"$T/in" >"$T/out" 2>"$T/prog.err" &
	PROG=$!
	KILL_AT_EXIT+=("$PROG")
	exec {IN}>"$T/in" {OUT}<"$T/out"
	expect "$OUT" "^ready $PROG\$" "'ready' from heap-sites"
	"$EVRING" record -p "$PROG" --heap=16K --providers Heap -o "$T/h.evtrace" 2>"$T/rec.err" &
	REC=$!
	KILL_AT_EXIT+=("$REC")
	expect "$OUT" "^done " "'done' from heap-sites (its allocations, once the hooks were in)"
	kill -INT "$REC"
	wait "$REC" || fail "record failed: $(cat "$T/rec.err")"
	exec {IN}>&-
	wait "$PROG" || fail "heap-sites failed: $(cat "$T/prog.err")"
else
	"$EVRING" record --heap=16K --providers Heap -o "$T/h.evtrace" -- "$BIN/heap-sites" run \
		>"$T/prog.out" 2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
fi
"$EVRING" convert "$T/h.evtrace" --format pprof -o "$T/h.pb.gz" 2>"$T/conv.err" ||
	fail "convert --format pprof: $(cat "$T/conv.err")"
"$EVRING" report "$T/h.evtrace" >"$T/report.txt" 2>"$T/report.err" ||
	fail "report: $(cat "$T/report.err")"

# evring's own reading of the file, by site: the report's table.
python3 - "$T/report.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
assert "Heap allocation sites" in text, text
MiB = 1 << 20
truth = {"keep_1k": 100 * MiB, "churn_64k": 50 * MiB, "keep_16": 10 * MiB}
rows = {}
for l in text.splitlines():
    m = re.match(r"\s+([\d.]+ [KMG]?i?B)\s+(\d+)\s+([\d.]+ [KMG]?i?B)\s+(\d+)\s+(\S+)", l)
    if m:
        rows.setdefault(m.group(5), m.groups())
def b(s):
    v, u = s.split()
    return float(v) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[u]
for site, want in truth.items():
    assert site in rows, f"report: no row for {site}:\n{text}"
    got = b(rows[site][0])
    assert abs(got - want) <= 0.15 * want, f"report: {site} allocated {got} bytes, truth {want}:\n{text}"
assert b(rows["churn_64k"][2]) < 0.01 * 50 * MiB, f"churn_64k still in use:\n{text}"
# Its frees matched in the far table of sampled blocks (tests/heap/sites.c).
assert "batch_16k" in rows and b(rows["batch_16k"][2]) < 0.01 * 16 * MiB, \
    f"batch_16k still in use:\n{text}"
assert abs(b(rows["keep_1k"][2]) - 100 * MiB) <= 15 * MiB, text
assert "Leak candidates" in text and "keep_1k" in text.split("Leak candidates")[1], text
PY

# Folded stacks of the heap in use at the end: by leaf, the kept sites, not the freed one.
"$EVRING" convert "$T/h.evtrace" --format folded -o "$T/h.folded" 2>"$T/fold.err" ||
	fail "convert --format folded: $(cat "$T/fold.err")"
python3 - "$T/h.folded" <<'PY'
import sys
MiB = 1 << 20
leaf = {}
for l in open(sys.argv[1]):
    stack, n = l.rsplit(" ", 1)
    leaf[stack.split(";")[-1]] = leaf.get(stack.split(";")[-1], 0) + int(n)
assert abs(leaf.get("keep_1k", 0) - 100 * MiB) <= 15 * MiB, f"folded in use: {leaf}"
assert abs(leaf.get("keep_16", 0) - 10 * MiB) <= 1.5 * MiB, f"folded in use: {leaf}"
assert "churn_64k" not in leaf, f"folded in use: {leaf}"
PY

((${#PPROF[@]})) || skip "no pprof reader (go tool pprof: Debian golang-go); evring's report checked"
pprof_top "$T/h.pb.gz" alloc_space >"$T/alloc.txt"
pprof_top "$T/h.pb.gz" inuse_space >"$T/inuse.txt"
"${PPROF[@]}" -sample_index=inuse_space -top "$T/h.pb.gz" >"$T/top.txt" 2>&1 ||
	fail "go tool pprof -sample_index=inuse_space -top: $(cat "$T/top.txt")"
grep -q "Type: inuse_space" "$T/top.txt" || fail "not an inuse_space profile: $(cat "$T/top.txt")"
python3 - "$T/alloc.txt" "$T/inuse.txt" <<'PY'
import sys
MiB = 1 << 20
def load(p):
    return {f: int(v) for f, v in (l.split() for l in open(p))}
alloc, inuse = load(sys.argv[1]), load(sys.argv[2])
truth = {"keep_1k": 100 * MiB, "churn_64k": 50 * MiB, "keep_16": 10 * MiB}
for site, want in truth.items():
    got = alloc.get(site, 0)
    assert abs(got - want) <= 0.15 * want, f"alloc_space of {site}: {got}, truth {want} ({alloc})"
for site in ("keep_1k", "keep_16"):
    got = inuse.get(site, 0)
    assert abs(got - truth[site]) <= 0.15 * truth[site], f"inuse_space of {site}: {got} ({inuse})"
assert inuse.get("churn_64k", 0) < 0.01 * 50 * MiB, f"churn_64k in use: {inuse}"
print("alloc_space", alloc, "inuse_space", inuse)
PY
