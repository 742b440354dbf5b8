#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Losses through CTF: a 128 KiB buffer and a recorder stopped (SIGSTOP) while the workload
# writes, so that events are surely lost in discard and in overwrite mode; babeltrace2's
# "discarded events" must add up to evring dump's LOST counts, and every event must still be
# equal.
#   bash loss.sh EVRING WORKLOAD
source "$(dirname "$0")/../cli/lib.sh"
need_python
command -v babeltrace2 >/dev/null 2>&1 || skip "babeltrace2 is not installed (scripts/setup --optional)"
CHECK=$(dirname "$0")/check_ctf.py
N=100000

for mode in discard overwrite; do
	record_stalled "$mode" "$N" "$T/$mode.evtrace" --no-sandbox --providers Demo \
		--mode "$mode" --buffer-size 128K
	lost=$(record_lost "$T/$mode.err")
	((lost > 0)) || fail "$mode: nothing lost although the recorder was stopped"
	check_accounting "$mode" "$N" "$T/$mode.out" "$T/$mode.err" "$T/$mode.evtrace"
	"$EVRING" convert "$T/$mode.evtrace" -f ctf -o "$T/$mode.ctf" 2>"$T/$mode.conv" ||
		fail "convert ($mode): $(cat "$T/$mode.conv")"
	cat "$T/$mode.conv"
	grep -q " $lost lost, " "$T/$mode.conv" || fail "convert ($mode) does not report $lost lost"
	python3 "$CHECK" "$EVRING" "$T/$mode.evtrace" "$T/$mode.ctf" --expect-lost
done
echo "PASS"
