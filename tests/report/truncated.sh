#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A trace whose recorder was SIGKILLed mid-write (simulated by cutting the file inside a
# chunk, as a kill leaves it): convert --format chrome and report exit 0 with a one-line
# truncation warning, the JSON still parses and checks out against dump --json of the same
# cut file, and the report's numbers match it too.
source "$(dirname "$0")/lib.sh"

record_minirt "$T/t.evtrace"
size=$(stat -c %s "$T/t.evtrace")
cp "$T/t.evtrace" "$T/cut.evtrace"
truncate -s $((size * 2 / 3 + 5)) "$T/cut.evtrace"
"$EVRING" dump --json "$T/cut.evtrace" >"$T/dump.jsonl" 2>/dev/null || fail "dump of the cut file"
[[ -s $T/dump.jsonl ]] || fail "nothing left in the cut file"

"$EVRING" convert "$T/cut.evtrace" --format chrome -q -o "$T/cut.json" 2>"$T/convert.err" ||
	fail "convert of a truncated file failed: $(cat "$T/convert.err")"
cat "$T/convert.err"
[[ $(wc -l <"$T/convert.err") == 1 ]] && grep -q "warning: .*truncated" "$T/convert.err" ||
	fail "convert: no one-line truncation warning"
python3 "$HERE/check_chrome.py" "$T/dump.jsonl" "$T/cut.json" ||
	fail "the Chrome JSON of the truncated file does not check out"

"$EVRING" report "$T/cut.evtrace" >"$T/report.txt" 2>"$T/report.err" ||
	fail "report of a truncated file failed: $(cat "$T/report.err")"
cat "$T/report.err"
[[ $(wc -l <"$T/report.err") == 1 ]] && grep -q "warning: .*truncated" "$T/report.err" ||
	fail "report: no one-line truncation warning"
grep -q "^Trace .*truncated" "$T/report.txt" || fail "the report does not say truncated"
"$EVRING" report --json "$T/cut.evtrace" >"$T/report.json" 2>/dev/null || fail "report --json"
python3 "$HERE/check_report.py" "$T/dump.jsonl" "$T/report.txt" "$T/report.json" ||
	fail "the report of the truncated file does not check out"
echo PASS
