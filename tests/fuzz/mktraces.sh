#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Writes the seed inputs of the trace and convert fuzz targets: small real recordings, each
# preceded by the control byte 0x1f (repair every CRC, chunk number and magic: fuzz.h).
#   tests/fuzz/mktraces.sh BUILD-DIR CORPUS-DIR
set -euo pipefail
build=$(realpath "${1:?usage: $0 BUILD-DIR CORPUS-DIR}")
out=$(realpath "${2:?usage: $0 BUILD-DIR CORPUS-DIR}")
evring=$build/bin/evring
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export EVR_RUNTIME_DIR=$T/rt
mkdir -m 700 "$EVR_RUNTIME_DIR"

# seed NAME TRACE: the control byte, then the file, into both corpora.
seed() {
	local t
	for t in trace convert; do
		mkdir -p "$out/$t"
		{ printf '\x1f'; cat "$2"; } >"$out/$t/seed-$1"
	done
}

rec() {
	"$evring" record --no-sandbox --buffer-size 128K "$@" >/dev/null 2>"$T/log" ||
		{ cat "$T/log" >&2; exit 1; }
}

# A few Demo events on two threads: ticks, requests (start/stop), allocations.
rec --providers Demo -o "$T/demo.evtrace" -- "$build/bin/workload" --events 12 --threads 2
seed demo "$T/demo.evtrace"
# The same as a flight recorder.
rec --mode overwrite --providers 'Demo:0x5:4' -o "$T/ow.evtrace" -- \
	"$build/bin/workload" --events 8 --threads 1
seed overwrite "$T/ow.evtrace"
# EVENTS chunks without their payload CRC (the header's flags bit 15: record --checksum never).
rec --checksum never --providers Demo -o "$T/unchecked.evtrace" -- "$build/bin/workload" \
	--events 12 --threads 2
seed unchecked "$T/unchecked.evtrace"
# minirt's runtime events (GC, JIT, thread pool: start/stop pairs) and counters.
rec --providers 'MiniRT:0xffff:4,System.Runtime' --counter-interval 100ms -o "$T/minirt.evtrace" -- \
	"$build/bin/minirt" --seconds 0.3 --phase steady --threads 1 --gen0-budget 262144
seed minirt "$T/minirt.evtrace"
ls -l "$out"/trace "$out"/convert
