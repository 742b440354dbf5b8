#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A FIFO at /tmp/perf-PID.map (any local user can make one for another's process) used to
# hold each /stacks request of that process forever in open(), with its operation slot:
# after 16 of them every trace, stream and stacks request got 429 until a restart (issue 26,
# defect 2). Now each /stacks answers (the map is not used) and, after 20 of them in a
# row, a trace still starts. curl's --max-time is only a guard: its expiry fails the test.
source "$(dirname "$0")/lib.sh"

cleanup_hook() {
	[[ -n ${PID:-} ]] && rm -f "/tmp/perf-$PID.map"
}
start_producer workload "$WORKLOAD" --rate 100 --threads 1
PID=$PROD_PID
rm -f "/tmp/perf-$PID.map"
mkfifo "/tmp/perf-$PID.map"
start_monitor --listen 127.0.0.1:0 --max-sessions 16

# The route's method: GET today; a POST where side-effect routes stopped being GETs.
stacks() {
	local code
	code=$(curl -sS --max-time 60 -o "$T/body" -w '%{http_code}' "$U/processes/$PID/stacks?depth=4") ||
		fail "/stacks request $1 with a FIFO at /tmp/perf-$PID.map got no answer in 60s"
	if [[ $code == 405 ]]; then
		code=$(curl -sS --max-time 60 -o "$T/body" -w '%{http_code}' -X POST \
			-H 'Content-Type: application/json' -d '{}' "$U/processes/$PID/stacks?depth=4") ||
			fail "POST /stacks request $1 with a FIFO planted got no answer in 60s"
	fi
	[[ $code == 200 ]] || fail "/stacks request $1 with a FIFO planted: $code $(head -c 300 "$T/body")"
}
for i in $(seq 1 20); do
	stacks "$i"
done
python3 - "$T/body" "$PID" <<'PY' || fail "/stacks with a FIFO planted: $(head -c 300 "$T/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pid"] == int(sys.argv[2]) and d["threads"], d
assert any(t["frames"] for t in d["threads"]), "no frames"
PY
echo "20 /stacks requests with a FIFO at /tmp/perf-PID.map: each answered 200"
expect_status 200 "$U/processes/$PID/trace?duration=200ms&providers=Demo"
echo "a trace after them: 200, not 429"
monitor_alive
echo PASS
