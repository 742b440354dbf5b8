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
	check_accounting "$mode" 200000 "$T/$mode.out" "$T/$mode.err" "$T/$mode.evtrace"
done
echo "PASS"
