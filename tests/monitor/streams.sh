#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Live streams from a real minirt: a filtered event stream as NDJSON, counter streams as
# Server-Sent Events at two intervals at once on the same process (each request its own
# session and interval), and the records arrive while the stream runs, not at its end.
source "$(dirname "$0")/lib.sh"

start_producer minirt "$MINIRT" --seconds 120 --phase exception-storm --threads 2
PID=$PROD_PID
start_monitor --listen 127.0.0.1:0

check() { python3 "$HERE/check_stream.py" "$@" || fail "check_stream $*"; }

got=$(code_type "$U/processes/$PID/stream?providers=MiniRT&events=ExceptionThrown&duration=1s" -N)
[[ $got == "200 application/x-ndjson" ]] || fail "event stream: $got"
check ndjson "$T/body" --provider MiniRT --event ExceptionThrown

# Two counter streams at 100 ms and 500 ms side by side, as SSE.
curl -sS -N --max-time 60 -H 'Accept: text/event-stream' -o "$T/fast.sse" \
	"$U/processes/$PID/counters/stream?interval=100ms&providers=System.Runtime&duration=2s" &
F=$!
curl -sS -N --max-time 60 -D "$T/slow.h" -o "$T/slow.sse" \
	"$U/processes/$PID/counters/stream?interval=500ms&providers=System.Runtime&duration=2s&format=sse" &
S=$!
wait $F || fail "fast stream"
wait $S || fail "slow stream"
grep -qi '^Content-Type: text/event-stream' "$T/slow.h" || fail "SSE content type"
check sse "$T/fast.sse" --interval-ms 100 --provider System.Runtime
check sse "$T/slow.sse" --interval-ms 500 --provider System.Runtime
nf=$(grep -c '^event: counter' "$T/fast.sse")
ns=$(grep -c '^event: counter' "$T/slow.sse")
((nf > ns)) || fail "the 100 ms stream has $nf samples, the 500 ms one $ns"

# Records come as they happen: the first line arrives long before a 60 s stream ends.
exec {FD}< <(curl -sS -N --max-time 90 "$U/processes/$PID/stream?providers=MiniRT&duration=60s")
read -r -t 30 -u "$FD" line || fail "no record within 30 s of a 60 s stream"
[[ $line == '{"type":"event"'* ]] || fail "first record: $line"
exec {FD}<&-
monitor_alive
echo PASS
