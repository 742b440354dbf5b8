#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A sink whose reader stops reading never slows the producer: the forwarder keeps draining
# the session (the producer loses nothing), the stalled sink drops what it cannot queue and
# counts it, the other sink gets everything, and at exit the flush deadline bounds the wait.
source "$(dirname "$0")/lib.sh"
need_python
# 30000 iterations (120000 events, ~20 MiB of JSON: more than the sink's 8 MiB queue and the
# pipe) at 40000 events a second, which the forwarder keeps up with; rings large enough that a
# forwarder starved of CPU for seconds on a loaded machine still loses nothing.
N=30000

mkfifo "$T/pipe"
# A reader that opens the pipe and never reads: the pipe fills after 64 KiB.
sleep 600 <"$T/pipe" &
KILL_AT_EXIT+=("$!")
start_workload wl --events "$N" --threads 2 --rate 20000 --wait-sessions 1 --pin
start_forward fwd -p "$WL_PID" --providers Demo --flush-timeout 500ms --buffer-size 64M \
	--to "jsonl:$T/all.jsonl" --to jsonl:- >"$T/pipe"
expect "$WL_FD" "^done $N ([0-9]+)\$" "the workload's done line"
EVENTS=${LINE##* }
finish_forward "$T/fwd.txt"
cat "$T/fwd.txt"
((FWD_STATUS == 0)) || fail "forward exited with $FWD_STATUS"
read -r ev lost <<<"$(source_counts "$T/fwd.txt" "$WL_PID")"
((ev == EVENTS && lost == 0)) || fail "the producer lost $lost (forwarder read $ev of $EVENTS)"
check_jsonl "$T/all.jsonl" --ticks "$N" --total "$EVENTS" --no-lost
read -r sent dropped filtered <<<"$(sink_counts "$T/fwd.txt" "jsonl:-")"
((sent + dropped + filtered == EVENTS)) || fail "stalled sink: $sent + $dropped + $filtered != $EVENTS"
((dropped > 0)) || fail "the stalled sink dropped nothing (sent $sent)"
grep -qE "^evring forward: jsonl:-: .*[0-9]+ (the sink fell behind|undelivered at exit)" \
	"$T/fwd.txt" || fail "the drops' reason is not given"
echo PASS
