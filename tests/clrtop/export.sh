#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clrtop --format csv|json -o FILE: every sample of every counter, one row / object each,
# like dotnet-counters collect; checked with python3 (every line parses, the columns are
# there, per-counter timestamps increase, both System.Runtime and Process are present).
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null 2>&1 || skip "python3 is needed to check the output"

start_minirt
pid=$MINIRT_PID
"$CLRTOP" -b -n 3 -d 0.2 -p "$pid" --format csv -o "$T/s.csv" >"$T/b1.txt" </dev/null ||
	fail "clrtop --format csv failed"
grep -c '^=== clrtop' "$T/b1.txt" | grep -qx 3 || fail "csv run: not 3 snapshots on stdout"
"$CLRTOP" -b -n 3 -d 0.2 -p "$pid" --format json -o "$T/s.json" >/dev/null </dev/null ||
	fail "clrtop --format json failed"
# Batch without -o: the samples themselves go to stdout.
"$CLRTOP" -b -n 2 -d 0.2 -p "$pid" --format json >"$T/stdout.json" </dev/null ||
	fail "clrtop --format json to stdout failed"

python3 - "$pid" "$T/s.csv" "$T/s.json" "$T/stdout.json" <<'PY' || fail "the recordings do not check out"
import csv, json, sys
pid = int(sys.argv[1])
required = ["timestamp", "pid", "provider", "counter", "display_name", "unit", "kind", "value"]
stats = {"mean": ["count", "mean", "min", "max", "stddev"], "rate": ["increment", "rate_per_s"],
         "gauge": [], "histogram": ["count", "sum", "p50", "p90", "p99"]}

def check(rows, what, min_samples):
    last = {}
    counts = {}
    providers = set()
    for r in rows:
        for k in required:
            if k not in r or r[k] in (None, ""):
                if not (k == "unit" and r.get(k) == ""):
                    sys.exit("%s: %r has no %s" % (what, r, k))
        if int(r["pid"]) != pid:
            sys.exit("%s: pid %s" % (what, r["pid"]))
        if r["kind"] not in stats:
            sys.exit("%s: kind %r" % (what, r["kind"]))
        for k in stats[r["kind"]]:
            if r.get(k) in (None, ""):
                sys.exit("%s: %s sample without %s" % (what, r["kind"], k))
        float(r["value"])
        key = (r["provider"], r["counter"])
        if key in last and r["timestamp"] <= last[key]:
            sys.exit("%s: %s timestamps do not increase: %s then %s" % (what, key, last[key], r["timestamp"]))
        last[key] = r["timestamp"]
        counts[key] = counts.get(key, 0) + 1
        providers.add(r["provider"])
    if not {"System.Runtime", "Process"} <= providers:
        sys.exit("%s: providers %r" % (what, providers))
    for key in [("System.Runtime", "gc-heap-size"), ("Process", "cpu-usage"),
                ("System.Runtime", "work-item-duration"), ("System.Runtime", "alloc-rate")]:
        if counts.get(key, 0) < min_samples:
            sys.exit("%s: %d samples of %s" % (what, counts.get(key, 0), key))
    print("%s: %d rows, %d counters" % (what, sum(counts.values()), len(counts)))

with open(sys.argv[2], newline="") as f:
    rows = list(csv.DictReader(f))
check(rows, "csv", 3)
for path, n in ((sys.argv[3], 3), (sys.argv[4], 2)):
    objs = []
    for line in open(path):
        objs.append(json.loads(line))
    check(objs, path.rsplit("/", 1)[1], n)
PY
echo "clrtop export: ok"
