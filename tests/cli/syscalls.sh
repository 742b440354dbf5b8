#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# record --syscalls (docs/syscalls.md): a static program (syscalls-work.c) makes W write()s,
# M openat()s of a missing file (ENOENT) and F of /dev/null, as the child of an instrumented
# program (syscalls-launch.c) started after the recording began, so that the tracepoints'
# inherited events must follow it. Its write/openat counts in report --json are exact, its
# errors are counted with their errno, and they equal what `strace -c -f` counts for the same
# program; the same with -p PID on a running process and with --syscalls=LIST (only the
# listed calls). The report's table shows them; a wrong name is a one-line error.
# Skipped (77), with the reason, where perf tracepoints cannot be opened (not root, no
# CAP_PERFMON, no tracefs).
source "$(dirname "$0")/lib.sh"
LAUNCH=$(realpath "${3:?usage: $0 EVRING WORKLOAD LAUNCH WORK}")
WORK=$(realpath "${4:?usage: $0 EVRING WORKLOAD LAUNCH WORK}")
need_python
W=1000 M=37 F=25

st=0
"$EVRING" record --syscalls -o "$T/launch.evtrace" -- "$LAUNCH" "$WORK" $W $M $F \
	>"$T/launch.out" 2>"$T/launch.err" || st=$?
if ((st != 0)) && grep -qE "CAP_PERFMON|tracefs|perf_event_paranoid|raw_syscalls" "$T/launch.err"; then
	skip "perf tracepoints cannot be opened here: $(grep -m1 -o 'evring record: .*' "$T/launch.err")"
fi
((st == 0)) || fail "record --syscalls failed ($st): $(cat "$T/launch.err")"
grep -qE "^evring record: [0-9]+ system calls \(.*\), 0 tracepoint records lost" "$T/launch.err" ||
	fail "no system-call summary, or records lost: $(cat "$T/launch.err")"
[[ $(cat "$T/launch.out") =~ ^child\ ([0-9]+)\ status\ 0$ ]] || fail "launcher: $(cat "$T/launch.out")"
child=${BASH_REMATCH[1]}

# check LABEL TRACE CHILD [LIST]: the child's write/openat in report --json are exact.
check() {
	"$EVRING" report --json "$2" >"$T/$1.json" 2>"$T/$1.report.err" ||
		fail "report --json ($1): $(cat "$T/$1.report.err")"
	python3 - "$T/$1.json" "$3" $W $M $F "${4:-}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
child, w, m, f, only = int(sys.argv[2]), *map(int, sys.argv[3:6]), sys.argv[6]
procs = {p["pid"]: {s["name"]: s for s in p["syscalls"]} for p in d["syscalls_by_process"]}
assert child in procs, f"no system calls of the child {child}: {list(procs)}"
c = procs[child]
assert c["write"]["count"] == w and c["write"]["errors"] == 0, c["write"]
o = c["openat"]
assert o["count"] == 1 + m + f, f"openat: {o['count']} calls, expected {1 + m + f}"
assert o["errors"] == m and o["errnos"] == {"ENOENT": m}, o
assert o["max_ns"] >= o["min_ns"] > 0 and o["total_ns"] >= o["max_ns"], o
if only:
    names = {s["name"] for p in procs.values() for s in p.values()}
    assert names <= set(only.split(",")), f"--syscalls={only} recorded {names}"
else:
    # Every call of the launcher's process too, under its own pid.
    assert len(procs) >= 2, list(procs)
totals = {s["name"]: s["count"] for s in d["syscalls"]}
assert totals["write"] >= w and totals["openat"] >= 1 + m + f, totals
print(f"{sys.argv[1]}: child {child}: write {c['write']['count']}, openat {o['count']} "
      f"({o['errors']} ENOENT)")
PY
}
check launch "$T/launch.evtrace" "$child"

# The same program under strace -c -f: the same counts (its output is a table; with -U the
# columns are fixed: calls, errors, name).
if command -v strace >/dev/null; then
	strace -f -c -U calls,errors,name -o "$T/strace.txt" "$WORK" $W $M $F ||
		fail "strace: $(cat "$T/strace.txt")"
	python3 - "$T/strace.txt" "$T/launch.json" "$child" <<'PY'
import json, sys
counts = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3 and f[0].isdigit() and f[1].isdigit():
        counts[f[2]] = (int(f[0]), int(f[1]))
    elif len(f) == 2 and f[0].isdigit():
        counts[f[1]] = (int(f[0]), 0)
d = json.load(open(sys.argv[2]))
ev = next({s["name"]: (s["count"], s["errors"]) for s in p["syscalls"]}
          for p in d["syscalls_by_process"] if p["pid"] == int(sys.argv[3]))
for name in ("write", "openat"):
    assert ev[name] == counts[name], f"{name}: evring {ev[name]}, strace -c -f {counts[name]}"
print(f"strace -c -f agrees: write {counts['write']}, openat {counts['openat']} (calls, errors)")
PY
else
	echo "strace not found: no comparison with strace -c" >&2
fi

# The text table: one line per system call of the child's process, with the errno.
"$EVRING" report "$T/launch.evtrace" >"$T/launch.txt" 2>"$T/launch.report.err" ||
	fail "report: $(cat "$T/launch.report.err")"
awk -v p="$child" '$1 == "Process" && $2 == p { on = 1; next } /^Process/ { on = 0 }
	on && $NF == "'$M'" && $(NF - 1) == "ENOENT" && $(NF - 2) == "openat" { ok = 1 }
	END { exit !ok }' "$T/launch.txt" ||
	fail "the report has no openat line with ENOENT $M for process $child: $(cat "$T/launch.txt")"

