#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Losses through CTF: a small buffer and an unpaced producer (discard and overwrite mode);
# babeltrace2's "discarded events" must add up to evring dump's LOST counts, and every
# event must still be equal.
#   bash loss.sh EVRING WORKLOAD
source "$(dirname "$0")/../cli/lib.sh"
need_python
command -v babeltrace2 >/dev/null 2>&1 || skip "babeltrace2 is not installed (scripts/setup --optional)"
CHECK=$(dirname "$0")/check_ctf.py

for mode in discard overwrite; do
	"$EVRING" record --no-sandbox --providers Demo --mode "$mode" --buffer-size 128K \
		-o "$T/$mode.evtrace" -- "$WORKLOAD" --events 100000 --threads 2 \
		>"$T/$mode.out" 2>"$T/$mode.err" || fail "record ($mode): $(cat "$T/$mode.err")"
	[[ $(grep -E '^evring record: [0-9]+ events, ' "$T/$mode.err") =~ \
		\ ([0-9]+)\ lost, ]] || fail "no record summary ($mode)"
	lost=${BASH_REMATCH[1]}
	((lost > 0)) || skip "$mode: the producer lost nothing: no losses to check on this machine"
	"$EVRING" convert "$T/$mode.evtrace" -f ctf -o "$T/$mode.ctf" 2>"$T/$mode.conv" ||
		fail "convert ($mode): $(cat "$T/$mode.conv")"
	cat "$T/$mode.conv"
	grep -q " $lost lost, " "$T/$mode.conv" || fail "convert ($mode) does not report $lost lost"
	python3 "$CHECK" "$EVRING" "$T/$mode.evtrace" "$T/$mode.ctf" --expect-lost
done
echo "PASS"
