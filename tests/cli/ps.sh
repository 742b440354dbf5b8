#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring ps lists a running workload with its command line, session count and clock, in
# text and JSON, sorted by pid; a process that exits disappears from the list without an
# error. --clock says why a process uses its clock (EVR_CLOCK=monotonic forces one).
source "$(dirname "$0")/lib.sh"
need_python

start_workload wl1 --rate 100 --threads 1
P1=$WL_PID
EVR_CLOCK=monotonic start_workload wl2 --rate 100 --threads 1 --late-after 7
P2=$WL_PID

"$EVRING" ps >"$T/ps.txt" 2>"$T/ps.err" || fail "ps: $(cat "$T/ps.err")"
cat "$T/ps.txt"
[[ ! -s $T/ps.err ]] || fail "ps printed on stderr: $(cat "$T/ps.err")"
head -1 "$T/ps.txt" | grep -qE '^ +PID +SESS +CLOCK +COMMAND$' || fail "no header line"
grep -qE "^ *$P1 +0 +(tsc|mono) +.*workload --rate 100 --threads 1\$" "$T/ps.txt" ||
	fail "$P1 not listed"
grep -qE "^ *$P2 +0 +mono +.*workload --rate 100 --threads 1 --late-after 7\$" "$T/ps.txt" ||
	fail "$P2 not listed (with CLOCK mono)"
tail -n +2 "$T/ps.txt" | awk '{print $1}' | sort -n -c || fail "not sorted by pid"

"$EVRING" ps --json --sessions >"$T/ps.json" || fail "ps --json"
python3 - "$T/ps.json" "$P1" "$P2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
pids = [r["pid"] for r in rows]
assert pids == sorted(pids), pids
by = {r["pid"]: r for r in rows}
for p in sys.argv[2:]:
    r = by[int(p)]
    assert r["sessions"] == 0 and r["session_list"] == [], r
    assert r["argv"][0].endswith("workload") and r["argv"][1:3] == ["--rate", "100"], r
    c = r["clock"]
    assert c["kind"] in ("tsc", "mono") and c["reason"] and c["source"], c
# The forced one says so; the other says why it uses what it uses.
c2 = by[int(sys.argv[3])]["clock"]
assert c2["kind"] == "mono" and c2["reason"] == "EVR_CLOCK=monotonic", c2
c1 = by[int(sys.argv[2])]["clock"]
if c1["kind"] == "tsc":
    assert "TSC" in c1["reason"] and 5e8 < c1["tsc_hz"] < 1e10, c1
print("json ok:", len(rows), "processes; clock of", sys.argv[2] + ":", c1["kind"], "-", c1["reason"])
PY
"$EVRING" ps --clock >"$T/psc.txt" || fail "ps --clock"
grep -qE "^ +clock: mono: EVR_CLOCK=monotonic \(clocksource " "$T/psc.txt" ||
	fail "ps --clock does not say why $P2 uses CLOCK_MONOTONIC: $(cat "$T/psc.txt")"

# With a session: the count and the session's description.
start_record rec -p "$P1" --providers 'Demo:0x4:4' -o "$T/r.evtrace"
"$EVRING" ps --sessions >"$T/ps2.txt" || fail "ps --sessions"
cat "$T/ps2.txt"
grep -qE "^ *$P1 +1 " "$T/ps2.txt" || fail "the session is not counted"
grep -q "session [0-9]*: Demo:0x4:4, discard, .*client evring record (pid $REC_PID)" \
	"$T/ps2.txt" || fail "the session is not described"
kill -INT "$REC_PID"
wait "$REC_PID" || fail "record did not stop cleanly on SIGINT"

# A process that is gone is skipped, quietly.
kill -9 "$P2"
wait "$P2" 2>/dev/null || true
"$EVRING" ps >"$T/ps3.txt" 2>"$T/ps3.err" || fail "ps after a process died"
[[ ! -s $T/ps3.err ]] || fail "ps complained about a dead process: $(cat "$T/ps3.err")"
grep -qE "^ *$P2 " "$T/ps3.txt" && fail "a dead process is listed"
grep -qE "^ *$P1 " "$T/ps3.txt" || fail "$P1 vanished"
echo "PASS"
