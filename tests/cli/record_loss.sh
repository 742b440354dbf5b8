#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Exact loss accounting through record and dump when events are surely lost: a 128 KiB
# buffer and a recorder stopped (SIGSTOP) while the workload writes 200,000 iterations, in
# discard and in overwrite mode (where the recorder is lapped and spans get overwritten
# while being written). For each: lost > 0, events + lost in the summary == what the
# workload wrote, dump shows the same events and the same losses, and record says once, on
# one line, how much was lost, why and what would avoid it.
source "$(dirname "$0")/lib.sh"
N=200000

for mode in discard overwrite; do
	record_stalled "$mode" "$N" "$T/$mode.evtrace" --providers Demo --mode "$mode" \
		--buffer-size 128K
	cat "$T/$mode.err"
	lost=$(record_lost "$T/$mode.err")
	((lost > 0)) || fail "$mode: nothing lost although the recorder was stopped"
	check_accounting "$mode" "$N" "$T/$mode.out" "$T/$mode.err" "$T/$mode.evtrace"
	# Discard mode: one line says how much, why and what would avoid it. Overwrite mode
	# loses the oldest events by design: no advice.
	why=$(grep -cE '^evring record: warning: [0-9]+ of [0-9]+ events lost ' "$T/$mode.err" || true)
	if [[ $mode == discard ]]; then
		((why == 1)) || fail "$mode: $why lines explain the loss, expected 1"
		grep -qE "^evring record: warning: $lost of [0-9]+ events lost \([0-9.]+%\): the rings \([0-9]+ of [0-9.]+ KiB\) hold [0-9.]+ ms of this stream \([0-9]+ MB/s asked\) and went unread for up to [0-9]+ ms.*; to avoid it: --buffer-size [0-9]+[KMG] would have held that.*, or fewer providers\$" \
			"$T/$mode.err" || fail "$mode: the loss is not explained as documented"
	else
		((why == 0)) || fail "$mode: overwrite mode's losses are not a fault to explain"
	fi
done
echo "PASS"
