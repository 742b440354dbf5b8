# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the evring forward tests: sourced by tests/forward/*.sh, which ctest runs as
#   bash tests/forward/NAME.sh EVRING WORKLOAD [MORE...]
# Shared pieces (temp and runtime directories, fail, skip, expect) are in tests/common.sh.
set -euo pipefail

EVRING=$(realpath "${1:?usage: $0 EVRING WORKLOAD}")
WORKLOAD=$(realpath "${2:?usage: $0 EVRING WORKLOAD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../common.sh"
evr_test_setup forward

# start_workload NAME ARGS...: the workload in the background, its stdout on a fifo (WL_FD);
# waits for its "ready PID" line. Sets WL_PID.
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

# start_forward NAME ARGS...: evring forward in the background, stderr on a fifo (FWD_FD);
# waits for the line saying every session runs and every sink is open. Sets FWD_PID.
start_forward() {
	local name=$1
	shift
	mkfifo "$T/$name.err"
	"$EVRING" forward "$@" 2>"$T/$name.err" &
	FWD_PID=$!
	KILL_AT_EXIT+=("$FWD_PID")
	exec {FWD_FD}<"$T/$name.err"
	expect "$FWD_FD" "^evring forward: forwarding " "evring forward starting"
}

# finish_forward FILE: the rest of the forwarder's stderr into FILE, then its exit status
# in FWD_STATUS.
finish_forward() {
	cat <&"$FWD_FD" >"$1"
	FWD_STATUS=0
	wait "$FWD_PID" || FWD_STATUS=$?
}

# sink_counts FILE SINK: "SENT DROPPED FILTERED" from the summary line of SINK in FILE.
sink_counts() {
	local line
	line=$(grep -F "evring forward: $2: " "$1" | head -1) || fail "no summary line for $2"
	[[ $line =~ :\ ([0-9]+)\ sent,\ ([0-9]+)\ dropped.*,\ ([0-9]+)\ filtered ]] ||
		fail "summary line of $2: $line"
	echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
}

# source_counts FILE PID: "EVENTS LOST" from the summary line of process PID.
source_counts() {
	local line
	line=$(grep "^evring forward: process $2 " "$1") || fail "no summary line for $2"
	[[ $line =~ :\ ([0-9]+)\ events,\ ([0-9]+)\ lost\ by\ the\ producer ]] ||
		fail "summary line of process $2: $line"
	echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
}

check_jsonl() {
	python3 "$HERE/check_jsonl.py" "$@"
}
