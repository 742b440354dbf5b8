#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# convert --format ctf and its files: a truncated trace converts up to its last complete
# chunk (exit 0, babeltrace2 reads the result); an output that exists and is not empty, or
# is not a directory, is a one-line error (exit 1); no -o is a usage error (exit 2).
#   bash files.sh EVRING WORKLOAD
source "$(dirname "$0")/../cli/lib.sh"
need_python
command -v babeltrace2 >/dev/null 2>&1 || skip "babeltrace2 is not installed (scripts/setup --optional)"
CHECK=$(dirname "$0")/check_ctf.py

"$EVRING" record --no-sandbox --providers Demo -o "$T/t.evtrace" -- "$WORKLOAD" \
	--events 20000 >/dev/null 2>"$T/rec.err" || fail "record: $(cat "$T/rec.err")"
size=$(stat -c %s "$T/t.evtrace")
cp "$T/t.evtrace" "$T/cut.evtrace"
truncate -s $((size * 2 / 3 + 5)) "$T/cut.evtrace"
"$EVRING" convert "$T/cut.evtrace" -f ctf -o "$T/cut" 2>"$T/cut.err" ||
	fail "convert of a truncated trace failed: $(cat "$T/cut.err")"
cat "$T/cut.err"
grep -q "warning: .*truncated" "$T/cut.err" || fail "no truncation warning"
python3 "$CHECK" "$EVRING" "$T/cut.evtrace" "$T/cut" --min-events 100

# An existing empty directory is fine.
mkdir "$T/empty"
"$EVRING" convert "$T/t.evtrace" -q -f ctf -o "$T/empty" || fail "convert into an empty directory"
babeltrace2 "$T/empty" >/dev/null || fail "babeltrace2 cannot read the full trace"

# Errors: one line naming the cause, exit 1; nothing written into the existing directory.
: >"$T/afile"
for out in "$T/empty" "$T/afile" "$T/afile/sub"; do
	before=$( (ls -A "$out" 2>/dev/null || true) | wc -l)
	st=0
	"$EVRING" convert "$T/t.evtrace" -f ctf -o "$out" 2>"$T/e.err" || st=$?
	[[ $st == 1 && $(wc -l <"$T/e.err") == 1 ]] ||
		fail "convert -o $out: exit $st, $(cat "$T/e.err")"
	[[ $( (ls -A "$out" 2>/dev/null || true) | wc -l) == "$before" ]] || fail "convert -o $out wrote files"
	echo "-o $out: $(cat "$T/e.err")"
done
grep -q "not empty" <("$EVRING" convert "$T/t.evtrace" -f ctf -o "$T/empty" 2>&1) ||
	fail "no 'not empty' error"
st=0
"$EVRING" convert "$T/t.evtrace" -f ctf 2>"$T/e.err" || st=$?
[[ $st == 2 && $(wc -l <"$T/e.err") == 1 ]] || fail "convert without -o: exit $st"
echo "PASS"
