#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Chrome JSON of start/stop pairs that cross deeply stays linear (issue 14, defect 4): 2,000
# nested activities crossed by 2,000 others (8,000 events) used to become 8 M split records
# (about 800 MiB), 500 crossed by 500 about 500 k. Now each stop closes and reopens at most 16
# slices and at most 1,024 are open on a thread; what is beyond is approximated, said on
# stderr and in otherData.approximations, and the file is still valid (check_chrome.py).
#   bash tests/report/crossing.sh EVRING EVR-CHROME-CROSSING
set -euo pipefail
EVRING=$(realpath "${1:?usage: $0 EVRING CROSSING}")
CROSSING=$(realpath "${2:?usage: $0 EVRING CROSSING}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../common.sh"
evr_test_setup crossing
need_python

# convert_checked FILE N: converts, bounded: stop reading the output past 64 MiB.
convert_checked() {
	"$EVRING" convert "$1" --format chrome 2>"$T/convert.err" | head -c $((64 << 20)) \
		>"$T/t.json" || true
	cat "$T/convert.err"
	local size records
	size=$(stat -c %s "$T/t.json")
	records=$(grep -c '"ph"' "$T/t.json" || true)
	echo "chrome: $size bytes, $records records for $((4 * $2)) events"
	((size < (64 << 20))) || fail "the Chrome JSON of $((4 * $2)) events passed 64 MiB"
	((records <= 3 * 4 * $2)) || fail "$records records for $((4 * $2)) events: not linear"
	"$EVRING" dump --json "$1" >"$T/dump.jsonl" || fail "evring dump --json"
	python3 "$HERE/check_chrome.py" "$T/dump.jsonl" "$T/t.json" ||
		fail "the Chrome JSON is invalid"
}

record() {
	"$EVRING" record --no-sandbox --providers Cross -o "$T/t.evtrace" -- "$CROSSING" "$1" \
		>"$T/record.log" 2>&1 || fail "evring record: $(cat "$T/record.log")"
	grep -q "^evring record: $((4 * $1)) events, .* 0 lost" "$T/record.log" ||
		fail "the recording does not hold the $((4 * $1)) events: $(cat "$T/record.log")"
}

# The issue's trace: 2,000 nested activities crossed by 2,000 others.
N=2000
record $N
convert_checked "$T/t.evtrace" $N
grep -q "warning: .* nested deeper than 1024 slices" "$T/convert.err" ||
	fail "no warning about the depth on stderr"

# Within the depth: 500 activities each crossed by 500 others when they stop.
N=500
record $N
convert_checked "$T/t.evtrace" $N
grep -q "warning: $N stops came while more than 16 slices crossed theirs" "$T/convert.err" ||
	fail "no warning about the crossed slices on stderr"
python3 - "$T/t.json" "$N" <<'PY' || fail "otherData.approximations is wrong"
import json, sys
doc = json.load(open(sys.argv[1]))
a = doc["otherData"]["approximations"]
n = int(sys.argv[2])
assert a["crossed"] == n and a["closed_late"] == n and a["too_deep"] == 0, a
crossed = [e for e in doc["traceEvents"] if e.get("args", {}).get("evring") == "crossed"]
assert len(crossed) == n and all(e["name"] == "Cross/AStop" for e in crossed), len(crossed)
PY
echo PASS
