#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring convert --format chrome of a real minirt recording: the JSON is checked for
# structure and against evring dump --json of the same file (check_chrome.py).
source "$(dirname "$0")/lib.sh"

record_minirt "$T/t.evtrace"
"$EVRING" dump --json "$T/t.evtrace" >"$T/dump.jsonl" || fail "evring dump --json"
"$EVRING" convert "$T/t.evtrace" --format chrome -o "$T/t.json" 2>"$T/convert.err" ||
	fail "convert --format chrome: $(cat "$T/convert.err")"
cat "$T/convert.err"
grep -q "^evring convert: [0-9]* events, [0-9]* lost, .* events/s)$" "$T/convert.err" ||
	fail "no summary line"
python3 "$HERE/check_chrome.py" "$T/dump.jsonl" "$T/t.json" --counters System.Runtime ||
	fail "the Chrome JSON does not check out"
# To stdout as well, and the same bytes.
"$EVRING" convert "$T/t.evtrace" --format chrome -q >"$T/stdout.json" || fail "convert to stdout"
cmp -s "$T/stdout.json" "$T/t.json" || fail "stdout and -o outputs differ"

# Lost events (a small buffer, a fast workload): global "Lost events" instants that add up.
WORKLOAD=$(dirname "$MINIRT")/workload
if [[ -x $WORKLOAD ]]; then
	"$EVRING" record --no-sandbox --providers Demo --buffer-size 256K -o "$T/l.evtrace" -- \
		"$WORKLOAD" --events 100000 --threads 2 >/dev/null 2>"$T/l.log" ||
		fail "record workload: $(cat "$T/l.log")"
	"$EVRING" dump --json "$T/l.evtrace" >"$T/l.jsonl" || fail "dump of the lossy trace"
	"$EVRING" convert "$T/l.evtrace" --format chrome -q -o "$T/l.json" || fail "convert lossy"
	python3 "$HERE/check_chrome.py" "$T/l.jsonl" "$T/l.json" ||
		fail "the Chrome JSON of the lossy trace does not check out"
	# The README's demo marks its requests (EVR_START/EVR_STOP): Perfetto shows slices.
	python3 - "$T/l.json" <<'PY' || fail "the workload's requests are not slices"
import json, sys
evs = json.load(open(sys.argv[1]))["traceEvents"]
b = [e for e in evs if e.get("ph") == "B" and e["name"] == "Request" and e["cat"] == "Demo"]
e = [e for e in evs if e.get("ph") == "E" and e["name"] == "Request" and e["cat"] == "Demo"]
assert b and e, "no Request slices"
print("workload: %d Request slices" % len(b))
PY
fi
echo PASS
