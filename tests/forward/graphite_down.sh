#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring forward --to graphite against a receiver that is down, resets the connection, and
# stalls (a plaintext receiver the test controls, tests/forward/receiver.py): the forwarder
# keeps retrying until it is up, reconnects after the reset and resends from a line start
# (every line the receiver stored is whole), drops the oldest samples while the receiver is
# stopped and says so, catches up when it resumes; the producer loses nothing throughout,
# and the sink's counts add up.
source "$(dirname "$0")/lib.sh"
PRODUCER=$(realpath "${3:?usage: $0 EVRING WORKLOAD PRODUCER}")
need_python
PORT=$(free_port)
SINK="graphite:127.0.0.1:$PORT,prefix=t,queue=16K"

mkfifo "$T/p.out"
"$PRODUCER" --ops 100 >"$T/p.out" 2>"$T/p.err" < <(sleep 600) &
P_PID=$!
KILL_AT_EXIT+=("$P_PID")
exec {P_FD}<"$T/p.out"
expect "$P_FD" "^ready $P_PID\$" "the producer's ready line"

# Samples every 50 ms: the stopped receiver still fills the 16 KiB queue within seconds, and
# a receiver slowed by a loaded machine still catches up after it resumes (at 10 ms, CI at
# load 20 timed out). Down: nothing listens yet. The forwarder's stderr goes to a file: the
# test counts its notices (a queue this small may already drop while nobody listens).
"$EVRING" forward -p "$P_PID" --to "$SINK" --counter-interval 50ms --buffer-size 4M \
	2>"$T/fwd.txt" &
FWD_PID=$!
KILL_AT_EXIT+=("$FWD_PID")
F=$T/fwd.txt
BEHIND="^evring forward: $SINK: the receiver is not keeping up; dropping, counted\$"
CAUGHT="^evring forward: $SINK: caught up \\([0-9]+ dropped so far\\)\$"
wait_lines "$F" "^evring forward: $SINK: cannot connect: Connection refused; retrying\$" 1 \
	"the forwarder saying the receiver is down"

# Up, and resetting the first connection after 50 lines.
mkfifo "$T/r.out"
python3 "$HERE/receiver.py" "$PORT" "$T/lines.txt" --reset-after 50 --small-buffer \
	>"$T/r.out" 2>"$T/r.err" &
R_PID=$!
KILL_AT_EXIT+=("$R_PID")
exec {R_FD}<"$T/r.out"
expect "$R_FD" "^listening\$" "the receiver listening"
wait_lines "$F" "^evring forward: $SINK: connected again\$" 1 "the forwarder connecting"
expect "$R_FD" "^reset\$" "the receiver resetting the connection"
wait_lines "$F" "^evring forward: $SINK: .*reconnecting in [0-9]+ ms\$" 1 "the forwarder noticing the reset"
expect "$R_FD" "^line 20 of connection 2\$" "lines on the second connection"
# Whatever it dropped while the receiver was down, it has caught up by now.
wait_lines "$F" "$CAUGHT" "$(count_lines "$F" "$BEHIND")" "the forwarder catching up"

# Stalled: the receiver stops reading; the forwarder drops, says so, and the producer
# notices nothing.
n=$(count_lines "$F" "$BEHIND")
kill -STOP "$R_PID"
wait_lines "$F" "$BEHIND" $((n + 1)) "the forwarder dropping while the receiver is stopped"
kill -CONT "$R_PID"
wait_lines "$F" "$CAUGHT" $((n + 1)) "the forwarder catching up"

kill -INT "$FWD_PID"
FWD_STATUS=0
wait "$FWD_PID" || FWD_STATUS=$?
cat "$T/fwd.txt"
((FWD_STATUS == 0)) || fail "forward exited with $FWD_STATUS"
read -r ev lost <<<"$(source_counts "$T/fwd.txt" "$P_PID")"
((lost == 0)) || fail "the producer lost $lost events"
read -r sent dropped filtered <<<"$(sink_counts "$T/fwd.txt" "$SINK")"
((sent + dropped + filtered == ev && dropped > 0 && sent > 0)) ||
	fail "$SINK: $sent sent + $dropped dropped + $filtered filtered != $ev events"
grep -qE "[0-9]+ the sink fell behind" "$T/fwd.txt" || fail "the drops' reason is not given"
grep -qE "^evring forward: $SINK: .*, [2-9][0-9]* connections, [1-9][0-9]* failed attempts?$" \
	"$T/fwd.txt" || fail "the summary does not count the reconnection"

# Every line the receiver kept is whole: "t.COMM.PROVIDER.COUNTER.STAT VALUE SECONDS".
python3 - "$T/lines.txt" <<'PY' || fail "the receiver got a malformed line"
import re, sys
ok = re.compile(r"^t\.evr-forward-producer\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[a-z0-9]+ "
                r"-?[0-9][0-9.e+-]* [0-9]{10}$")
conns, depth = 0, 0
for n, line in enumerate(open(sys.argv[1]), 1):
    line = line.rstrip("\n")
    if line.startswith("#conn "):
        conns += 1
        continue
    if not ok.match(line):
        sys.exit("line %d: %r" % (n, line))
    depth += line.startswith("t.evr-forward-producer.FwdCheck.depth.value 42 ")
print("receiver: %d connections, %d depth points" % (conns, depth))
if conns < 2 or not depth:
    sys.exit("expected at least 2 connections and depth points")
PY
echo PASS
