#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Malformed and hostile HTTP clients (tests/monitor/hostile.py on raw sockets): garbage
# request lines, huge headers and URLs, broken bodies, a slow client, 200 idle connections,
# the idle timeout. Each gets an error status or a close, and the monitor keeps serving.
# Then the operations limit (--max-sessions): 429 with Retry-After, freed when a client leaves.
source "$(dirname "$0")/lib.sh"

start_producer workload "$WORKLOAD" --rate 100 --threads 1
start_monitor --listen 127.0.0.1:0 --idle-timeout 2s
port=${U##*:}
python3 "$HERE/hostile.py" 127.0.0.1 "$port" "$MON_PID" || fail "hostile clients"
monitor_alive
# A stream with nothing to send for longer than the idle timeout is not idle: it ends with
# its end record, not with a connection cut by the server's idle timer.
curl -sS -N --max-time 60 -o "$T/quiet.ndjson" \
	"$U/processes/$PROD_PID/stream?providers=NoSuchProvider&duration=4s" ||
	fail "the quiet stream was cut: $(cat "$T/quiet.ndjson")"
grep -q '^{"type":"end","events":0,"lost":0,"reason":"duration"}$' "$T/quiet.ndjson" ||
	fail "the quiet stream did not end with its end record: $(cat "$T/quiet.ndjson")"
expect_status 200 "$U/processes/$PROD_PID/counters"
kill "$MON_PID"
wait "$MON_PID" 2>/dev/null || true

# The operations limit: with --max-sessions 1, a second stream while one runs gets 429 with
# Retry-After, and the slot is free again once the first ends (the client left).
rm -f "$T/monitor.out"
start_monitor --listen 127.0.0.1:0 --max-sessions 1
exec {S}< <(curl -sS -N --max-time 120 "$U/processes/$PROD_PID/stream?providers=Demo")
read -r -t 60 -u "$S" line || fail "the first stream sent nothing"
expect_status 429 "$U/processes/$PROD_PID/counters/stream?duration=1s"
curl -sS -D "$T/h" -o /dev/null "$U/processes/$PROD_PID/trace?duration=1s"
grep -qi '^Retry-After: 1' "$T/h" || fail "429 without Retry-After"
exec {S}<&-
slot_free() {
	[[ $(curl -sS -o /dev/null -w '%{http_code}' "$U/processes/$PROD_PID/counters?interval=50ms") == 200 ]]
}
wait_for 30 slot_free
monitor_alive
echo PASS
