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

# start_busy_loop: a shell loop under a name of its own (evr-busy, its comm) and without
# libevring, spinning until the test ends; sets BUSY (its pid). With busy_ticks (its utime +
# stime), all_ticks (every CPU's time) and idle_ticks, in clock ticks from /proc: what the
# system-wide sampling tests compare a recording's shares with.
start_busy_loop() {
	cp "$(command -v sh)" "$T/evr-busy"
	mkfifo "$T/busy.out"
	"$T/evr-busy" -c 'echo "ready $$"; while :; do :; done' >"$T/busy.out" &
	BUSY=$!
	KILL_AT_EXIT+=("$BUSY")
	exec {BUSY_FD}<"$T/busy.out"
	expect "$BUSY_FD" "^ready $BUSY\$" "'ready $BUSY' from the busy loop"
}
busy_ticks() { awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13] }' "/proc/$BUSY/stat"; }
all_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat; }
idle_ticks() { awk '/^cpu / { print $5 + $6; exit }' /proc/stat; }

# record_as_nobody ARGS...: `evring record ARGS...` as uid 65534 with no capabilities (the
# test runs as root), its runtime directory and output under $T/nobody ($U); stdout and
# stderr in $T/own.out and $T/own.err; sets st to its exit status.
record_as_nobody() {
	U=$T/nobody
	mkdir -m 0700 "$U" "$U/run"
	chown -R 65534:65534 "$U"
	chmod 0711 "$T"
	st=0
	EVR_RUNTIME_DIR=$U/run setpriv --reuid 65534 --regid 65534 --clear-groups \
		--inh-caps=-all --bounding-set=-all -- \
		"$EVRING" record "$@" >"$T/own.out" 2>"$T/own.err" || st=$?
}
