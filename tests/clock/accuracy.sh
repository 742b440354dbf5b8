#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Timestamps against the producer's own clock: evring record -- clock-stamps runs two
# threads that write, for SECONDS (at least 10), events carrying the CLOCK_MONOTONIC
# readings taken just before each write and just after the previous one. Every converted
# timestamp must lie within 2 us of that bracket (the checker prints the median and
# maximum distance to `before`, and what the session's single calibration alone would
# give), the file must hold a sync point per second, and no ring's raw timestamps may go
# back. Then the same with EVR_CLOCK=monotonic for 2 s (the fallback path), the same read
# live for 3 s (evr_client_next(), which evring forward and the monitor use, converting
# through sync points of its own), and a trace whose TSC jumps: evring dump keeps it in
# time order and says that it jumped.
# Usage: accuracy.sh EVRING STAMPS CHECK [SECONDS]
set -euo pipefail
EVRING=$(realpath "${1:?usage: $0 EVRING STAMPS CHECK [SECONDS]}")
STAMPS=$(realpath "$2")
CHECK=$(realpath "$3")
SECONDS_RUN=${4:-10}
source "$(dirname "$0")/../common.sh"
evr_test_setup clock

record() {
	local out=$1 secs=$2
	shift 2
	# The recording ends when the program does (it ends its session on exit).
	timeout 300 "$EVRING" record -o "$out" -- "$STAMPS" "$secs" 2 >"$T/stamps.out" \
		2>"$T/record.err" || fail "record: $(cat "$T/record.err")"
	grep -q '^done [0-9]*$' "$T/stamps.out" || fail "clock-stamps did not finish"
	grep -q "lost" "$T/record.err" && ! grep -q " 0 lost" "$T/record.err" &&
		echo "note: $(grep lost "$T/record.err")"
	true
}

# The default clock (the TSC wherever libevring chose it), recorded for >= 10 s.
record "$T/tsc.evtrace" "$((SECONDS_RUN + 1))"
"$CHECK" check "$T/tsc.evtrace" "$SECONDS_RUN" || fail "timestamps of the default clock"

# The CLOCK_MONOTONIC fallback.
EVR_CLOCK=monotonic record "$T/mono.evtrace" 2
"$CHECK" check "$T/mono.evtrace" 1 | tee "$T/mono.txt" || fail "timestamps of CLOCK_MONOTONIC"
grep -q "clock monotonic" "$T/mono.txt" || fail "EVR_CLOCK=monotonic did not take"

# Live.
"$CHECK" live "$STAMPS" 3 || fail "timestamps read live"

# A trace whose TSC jumps 10 s ahead: still in time order, and said.
"$CHECK" jumpfile "$T/jump.evtrace" || fail "cannot write the jump trace"
"$EVRING" dump "$T/jump.evtrace" >"$T/jump.txt" 2>"$T/jump.err" || fail "dump: $(cat "$T/jump.err")"
cat "$T/jump.err"
grep -q "the TSC jumped 1 times during the recording" "$T/jump.err" ||
	fail "dump does not report the jump"
# ... and nothing else: the file's END chunk adds up (3001 events, none lost).
[[ $(wc -l <"$T/jump.err") == 1 ]] || fail "dump warns about more than the jump"
# Relative times (seconds.nanoseconds) never go back, and span 3 ms, not 10 s.
awk '{ split($1, a, "."); t = a[1] * 1000000000 + a[2]; if (t < last) { print "back at " NR; exit 1 }
       last = t } END { if (last > 3000000) { print "spans " last " ns"; exit 1 } }' \
	"$T/jump.txt" || fail "the dumped timeline is wrong across the jump"
echo "PASS"
