#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Nothing leaks per request: after 300 mixed requests (JSON routes, /metrics, pages, short
# traces in every format, short streams) and 20 streams at once, the monitor's open file
# descriptors and threads come back to what they were, and so do the producer's sessions.
source "$(dirname "$0")/lib.sh"

start_producer workload "$WORKLOAD" --rate 500 --threads 1
PID=$PROD_PID
start_monitor --listen 127.0.0.1:0 --max-sessions 32
fds() { ls "/proc/$MON_PID/fd" | wc -l; }
threads() { awk '/^Threads:/ {print $2}' "/proc/$MON_PID/status"; }
sessions() { curl -sS "$U/processes/$PID/sessions" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# Settled: the hub's session is up (one session in the producer).
wait_for 30 bash -c "[[ \$(curl -sS '$U/processes/$PID/sessions' | grep -o '\"id\"' | wc -l) == 1 ]]"
fd0=$(fds) th0=$(threads)

for i in $(seq 30); do
	for p in /info /processes "/processes/$PID" "/processes/$PID/counters?history=5" /metrics \
		"/ui/processes/$PID/counters" "/processes/$PID/trace?duration=100ms&providers=Demo"; do
		curl -sS -o /dev/null --max-time 30 "$U$p" || fail "request $p"
	done
	f=(chrome jsonl ctf)
	curl -sS -o /dev/null --max-time 30 \
		"$U/processes/$PID/trace?duration=100ms&providers=Demo&format=${f[i % 3]}" || fail "trace"
	curl -sS -N -o /dev/null --max-time 30 "$U/processes/$PID/stream?providers=Demo&duration=100ms" ||
		fail "stream"
	curl -sS -o /dev/null --max-time 30 "$U/processes/999999/counters"
done
streams=()
for i in $(seq 20); do
	curl -sS -N -o /dev/null --max-time 60 "$U/processes/$PID/stream?providers=Demo&duration=1s" &
	streams+=($!)
done
for s in "${streams[@]}"; do wait "$s" || fail "one of 20 concurrent streams failed"; done

settled() { [[ $(fds) == "$fd0" && $(threads) == "$th0" && $(sessions) == 1 ]]; }
wait_for 30 settled
echo "after 300 requests and 20 concurrent streams: $(fds) fds (was $fd0), $(threads) threads (was $th0), 1 session"
monitor_alive
echo PASS
