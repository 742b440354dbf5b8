#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring's sampled heap profile against heaptrack's exact one (heaptrack, heaptrack_print;
# Debian heaptrack; skipped without it), on heap-sites: the sites in use at the end rank in
# the same order, and each one's bytes (heaptrack's peak, which for kept blocks is what is
# leaked) agree within 20%.
source "$(dirname "$0")/lib.sh"
command -v heaptrack >/dev/null 2>&1 && command -v heaptrack_print >/dev/null 2>&1 ||
	skip "heaptrack not installed (Debian heaptrack)"

(cd "$T" && heaptrack -o "$T/ht" "$BIN/heap-sites" plain >"$T/ht.out" 2>&1) ||
	fail "heaptrack: $(cat "$T/ht.out")"
heaptrack_print -l -n 10 -s 0 "$T/ht.zst" >"$T/ht.txt" 2>"$T/htp.err" ||
	fail "heaptrack_print: $(cat "$T/htp.err")"
"$EVRING" record --heap=16K --providers Heap -o "$T/h.evtrace" -- "$BIN/heap-sites" run \
	>"$T/prog.out" 2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
"$EVRING" report --json "$T/h.evtrace" >"$T/report.json" 2>"$T/report.err" ||
	fail "report: $(cat "$T/report.err")"

python3 - "$T/ht.txt" "$T/report.json" <<'PY'
import json, re, sys
sites = ("keep_1k", "keep_16", "churn_64k")
# heaptrack_print's PEAK MEMORY CONSUMERS: "104.86M peak memory consumed over N calls from",
# then the function; K, M, G are powers of 1000.
peak, section, last = {}, None, None
for l in open(sys.argv[1]):
    if l.strip() in ("PEAK MEMORY CONSUMERS", "MEMORY LEAKS", "MOST CALLS TO ALLOCATION FUNCTIONS",
                     "MOST TEMPORARY ALLOCATIONS"):
        section = l.strip()
        continue
    m = re.match(r"([\d.]+)([KMG]?)B? peak memory consumed over \d+ calls from", l)
    if section == "PEAK MEMORY CONSUMERS" and m:
        last = float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
        continue
    if last is not None and l.strip():
        peak.setdefault(l.strip(), last)
        last = None
ev = {s["site"].split()[0]: s["inuse_bytes"] for s in json.load(open(sys.argv[2]))["heap"]["sites"]}
for s in ("keep_1k", "keep_16"):
    assert s in peak, f"heaptrack has no peak for {s}: {peak}"
    assert abs(ev.get(s, 0) - peak[s]) <= 0.2 * peak[s], f"{s}: evring {ev.get(s)} heaptrack {peak[s]}"
order = lambda d: [s for s in sorted(sites, key=lambda s: -d.get(s, 0)) if d.get(s, 0) > 0]
assert order(ev) == order(peak), f"rank: evring {order(ev)} heaptrack {order(peak)}"
print("in use at the end, evring vs heaptrack:", {s: (round(ev.get(s, 0)), peak.get(s, 0)) for s in sites})
PY
