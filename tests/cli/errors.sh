#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every user error is one line naming its cause, with a non-zero exit status: bad options,
# an unknown pid, a process without the agent, an output that cannot be written, a full
# disk or a file size limit during the recording (the file written so far stays readable).
source "$(dirname "$0")/lib.sh"
need_python

# written_before FILE: N from record's "the N events (...) written before are readable".
written_before() {
	sed -nE 's/.*recording stopped; the ([0-9]+) events .* written before are readable$/\1/p' "$1"
}

one_line 2 "unknown command 'nope'" "$EVRING" nope
one_line 2 "unknown option '--bogus'" "$EVRING" record --bogus -p 1
one_line 2 "option '--duration' needs a value" "$EVRING" record -p 1 --duration
one_line 2 "--mode: 'fast' is not discard or overwrite" "$EVRING" record -p 1 --mode fast
one_line 2 "--duration: invalid duration '5x'" "$EVRING" record -p 1 --duration 5x
one_line 2 "--buffer-size: invalid size 'lots'" "$EVRING" record -p 1 --buffer-size lots
one_line 2 "^evring record: -p: 'abc' is not a process id" "$EVRING" record -p abc
one_line 2 "^evring record: --process-id: 'abc' is not a process id" "$EVRING" record --process-id abc
one_line 2 "say what to record" "$EVRING" record
one_line 2 "exclude each other" "$EVRING" record -p 1 -- true
one_line 2 "which file" "$EVRING" dump
one_line 2 "unknown option '-x'" "$EVRING" ps -x

# A pid nobody has.
pid=$(($(cat /proc/sys/kernel/pid_max) - 1))
while [[ -e /proc/$pid ]]; do pid=$((pid - 1)); done
one_line 1 "no process $pid" "$EVRING" record -p "$pid" -o "$T/a.evtrace"
[[ ! -e $T/a.evtrace ]] || fail "a failed attach left an output file"

# A process without libevring. It says so once it runs its own program: right
# after the fork, /proc/PID/comm would still name the shell.
coproc PLAIN { exec python3 -c 'import sys, time; print("ready", flush=True); time.sleep(600)'; }
S=$PLAIN_PID
KILL_AT_EXIT+=("$S")
read -r ready <&"${PLAIN[0]}"
[[ $ready == ready ]] || fail "the plain process did not start"
one_line 1 "process $S \(python3\) does not run libevring's agent" \
	"$EVRING" record -p "$S" -o "$T/a.evtrace"

start_workload wl --rate 20000 --threads 2
one_line 1 "cannot open output $T/nodir/a.evtrace: No such file or directory" \
	"$EVRING" record -p "$WL_PID" -o "$T/nodir/a.evtrace"
# Values that need no process are bad command lines: exit 2, naming the option, before
# attaching (issue 14, defect 7): the pid nobody has is not even looked at.
one_line 2 "^evring record: --buffer-size 16K is too small" \
	"$EVRING" record -p "$WL_PID" --buffer-size 16K -o "$T/a.evtrace"
one_line 2 "^evring record: --buffer-size 256 is too small" \
	"$EVRING" record -p "$pid" --buffer-size 256 -o "$T/a.evtrace"
one_line 2 "^evring record: --providers: provider 1 \"Demo:0xz\"" \
	"$EVRING" record -p "$WL_PID" --providers 'Demo:0xz' -o "$T/a.evtrace"
one_line 2 "^evring record: --providers: provider 1 \"MiniRT:0xZZ\": keywords" \
	"$EVRING" record -p "$pid" --providers 'MiniRT:0xZZ' -o "$T/a.evtrace"
one_line 2 "^evring record: --providers: .*Demo" \
	"$EVRING" record --providers 'Demo,Demo' -o "$T/a.evtrace" -- "$WORKLOAD" --events 1
[[ ! -e $T/a.evtrace ]] || fail "a bad command line left an output file"

