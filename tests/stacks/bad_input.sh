#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Stacks and CPU samples on bad input, each with a clear message and a trace that still reads:
# - a process killed (SIGKILL) while it is sampled: record says how it died, the trace holds
#   the samples taken until then and dumps/converts;
# - a stripped binary: its frames are module+offset, its callers in libc still named;
# - JIT code without a perf map: frames are addresses, and dump says why in one line;
# - a perf map created after the recording began (a JIT that starts its map late): the
#   confined recorder has its broker open it at the end, so the trace alone resolves them;
# - another user's process with --sample-cpu: refused in one line (root only: setpriv).
# (Threads dying during a snapshot: snapshot_errors.sh.)
source "$(dirname "$0")/lib.sh"
need_python

# ---- killed while sampled ----
mkfifo "$T/rec.fifo"
"$EVRING" record --sample-cpu --stacks --providers Spin -o "$T/killed.evtrace" \
	-- "$BIN/stacks-spin" 1000000 >/dev/null 2>"$T/rec.fifo" &
rec=$!
KILL_AT_EXIT+=("$rec")
exec {RFD}<"$T/rec.fifo"
expect "$RFD" "recording .* \\(pid ([0-9]+)\\)" "record's 'recording' line"
spin_pid=${BASH_REMATCH[1]}
KILL_AT_EXIT+=("$spin_pid")
# Wait for a round of work (an event in the rings is not visible here; the CPU time is).
for ((i = 0; i < 2000; i++)); do
	ticks=$(awk '{ print $14 }' "/proc/$spin_pid/stat" 2>/dev/null || echo 0)
	((ticks >= 20)) && break
	sleep 0.01
done
kill -KILL "$spin_pid"
cat <&"$RFD" >"$T/rec.err" || true
st=0; wait "$rec" || st=$?
exec {RFD}<&-
((st == 0)) || { grep -q "perf_event_paranoid\|cpu-clock" "$T/rec.err" && skip "perf_events refused"; \
	fail "record of a killed process: status $st: $(cat "$T/rec.err")"; }
grep -q "stacks-spin died from signal 9 (Killed)" "$T/rec.err" || fail "no word of the kill: $(cat "$T/rec.err")"
grep -qE "evring record: [1-9][0-9]* CPU samples" "$T/rec.err" || fail "no samples: $(cat "$T/rec.err")"
"$EVRING" dump --json "$T/killed.evtrace" >"$T/killed.jsonl" 2>"$T/killed.err" ||
	fail "the trace of a killed process does not dump: $(cat "$T/killed.err")"
# Complete: no word of damage or truncation. A note on addresses in no mapping may come: the
# kernel's frame-pointer walk reads garbage past a frame of code built without frame
# pointers (glibc's, in the napping thread's syscalls) now and then, and such an address lies
# in no mapping; that says nothing about the trace being whole. It must be named for what it
# is (the trace records the process's anonymous executable memory): not "JIT code".
! grep -vE "[0-9]+ code addresses lie in no mapping of the process \(a frame-pointer walk" \
	"$T/killed.err" | grep -q "warning" ||
	fail "warnings on a complete trace: $(cat "$T/killed.err")"
! grep -q "JIT" "$T/killed.err" || fail "garbage addresses called JIT code: $(cat "$T/killed.err")"
"$EVRING" convert "$T/killed.evtrace" --format folded -o "$T/killed.folded" -q ||
	fail "the trace of a killed process does not convert"
python3 - "$T/killed.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in recs if r["type"] == "cpu_sample" and r.get("stack")]
assert s, "no CPU samples before the kill"
# A frame that resolves to nothing (the vDSO: libevring reads the clock as it starts) has
# only its "pc".
top = [r["stack"][0].get("frame", "") for r in s]
assert sum(f.startswith("spin_hot+") for f in top) > len(s) / 2, top[:5]
PY

# ---- a stripped binary ----
# In a bin/ beside a lib/ that is the build's: it finds libevring at $ORIGIN/../lib, as
# built and as installed (CMakeLists.txt).
mkdir "$T/bin"
ln -s "$(cd "$BIN/../lib" && pwd)" "$T/lib"
cp "$BIN/stacks-spin" "$T/bin/spin-stripped"
strip --strip-all "$T/bin/spin-stripped"
"$EVRING" record --sample-cpu --stacks --providers Spin -o "$T/stripped.evtrace" \
	-- "$T/bin/spin-stripped" 100 >/dev/null 2>"$T/srec.err" ||
	fail "record stripped: $(cat "$T/srec.err")"
"$EVRING" dump --json "$T/stripped.evtrace" >"$T/stripped.jsonl" 2>"$T/sdump.err" ||
	fail "dump stripped: $(cat "$T/sdump.err")"
python3 - "$T/stripped.jsonl" <<'PY'
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
frames = [f.get("frame", "") for r in recs for f in r.get("stack", [])]
assert frames, "no stacks"
own = [f for f in frames if f.startswith("spin-stripped")]
assert own and all(re.match(r"^spin-stripped\+0x[0-9a-f]+$", f) for f in own), own[:5]
assert any(re.match(r"^__libc_start_call_main\+0x[0-9a-f]+ \(libc\.so\.6\)$", f) for f in frames), \
    "libc frames lost their names"
