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
