#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Malformed and hostile HTTP clients (tests/monitor/hostile.py on raw sockets): garbage
# request lines, huge headers and URLs, broken bodies, a slow client, 200 idle connections,
# the idle timeout. Each gets an error status or a close, and the monitor keeps serving.
source "$(dirname "$0")/lib.sh"

start_producer workload "$WORKLOAD" --rate 100 --threads 1
start_monitor --listen 127.0.0.1:0 --idle-timeout 2s
port=${U##*:}
python3 "$HERE/hostile.py" 127.0.0.1 "$port" "$MON_PID" || fail "hostile clients"
monitor_alive
expect_status 200 "$U/processes/$PROD_PID/counters"
echo PASS