PY

# ---- JIT code: no perf map, and a perf map that appears during the recording ----
MINIRT=$BIN/minirt
[[ -x $MINIRT ]] || MINIRT=$(dirname "$BIN")/bin/minirt
if [[ -x $MINIRT ]]; then
	cleanup_hook() {
		[[ -n ${JIT_PID:-} ]] && rm -f "/tmp/perf-$JIT_PID.map"
	}
	start_prog nomap "$MINIRT" --phase exception-storm --threads 2
	"$EVRING" record -p "$PROG_PID" --stacks --providers 'MiniRT:0x8000:4' --duration 300ms \
		-o "$T/nomap.evtrace" 2>"$T/nrec.err" || fail "record minirt: $(cat "$T/nrec.err")"
	kill "$PROG_PID"
	wait "$PROG_PID" 2>/dev/null || true
	"$EVRING" dump "$T/nomap.evtrace" >"$T/nomap.txt" 2>"$T/nomap.err" || fail "dump: $(cat "$T/nomap.err")"
	grep -qE "^    at 0x[0-9a-f]+$" "$T/nomap.txt" || fail "no bare JIT address: $(head "$T/nomap.txt")"
	[[ $(wc -l <"$T/nomap.err") == 1 ]] &&
		grep -qE "evring dump: warning: .*nomap.evtrace: [0-9]+ code addresses lie in anonymous executable memory \(JIT code\) and there is no perf map for them \(none in the trace, /tmp/perf-$PROG_PID.map missing or not trusted here\)(; [0-9]+ code addresses lie in no mapping of the process \([^)]*\))?: they show as addresses" \
			"$T/nomap.err" || fail "no clear word of the missing perf map: $(cat "$T/nomap.err")"

	# Late: the map is moved away before the recording starts and back once it runs, as a
	# JIT that creates its map late would have it (minirt keeps appending to it meanwhile).
	start_prog late "$MINIRT" --perf-map --phase exception-storm --threads 2
	JIT_PID=$PROG_PID
	mv "/tmp/perf-$JIT_PID.map" "$T/held.map"
	mkfifo "$T/late.fifo"
	"$EVRING" record -p "$JIT_PID" --stacks --sample-cpu --providers 'MiniRT:0x8000:4' \
		--duration 1s -o "$T/late.evtrace" 2>"$T/late.fifo" &
	rec=$!
	KILL_AT_EXIT+=("$rec")
	exec {LFD}<"$T/late.fifo"
	expect "$LFD" "recording " "record's 'recording' line"
	mv "$T/held.map" "/tmp/perf-$JIT_PID.map"
	cat <&"$LFD" >"$T/late.err" || true
	wait "$rec" || fail "record (late map): $(cat "$T/late.err")"
	kill "$JIT_PID"
	wait "$JIT_PID" 2>/dev/null || true
	"$EVRING" dump --json "$T/late.evtrace" >"$T/late-here.jsonl" 2>"$T/late-dump.err" ||
		fail "dump (late map): $(cat "$T/late-dump.err")"
	# Nothing but, now and then, a garbage frame-pointer address (see the killed case).
	! grep -vE "[0-9]+ code addresses lie in no mapping of the process \(a frame-pointer walk" \
		"$T/late-dump.err" | grep -q . ||
		fail "dump (late map) warns: $(cat "$T/late-dump.err")"
	# The recorder read the map at the end (through its broker): the trace alone resolves.
	rm -f "/tmp/perf-$JIT_PID.map"
	"$EVRING" dump --json "$T/late.evtrace" >"$T/late.jsonl" 2>"$T/late-dump.err" ||
		fail "dump (late map, map removed): $(cat "$T/late-dump.err")"
	cmp -s "$T/late-here.jsonl" "$T/late.jsonl" ||
		fail "the late perf map is not in the trace: $(cat "$T/late-dump.err")"
	python3 - "$T/late.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
thrown = [r for r in recs if r.get("event") == "ExceptionThrown"]
assert thrown, "no exceptions recorded"
for r in thrown:
    j = [f["frame"] for f in r.get("stack", []) if f.get("frame", "").endswith("([jit])")]
    assert j, f"an exception's JIT frames did not resolve from the late perf map: {r['stack']}"
print(f"late perf map: {len(thrown)} exceptions, JIT frames named")
PY
else
	echo "note: minirt not built: the perf map cases are not run"
fi

# ---- another user's process, sampled ----
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups "$EVRING" --help >/dev/null 2>&1; then
	start_prog other "$BIN/stacks-parked"
	st=0
	(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$EVRING" record -p "$PROG_PID" \
		--sample-cpu -o /dev/null) >/dev/null 2>"$T/other.err" || st=$?
	[[ $st == 1 && $(wc -l <"$T/other.err") == 1 ]] || fail "other user: $st $(cat "$T/other.err")"
	grep -q "process $PROG_PID belongs to user root (uid 0); you can attach only to your own processes" \
		"$T/other.err" || fail "other user: $(cat "$T/other.err")"
else
	echo "note: the other-user case needs root and setpriv"
fi
echo PASS