# Chrome/Perfetto: one "X" slice per call on the child's thread, with fd/size and errno.
"$EVRING" convert --format chrome -o "$T/launch.chrome.json" "$T/launch.evtrace" \
	2>"$T/convert.err" || fail "convert: $(cat "$T/convert.err")"
grep -qE "[0-9]+ system calls" "$T/convert.err" || fail "convert's summary: $(cat "$T/convert.err")"
python3 - "$T/launch.chrome.json" "$child" $W $M $F <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
child, w, m, f = map(int, sys.argv[2:])
sl = [e for e in d["traceEvents"] if e.get("cat") == "syscall" and e["tid"] == child]
assert all(e["ph"] == "X" and e["pid"] == child and e["dur"] >= 0 for e in sl), sl[:3]
writes = [e for e in sl if e["name"] == "write"]
assert len(writes) == w, f"{len(writes)} write slices, expected {w}"
assert all(e["args"]["size"] == 1 and e["args"]["ret"] == 1 for e in writes), writes[:3]
assert len({e["args"]["fd"] for e in writes}) == 1, "the writes are not on one fd"
enoent = [e for e in sl if e["name"] == "openat" and e["args"].get("errno") == "ENOENT"]
assert len(enoent) == m, f"{len(enoent)} openat slices with ENOENT, expected {m}"
print(f"chrome: {len(sl)} slices on thread {child}: {len(writes)} write, {len(enoent)} ENOENT")
PY

# dump shows each call (text and --json), in time order with the events: the child's writes
# and its openat calls with ENOENT, exactly.
"$EVRING" dump --json "$T/launch.evtrace" >"$T/launch.jsonl" 2>"$T/dump.err" ||
	fail "dump --json: $(cat "$T/dump.err")"
"$EVRING" dump "$T/launch.evtrace" >"$T/launch.dump" 2>>"$T/dump.err" ||
	fail "dump: $(cat "$T/dump.err")"
n=$(grep -c "pid=$child tid=$child SYSCALL openat(.* = -2 ENOENT " "$T/launch.dump" || true)
((n == M)) || fail "dump shows $n openat calls of $child with ENOENT, expected $M: $(grep SYSCALL "$T/launch.dump" | head -5)"
python3 - "$T/launch.jsonl" "$child" $W $M <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
child, w, m = map(int, sys.argv[2:])
calls = [r for r in recs if r["type"] == "syscall" and r["tid"] == child]
writes = [r for r in calls if r["name"] == "write"]
assert len(writes) == w and all(r["ret"] == 1 for r in writes), f"{len(writes)} writes"
enoent = [r for r in calls if r["name"] == "openat" and r.get("errno") == "ENOENT"]
assert len(enoent) == m, f"{len(enoent)} openat with ENOENT, expected {m}"
ts = [r["ts"] for r in recs if "ts" in r]
assert ts == sorted(ts), "dump's records are not in time order"
print(f"dump: {len(calls)} system calls of thread {child}")
PY

# -p PID: a running process (its threads opened one by one), whose child starts later.
mkfifo "$T/wait.in" "$T/wait.out"
"$LAUNCH" --wait "$WORK" $W $M $F <"$T/wait.in" >"$T/wait.out" 2>"$T/wait.err" &
WL_PID=$!
KILL_AT_EXIT+=("$WL_PID")
exec {GO_FD}>"$T/wait.in" {WL_FD}<"$T/wait.out"
expect "$WL_FD" "^ready $WL_PID\$" "'ready $WL_PID' from the launcher"
start_record pid --syscalls=write,openat -p "$WL_PID" -o "$T/pid.evtrace"
echo go >&"$GO_FD"
expect "$WL_FD" "^child [0-9]+ status 0\$" "the child's status"
[[ $LINE =~ ^child\ ([0-9]+) ]]
pchild=${BASH_REMATCH[1]}
finish_record "$REC_FD" "$T/pid.rec.err"
wait "$REC_PID" || fail "record -p: $(cat "$T/pid.rec.err")"
grep -qE "system calls \(.*2 kinds selected\), 0 tracepoint records lost" "$T/pid.rec.err" ||
	fail "record -p summary: $(cat "$T/pid.rec.err")"
check pid "$T/pid.evtrace" "$pchild" write,openat

# A name that is no system call: one line, before anything is attached.
one_line 2 "'nosuchcall' is no system call known here" "$EVRING" record \
	--syscalls=write,nosuchcall -p "$WL_PID" -o "$T/bad.evtrace"
[[ ! -e $T/bad.evtrace ]] || fail "a file was left behind by the refused record"

# Without CAP_PERFMON and CAP_SYS_ADMIN (root with both dropped): one error line that names
# them and the paranoid level, and the program is let go.
if command -v setpriv >/dev/null && ((EUID == 0)); then
	st=0
	setpriv --bounding-set -perfmon,-sys_admin --inh-caps -perfmon,-sys_admin \
		"$EVRING" record --syscalls -o "$T/nocap.evtrace" -- "$LAUNCH" "$WORK" 1 0 0 \
		>/dev/null 2>"$T/nocap.err" || st=$?
	((st == 1)) || fail "record --syscalls without CAP_PERFMON exited with $st: $(cat "$T/nocap.err")"
	head -1 "$T/nocap.err" | grep -qE "^evring record: cannot trace the system calls of thread \
[0-9]+ of process [0-9]+: Permission denied \(tracepoints need CAP_PERFMON or CAP_SYS_ADMIN, \
or kernel.perf_event_paranoid -1, here -?[0-9]+" ||
		fail "without CAP_PERFMON: $(cat "$T/nocap.err")"
	echo "ok: $(head -1 "$T/nocap.err")"
fi
echo PASS
