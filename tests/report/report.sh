#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring report of a real minirt recording: the tables (and --json) must show exactly
# the counts and counter statistics that check_report.py computes from dump --json.
source "$(dirname "$0")/lib.sh"

record_minirt "$T/t.evtrace"
"$EVRING" dump --json "$T/t.evtrace" >"$T/dump.jsonl" || fail "evring dump --json"
"$EVRING" report "$T/t.evtrace" >"$T/report.txt" 2>"$T/report.err" ||
	fail "report: $(cat "$T/report.err")"
[[ ! -s $T/report.err ]] || fail "report printed on stderr: $(cat "$T/report.err")"
cat "$T/report.txt"
"$EVRING" report --json "$T/t.evtrace" >"$T/report.json" || fail "report --json"
python3 "$HERE/check_report.py" "$T/dump.jsonl" "$T/report.txt" "$T/report.json" \
	--providers MiniRT,System.Runtime,Process || fail "the report does not check out"

# A narrow terminal: no line longer than asked for in the provider and event tables.
"$EVRING" report --width 60 "$T/t.evtrace" >"$T/narrow.txt" || fail "report --width 60"
awk '/^Events per type/,/^$/' "$T/narrow.txt" | awk 'length > 60 { bad = 1 } END { exit bad }' ||
	fail "--width 60 left longer lines"

# Usage errors: one line, exit 2; a missing file: one line, exit 1.
st=0
"$EVRING" report --threads x "$T/t.evtrace" 2>"$T/e1" >/dev/null || st=$?
[[ $st == 2 && $(wc -l <"$T/e1") == 1 ]] || fail "--threads x: exit $st: $(cat "$T/e1")"
st=0
"$EVRING" report "$T/missing" 2>"$T/e2" >/dev/null || st=$?
[[ $st == 1 && $(wc -l <"$T/e2") == 1 ]] || fail "missing file: exit $st: $(cat "$T/e2")"
st=0
"$EVRING" report --html /nonexistent/dir/r.html "$T/t.evtrace" 2>"$T/e3" >/dev/null || st=$?
[[ $st == 1 && $(wc -l <"$T/e3") == 1 ]] && grep -q "cannot create /nonexistent/dir/r.html" "$T/e3" ||
	fail "unwritable --html: exit $st: $(cat "$T/e3")"
echo PASS
