#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An in-process listener's counter aggregates equal those an attached clrtop sees: a producer
# records known values while both its own listener (100 ms interval) and clrtop (attached by
# pid, 100 ms, recording every sample with --format csv) sample them; the listener's totals
# and clrtop's, summed over their own intervals, are the same (each value lands whole in one
# interval of each session) and are what was recorded.
#
# MODE "callback" (listener_clrtop_callback): the producer records every value inside its
# provider's enable callback, when clrtop's session is being published, before that session
# has started: values recorded as soon as a session shows in a provider's mask count in its
# first interval (the counters' baselines must come before the session is published).
source "$(dirname "$0")/lib.sh"
PRODUCER=$(realpath "${3:?usage: $0 EVRING WORKLOAD PRODUCER CLRTOP [callback]}")
CLRTOP=$(realpath "${4:?usage: $0 EVRING WORKLOAD PRODUCER CLRTOP [callback]}")
MODE_ARGS=()
case ${5:-} in
"") ;;
callback) MODE_ARGS=(--in-callback) ;;
*) fail "unknown mode '$5'" ;;
esac
need_python
N=5000

mkfifo "$T/p.out"
"$PRODUCER" --ops "$N" --sessions 2 --listen 100 --vary "${MODE_ARGS[@]}" >"$T/p.out" 2>"$T/p.err" \
	< <(sleep 600) &
P_PID=$!
KILL_AT_EXIT+=("$P_PID")
exec {P_FD}<"$T/p.out"
expect "$P_FD" "^ready $P_PID\$" "the producer's ready line"
"$CLRTOP" -b -p "$P_PID" -d 0.1 --counters FwdCheck --format csv -o "$T/top.csv" \
	>/dev/null 2>"$T/top.err" &
TOP_PID=$!
KILL_AT_EXIT+=("$TOP_PID")
expect "$P_FD" "^recorded ([0-9.e+]+) $N\$" "the producer's recorded line"
OPS=${BASH_REMATCH[1]}
expect "$P_FD" "^listener " "the listener's totals"
echo "$LINE"
[[ $LINE =~ ^listener\ ops=([^ ]+)\ count=([0-9]+)\ sum=([^ ]+)\ min=([^ ]+)\ max=([^ ]+)\ depth=([^ ]+)$ ]] ||
	fail "the listener's totals: $LINE"

# clrtop's samples, summed the same way once they have everything.
python3 - "$T/top.csv" "$OPS" "$N" "${BASH_REMATCH[@]:1}" <<'PY' || fail "clrtop and the listener disagree"
import csv, sys, time
path, ops, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
l_ops, l_count, l_sum, l_min, l_max, l_depth = (float(x) for x in sys.argv[4:10])
end = time.monotonic() + 120
while True:
    t = {"ops": 0.0, "count": 0, "sum": 0.0, "min": float("inf"), "max": float("-inf"),
         "depth": None}
    try:
        rows = list(csv.DictReader(open(path, newline="")))
    except FileNotFoundError:
        rows = []
    for r in rows:
        if r["provider"] != "FwdCheck" or not r.get("kind"):
            continue
        if r["counter"] == "ops" and r["increment"]:
            t["ops"] += float(r["increment"])
        elif r["counter"] == "latency" and r["count"] and int(r["count"]):
            c = int(r["count"])
            t["count"] += c
            t["sum"] += float(r["mean"]) * c
            t["min"] = min(t["min"], float(r["min"]))
            t["max"] = max(t["max"], float(r["max"]))
        elif r["counter"] == "depth" and r["value"]:
            t["depth"] = float(r["value"])
    if (t["ops"] >= ops and t["count"] >= n and t["depth"] is not None) or time.monotonic() > end:
        break
    time.sleep(0.1)
print("clrtop:   ops=%.17g count=%d sum=%.17g min=%g max=%g depth=%s"
      % (t["ops"], t["count"], t["sum"], t["min"], t["max"], t["depth"]))
want_sum = float(sum(i % 100 + 1 for i in range(1, n + 1)))
close = lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(b))
problems = []
if not (t["ops"] == l_ops == ops):
    problems.append("ops: clrtop %r, listener %r, recorded %r" % (t["ops"], l_ops, ops))
if not (t["count"] == l_count == n):
    problems.append("values: clrtop %d, listener %d, recorded %d" % (t["count"], l_count, n))
if not (close(t["sum"], want_sum) and close(l_sum, want_sum)):
    problems.append("sum: clrtop %r, listener %r, recorded %r" % (t["sum"], l_sum, want_sum))
if not (t["min"] == l_min == 1 and t["max"] == l_max == 100 and t["depth"] == l_depth == 42):
    problems.append("min/max/depth: clrtop %r/%r/%r, listener %r/%r/%r"
                    % (t["min"], t["max"], t["depth"], l_min, l_max, l_depth))
if problems:
    sys.exit("; ".join(problems))
PY
echo PASS
