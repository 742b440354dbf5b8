#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record is SIGKILLed: the producer ends the session at once, and its file
# descriptor count returns to what it was before the recorder attached.
source "$(dirname "$0")/lib.sh"
need_python

start_workload wl --rate 20000 --threads 2 --wait-sessions 1
base=$(fd_count "$WL_PID")
start_record rec -p "$WL_PID" --providers Demo -o "$T/r.evtrace"
expect "$WL_FD" "^started\$"
((base < $(fd_count "$WL_PID"))) || fail "the session did not open a descriptor in the producer"
# Kill it once the file holds events, so that the conversions below compare something.
# (Through a file: grep -q leaving early would kill dump with SIGPIPE, and pipefail would
# then make every try fail once the file holds more than a pipe's worth of events.)
for ((i = 0; i < 1000; i++)); do
	"$EVRING" dump --json "$T/r.evtrace" >"$T/probe.jsonl" 2>/dev/null || true
	grep -q '"type":"event"' "$T/probe.jsonl" && break
done
kill -9 "$REC_PID"
wait "$REC_PID" 2>/dev/null || true

# Ask the agent until it reports no session and the descriptors are back; every try is a
# round trip through the agent, which handles the closed connection first.
sessions=-1 fds=-1
for ((i = 0; i < 300; i++)); do
	sessions=$("$EVRING" ps --json | python3 -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    if o["pid"] == int(sys.argv[1]):
        print(o["sessions"])' "$WL_PID")
	fds=$(fd_count "$WL_PID")
	[[ $sessions == 0 && $fds == "$base" ]] && break
done
[[ $sessions == 0 ]] || fail "the session outlived its recorder ($sessions sessions)"
[[ $fds == "$base" ]] || fail "the producer has $fds descriptors, $base before the recording"
# What the killed recorder wrote is still readable, and converts: the same events in
# every format, up to the last complete chunk.
"$EVRING" dump --json "$T/r.evtrace" >"$T/dump.jsonl" 2>"$T/dump.err" ||
	fail "dump: $(cat "$T/dump.err")"
"$EVRING" convert "$T/r.evtrace" --format jsonl -o "$T/conv.jsonl" 2>"$T/conv.err" ||
	fail "convert jsonl: $(cat "$T/conv.err")"
cmp -s "$T/dump.jsonl" "$T/conv.jsonl" || fail "convert --format jsonl differs from dump --json"
"$EVRING" convert "$T/r.evtrace" --format chrome -o "$T/r.json" 2>"$T/conv.err" ||
	fail "convert chrome: $(cat "$T/conv.err")"
"$EVRING" report "$T/r.evtrace" >"$T/report.txt" 2>"$T/report.err" ||
	fail "report: $(cat "$T/report.err")"
events=$(python3 -c '
import json, sys
n = sum(1 for l in open(sys.argv[1]) if json.loads(l)["type"] == "event")
chrome = json.load(open(sys.argv[2]))["traceEvents"]
# Records the converter made up (a request cut by the kill is closed "not closed") are not events.
own = ("split", "not closed", "closed late")
got = sum(1 for e in chrome if e.get("cat") == "Demo" and e.get("args", {}).get("evring") not in own)
if got != n:
    sys.exit("chrome has %d Demo events, dump %d" % (got, n))
print(n)' "$T/dump.jsonl" "$T/r.json") || fail "the Chrome JSON of the killed recording: $events"
((events > 0)) || fail "the killed recorder's file holds no event to convert"
grep -q "^Events    $events " "$T/report.txt" || fail "report does not count $events events"
if command -v babeltrace2 >/dev/null; then
	"$EVRING" convert "$T/r.evtrace" --format ctf -o "$T/ctf" 2>"$T/conv.err" ||
		fail "convert ctf: $(cat "$T/conv.err")"
	n=$(babeltrace2 "$T/ctf" 2>/dev/null | grep -c ' Demo:') || true
	((n == events)) || fail "babeltrace2 reads $n events of the killed recording, dump $events"
fi
echo "PASS ($base descriptors before and after, $events events in every format)"
