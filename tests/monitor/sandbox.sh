#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The monitor confines itself with seccomp once it listens: the kernel says so
# (/proc/PID/status Seccomp: 2), and --debug-sandbox-probe tries, harmlessly, what the
# filter forbids: executing a program (a file that does not exist: EPERM inside, ENOENT
# without) and opening an Internet socket. Every other monitor test runs with the sandbox
# on, so each route is checked working inside it; here, where strace works, the monitor runs
# the routes that open, create, attach and ptrace under strace, and no call of theirs may
# be refused (the allow-list, EVR_SANDBOX_SERVER and friends in <evring/sandbox.h>, is
# complete for them).
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
kill "$MON_PID"
wait "$MON_PID" 2>/dev/null || true

if ! command -v strace >/dev/null || ! strace -f -o /dev/null true 2>/dev/null; then
	# Visible as a skip: the allow-list's completeness, the point of this test, is unchecked.
	echo "SKIP: strace cannot run here (the checks before this passed; the allow-list's" \
		"completeness is not checked)"
	exit 77
fi
start_producer minirt "$MINIRT" --seconds 120 --phase steady --threads 1
RT=$PROD_PID
mkfifo "$T/st.out"
# -ff: one file per thread, so that no call is split over two lines.
mkdir "$T/strace"
strace -ff -o "$T/strace/m" "$EVRING" monitor --listen 127.0.0.1:0 --debug-sandbox-probe \
	>"$T/st.out" 2>"$T/st.err" &
STRACE_PID=$!
KILL_AT_EXIT+=("$STRACE_PID")
exec {fd}<"$T/st.out"
IFS= read -r -t 60 -u "$fd" U || fail "the monitor under strace printed no URL: $(cat "$T/st.err")"
MON_PID=$(pgrep -P "$STRACE_PID")
KILL_AT_EXIT+=("$MON_PID")
expect_status 200 "$U/processes?name=minirt"
expect_status 200 "$U/processes/minirt/counters"
expect_status 200 "$U/metrics"
expect_status 200 "$U/processes/$RT/stacks?depth=8"
expect_status 200 "$U/ui/processes/$RT/stacks"
for f in evtrace chrome ctf; do
	expect_status 200 "$U/processes/$RT/trace?duration=300ms&providers=MiniRT&format=$f"
done
curl -sS --max-time 60 -o "$T/post" -X POST -H 'Content-Type: application/json' \
	-d '{"providers": "MiniRT"}' "$U/processes/$RT/traces"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/post") ||
	fail "POST /traces: $(cat "$T/post")"
expect_status 200 "$U/traces/$id/stop" -X POST -H "Content-Type: application/json"
expect_status 200 "$U/traces/$id/trace?format=jsonl"
expect_status 204 "$U/traces/$id" -X DELETE
expect_status 200 "$U/processes/$RT/stream?providers=MiniRT&duration=300ms" -N
# A process that starts now: the hub attaches to it, confined.
start_producer late "$WORKLOAD" --rate 100 --threads 1
expect_status 200 "$U/processes/$PROD_PID/counters"
kill "$MON_PID"
wait "$STRACE_PID" 2>/dev/null || true
denied=$(cat "$T"/strace/m.* | grep -E '= -1 EPERM' |
	grep -vE '^execve\("/nonexistent/evring-probe"|^socket\(AF_INET,' || true)
[[ -z $denied ]] || fail "the sandbox refused a call: $denied"
grep -q '^execve("/nonexistent/evring-probe".*= -1 EPERM' "$T"/strace/m.* ||
	fail "strace did not see the probe refused: is the filter on?"
echo PASS
