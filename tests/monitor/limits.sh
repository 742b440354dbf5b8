#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The producer's limit: a process serves at most 64 sessions. Traces started through the
# monitor count against it with the monitor's own counter session; the one that would be
# the 65th gets 503 with errno EBUSY and the agent's reason, and once the traces are deleted
# a new one starts again.
source "$(dirname "$0")/lib.sh"

start_producer workload "$WORKLOAD" --rate 100 --threads 1
PID=$PROD_PID
start_monitor --listen 127.0.0.1:0 --max-sessions 100
sessions() { curl -sS "$U/processes/$PID/sessions" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
wait_for 30 bash -c "[[ \$(curl -sS '$U/processes/$PID/sessions' | grep -o '\"id\"' | wc -l) == 1 ]]"

ids=()
code=201
while [[ $code == 201 ]]; do
	code=$(curl -sS -o "$T/post" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		-d '{"providers": "Demo", "buffer_size": "256K"}' "$U/processes/$PID/traces")
	if [[ $code == 201 ]]; then
		ids+=("$(grep -o '^{"id":"[0-9]*"' "$T/post" | cut -d'"' -f4)")
		((${#ids[@]} <= 64)) || fail "more than 64 sessions accepted"
	fi
done
[[ $code == 503 ]] || fail "the 65th session: $code $(cat "$T/post")"
grep -q '"errno":"EBUSY"' "$T/post" || fail "no EBUSY: $(cat "$T/post")"
grep -q '64 sessions' "$T/post" || fail "the agent's reason is missing: $(cat "$T/post")"
[[ ${#ids[@]} == 63 && $(sessions) == 64 ]] || fail "${#ids[@]} traces, $(sessions) sessions"
echo "63 traces and the monitor's counter session: 64 sessions; the next one: 503 EBUSY"
printf '%s\n' "${ids[@]}" | xargs -P 8 -I{} curl -sS -o /dev/null -w '%{http_code}\n' \
	-X DELETE "$U/traces/{}" >"$T/deleted"
[[ $(grep -c '^204$' "$T/deleted") == 63 ]] || fail "DELETE: $(sort "$T/deleted" | uniq -c)"
wait_for 30 bash -c "[[ \$(curl -sS '$U/processes/$PID/sessions' | grep -o '\"id\"' | wc -l) == 1 ]]"
expect_status 200 "$U/processes/$PID/trace?duration=200ms&providers=Demo"
monitor_alive
echo PASS
