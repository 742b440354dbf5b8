#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring forward --to graphite against a real carbon-cache (Debian graphite-carbon): the
# counters of a producer whose values are known are stored in whisper files, and what is
# stored matches what an attached clrtop -b shows (a gauge of 42; a mean counter whose every
# value is 12.5, so its mean, min and max are 12.5 in any interval, whatever its phase) and
# what the producer recorded (the increments and the number of values, summed over the
# stored points: each value lands whole in one interval, and intervals of 2 s never share
# carbon's 1-second slots).
source "$(dirname "$0")/lib.sh"
PRODUCER=$(realpath "${3:?usage: $0 EVRING WORKLOAD PRODUCER CLRTOP}")
CLRTOP=$(realpath "${4:?usage: $0 EVRING WORKLOAD PRODUCER CLRTOP}")
need_python
start_carbon
N=3000

mkfifo "$T/p.out"
# Two sessions see the values: the forwarder's and clrtop's.
"$PRODUCER" --ops "$N" --sessions 2 >"$T/p.out" 2>"$T/p.err" < <(sleep 600) &
P_PID=$!
KILL_AT_EXIT+=("$P_PID")
exec {P_FD}<"$T/p.out"
expect "$P_FD" "^ready $P_PID\$" "the producer's ready line"
start_forward fwd -p "$P_PID" --to "graphite:127.0.0.1:$CARBON_PORT,prefix=t.fwd" \
	--counter-interval 2s
"$CLRTOP" -b -n 3 -d 2 -p "$P_PID" --counters FwdCheck >"$T/clrtop.txt" 2>&1 &
TOP_PID=$!
KILL_AT_EXIT+=("$TOP_PID")
expect "$P_FD" "^recorded ([0-9.e+]+) $N\$" "the producer's recorded line"
OPS_TOTAL=${BASH_REMATCH[1]}
wait "$TOP_PID" || fail "clrtop failed: $(cat "$T/clrtop.txt")"
cat "$T/clrtop.txt"
kill -INT "$FWD_PID"
finish_forward "$T/fwd.txt"
cat "$T/fwd.txt"
((FWD_STATUS == 0)) || fail "forward exited with $FWD_STATUS"
read -r sent dropped filtered <<<"$(sink_counts "$T/fwd.txt" \
	"graphite:127.0.0.1:$CARBON_PORT,prefix=t.fwd")"
((sent > 0 && dropped == 0)) || fail "graphite sink: $sent sent, $dropped dropped"

# Wait for carbon to have written every point (it writes from its cache a moment later).
python3 - "$CARBON_WSP/t/fwd/evr-forward-producer/FwdCheck" "$OPS_TOTAL" "$N" \
	"$T/clrtop.txt" <<'PY' || fail "carbon's stored values do not match"
import os, re, subprocess, sys, time
base, ops_total, n, top = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def points(path):
    f = os.path.join(base, path + ".wsp")
    if not os.path.exists(f):
        return []
    out = subprocess.run(["whisper-fetch", "--from=%d" % (time.time() - 3600), f],
                         capture_output=True, text=True, check=True).stdout
    return [float(v) for t, v in (l.split() for l in out.splitlines()) if v != "None"]

end = time.monotonic() + 60
while True:
    inc, count = sum(points("ops/increment")), sum(points("latency/count"))
    mean, mn, mx = points("latency/mean"), points("latency/min"), points("latency/max")
    depth = points("depth/value")
    if (inc == ops_total and count == n and mean and depth) or time.monotonic() > end:
        break
    time.sleep(0.2)
print("stored: ops.increment sum %g, latency.count sum %d, means %s, depth %s"
      % (inc, count, sorted(set(mean)), sorted(set(depth))))
if inc != ops_total or count != n:
    sys.exit("stored increments %g (want %g), values %d (want %d)" % (inc, ops_total, count, n))
if set(mean) != {12.5} or set(mn) != {12.5} or set(mx) != {12.5} or set(depth) != {42.0}:
    sys.exit("stored means %s min %s max %s depth %s" % (set(mean), set(mn), set(mx), set(depth)))

# What clrtop -b showed for the same counters (its rows: NAME VALUE [min A max B n N]).
shown_depth, shown_lat = set(), set()
for line in open(top):
    m = re.match(r"\s+depth\s+(\S+)\s*$", line)
    if m:
        shown_depth.add(float(m[1]))
    m = re.match(r"\s+latency\s+(\S+)\s+min (\S+)\s+max (\S+)\s+n (\d+)", line)
    if m and int(m[4]) > 0:
        shown_lat.add((float(m[1]), float(m[2]), float(m[3])))
print("clrtop showed: depth %s, latency (mean, min, max) %s" % (shown_depth, shown_lat))
if shown_depth != set(depth) or shown_lat != {(12.5, 12.5, 12.5)}:
    sys.exit("clrtop showed depth %s latency %s; carbon stored depth %s latency 12.5"
             % (shown_depth, shown_lat, set(depth)))
PY
echo PASS
