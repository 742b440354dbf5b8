#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Old files still read: tests/data/pre-sync-b6822f2.evtrace was written by `evring record`
# of commit b6822f2, the last one before SYNC chunks (kind 9) and the piecewise clock:
#   git worktree add /tmp/old b6822f2 && (build it) &&
#   evring record -o pre-sync-b6822f2.evtrace --providers Demo -- \
#       workload --threads 2 --events 40 --late-after 20
# It has no sync point, so readers convert with the SESSION chunk's calibration alone.
# Today's dump must print exactly what that commit's dump printed (pre-sync-b6822f2.dump,
# timestamps included), without a warning; report, jsonl and CTF conversion read it whole.
source "$(dirname "$0")/lib.sh"
DATA=$HERE/../data
F=$DATA/pre-sync-b6822f2.evtrace

"$EVRING" dump "$F" >"$T/dump.txt" 2>"$T/dump.err" || fail "dump: $(cat "$T/dump.err")"
[[ ! -s $T/dump.err ]] || fail "dump of the old file warned: $(cat "$T/dump.err")"
diff -u "$DATA/pre-sync-b6822f2.dump" "$T/dump.txt" >"$T/dump.diff" ||
	fail "dump differs from what b6822f2 printed: $(head -20 "$T/dump.diff")"

"$EVRING" report "$F" >"$T/report.txt" 2>"$T/report.err" || fail "report: $(cat "$T/report.err")"
grep -q '^Events    160 .*, 0 lost' "$T/report.txt" || fail "report: $(grep Events "$T/report.txt")"
grep -q '^Clock     TSC' "$T/report.txt" || fail "report: $(grep Clock "$T/report.txt")"
grep -qi 'jump' "$T/report.txt" && fail "report sees a clock jump in a file without sync points"

"$EVRING" convert "$F" --format jsonl -q -o "$T/ev.jsonl" 2>"$T/jsonl.err" ||
	fail "convert jsonl: $(cat "$T/jsonl.err")"
[[ $(wc -l <"$T/ev.jsonl") == 160 ]] || fail "jsonl has $(wc -l <"$T/ev.jsonl") lines, not 160"
"$EVRING" convert "$F" --format ctf -q -o "$T/ctf" 2>"$T/ctf.err" ||
	fail "convert ctf: $(cat "$T/ctf.err")"
[[ -s $T/ctf/metadata ]] || fail "convert ctf wrote no metadata"
echo "PASS"
