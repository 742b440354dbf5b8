#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/recorder-run.sh: one long recording at 12 M events/s (run by hand; no test uses it),
# for comparing two builds run after one another (alternate them, quote medians).
#
#   bench/recorder-run.sh LABEL DIR [VAR=VALUE...] [-- RECORD-OPTIONS...]
#
# build/bin/workload (or $B/workload: another build's bin directory) writes 40 M iterations
# at 12 M events/s from one thread once a session enables it (about 160 M events, 6.7 GiB,
# 13 s); `evring record -p PID --providers Demo --no-sandbox -o DIR/bench.evtrace` records it
# with the VAR=VALUE environment and the options after `--`. Prints one line:
#   LABEL USER_S SYS_S NS_PER_EVENT lost=N wakes=VOLUNTARY invol=INVOLUNTARY prod=USER+SYS [fell behind]
# where USER_S and SYS_S are the recorder's (/usr/bin/time), prod the traced process's, and
# "fell behind" says that direct I/O fell to the page cache. The recording is removed after;
# record's stderr is kept as DIR/last-LABEL.err (its warnings and the loss line).
#
# SETTLE=S (default 10): sync, then wait S seconds before starting, so that a run does not
# share the disk with the one before it. On the Intel Firecracker guest the host goes on
# with the 6.7 GB a run wrote for seconds after it ended (its own page cache, presumably):
# back to back, the next run's first 1-2 s got 490 MB/s of the disk where it takes
# 1.6-2 GB/s settled, and 4 of 6 runs with the default buffer lost 0.2-0.7%; 8 s apart, 4
# of 4 lost nothing (docs/recorder.md, end of "When events are lost"). SETTLE=0: back to back.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${B:-$root/build/bin}
label=${1:?usage: recorder-run.sh LABEL DIR [VAR=VALUE...] [-- RECORD-OPTIONS...]}
dir=${2:?usage: recorder-run.sh LABEL DIR [VAR=VALUE...] [-- RECORD-OPTIONS...]}
shift 2
envs=()
while (($#)) && [[ $1 != -- ]]; do envs+=("$1"); shift; done
(($#)) && shift
settle=${SETTLE:-10}
[[ $settle =~ ^[0-9]+$ ]] || { echo "recorder-run: SETTLE=$settle is not a number of seconds" >&2; exit 2; }
if ((settle > 0)); then
	sync
	sleep "$settle"
fi
work=$(mktemp -d)
trap 'cp "$work/r.err" "$dir/last-$label.err" 2>/dev/null; rm -rf "$work" "$dir/bench.evtrace"' EXIT
export EVR_RUNTIME_DIR=$work/rt
mkdir -m 0700 "$EVR_RUNTIME_DIR"
coproc WL { /usr/bin/time -f "%U %S" -o "$work/wl.time" "$B/workload" --threads 1 \
	--events 40000000 --rate 12000000 --wait-sessions 1 --late-after 1 2>/dev/null; }
wlpid=$WL_PID
read -r line pid <&"${WL[0]}"
[[ $line == ready ]] || { echo "recorder-run: workload said '$line'" >&2; exit 1; }
env ${envs[@]+"${envs[@]}"} /usr/bin/time -f "%U %S %w %c" -o "$work/r.time" "$B/evring" record \
	-p "$pid" --providers Demo --no-sandbox -o "$dir/bench.evtrace" "$@" 2>"$work/r.err" || true
wait "$wlpid" 2>/dev/null || true
read -r ev lost < <(grep -m1 ' events, ' "$work/r.err" |
	sed -E 's/.*: ([0-9]+) events, .* ([0-9]+) lost.*/\1 \2/')
read -r u s w c <"$work/r.time"
read -r wu ws <"$work/wl.time"
fell=
grep -q 'fell behind' "$work/r.err" && fell='fell behind'
echo "$label $u $s $(awk -v u="$u" -v s="$s" -v e="$ev" 'BEGIN { printf "%.2f", (u + s) * 1e9 / e }') lost=$lost wakes=$w invol=$c prod=$wu+$ws $fell"
