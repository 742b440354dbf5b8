#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring forward --to graphite against a receiver that accepts each connection and resets
# it at once, reading nothing (tests/forward/receiver.py --reset-at-once; issue 26, defect
# 9). The forwarder used to report everything its kernel took as sent ("1116327 sent, 0
# dropped") and to reset its back-off on every connect (11 connections a second). Now
# nothing counts as sent (no byte was confirmed: what TCP acknowledged before a reset is
# "unconfirmed"), the counts still add up, and over the receiver's first 5 connections the
# forwarder's waits before reconnecting doubled each time from 100 ms (counted in notices
# and attempts, not timed).
source "$(dirname "$0")/lib.sh"
PRODUCER=$(realpath "${3:?usage: $0 EVRING WORKLOAD PRODUCER}")
need_python
PORT=$(free_port)
SINK="graphite:127.0.0.1:$PORT,prefix=t"
CONNECTIONS=5

mkfifo "$T/r.out"
python3 "$HERE/receiver.py" "$PORT" "$T/lines.txt" --reset-at-once >"$T/r.out" 2>"$T/r.err" &
KILL_AT_EXIT+=("$!")
exec {R_FD}<"$T/r.out"
expect "$R_FD" "^listening\$" "the receiver listening"

mkfifo "$T/p.out"
"$PRODUCER" --ops 100 >"$T/p.out" 2>"$T/p.err" < <(sleep 600) &
P_PID=$!
KILL_AT_EXIT+=("$P_PID")
exec {P_FD}<"$T/p.out"
expect "$P_FD" "^ready $P_PID\$" "the producer's ready line"

"$EVRING" forward -p "$P_PID" --to "$SINK" --counter-interval 10ms --buffer-size 4M \
	2>"$T/fwd.txt" &
FWD_PID=$!
KILL_AT_EXIT+=("$FWD_PID")
expect "$R_FD" "^connection $CONNECTIONS\$" "the receiver's connection $CONNECTIONS"
kill -INT "$FWD_PID"
FWD_STATUS=0
wait "$FWD_PID" || FWD_STATUS=$?
cat "$T/fwd.txt"
((FWD_STATUS == 0)) || fail "forward exited with $FWD_STATUS"

[[ ! -s $T/lines.txt || $(grep -vc '^#conn' "$T/lines.txt") == 0 ]] ||
	fail "the receiver stored lines although it reads nothing"
read -r ev lost <<<"$(source_counts "$T/fwd.txt" "$P_PID")"
((lost == 0)) || fail "the producer lost $lost events"
read -r sent dropped filtered <<<"$(sink_counts "$T/fwd.txt" "$SINK")"
((sent == 0)) || fail "$SINK: $sent counted as sent to a receiver that read nothing"
((dropped > 0 && sent + dropped + filtered == ev)) ||
	fail "$SINK: $sent sent + $dropped dropped + $filtered filtered != $ev events"

# The waits before each reconnection, in order: 100 ms doubling, never back to 100 ms (no
# data was ever confirmed). A connect that the reset beat counts as a failed attempt: it
# doubles the wait too, without a notice of its own.
python3 - "$T/fwd.txt" "$SINK" "$CONNECTIONS" <<'PY' || fail "the back-off"
import re, sys
text, sink, k = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
waits = [int(m) for m in re.findall(r"^evring forward: " + re.escape(sink) +
                                     r": .*; reconnecting in ([0-9]+) ms$", text, re.M)]
m = re.search(re.escape(sink) + r": [0-9]+ sent, .*, ([0-9]+) connections?"
              r"(?:, ([0-9]+) failed attempts?)?$", text, re.M)
assert m, "no connection counts in the summary"
attempts = int(m.group(1)) + int(m.group(2) or 0)
assert attempts >= k, f"{attempts} attempts, the receiver saw {k} connections"
assert waits, "no wait before reconnecting"
steps = [100 * 2 ** i for i in range(8)] + [10000]
steps = sorted(set(min(x, 10000) for x in steps))
assert all(w in steps for w in waits), waits
assert all(b > a or a == b == 10000 for a, b in zip(waits, waits[1:])), f"reset: {waits}"
# One doubling per attempt: n notices mean at least n doublings.
assert waits[-1] >= min(100 * 2 ** (len(waits) - 1), 10000), waits
print(f"{attempts} attempts ({m.group(1)} connections); waits before reconnecting: {waits} ms")
PY
echo PASS