# What the process does not have records nothing: a warning naming what it has, exit 0.
"$EVRING" record -p "$WL_PID" --providers NoSuchProvider,Demo:0x100:2 --counter-interval 1s \
	--duration 200ms -o "$T/w.evtrace" 2>"$T/w.err" || fail "record: $(cat "$T/w.err")"
cat "$T/w.err"
grep -q "^evring record: warning: --providers: process $WL_PID has no provider NoSuchProvider: \
nothing of it is recorded (it has: .*Demo" "$T/w.err" || fail "no warning about NoSuchProvider"
grep -q "^evring record: warning: --providers: no event of Demo passes keywords 0x100 at level 2" \
	"$T/w.err" || fail "no warning about Demo's keywords"
grep -qE "^evring record: warning: --counter-interval: none of the providers asked for has \
counters: no counter is recorded \(the process's counters are in: Memory, Process" "$T/w.err" ||
	fail "no warning about --counter-interval"
# A program started by record registers its providers after the session starts: said at the
# end, from what reached the session.
"$EVRING" record --providers NoSuchProvider -o "$T/w.evtrace" -- "$WORKLOAD" --events 10 \
	>/dev/null 2>"$T/w.err" || fail "record --: $(cat "$T/w.err")"
grep -q "^evring record: warning: --providers: nothing of provider NoSuchProvider reached the \
recording" "$T/w.err" || fail "no warning about NoSuchProvider with -- PROGRAM: $(cat "$T/w.err")"

# A full device from the first write.
one_line 1 "No space left on device" "$EVRING" record -p "$WL_PID" -o /dev/full

# The file size limit is reached during the recording: stop, say so, keep the file valid.
# 6 MiB: more than direct I/O's first batch can hold (4 MiB and a packet), which is written
# whole or not at all; with 512 KiB a recorder late for its first flush (a loaded machine)
# had its first batch refused and nothing written before it (1 run in 6).
st=0
(ulimit -f 6144 && exec "$EVRING" record -p "$WL_PID" --providers Demo -o "$T/big.evtrace") \
	2>"$T/big.err" || st=$?
cat "$T/big.err"
[[ $st == 1 ]] || fail "record past the file size limit exited with $st"
grep -qE "(File too large|No space left on device): recording stopped; the [0-9]+ events .* \
written before are readable" "$T/big.err" || fail "no clear message about the file size limit"
"$EVRING" dump "$T/big.evtrace" >"$T/big.txt" 2>"$T/bigdump.err" ||
	fail "the file of a recording stopped by a write error does not dump"
# Exactly the events the message promises are readable.
check_dump --text "$T/big.txt" --total "$(written_before "$T/big.err")"

# A really full disk: a 256 KiB tmpfs in a private mount namespace (needs root; skipped
# otherwise, the file size limit above takes the same path).
mkdir "$T/small"
if unshare -m true 2>/dev/null; then
	# shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
	unshare -m bash -c '
		mount -t tmpfs -o size=256k evring-test "$1" || exit 3
		st=0
		"$2" record -p "$3" --providers Demo -o "$1/full.evtrace" 2>"$4/full.err" || st=$?
		echo "$st" >"$4/full.status"
		st=0
		"$2" dump "$1/full.evtrace" >"$4/full.txt" 2>"$4/full.dump.err" || st=$?
		echo "$st" >"$4/full.dump.status"' _ "$T/small" "$EVRING" "$WL_PID" "$T" ||
		fail "could not run record on a small tmpfs"
	cat "$T/full.err"
	[[ $(cat "$T/full.status") == 1 ]] || fail "record on a full disk exited $(cat "$T/full.status")"
	grep -q "No space left on device: recording stopped; the [0-9]* events .* written before \
are readable" "$T/full.err" || fail "no clear message about the full disk"
	[[ $(cat "$T/full.dump.status") == 0 ]] ||
		fail "the file on the full disk does not dump: $(cat "$T/full.dump.err")"
	check_dump --text "$T/full.txt" --total "$(written_before "$T/full.err")"
else
	echo "(no private mount namespace here: real full disk not tested)"
fi
echo "PASS"
