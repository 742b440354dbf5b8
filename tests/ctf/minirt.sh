#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring convert --format ctf of a real recording: minirt (runtime events and the
# System.Runtime counters) converted to CTF must read in babeltrace2 with the same events,
# times (cycles and absolute), cpus, tids and field values as evring dump shows.
#   bash minirt.sh EVRING MINIRT
source "$(dirname "$0")/../cli/lib.sh"
need_python
command -v babeltrace2 >/dev/null 2>&1 || skip "babeltrace2 is not installed (scripts/setup --optional)"
CHECK=$(dirname "$0")/check_ctf.py

# --no-sandbox: LeakSanitizer (ASan builds) cannot work inside the sandbox.
"$EVRING" record --no-sandbox --providers MiniRT,System.Runtime --counter-interval 200ms \
	-o "$T/t.evtrace" -- "$WORKLOAD" --seconds 2 --phase-seconds 0.4 >"$T/rec.log" 2>&1 ||
	fail "record: $(cat "$T/rec.log")"
grep -E "^evring record: " "$T/rec.log"
# A loaded machine (or a sanitizer build) may lose events when every ring is busy: they
# must then be the same in the CTF trace.
[[ $(grep -E '^evring record: [0-9]+ events, ' "$T/rec.log") =~ \ ([0-9]+)\ lost, ]] ||
	fail "no record summary"
lost=${BASH_REMATCH[1]}
"$EVRING" convert "$T/t.evtrace" --format ctf -o "$T/ctf" 2>"$T/conv.err" ||
	fail "convert: $(cat "$T/conv.err")"
cat "$T/conv.err"
grep -Eq "^evring convert: [1-9][0-9]* events, $lost lost, .* to $T/ctf in " "$T/conv.err" ||
	fail "no summary line with $lost lost"
[[ -s $T/ctf/metadata ]] && compgen -G "$T/ctf/stream_*" >/dev/null || fail "no CTF files"
python3 "$CHECK" "$EVRING" "$T/t.evtrace" "$T/ctf" --min-events 100

# The environment names the traced process.
babeltrace2 -c sink.text.details "$T/ctf" >"$T/details.txt" ||
	fail "babeltrace2 -c sink.text.details failed"
for key in hostname vpid procname exe argv tracer_name evring_version; do
	grep -q "^ *$key: " "$T/details.txt" || fail "no '$key' in the trace environment"
done
grep -q "^ *tracer_name: evring$" "$T/details.txt" || fail "tracer_name is not evring"
echo "PASS"
