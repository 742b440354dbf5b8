#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The monitor confines itself with seccomp once it listens: the kernel says so
# (/proc/PID/status Seccomp: 2), and --debug-sandbox-probe tries, harmlessly, what the
# filter forbids: executing a program (a file that does not exist: EPERM inside, ENOENT
# without) and opening an Internet socket. Every other monitor test runs with the sandbox
# on, so each route is checked working inside it.
source "$(dirname "$0")/lib.sh"

start_producer workload "$WORKLOAD" --rate 100 --threads 1
start_monitor --listen 127.0.0.1:0 --debug-sandbox-probe
grep -q '^Seccomp:[[:space:]]*2' "/proc/$MON_PID/status" || fail "no seccomp filter on the monitor"
wait_for 30 grep -q "sandbox probe: socket" "$T/monitor.err"
grep -q "sandbox probe: execve: Operation not permitted" "$T/monitor.err" &&
	grep -q "sandbox probe: socket(AF_INET): Operation not permitted" "$T/monitor.err" ||
	fail "probe: $(grep probe "$T/monitor.err")"
expect_status 200 "$U/processes/$PROD_PID/counters"
kill "$MON_PID"
wait "$MON_PID" 2>/dev/null || true

rm -f "$T/monitor.out"
start_monitor --listen 127.0.0.1:0 --no-sandbox --debug-sandbox-probe
wait_for 30 grep -q "sandbox probe: socket" "$T/monitor.err"
grep -q "sandbox probe: execve: No such file or directory" "$T/monitor.err" &&
	grep -q "sandbox probe: socket(AF_INET): allowed" "$T/monitor.err" ||
	fail "--no-sandbox probe: $(grep probe "$T/monitor.err")"
grep -q '^Seccomp:[[:space:]]*0' "/proc/$MON_PID/status" || fail "--no-sandbox still filtered"
echo PASS
