#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# convert --format ctf of a synthetic trace with awkward content (evr-ctf-mktrace: odd
# field names, every type, strings with NUL/invalid UTF-8/quotes, events without or not
# matching a schema, losses inside a packet, before a ring's first packet and on a ring
# without events): babeltrace2 must show what evring dump shows.
#   bash odd.sh EVRING MKTRACE
source "$(dirname "$0")/../cli/lib.sh"
need_python
command -v babeltrace2 >/dev/null 2>&1 || skip "babeltrace2 is not installed (scripts/setup --optional)"
CHECK=$(dirname "$0")/check_ctf.py

"$WORKLOAD" "$T/odd.evtrace" || fail "evr-ctf-mktrace"
"$EVRING" convert "$T/odd.evtrace" -f ctf -o "$T/ctf" 2>"$T/conv.err" ||
	fail "convert: $(cat "$T/conv.err")"
cat "$T/conv.err"
grep -q "^evring convert: 13 events, 15 lost, " "$T/conv.err" || fail "wrong summary"
grep -q "warning: 2 events had no schema or did not decode" "$T/conv.err" ||
	fail "no warning about the undecodable events"
[[ -f $T/ctf/stream_1 ]] || fail "no stream for the ring that only lost events"
babeltrace2 --clock-cycles "$T/ctf" >"$T/bt.txt" 2>"$T/bt.err" || fail "babeltrace2"
cat "$T/bt.txt" "$T/bt.err"
grep -q 'discarded 5 events .*stream_1"' "$T/bt.err" || fail "ring 1's losses not reported"
grep -q 'discarded 3 events .*stream_2"' "$T/bt.err" || fail "ring 2's losses not reported"
grep -q 'Odd.Prov:Bad"Name: ' "$T/bt.txt" || fail "event name with a quote"
python3 "$CHECK" "$EVRING" "$T/odd.evtrace" "$T/ctf" --expect-lost
echo "PASS"
