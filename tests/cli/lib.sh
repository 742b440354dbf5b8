# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the evring command-line tests: sourced by tests/cli/*.sh, which ctest runs as
#   bash tests/cli/NAME.sh EVRING WORKLOAD
# Shared pieces (temp and runtime directories, fail, skip, expect) are in tests/common.sh.
set -euo pipefail

EVRING=$(realpath "${1:?usage: $0 EVRING WORKLOAD}")
WORKLOAD=$(realpath "${2:?usage: $0 EVRING WORKLOAD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../common.sh"
evr_test_setup cli

# start_workload NAME ARGS...: run the workload in the background, its stdout on a fifo
# (file descriptor in WL_FD), and wait for its "ready PID" line. Sets WL_PID.
start_workload() {
	local name=$1
	shift
	mkfifo "$T/$name.out"
	"$WORKLOAD" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	WL_PID=$!
	KILL_AT_EXIT+=("$WL_PID")
	exec {WL_FD}<"$T/$name.out"
	expect "$WL_FD" "^ready $WL_PID\$" "'ready $WL_PID' from the workload"
}

# start_record NAME ARGS...: evring record in the background, stderr on a fifo (REC_FD);
# waits for the line saying the session started and the sandbox is in place. Sets REC_PID.
start_record() {
	local name=$1
	shift
	mkfifo "$T/$name.err"
	"$EVRING" record "$@" 2>"$T/$name.err" &
	REC_PID=$!
	KILL_AT_EXIT+=("$REC_PID")
	exec {REC_FD}<"$T/$name.err"
	expect "$REC_FD" "^evring record: recording " "evring record starting"
}

# finish_record FD FILE: copy the rest of a record's stderr to FILE (until it exits); FILE
# must not be the fifo itself.
finish_record() {
	cat <&"$1" >"$2"
}

# Number of open file descriptors of process $1.
fd_count() {
	local n=0 f
	for f in /proc/"$1"/fd/*; do
		[[ -e $f || -L $f ]] && n=$((n + 1))
	done
	echo "$n"
}

check_dump() {
	python3 "$HERE/check_dump.py" "$@"
}

# check_accounting LABEL N OUT ERR TRACE: a recording of a workload of N iterations (the
# workload's stdout in OUT, record's stderr in ERR, the trace in TRACE): record's events + lost
# equal what the workload wrote, and dump shows the same events and the same losses.
check_accounting() {
	local label=$1 n=$2 out=$3 err=$4 trace=$5 emitted events lost devents dlost
	[[ $(tail -1 "$out") =~ ^done\ $n\ ([0-9]+)$ ]] || fail "workload ($label)"
	emitted=${BASH_REMATCH[1]}
	[[ $(grep -E '^evring record: [0-9]+ events, ' "$err") =~ \
		^evring\ record:\ ([0-9]+)\ events,\ .*\ ([0-9]+)\ lost, ]] || fail "summary ($label)"
	events=${BASH_REMATCH[1]} lost=${BASH_REMATCH[2]}
	((events + lost == emitted)) ||
		fail "$label: $events events + $lost lost != $emitted written by the workload"
	"$EVRING" dump "$trace" >"$T/$label.txt" 2>"$T/$label.dump.err" ||
		fail "dump ($label): $(cat "$T/$label.dump.err")"
	read -r devents dlost < <(awk '$3 == "LOST" { l += $4; next } { e++ }
		END { print e + 0, l + 0 }' "$T/$label.txt")
	[[ $devents == "$events" && $dlost == "$lost" ]] ||
		fail "$label: dump shows $devents events and $dlost lost, record said $events and $lost"
	echo "$label: $events events + $lost lost == $emitted"
}

# one_line STATUS PATTERN CMD...: CMD exits with STATUS and prints one line matching PATTERN.
one_line() {
	local want=$1 re=$2 st=0
	shift 2
	"$@" >"$T/out" 2>"$T/err" || st=$?
	[[ $st == "$want" ]] || fail "$* exited with $st, expected $want: $(cat "$T/err")"
	[[ $(wc -l <"$T/err") == 1 ]] || fail "$*: not one line: $(cat "$T/err")"
	grep -qE -- "$re" "$T/err" || fail "$*: '$(cat "$T/err")' does not match '$re'"
	echo "ok: $(cat "$T/err")"
}

# record_stalled LABEL N TRACE RECORD-ARGS...: a loss that must happen, whatever the machine.
# The workload (N iterations, 2 threads) waits for the session; evring record -p attaches
# with RECORD-ARGS (a buffer far smaller than what N iterations write) and is stopped with
# SIGSTOP as soon as it says it records, so its rings cannot be drained until the workload
# has written everything and exited; then it continues and finishes. Leaves the workload's
# "done" line in $T/LABEL.out and record's stderr in $T/LABEL.err, for check_accounting.
record_stalled() {
	local label=$1 n=$2 trace=$3 st=0
	shift 3
	start_workload "$label.wl" --events "$n" --threads 2 --wait-sessions 1
	start_record "$label.rec" -p "$WL_PID" -o "$trace" "$@"
	kill -STOP "$REC_PID"
	expect "$WL_FD" "^done $n " "the workload's 'done' line ($label)"
	echo "$LINE" >"$T/$label.out"
	# The workload has exited (its fifo reaches EOF) before the recorder may drain.
	cat <&"$WL_FD" >/dev/null
	kill -CONT "$REC_PID"
	finish_record "$REC_FD" "$T/$label.err"
	wait "$REC_PID" || st=$?
	[[ $st == 0 ]] || fail "record ($label) exited with $st: $(cat "$T/$label.err")"
}

# record_lost ERR: the "N lost" count of record's summary line in ERR.
record_lost() {
	[[ $(grep -E '^evring record: [0-9]+ events, ' "$1") =~ \ ([0-9]+)\ lost, ]] ||
		fail "no record summary in $1"
	echo "${BASH_REMATCH[1]}"
}

# find_dio_dir: sets dio_dir to a directory where record --io direct writes with direct I/O
# (the test's directory, the build tree, /var/tmp), or to nothing.
find_dio_dir() {
	local d n=0 first
	dio_dir=
	for d in "$T" "$PWD" /var/tmp; do
		[[ -d $d && -w $d ]] || continue
		# A name of its own each time: start_workload makes a fifo named after it.
		start_workload "probe$((n++))" --events 100 --threads 1 --wait-sessions 1
		"$EVRING" record -p "$WL_PID" --providers Demo --io direct -o "$d/evr-probe.$$.evtrace" \
			2>/dev/null || fail "record to $d failed"
		# trace_edit.py chunks: "offset kind len seq" per chunk.
		first=$(python3 "$HERE/trace_edit.py" chunks "$d/evr-probe.$$.evtrace" |
			awk 'NR == 1 {print $2}')
		rm -f "$d/evr-probe.$$.evtrace"
		if [[ $first == 16 ]]; then
			# shellcheck disable=SC2034 # the caller's
			dio_dir=$d
			return 0
		fi
	done
}

# full_disk_record LABEL RECORD-ARGS...: a full ext4 disk (16 MiB, or FULL_DISK_SIZE; a loop
# device in a private mount namespace; root only, else says so and returns): record -p with
# RECORD-ARGS into it stops saying so in one line, the file dumps, and exactly the events it
# says were written are in the file. Leaves record's stderr in $T/LABEL.err, dump's in
# $T/LABEL.dump.err.
full_disk_record() {
	local label=$1 how written
	shift
	if [[ $(id -u) != 0 ]] || ! command -v mkfs.ext4 >/dev/null || ! unshare -m true 2>/dev/null ||
		! losetup -f >/dev/null 2>&1; then
		echo "(not root, or no mkfs.ext4, mount namespace or loop device: a full ext4 disk not tested)"
		return 0
	fi
	truncate -s "${FULL_DISK_SIZE:-16M}" "$T/$label.img"
	mkfs.ext4 -q -F "$T/$label.img" || fail "mkfs.ext4 failed"
	mkdir "$T/$label.mnt"
	# Paced, so that the disk keeps up and the disk fills under direct I/O (if it falls behind
	# all the same, the file is as exact through the page cache; the output says which).
	start_workload "$label.wl" --threads 1 --rate 2000000
	# shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
	unshare -m bash -c '
		mount -o loop "$1" "$2" || exit 3
		MNT=$2 EVRING=$3 WL_PID=$4 T=$5 label=$6
		shift 6
		st=0
		"$EVRING" record -p "$WL_PID" --providers Demo "$@" -o "$MNT/full.evtrace" \
			2>"$T/$label.err" || st=$?
		echo "$st" >"$T/$label.status"
		python3 -c "import os, sys; print(os.statvfs(sys.argv[1]).f_bavail)" "$MNT" \
			>"$T/$label.free"
		st=0
		"$EVRING" dump "$MNT/full.evtrace" >"$T/$label.txt" 2>"$T/$label.dump.err" || st=$?
		echo "$st" >"$T/$label.dump.status"
		umount "$MNT"' _ "$T/$label.img" "$T/$label.mnt" "$EVRING" "$WL_PID" "$T" "$label" "$@" \
		|| fail "could not record to a loop-mounted ext4 ($?)"
	cat "$T/$label.err"
	[[ $(cat "$T/$label.status") == 1 ]] ||
		fail "record on a full disk exited $(cat "$T/$label.status")"
	grep -qE "No space left on device: recording stopped; the [0-9]+ events .* written \
before are readable$" "$T/$label.err" || fail "no clear message about the full disk"
	[[ $(cat "$T/$label.dump.status") == 0 ]] ||
		fail "the file on the full disk does not dump: $(cat "$T/$label.dump.err")"
	written=$(sed -nE 's/.*recording stopped; the ([0-9]+) events .*/\1/p' "$T/$label.err")
	((written > 0)) || fail "nothing was written before the disk filled"
	check_dump --text "$T/$label.txt" --total "$written"
	how="direct I/O"
	grep -q "direct I/O fell behind" "$T/$label.err" && how="direct I/O, then the page cache"
	echo "full ext4 disk ($label, $how): $written events readable, as promised" \
		"($(cat "$T/$label.free") blocks left free)"
}
