#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What evring record may make a traced process commit (issue 14, defect 2): a --buffer-size
# over the process's limit (here EVR_MEMORY_MAX_SESSION=8M in its environment) is refused
# with one line that says what was asked, the limit and how to raise it; without
# --buffer-size the session gets a buffer that fits, and record and ps --sessions report
# the size actually granted.
source "$(dirname "$0")/lib.sh"
need_python

EVR_MEMORY_MAX_SESSION=8M start_workload wl --rate 1000 --threads 1

st=0
"$EVRING" record -p "$WL_PID" --buffer-size 64M --duration 2s -o "$T/big.evtrace" \
	2>"$T/big.err" || st=$?
cat "$T/big.err"
[[ $st == 1 ]] || fail "--buffer-size 64M over an 8 MiB limit: exit status $st"
[[ $(wc -l <"$T/big.err") == 1 ]] || fail "not one line"
grep -qE "^evring record: --buffer-size 64M: a buffer of [0-9.]+ MiB \([0-9]+ rings of \
[0-9.]+ MiB\) is over process $WL_PID's limit of 8 MiB per session; ask for less, or have \
the program raise it \(EVR_MEMORY_MAX_SESSION=SIZE in its environment, or \
evr_session_limits_set\(\)\)\$" "$T/big.err" || fail "not the limit's message"

start_record rec -p "$WL_PID" --providers Demo -o "$T/ok.evtrace"
[[ $LINE =~ buffer:\ ([0-9]+)\ rings\ of\ ([0-9.]+)\ (MiB|KiB),\ [0-9.]+\ MiB\ of\ shared ]] ||
	fail "record does not report the buffer granted: $LINE"
echo "$LINE"
rings=${BASH_REMATCH[1]} ring=${BASH_REMATCH[2]} unit=${BASH_REMATCH[3]}
python3 - "$rings" "$ring" "$unit" <<'PY' || fail "the buffer granted does not fit the limit"
import sys
rings, ring, unit = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
kib = ring * (1024 if unit == "MiB" else 1)
assert kib <= 4096 and rings * kib <= 8192, (rings, kib)
PY
"$EVRING" ps --sessions >"$T/ps.txt" || fail "ps --sessions"
"$EVRING" ps --sessions --json >"$T/ps.json" || fail "ps --sessions --json"
cat "$T/ps.txt"
grep -qE "session [0-9]+: Demo.*, [0-9]+ KiB/ring, [0-9.]+ MiB in all, client evring record" \
	"$T/ps.txt" || fail "ps --sessions does not show the memory granted"
python3 - "$T/ps.json" "$WL_PID" "$rings" <<'PY' || fail "ps --json: shm_size"
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o["pid"] == int(sys.argv[2]):
        s = o["session_list"][0]
        assert s["shm_size"] > int(sys.argv[3]) * s["ring_size"], s
        break
else:
    raise SystemExit("not listed")
PY
kill -INT "$REC_PID"
finish_record "$REC_FD" "$T/rec.log"
wait "$REC_PID" || fail "record exited with $?"
echo "PASS"
