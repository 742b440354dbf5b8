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
# What the killed recorder wrote is still readable.
"$EVRING" dump "$T/r.evtrace" >/dev/null 2>"$T/dump.err" || fail "dump: $(cat "$T/dump.err")"
echo "PASS ($base descriptors before and after)"
