#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What a process offers, and processes by name (issue 14, usability): `evring providers`
# lists a process's providers with their events (id, level, keywords, opcode, fields) and
# counters (kind, unit, display name), in text and JSON, confined; `-n NAME` finds the one
# process of that name for providers, record and clrtop, and says clearly when none or
# several match.
# Usage: providers.sh EVRING WORKLOAD MINIRT CLRTOP
source "$(dirname "$0")/lib.sh"
need_python
MINIRT=$(realpath "${3:?usage: $0 EVRING WORKLOAD MINIRT CLRTOP}")
CLRTOP=$(realpath "${4:?usage: $0 EVRING WORKLOAD MINIRT CLRTOP}")

start_workload wl --rate 100 --threads 1
W=$WL_PID
mkfifo "$T/minirt.out"
"$MINIRT" >"$T/minirt.out" 2>"$T/minirt.err" &
M=$!
KILL_AT_EXIT+=("$M")
exec {MFD}<"$T/minirt.out"
expect "$MFD" "^ready $M\$" "minirt ready"
cat <&"$MFD" >/dev/null &

# Text: the workload's Demo provider and its events, with their fields.
"$EVRING" providers -p "$W" --debug-sandbox-probe >"$T/w.txt" 2>"$T/w.err" ||
	fail "providers -p: $(cat "$T/w.err")"
cat "$T/w.txt"
grep -qx "evring providers: sandbox probe: open(/etc/passwd): Operation not permitted" \
	"$T/w.err" || fail "providers is not confined: $(cat "$T/w.err")"
grep -qE "^Process $W \(.*workload --rate 100 --threads 1\): [0-9]+ providers, [0-9]+ events, \
[0-9]+ counters\$" "$T/w.txt" || fail "no process line"
grep -qE "^Provider Demo: [0-9]+ events, 0 counters\$" "$T/w.txt" || fail "no Demo provider"
grep -qE "^  RequestStart +[0-9]+ info +0x1 +start +id:u64 path:str method:str\$" "$T/w.txt" ||
	fail "RequestStart is not described"
grep -qE "^  Tick +[0-9]+ info +0x4 +seq:u64" "$T/w.txt" || fail "Tick is not described"

# JSON, by name: minirt's counters with kind, unit and display name; its events.
"$EVRING" providers -n minirt --json >"$T/m.json" 2>"$T/m.err" ||
	fail "providers -n minirt --json: $(cat "$T/m.err")"
python3 - "$T/m.json" "$M" <<'PY' || fail "providers --json"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["pid"] == int(sys.argv[2]), o["pid"]
by = {p["name"]: p for p in o["providers"]}
c = {x["name"]: x for x in by["System.Runtime"]["counters"]}
assert c["gc-heap-size"] == {"name": "gc-heap-size", "display_name": "GC Heap Size",
                             "unit": "MB", "kind": "gauge"}, c["gc-heap-size"]
assert c["work-item-latency"]["kind"] == "histogram", c["work-item-latency"]
e = {x["name"]: x for x in by["MiniRT"]["events"]}
assert e["GCStart"]["opcode"] == 1 and e["GCStart"]["level_name"] == "info", e["GCStart"]
assert [f["name"] for f in e["GCStart"]["fields"]][:2] == ["count", "depth"], e["GCStart"]
assert e["Dynamic"]["builtin"] and not e["GCStart"]["builtin"]
print(len(o["providers"]), "providers,", sum(len(p["counters"]) for p in o["providers"]),
      "counters")
PY

# -n for record and clrtop.
"$EVRING" record -n minirt --providers MiniRT --duration 200ms -o "$T/m.evtrace" \
	2>"$T/rec.err" || fail "record -n: $(cat "$T/rec.err")"
grep -q "recording process $M into" "$T/rec.err" || fail "record -n attached elsewhere"
"$CLRTOP" -b -n 1 -d 0.2 --name minirt >"$T/top.txt" </dev/null 2>"$T/top.err" ||
	fail "clrtop --name: $(cat "$T/top.err")"
grep -q "^PID $M  minirt  live" "$T/top.txt" || fail "clrtop --name: $(cat "$T/top.txt")"

# No match: said so, and a process of that name without the agent is named.
cp "$(command -v sleep)" "$T/evr-no-agent"
"$T/evr-no-agent" 1000 &
S=$!
KILL_AT_EXIT+=("$S")
st=0
"$EVRING" providers -n evr-no-agent 2>"$T/none.err" || st=$?
[[ $st == 1 ]] || fail "no match: exit status $st"
grep -qx "evring providers: no process named evr-no-agent runs libevring's agent (process $S \
of that name does not; evring ps lists those that do)" "$T/none.err" ||
	fail "no match: $(cat "$T/none.err")"

# Several: all named, none chosen.
start_workload wl2 --rate 100 --threads 1
W2=$WL_PID
# ambiguous NAME FILE: the error of FILE lists both workloads and chooses neither.
ambiguous() {
	grep -qE "^evring $1: 2 processes named workload run libevring's agent: $W \(.*\), $W2 \
\(.*\); choose one with -p PID\$" "$2" || fail "$1, two matches: $(cat "$2")"
}
st=0
"$EVRING" providers -n workload >/dev/null 2>"$T/amb1.err" || st=$?
[[ $st == 1 ]] || fail "providers, two matches: exit status $st"
ambiguous providers "$T/amb1.err"
st=0
"$EVRING" record -n workload -o "$T/x.evtrace" 2>"$T/amb2.err" || st=$?
[[ $st == 1 ]] || fail "record, two matches: exit status $st"
ambiguous record "$T/amb2.err"
st=0
"$CLRTOP" -b -n 1 --name workload </dev/null >/dev/null 2>"$T/amb.err" || st=$?
[[ $st == 1 ]] && grep -q "^clrtop: 2 processes named workload" "$T/amb.err" ||
	fail "clrtop, two matches: $st $(cat "$T/amb.err")"
echo "PASS"
