#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A library dlopen()ed after the heap session started is patched too: its 20 MiB kept in
# 1 KiB blocks (lib_keep) are in the profile, within 20% (sampling every 16 KiB). The site
# is found by address: the module map of a trace recorded without --sample-cpu is read when
# the recording starts, before the library was loaded.
source "$(dirname "$0")/lib.sh"

"$EVRING" record --heap=16K --providers Heap -o "$T/d.evtrace" -- "$BIN/heap-dlopen" \
	"$MODE" >"$T/prog.out" 2>"$T/rec.err" ||
	fail "record failed: $(cat "$T/rec.err")"
grep -q "^done" "$T/prog.out" || fail "heap-dlopen did not finish: $(cat "$T/prog.out")"
"$EVRING" report "$T/d.evtrace" >"$T/report.txt" 2>"$T/report.err" ||
	fail "report: $(cat "$T/report.err")"
keep=$(sed -n 's/^done //p' "$T/prog.out")
python3 - "$T/report.txt" "$keep" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
keep = int(sys.argv[2], 16)
for l in text.splitlines():
    m = re.match(r"\s+([\d.]+) (MiB)\s+\d+\s+\S+ \S+\s+\d+\s+(\S+)", l)
    if m and (m.group(3).startswith("lib_keep") or
              (m.group(3).startswith("0x") and keep <= int(m.group(3), 16) < keep + 256)):
        got = float(m.group(1))
        assert abs(got - 20) <= 4, f"lib_keep allocated {got} MiB, truth 20:\n{text}"
        break
else:
    raise SystemExit(f"no lib_keep site in the report:\n{text}")
PY
