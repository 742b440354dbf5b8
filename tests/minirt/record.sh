#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# minirt under a real consumer: `evring record -- minirt` traces it from its first
# event, then the dump must hold every kind of runtime event minirt emits, begin/end
# pairs must balance, and the counts in the trace must equal minirt's own exit
# summary (nothing emitted was lost or invented).
#   bash record.sh EVRING MINIRT PHASE
set -euo pipefail

EVRING=$(realpath "${1:?usage: $0 EVRING MINIRT PHASE}")
MINIRT=$(realpath "${2:?usage: $0 EVRING MINIRT PHASE}")
PHASE=${3:?usage: $0 EVRING MINIRT PHASE}
T=$(mktemp -d /tmp/evring-minirt.XXXXXX)
trap 'rm -rf "$T"' EXIT
export EVR_RUNTIME_DIR=$T/run
mkdir -m 0700 "$EVR_RUNTIME_DIR"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# --no-sandbox: the sandbox is tests/cli's subject; LeakSanitizer (ASan builds) cannot
# work inside it.
if ! "$EVRING" record --no-sandbox --providers MiniRT -o "$T/t.evtrace" -- \
	"$MINIRT" --seconds 2 --phase "$PHASE" --verify >"$T/record.log" 2>&1; then
	cat "$T/record.log" >&2
	fail "evring record -- minirt failed"
fi
cat "$T/record.log"
grep -q "exited with status 0" "$T/record.log" || fail "minirt did not exit with status 0"
grep -Eq "^evring record: [0-9]+ events, .* 0 lost," "$T/record.log" ||
	fail "the recording lost events: the counts below could not match"
summary=$(grep "minirt: exit summary:" "$T/record.log") || fail "no exit summary from minirt"
"$EVRING" dump --no-sandbox "$T/t.evtrace" >"$T/dump.txt" || fail "evring dump failed"

count() {
	grep -c " MiniRT/$1\( \|\$\)" "$T/dump.txt" || true
}
summary_stat() {
	sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$summary"
}

for ev in GCStart GCEnd GCHeapStats GCSuspendEEBegin GCSuspendEEEnd GCRestartEEBegin \
	GCRestartEEEnd GCAllocationTick ThreadPoolWorkerThreadStart ThreadPoolWorkerThreadStop \
	ThreadPoolWorkerThreadAdjustment ThreadPoolEnqueue ThreadPoolDequeue ExceptionThrown \
	ExceptionCatchStart ExceptionCatchStop MethodJittingStarted MethodLoadVerbose ModuleLoad \
	PhaseChange; do
	[ "$(count $ev)" -gt 0 ] || fail "no $ev event in the trace"
done
for pair in GCStart:GCEnd GCSuspendEEBegin:GCSuspendEEEnd GCRestartEEBegin:GCRestartEEEnd \
	ThreadPoolWorkerThreadStart:ThreadPoolWorkerThreadStop ContentionStart:ContentionStop \
	MethodJittingStarted:MethodLoadVerbose ExceptionCatchStart:ExceptionCatchStop \
	ThreadPoolEnqueue:ThreadPoolDequeue; do
	a=$(count "${pair%%:*}")
	b=$(count "${pair##*:}")
	[ "$a" -eq "$b" ] || fail "${pair%%:*} $a times but ${pair##*:} $b times"
done
[ "$(count GCStart)" -eq "$(summary_stat gen0)" ] ||
	fail "GCStart $(count GCStart) != gen0=$(summary_stat gen0)"
[ "$(count ThreadPoolDequeue)" -eq "$(summary_stat completed)" ] ||
	fail "ThreadPoolDequeue $(count ThreadPoolDequeue) != completed=$(summary_stat completed)"
[ "$(count ExceptionThrown)" -eq "$(summary_stat exceptions)" ] ||
	fail "ExceptionThrown $(count ExceptionThrown) != exceptions=$(summary_stat exceptions)"
[ "$(count ContentionStart)" -eq "$(summary_stat contentions)" ] ||
	fail "ContentionStart $(count ContentionStart) != contentions=$(summary_stat contentions)"
[ "$(count MethodLoadVerbose)" -eq "$(summary_stat jitted)" ] ||
	fail "MethodLoadVerbose $(count MethodLoadVerbose) != jitted=$(summary_stat jitted)"
echo "PASS: $(wc -l <"$T/dump.txt") events, counts match minirt's summary"
