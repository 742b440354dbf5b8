#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The example examples/listener-graphite.c sends its own counters to a real carbon-cache
# through an in-process listener: every order it took is in the stored increments, and its
# gauge and histogram are stored too.
source "$(dirname "$0")/lib.sh"
EXAMPLE=$(realpath "${3:?usage: $0 EVRING WORKLOAD LISTENER-GRAPHITE}")
need_python
start_carbon

# Samples 2 s apart never share carbon's 1-second slots.
"$EXAMPLE" --seconds 3 --interval 2000 --to "127.0.0.1:$CARBON_PORT" --prefix ex \
	>"$T/ex.out" 2>"$T/ex.err" || fail "the example failed: $(cat "$T/ex.out" "$T/ex.err")"
cat "$T/ex.out"
[[ $(tail -1 "$T/ex.out") =~ ^orders\ ([0-9]+)\;\ sent\ [0-9]+\ lines\ in\ ([0-9]+)\ samples,\ 0\ samples\ not\ sent$ ]] ||
	fail "the example's summary: $(cat "$T/ex.out")"
ORDERS=${BASH_REMATCH[1]}
((ORDERS > 0)) || fail "no orders taken"

python3 - "$CARBON_WSP/ex" "$ORDERS" <<'PY' || fail "carbon's stored values do not match"
import os, subprocess, sys, time
base, orders = sys.argv[1], int(sys.argv[2])

def points(path):
    f = os.path.join(base, path + ".wsp")
    if not os.path.exists(f):
        return []
    out = subprocess.run(["whisper-fetch", "--from=%d" % (time.time() - 3600), f],
                         capture_output=True, text=True, check=True).stdout
    return [float(v) for t, v in (l.split() for l in out.splitlines()) if v != "None"]

end = time.monotonic() + 60
while True:
    inc = sum(points("Shop/orders/increment"))
    lat, depth, rss = points("Shop/order-latency/count"), points("Shop/queue-depth/value"), \
        points("Process/working-set/value")
    if (inc == orders and sum(lat) == orders and depth and rss) or time.monotonic() > end:
        break
    time.sleep(0.2)
print("stored: orders %g (took %d), latency values %g, depth %s, working set %s"
      % (inc, orders, sum(lat), depth, rss[:1]))
if inc != orders or sum(lat) != orders or not depth or not rss:
    sys.exit("stored orders %g and latency values %g, took %d orders" % (inc, sum(lat), orders))
PY
echo PASS
