#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring stacks -p on a process whose threads are parked in known functions: each thread
# shows its function, and the stacks agree with eu-stack -p (elfutils) frame by frame,
# function names compared (both unwind with libdw; frame 0 may differ by the syscall
# restart, so addresses are not compared). Then a stripped copy of the same program.
source "$(dirname "$0")/lib.sh"
need_python
command -v eu-stack >/dev/null || skip "eu-stack not found (Debian package elfutils)"

start_prog parked "$BIN/stacks-parked"
wait_blocked "$PROG_PID" 4
"$EVRING" stacks -p "$PROG_PID" --json >"$T/stacks.json"
"$EVRING" stacks -p "$PROG_PID" >"$T/stacks.txt"
eu-stack -p "$PROG_PID" >"$T/eu.txt" 2>"$T/eu.err" || fail "eu-stack failed: $(cat "$T/eu.err")"
python3 "$HERE/check_snapshot.py" "$T/stacks.json" "$T/eu.txt" "$T/stacks.txt" \
	p-reader:park_in_read p-cond:park_in_cond p-sleeper:park_in_sleep stacks-parked:park_in_read

# Stripped: the program's own frames become module+offset, libc's still resolve.
cp "$BIN/stacks-parked" "$T/parked-stripped"
strip --strip-all "$T/parked-stripped"
start_prog stripped "$T/parked-stripped"
wait_blocked "$PROG_PID" 4
"$EVRING" stacks -p "$PROG_PID" >"$T/stripped.txt" 2>"$T/stripped.err" ||
	fail "stacks of a stripped binary failed: $(cat "$T/stripped.err")"
grep -qE '^#1  0x[0-9a-f]+ parked-stripped\+0x[0-9a-f]+$' "$T/stripped.txt" ||
	fail "no module+offset frame for the stripped binary: $(cat "$T/stripped.txt")"
grep -qE '^#0  0x[0-9a-f]+ read\+0x[0-9a-f]+ \(libc\.so\.6\)$' "$T/stripped.txt" ||
	fail "libc frames no longer resolve: $(cat "$T/stripped.txt")"
echo PASS
