# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the stacks tests: sourced by tests/stacks/*.sh, which ctest runs as
#   bash tests/stacks/NAME.sh EVRING BINDIR
# (BINDIR holds the test programs: stacks-parked, stacks-chain, stacks-spin, minirt...).
set -euo pipefail

EVRING=$(realpath "${1:?usage: $0 EVRING BINDIR}")
BIN=$(realpath "${2:?usage: $0 EVRING BINDIR}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../common.sh"
evr_test_setup stacks

# start_prog NAME PROGRAM ARGS...: run PROGRAM in the background, stdout on a fifo (fd in
# PROG_FD), and wait for its "ready PID" line. Sets PROG_PID.
start_prog() {
	local name=$1
	shift
	mkfifo "$T/$name.out"
	"$@" >"$T/$name.out" 2>"$T/$name.err" &
	PROG_PID=$!
	KILL_AT_EXIT+=("$PROG_PID")
	exec {PROG_FD}<"$T/$name.out"
	expect "$PROG_FD" "^ready $PROG_PID\$" "'ready $PROG_PID' from $1"
}

# wait_blocked PID N: wait until N threads of PID are in a sleeping state (S), that is
# blocked where the program parked them. A bounded loop over the thing itself.
wait_blocked() {
	local pid=$1 want=$2 i n s
	for ((i = 0; i < 2000; i++)); do
		n=0
		for s in /proc/"$pid"/task/*/stat; do
			[[ $(sed 's/.*) //' "$s" 2>/dev/null | cut -c1) == S ]] && n=$((n + 1))
		done
		((n >= want)) && return 0
		sleep 0.01
	done
	fail "process $pid never had $want blocked threads"
}
