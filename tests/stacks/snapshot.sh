#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring stacks -p on a process whose threads are parked in known functions: each thread
# shows its function, and the stacks agree with eu-stack -p (elfutils) frame by frame,
# function names compared (both unwind with libdw; frame 0 may differ by the syscall
# restart, so addresses are not compared); a function inlined into one of them shows in the
# JSON, the text and eu-stack -i alike. Then a stripped copy of the same program.
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

# Inlined functions: park_in_sleep() sleeps through sleep_forever(), which is always inlined
# into it. The JSON frame of park_in_sleep names it, with the line of the nanosleep() call;
# the text shows it first under the frame's number and address, marked, as eu-stack -i
# shows it as a frame of its own at the same address just above park_in_sleep.
"$EVRING" stacks -p "$PROG_PID" --lines >"$T/lines.txt"
eu-stack -i -p "$PROG_PID" >"$T/eu-i.txt" 2>"$T/eu-i.err" || fail "eu-stack -i failed: $(cat "$T/eu-i.err")"
sleep_line=$(grep -n "nanosleep(&ts, NULL);" "$HERE/parked.c" | cut -d: -f1)
python3 - "$T/stacks.json" "$T/lines.txt" "$T/eu-i.txt" "$sleep_line" <<'PY' || fail "inlined frames"
import json, re, sys
doc = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
eu = open(sys.argv[3]).read()
line = int(sys.argv[4])
t = next(t for t in doc["threads"] if t["name"] == "p-sleeper")
i, f = next((i, f) for i, f in enumerate(t["frames"]) if f["func"] == "park_in_sleep")
inl = f["inlined"]
assert len(inl) == 1 and inl[0]["func"] == "sleep_forever", inl
assert inl[0]["file"].endswith("parked.c") and inl[0]["line"] == line, (inl, line)
assert all(g["inlined"] == [] for g in t["frames"] if g["func"] in ("sleeper_main", "start_thread")), t
pc = "0x" + f["pc"][2:].rjust(16, "0")
want = (rf"^#{i:<2} {pc} sleep_forever \(inlined\) at \S*parked\.c:{line}\n"
        rf"#{i:<2} {pc} park_in_sleep\+0x[0-9a-f]+ \(stacks-parked\) at \S*parked\.c:\d+$")
assert re.search(want, text, re.M), text
tid = t["tid"]
block = eu.split(f"TID {tid}:")[1].split("TID ")[0]
assert re.search(rf"^#\d+\s+{pc}\s+sleep_forever\n#\d+\s+{pc}\s+park_in_sleep$", block, re.M), block
print(f"inlined: sleep_forever at parked.c:{line} in frame {i} (park_in_sleep), as eu-stack -i shows it")
PY

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
