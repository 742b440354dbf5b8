#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record -- PROGRAM: traces from the program's first event (Tick 1), records until
# it exits, reports its exit status; a program that cannot run or never connects is a
# one-line error.
source "$(dirname "$0")/lib.sh"
need_python
N=5000

"$EVRING" record --providers 'Demo:0x4:4' -o "$T/l.evtrace" -- "$WORKLOAD" --events "$N" \
	--threads 2 --pin >"$T/wl.out" 2>"$T/rec.err" || fail "record exited with $?: $(cat "$T/rec.err")"
cat "$T/rec.err"
grep -q "^done $N " "$T/wl.out" || fail "the workload did not finish: $(cat "$T/wl.out")"
grep -qE "^evring record: [0-9]+ events, .* 0 lost, " "$T/rec.err" || fail "summary"
grep -q "^evring record: process [0-9]* exited (it ended the session); .*workload exited with \
status 0$" "$T/rec.err" ||
	fail "the summary does not give the program's status"
"$EVRING" dump "$T/l.evtrace" >"$T/l.txt" || fail "dump failed"
check_dump --text "$T/l.txt" --ticks "$N" --only Tick --no-lost

# The program's own failure is reported, and is not evring's.
"$EVRING" record --providers Demo -o "$T/f.evtrace" -- "$WORKLOAD" --threads 0 \
	>/dev/null 2>"$T/f.err" || fail "record failed for a failing program: $(cat "$T/f.err")"
grep -q "exited with status 2" "$T/f.err" || fail "status 2 not reported: $(cat "$T/f.err")"

# Cannot run: one line, non-zero.
if "$EVRING" record -o "$T/x.evtrace" -- "$T/no-such-program" 2>"$T/x.err"; then
	fail "record of a missing program succeeded"
fi
[[ $(wc -l <"$T/x.err") == 1 ]] && grep -q "cannot run .*no-such-program" "$T/x.err" ||
	fail "missing program: $(cat "$T/x.err")"
[[ ! -e $T/x.evtrace ]] || fail "an empty trace file was left behind"

# Not linked with libevring: it exits without connecting.
if "$EVRING" record -o "$T/y.evtrace" -- true 2>"$T/y.err"; then
	fail "record of a program without libevring succeeded"
fi
[[ $(wc -l <"$T/y.err") == 1 ]] && grep -q "before connecting: is it linked with libevring" \
	"$T/y.err" || fail "program without libevring: $(cat "$T/y.err")"
echo "PASS"
