#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Traces over HTTP from a real minirt: profile-for-N-seconds in every format (evring's
# streamed, Chrome JSON, JSON lines, a CTF tar), traces started, stopped, downloaded again
# and deleted, three traces with different providers on one process at once, a client that
# disconnects mid-download (its session ends in the producer), and a producer killed
# mid-trace (the trace still decodes).
source "$(dirname "$0")/lib.sh"

start_producer minirt "$MINIRT" --seconds 120 --phase steady --threads 2
PID=$PROD_PID
start_monitor --listen 127.0.0.1:0

check() { python3 "$HERE/check_trace.py" "$EVRING" "$@" || fail "check_trace $*"; }

# --- profile for a while, answered with the trace --------------------------------------------
curl -sS --max-time 60 -D "$T/h" -o "$T/t.evtrace" \
	"$U/processes/$PID/trace?duration=1s&providers=MiniRT"
grep -qi '^Transfer-Encoding: chunked' "$T/h" || fail "evtrace is not streamed: $(cat "$T/h")"
grep -qi '^Content-Type: application/octet-stream' "$T/h" || fail "evtrace content type"
grep -qiE "^Content-Disposition: attachment; filename=\"$PID-[0-9TZ]+\.evtrace\"" "$T/h" ||
	fail "no Content-Disposition"
grep -qiE '^Location: /traces/[0-9]+' "$T/h" || fail "no Location"
check evtrace "$T/t.evtrace" MiniRT
"$EVRING" report --json "$T/t.evtrace" >"$T/r.json" || fail "evring report"

for f in chrome:json jsonl:x-ndjson ctf:x-tar; do
	got=$(code_type "$U/processes/$PID/trace?duration=1s&providers=MiniRT&format=${f%%:*}" \
		-D "$T/h")
	[[ $got == "200 application/${f#*:}" ]] || fail "format ${f%%:*}: $got $(head -c 300 "$T/body")"
	grep -qi '^X-Evring-Lost: [0-9]' "$T/h" || fail "${f%%:*}: no X-Evring-Lost"
	check "${f%%:*}" "$T/body" MiniRT
	cp "$T/body" "$T/t.${f%%:*}"
done
if command -v babeltrace2 >/dev/null 2>&1; then
	mkdir "$T/ctf" && tar -C "$T/ctf" -xf "$T/t.ctf"
	babeltrace2 "$T/ctf"/* >"$T/bt.txt" 2>"$T/bt.err" || fail "babeltrace2: $(cat "$T/bt.err")"
	grep -q 'MiniRT:' "$T/bt.txt" || fail "babeltrace2 shows no MiniRT event"
else
	echo "babeltrace2 not installed: the CTF tar is checked for its files only"
fi

# --- three traces with different providers on one process at once -----------------------------
post() {
	curl -sS --max-time 60 -o "$T/post" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' -d "$2" "$U/processes/$PID/traces" >"$T/code"
	[[ $(cat "$T/code") == 201 ]] || fail "POST $2: $(cat "$T/code") $(cat "$T/post")"
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/post" >"$T/$1.id"
}
post a '{"providers": "MiniRT:0x1:5"}'
post b '{"providers": "System.Runtime:0x0:0", "counter_interval": "100ms", "format": "jsonl"}'
A=$(cat "$T/a.id") B=$(cat "$T/b.id")
# The third streams to a client until we cancel it: its id from GET /traces.
curl -sS --max-time 120 -o "$T/c.evtrace" \
	"$U/processes/$PID/trace?duration=10m&providers=Process:0x0:0&counter_interval=100ms" &
CURL=$!
sessions_ok() {
	curl -sS "$U/processes/$PID/sessions" | python3 -c '
import json, sys
s = [x["providers"] for x in json.load(sys.stdin) if x["client"] == "evring monitor"]
assert any(p.startswith("MiniRT") for p in s) and any(p.startswith("System.Runtime:0x0:0") and
    "Process" not in p for p in s) and any(p.startswith("Process:0x0:0") for p in s), s' \
	2>/dev/null
}
wait_for 30 sessions_ok
C=$(curl -sS "$U/traces" | python3 -c 'import json,sys; print([t["id"] for t in json.load(sys.stdin) if t["streamed"]][0])')
[[ $(curl -sS "$U/traces" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') == 3 ]] ||
	fail "GET /traces does not list three traces"
expect_status 409 "$U/traces/$A/trace"
expect_status 409 "$U/traces/$C/stop" -X POST -H "Content-Type: application/json"
# Stop a and b (the answer is the trace), cancel c (its stream then ends, complete).
expect_status 200 "$U/traces/$A/stop" -X POST -H "Content-Type: application/json"
check evtrace "$T/body" MiniRT
expect_status 200 "$U/traces/$B/stop" -X POST -H "Content-Type: application/json"
check jsonl "$T/body" System.Runtime
expect_status 409 "$U/traces/$A/stop" -X POST -H "Content-Type: application/json"
expect_status 200 "$U/traces/$A/trace?format=chrome"
check chrome "$T/body" MiniRT
expect_status 204 "$U/traces/$C" -X DELETE
wait $CURL || fail "the cancelled stream did not end cleanly"
check evtrace "$T/c.evtrace" Process
"$EVRING" dump "$T/c.evtrace" >/dev/null 2>"$T/dump.err" || fail "dump c: $(cat "$T/dump.err")"
grep -q "truncated" "$T/dump.err" && fail "the cancelled trace is truncated"
expect_status 204 "$U/traces/$A" -X DELETE
expect_status 204 "$U/traces/$B" -X DELETE
expect_status 404 "$U/traces/$A"

# --- a client that goes away mid-download: its session ends in the producer --------------------
only_hub() {
	curl -sS "$U/processes/$PID/sessions" | python3 -c '
import json, sys
s = [x for x in json.load(sys.stdin) if x["client"] == "evring monitor"]
assert len(s) == 1 and ":0x0:0" in s[0]["providers"], s' 2>/dev/null &&
	[[ $(curl -sS "$U/traces") == "[]" ]]
}
wait_for 30 only_hub
st=0
curl -sS --max-time 2 -o "$T/cut.evtrace" "$U/processes/$PID/trace?duration=10m&providers=MiniRT" ||
	st=$?
[[ $st == 28 ]] || fail "curl --max-time 2 ended with $st, not 28 (timeout)"
wait_for 30 only_hub
# The same while a converted format records (nothing sent yet: the monitor watches the socket).
st=0
curl -sS --max-time 2 -o /dev/null "$U/processes/$PID/trace?duration=10m&providers=MiniRT&format=chrome" ||
	st=$?
[[ $st == 28 ]] || fail "curl --max-time 2 (chrome) ended with $st"
wait_for 30 only_hub

# --- the producer dies mid-trace -------------------------------------------------------------
start_producer workload "$WORKLOAD" --rate 2000 --threads 1
WL=$PROD_PID
curl -sS --max-time 120 -o "$T/killed.evtrace" "$U/processes/$WL/trace?duration=10m&providers=Demo" &
CURL=$!
# Traced, and some of its events already sent: the trace's progress in GET /traces says so.
wl_traced() {
	curl -sS "$U/traces" | python3 -c '
import json, sys
t = [t for t in json.load(sys.stdin) if t["providers"] == "Demo"]
assert t and t[0]["events"] > 0' 2>/dev/null
}
wait_for 30 wl_traced
kill -9 "$WL"
wait $CURL || fail "the stream of a killed producer did not end"
check evtrace "$T/killed.evtrace" Demo
monitor_alive
echo PASS
