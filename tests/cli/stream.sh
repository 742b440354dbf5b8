#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# "-" is standard input or output everywhere (issue 14, item 9), through real pipes:
#   - evring record -o - | evring dump -: the program's own stdout goes to stderr, the trace
#     through the pipe, and dump reads it front to back as it comes;
#   - dump -, dump /dev/stdin, convert - (jsonl streams, chrome needs the whole file and reads
#     a copy), report - give what they give for the file;
#   - a stream cut short or with a flipped bit is said, as a file is;
#   - a reader that goes away: record stops with a clear error, the program runs on.
source "$(dirname "$0")/lib.sh"
need_python

B=$T/b
"$EVRING" record --providers Demo -o - -- "$WORKLOAD" --events 4000 --threads 2 --pin \
	2>"$T/rec.err" | tee "$T/copy.evtrace" | "$EVRING" dump - >"$T/live.txt" 2>"$T/live.err" ||
	fail "record -o - | dump -: ${PIPESTATUS[*]}: $(cat "$T/rec.err" "$T/live.err")"
cat "$T/rec.err"
grep -q "^done 4000 " "$T/rec.err" || fail "the program's stdout did not go to stderr"
grep -qE "^evring record: [0-9]+ events, .*, 0 lost, .* file stdout$" "$T/rec.err" ||
	fail "record's summary"
[[ ! -s $T/live.err ]] || fail "dump - warned: $(cat "$T/live.err")"
"$EVRING" dump "$T/copy.evtrace" >"$T/file.txt" || fail "dump of the copy"
cmp -s "$T/file.txt" "$T/live.txt" || fail "the streamed dump differs from the file's"
events=$(grep -oE '^evring record: [0-9]+' "$T/rec.err" | grep -oE '[0-9]+$')
[[ $(wc -l <"$T/live.txt") == "$events" ]] || fail "dump - printed $(wc -l <"$T/live.txt") of $events"

# Every reader of "-", from a pipe (cat) and as /dev/stdin.
cat "$T/copy.evtrace" | "$EVRING" dump --json - >"$T/s.jsonl" || fail "dump --json -"
"$EVRING" dump --json "$T/copy.evtrace" >"$T/f.jsonl"
cmp -s "$T/s.jsonl" "$T/f.jsonl" || fail "dump --json - differs"
cat "$T/copy.evtrace" | "$EVRING" dump /dev/stdin >"$T/devstdin.txt" || fail "dump /dev/stdin"
cmp -s "$T/file.txt" "$T/devstdin.txt" || fail "dump /dev/stdin differs"
cat "$T/copy.evtrace" | "$EVRING" convert - --format jsonl -o "$T/c.jsonl" -q ||
	fail "convert - --format jsonl"
cmp -s "$T/c.jsonl" "$T/f.jsonl" || fail "convert - jsonl differs from dump --json"
cat "$T/copy.evtrace" | "$EVRING" convert - --format chrome -o - -q >"$T/s.json" ||
	fail "convert - --format chrome -o -"
"$EVRING" convert "$T/copy.evtrace" --format chrome -o "$T/f.json" -q
cmp -s "$T/s.json" "$T/f.json" || fail "convert - chrome differs"
cat "$T/copy.evtrace" | "$EVRING" report --json - >"$T/s.rep" || fail "report --json -"
"$EVRING" report --json "$T/copy.evtrace" >"$T/f.rep"
python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
a.pop("file", None); b.pop("file", None)
assert a == b, "report - differs"' "$T/s.rep" "$T/f.rep" || fail "report --json - differs"

# A stream cut short: read up to the cut, and said.
size=$(stat -c %s "$T/copy.evtrace")
head -c $((size / 2 + 3)) "$T/copy.evtrace" | "$EVRING" dump - >"$T/cut.txt" 2>"$T/cut.err" ||
	fail "dump - of a cut stream: $(cat "$T/cut.err")"
[[ $(wc -l <"$T/cut.err") == 1 ]] && grep -q "warning: stdin: truncated" "$T/cut.err" ||
	fail "the cut is not said: $(cat "$T/cut.err")"
(($(wc -l <"$T/cut.txt") > 0 && $(wc -l <"$T/cut.txt") < events)) || fail "cut stream events"

# One flipped bit in a stream: repaired, as in a file.
python3 "$HERE/trace_edit.py" flip "$T/copy.evtrace" "$T/bit.evtrace" EVENTS 2 100 0x04
cat "$T/bit.evtrace" | "$EVRING" dump - >"$T/bit.txt" 2>"$T/bit.err" || fail "dump - bit"
cmp -s "$T/file.txt" "$T/bit.txt" || fail "the repaired stream dumps differently"
grep -q "EVENTS chunk at offset .* repaired" "$T/bit.err" || fail "the repair is not said"

# The reader goes away: record says so and stops; the traced program is not disturbed.
start_workload wl --rate 20000 --threads 2
st=0
"$EVRING" record -p "$WL_PID" --providers Demo -o - 2>"$T/gone.err" | head -c 1000 >/dev/null ||
	st=${PIPESTATUS[0]}
cat "$T/gone.err"
[[ $st == 1 ]] || fail "record into a closed pipe exited with $st"
grep -q "cannot write stdout: Broken pipe: recording stopped" "$T/gone.err" ||
	fail "no clear message about the closed pipe"
kill -0 "$WL_PID" || fail "the traced program did not survive"
echo "PASS ($events events through a pipe)"
