#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Damaged trace files are read as far as they can be, and never silently (issue 14, item 5):
#   - cut at a chunk boundary (no END chunk): a warning, exit 0, Chrome says truncated;
#   - an EVENTS chunk removed with every CRC and number made consistent: the END chunk's
#     totals show it, and the missing events are damage, not the producer's loss;
#   - one flipped bit in the METADATA chunk: repaired from its CRC, the dump is the intact one;
#   - a METADATA chunk damaged beyond repair: every event still read, what was skipped said;
#   - a PROCESS chunk damaged beyond repair: Chrome does not invent a pid.
source "$(dirname "$0")/lib.sh"
need_python

edit() { python3 "$HERE/trace_edit.py" "$@"; }

# dump_ok NAME FILE: dump FILE to $T/NAME.txt (exit 0 required), warnings in $T/NAME.err.
dump_ok() {
	"$EVRING" dump "$2" >"$T/$1.txt" 2>"$T/$1.err" || fail "dump of $1: $(cat "$T/$1.err")"
	sed "s|^|$1: |" "$T/$1.err"
}

"$EVRING" record --providers Demo -o "$T/t.evtrace" -- "$WORKLOAD" --events 3000 --threads 2 --pin \
	>/dev/null 2>"$T/rec.err" || fail "record: $(cat "$T/rec.err")"
dump_ok intact "$T/t.evtrace"
[[ ! -s $T/intact.err ]] || fail "the intact file has warnings"
all=$(wc -l <"$T/intact.txt")

# 1. Cut exactly before the END chunk.
edit cut-before-end "$T/t.evtrace" "$T/noend.evtrace"
dump_ok noend "$T/noend.evtrace"
[[ $(wc -l <"$T/noend.err") == 1 ]] && grep -q "warning: .*truncated.*no END chunk" \
	"$T/noend.err" || fail "no warning about the missing END chunk"
"$EVRING" convert "$T/noend.evtrace" --format chrome -o "$T/noend.json" -q 2>"$T/conv.err" ||
	fail "convert: $(cat "$T/conv.err")"
python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["otherData"]
assert o["truncated"] is True, o
assert "no END chunk" in o["truncated_why"], o
assert o["pid"] > 1, o' "$T/noend.json" || fail "the Chrome JSON of a file without END"
"$EVRING" report "$T/noend.evtrace" >"$T/noend.rep" 2>/dev/null || fail "report"
grep -q "^Trace .*truncated" "$T/noend.rep" || fail "report does not say truncated"

# 2. One EVENTS chunk removed, consistently: damage, not loss. The third, and the last (the
#    events of its packets are then past their ring's last readable packet header: no LOST
#    view counts them, only the END chunk's totals show them).
for nth in 3 0; do
	edit remove-events "$T/t.evtrace" "$T/gap$nth.evtrace" $nth
	dump_ok gap$nth "$T/gap$nth.evtrace"
	grep -q "warning: .*events are not in the file (damage, not loss" "$T/gap$nth.err" ||
		fail "chunk $nth: no warning that the file lacks events its END chunk counts"
	said=$(sed -n 's/.*; \([0-9]*\) events are not in the file.*/\1/p' "$T/gap$nth.err")
	"$EVRING" report --json "$T/gap$nth.evtrace" >"$T/gap$nth.json" 2>/dev/null ||
		fail "report --json"
	missing=$(python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["lost"] == 0, "reported as loss: %s" % o["lost"]
assert o["damaged"] == int(sys.argv[2]) and o["damaged_file"] is True, o
print(o["damaged"])' "$T/gap$nth.json" "$said") ||
		fail "report --json of the file without EVENTS chunk $nth (dump: $said missing): $missing"
	"$EVRING" report "$T/gap$nth.evtrace" >"$T/gap$nth.rep" 2>/dev/null || fail "report"
	grep -qE "^Events .* 0 lost \(0\.00% of events\), $missing missing from the damaged file" \
		"$T/gap$nth.rep" || fail "report: $(grep ^Events "$T/gap$nth.rep")"
done

# 3. One flipped bit in the METADATA chunk: repaired.
edit flip "$T/t.evtrace" "$T/bit.evtrace" METADATA 1 40 0x10
dump_ok bit "$T/bit.evtrace"
cmp -s "$T/intact.txt" "$T/bit.txt" || fail "the repaired file dumps differently"
[[ $(wc -l <"$T/bit.err") == 1 ]] && grep -q "METADATA chunk at offset .* repaired" "$T/bit.err" ||
	fail "the repair is not said"

# 4. METADATA damaged beyond repair: every event read, the skipped part said.
edit flip-last-desc "$T/t.evtrace" "$T/meta.evtrace"
dump_ok meta "$T/meta.evtrace"
[[ $(wc -l <"$T/meta.txt") == "$all" ]] || fail "$(wc -l <"$T/meta.txt") of $all events read"
grep -q "METADATA chunk at offset .* damaged beyond repair: .* still decode" "$T/meta.err" ||
	fail "the salvage is not said"
cmp -s <(grep -F Demo/RequestStart "$T/intact.txt") <(grep -F Demo/RequestStart "$T/meta.txt") ||
	fail "events whose description was intact dump differently"

# 5. PROCESS damaged beyond repair: the process is unknown, and Chrome says so.
edit flip "$T/t.evtrace" "$T/proc.evtrace" PROCESS 1 10 0xff
dump_ok proc "$T/proc.evtrace"
grep -q "PROCESS chunk at offset .* damaged beyond repair" "$T/proc.err" || fail "not said"
"$EVRING" convert "$T/proc.evtrace" --format chrome -o "$T/proc.json" -q 2>/dev/null ||
	fail "convert"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["otherData"]["pid"] is None, d["otherData"]
assert d["otherData"]["damaged"] is True, d["otherData"]
assert all(e.get("pid") == 0 for e in d["traceEvents"]), "a made-up pid"' "$T/proc.json" ||
	fail "the Chrome JSON of a file without its process"
echo "PASS"
