#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Exact loss accounting through record and dump: a small buffer and an unpaced producer, in
# discard and in overwrite mode (where the recorder is lapped and spans get overwritten
# while being written). For each: events + lost in the summary == what the workload wrote,
# and dump shows the same events and the same losses.
source "$(dirname "$0")/lib.sh"

for mode in discard overwrite; do
	"$EVRING" record --providers Demo --mode "$mode" --buffer-size 128K -o "$T/$mode.evtrace" \
		-- "$WORKLOAD" --events 200000 --threads 2 >"$T/$mode.out" 2>"$T/$mode.err" ||
		fail "record ($mode): $(cat "$T/$mode.err")"
	cat "$T/$mode.err"
	[[ $(tail -1 "$T/$mode.out") =~ ^done\ 200000\ ([0-9]+)$ ]] || fail "workload ($mode)"
	emitted=${BASH_REMATCH[1]}
	[[ $(grep -E '^evring record: [0-9]+ events, ' "$T/$mode.err") =~ \
		^evring\ record:\ ([0-9]+)\ events,\ .*\ ([0-9]+)\ lost, ]] || fail "summary ($mode)"
	events=${BASH_REMATCH[1]} lost=${BASH_REMATCH[2]}
	((events + lost == emitted)) ||
		fail "$mode: $events events + $lost lost != $emitted written by the workload"
	"$EVRING" dump "$T/$mode.evtrace" >"$T/$mode.txt" 2>"$T/$mode.dump.err" ||
		fail "dump ($mode): $(cat "$T/$mode.dump.err")"
	read -r devents dlost < <(awk '$3 == "LOST" { l += $4; next } { e++ }
		END { print e + 0, l + 0 }' "$T/$mode.txt")
	[[ $devents == "$events" && $dlost == "$lost" ]] ||
		fail "$mode: dump shows $devents events and $dlost lost, record said $events and $lost"
	echo "$mode: $events events + $lost lost == $emitted"
done
echo "PASS"
