#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# convert --format ctf onto a full file system (a 256 KiB tmpfs): one line naming the file
# and the cause, exit 1. Needs root (mount); skipped otherwise.
#   bash disk_full.sh EVRING WORKLOAD
source "$(dirname "$0")/../cli/lib.sh"

"$EVRING" record --no-sandbox --providers Demo -o "$T/t.evtrace" -- "$WORKLOAD" \
	--events 50000 >/dev/null 2>"$T/rec.err" || fail "record: $(cat "$T/rec.err")"
mkdir "$T/small"
mount -t tmpfs -o size=256k evring-ctf-test "$T/small" 2>/dev/null ||
	skip "cannot mount a tmpfs here (not root, or no permission)"
cleanup_hook() { umount "$T/small" 2>/dev/null || true; }
st=0
"$EVRING" convert "$T/t.evtrace" -f ctf -o "$T/small/out" 2>"$T/e.err" || st=$?
cat "$T/e.err"
[[ $st == 1 && $(wc -l <"$T/e.err") == 1 ]] || fail "exit $st: $(cat "$T/e.err")"
grep -q "cannot write $T/small/out/.*: No space left on device" "$T/e.err" ||
	fail "the error does not name the file and the cause"
echo "PASS"
