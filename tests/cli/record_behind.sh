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
#    the page cache, not a figure of ours).
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
echo "PASS"
