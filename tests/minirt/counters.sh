#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# minirt's System.Runtime counters through a real consumer: `evring record
# --counter-interval 200ms -- minirt` must hold samples of every counter minirt
# publishes, each stamped with the session's interval, with values that agree
# with minirt's own exit summary (never more work items or collections than it did).
#   bash counters.sh EVRING MINIRT
set -euo pipefail

EVRING=$(realpath "${1:?usage: $0 EVRING MINIRT}")
MINIRT=$(realpath "${2:?usage: $0 EVRING MINIRT}")
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
T=$(mktemp -d /tmp/evring-minirt-ctr.XXXXXX)
trap 'rm -rf "$T"' EXIT
export EVR_RUNTIME_DIR=$T/run
mkdir -m 0700 "$EVR_RUNTIME_DIR"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

if ! "$EVRING" record --no-sandbox --providers System.Runtime --counter-interval 200ms \
	-o "$T/t.evtrace" -- "$MINIRT" --seconds 2 --phase steady >"$T/record.log" 2>&1; then
	cat "$T/record.log" >&2
	fail "evring record -- minirt failed"
fi
cat "$T/record.log"
summary=$(grep "minirt: exit summary:" "$T/record.log") || fail "no exit summary from minirt"
"$EVRING" dump --no-sandbox --json "$T/t.evtrace" >"$T/dump.jsonl" || fail "evring dump failed"

SUMMARY="$summary" python3 - "$T/dump.jsonl" <<'PY' || fail "counter samples do not check out"
import json, os, re, sys
summary = os.environ["SUMMARY"]
completed = int(re.search(r" completed=(\d+)", summary).group(1))
gen0 = int(re.search(r" gen0=(\d+)", summary).group(1))
gc_ms = float(re.search(r" gc_time=([0-9.]+)ms", summary).group(1))
expected = {
    "gc-heap-size": "CounterGauge", "gen-0-gc-count": "CounterRate",
    "gen-1-gc-count": "CounterRate", "gen-2-gc-count": "CounterRate",
    "time-in-gc": "CounterRate", "alloc-rate": "CounterRate",
    "gen-0-size": "CounterGauge", "gen-1-size": "CounterGauge",
    "gen-2-size": "CounterGauge", "loh-size": "CounterGauge",
    "threadpool-thread-count": "CounterGauge", "threadpool-queue-length": "CounterGauge",
    "threadpool-completed-items-count": "CounterRate", "exception-count": "CounterRate",
    "monitor-lock-contention-count": "CounterRate", "methods-jitted-count": "CounterGauge",
    "time-paused-by-gc": "CounterRate", "il-bytes-jitted": "CounterGauge",
    "assembly-count": "CounterGauge",
    "work-item-duration": "CounterMean", "work-item-latency": "CounterHistogram",
}
seen = {}
sums = {}
gauges = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["type"] == "lost":
        sys.exit("the recording lost %d events" % e["count"])
    if e["provider"] != "System.Runtime":
        sys.exit("unexpected provider %r" % e["provider"])
    f = e["fields"]
    name = f["name"]
    if expected.get(name) != e["event"]:
        sys.exit("%s arrived as %s" % (name, e["event"]))
    if f["interval_ms"] != 200:
        sys.exit("%s sampled with interval_ms=%s" % (name, f["interval_ms"]))
    seen[name] = seen.get(name, 0) + 1
    if e["event"] == "CounterGauge":
        gauges.setdefault(name, []).append(f["value"])
    if e["event"] == "CounterRate":
        sums[name] = sums.get(name, 0) + f["increment"]
    if e["event"] == "CounterMean":
        sums[name] = sums.get(name, 0) + f["count"]
        if f["count"] and not (f["min"] <= f["mean"] <= f["max"]):
            sys.exit("work-item-duration: mean %s outside [%s, %s]" % (f["mean"], f["min"], f["max"]))
missing = sorted(set(expected) - set(seen))
if missing:
    sys.exit("no samples of " + ", ".join(missing))
if len(set(seen.values())) != 1:
    sys.exit("counters sampled unevenly: %r" % seen)
done = sums["threadpool-completed-items-count"]
if not 0 < done <= completed:
    sys.exit("completed items sampled %d, minirt completed %d" % (done, completed))
if not sums["work-item-duration"] <= completed:
    sys.exit("work-item-duration counted %d items of %d" % (sums["work-item-duration"], completed))
if not sums["gen-0-gc-count"] <= gen0:
    sys.exit("gen-0-gc-count sampled %d collections, minirt did %d" % (sums["gen-0-gc-count"], gen0))
# time-paused-by-gc is gc_time in ms (the summary rounds it to 0.1 ms).
if not sums["time-paused-by-gc"] <= gc_ms + 0.1:
    sys.exit("time-paused-by-gc summed %.3f ms, minirt's gc_time is %.1f ms" % (sums["time-paused-by-gc"], gc_ms))
for name in ("il-bytes-jitted", "assembly-count"):
    v = gauges[name]
    if v != sorted(v) or v[-1] <= 0:
        sys.exit("%s is not a growing count: %r" % (name, v))
if gauges["assembly-count"][-1] > 6:
    sys.exit("assembly-count %s, minirt has 6 modules" % gauges["assembly-count"][-1])
print("counters: %d samples of each of %d counters; %d of %d work items sampled"
      % (next(iter(seen.values())), len(seen), done, completed))
PY
