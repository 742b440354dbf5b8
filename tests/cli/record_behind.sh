#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record through the page cache, write-behind (docs/recorder.md, "Through the page
# cache"): the writeback of each 4 MiB written is started at once, and where the file's
# first window cost the kernel dearly (new pages under a host that backs or shadows them
# at their first touch), the pages more than the window behind the end are waited for and
# dropped, so that the page cache's pages are used again. The tests' knobs make it
# deterministic: EVR_RECORDER_BEHIND_MIB=8 (a window of 8 MiB), EVR_RECORDER_BEHIND_DROP=1
# or 0 (drop, or keep, whatever the first window cost).
#  - dropped: an 84 MB recording with --io buffered leaves at most the window and a step
#    (and the last chunks) of its file in the page cache (fincore), every event counted
#    (recorded + lost == emitted, dump agrees);
#  - kept: the same with dropping off leaves more than that in it (what fincore sees is
#    the page cache, not a figure of ours);
#  - stalled: a disk that stalls 500 ms at every step of the write-behind
#    (EVR_RECORDER_BEHIND_STALL_MS=500; a step every 4 MiB, 200 ms of a 20 MB/s stream;
#    a window of 16 MiB, which the worker's drops may lag by before the writer waits):
#    the worker takes the stalls and the writer none, so rings holding 800 ms of the
#    stream lose nothing; the control, the same recording with the writer making the
#    calls itself (EVR_RECORDER_BEHIND_INLINE=1), loses (the stall is real).
# Skipped (77) where no directory of the test has a disk behind it (tmpfs only), or
# without fincore (util-linux).
source "$(dirname "$0")/lib.sh"
need_python
command -v fincore >/dev/null || skip "no fincore (util-linux)"
find_dio_dir
[[ -n $dio_dir ]] || skip "no directory here is on a disk ($T is on $(stat -f -c %T "$T"))"
out=$(mktemp -d "$dio_dir/evr-behind.XXXXXX")
cleanup_hook() { rm -rf "$out"; }
echo "in $dio_dir ($(stat -f -c %T "$dio_dir"))"

N=500000
# resident FILE: the bytes of FILE in the page cache.
resident() {
	fincore --bytes --noheadings --output RES "$1" | tr -d ' '
}

# behind LABEL DROP: one recording of N iterations (about 84 MB), its file's resident bytes
# in RES (taken before anything reads the file) and its size in SIZE.
behind() {
	local label=$1 drop=$2
	EVR_RECORDER_BEHIND_MIB=8 EVR_RECORDER_BEHIND_DROP=$drop "$EVRING" record \
		--providers Demo --io buffered --buffer-size 256M -o "$out/$label.evtrace" \
		-- "$WORKLOAD" --events "$N" --threads 1 >"$T/$label.out" 2>"$T/$label.err" ||
		fail "record ($label): $(cat "$T/$label.err")"
	RES=$(resident "$out/$label.evtrace")
	SIZE=$(stat -c %s "$out/$label.evtrace")
	cat "$T/$label.err"
	echo "$label: $SIZE bytes, $RES in the page cache"
}

behind dropped 1
# The window (8 MiB), the step not yet dropped (4 MiB) and the chunks written after the last
# step (under 4 MiB): 16 MiB at most.
((SIZE > 64 << 20)) || fail "the recording is too small to say: $SIZE bytes"
((RES <= 16 << 20)) || fail "$RES bytes of the file in the page cache, more than 16 MiB"
check_accounting dropped "$N" "$T/dropped.out" "$T/dropped.err" "$out/dropped.evtrace"

behind kept 0
((RES > 16 << 20)) || fail "kept: only $RES bytes in the page cache (fincore sees nothing?)"
check_accounting kept "$N" "$T/kept.out" "$T/kept.err" "$out/kept.evtrace"

# stalled LABEL INLINE: a 42 MB recording at 20 MB/s with every write-behind step stalled
# 500 ms; its loss in LOST.
stalled() {
	local label=$1 inline=$2
	EVR_RECORDER_BEHIND_MIB=16 EVR_RECORDER_BEHIND_DROP=1 EVR_RECORDER_BEHIND_STALL_MS=500 \
		EVR_RECORDER_BEHIND_INLINE=$inline "$EVRING" record --providers Demo --io buffered \
		--buffer-size 16M -o "$out/$label.evtrace" \
		-- "$WORKLOAD" --events 250000 --threads 1 --rate 480000 \
		>"$T/$label.out" 2>"$T/$label.err" || fail "record ($label): $(cat "$T/$label.err")"
	cat "$T/$label.err"
	check_accounting "$label" 250000 "$T/$label.out" "$T/$label.err" "$out/$label.evtrace"
	LOST=$(grep -E '^evring record: [0-9]+ events, ' "$T/$label.err" |
		sed -E 's/.* ([0-9]+) lost,.*/\1/')
}
stalled stalled 0
((LOST == 0)) || fail "stalled: $LOST events lost while the write-behind worker waited"
stalled stalled_inline 1
((LOST > 0)) || fail "stalled_inline: nothing lost with the writer stalled 500 ms a step (no stall?)"
echo "PASS"
