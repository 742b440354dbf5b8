# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for clrtop's integration tests, sourced by tests/clrtop/*.sh, which ctest runs as
#   bash tests/clrtop/NAME.sh CLRTOP MINIRT WORKLOAD
# Every wait is for the thing itself (a line on a pipe, text on the tmux screen, a process
# exit); the bounds on the number of tries only turn a hang into a failure. Exit 77: skipped.
set -euo pipefail

CLRTOP=$(realpath "${1:?usage: $0 CLRTOP MINIRT WORKLOAD}")
MINIRT=$(realpath "${2:?usage: $0 CLRTOP MINIRT WORKLOAD}")
WORKLOAD=$(realpath "${3:?usage: $0 CLRTOP MINIRT WORKLOAD}")
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
evr_test_setup clrtop
TMUX_SOCK=

# Every tmux server a test started (one socket each, see below) goes with it.
cleanup_hook() {
	local s
	for s in "$T"/tmux*.sock; do
		[[ -S $s ]] && tmux -S "$s" kill-server 2>/dev/null || true
	done
}

# start PROGRAM NAME ARGS...: run PROGRAM in the background and wait for its "ready PID"
# line. Sets PID_OF_LAST.
start() {
	local prog=$1 name=$2 fd
	shift 2
	mkfifo "$T/$name.out"
	"$prog" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	PID_OF_LAST=$!
	KILL_AT_EXIT+=("$PID_OF_LAST")
	exec {fd}<"$T/$name.out"
	expect "$fd" "^ready $PID_OF_LAST\$" "'ready $PID_OF_LAST' from $name"
	# Keep reading its stdout so that it never blocks on a full pipe.
	cat <&"$fd" >/dev/null &
	exec {fd}<&-
}

start_minirt() {
	start "$MINIRT" "minirt$#" --phase-seconds 0.5 "$@"
	MINIRT_PID=$PID_OF_LAST
}

start_workload() {
	start "$WORKLOAD" "workload$#" "$@"
	WORKLOAD_PID=$PID_OF_LAST
}

# Kill PID and wait until it is gone (reaped by this shell).
stop_process() {
	kill "$1"
	wait "$1" 2>/dev/null || true
}

# ---- tmux ---------------------------------------------------------------------------------

need_tmux() {
	command -v tmux >/dev/null 2>&1 || skip "tmux is not installed"
}

tm() {
	tmux -S "$TMUX_SOCK" "$@"
}

# tmux_run COMMAND...: run COMMAND in a new 160x70 session; its exit status is written to
# the fifo $T/status when it ends (wait_exit reads it). Each run has a tmux server of its
# own: a server whose last session just ended may still be exiting.
TMUX_RUNS=0
tmux_run() {
	local cmd
	TMUX_RUNS=$((TMUX_RUNS + 1))
	TMUX_SOCK=$T/tmux$TMUX_RUNS.sock
	printf -v cmd '%q ' "$@"
	rm -f "$T/status"
	mkfifo "$T/status"
	tm new-session -d -x 160 -y 70 "env TERM=screen $cmd; echo \$? >$T/status"
}

screen() {
	tm capture-pane -p
}

# wait_screen REGEX [WHAT]: capture the pane until it matches (extended regex); the
# screen is in SCREEN. At most 600 captures, 0.1 s apart: a minute.
wait_screen() {
	local re=$1 what=${2:-"'$1' on the screen"} i
	for ((i = 0; i < 600; i++)); do
		SCREEN=$(screen)
		grep -Eq -- "$re" <<<"$SCREEN" && return 0
		sleep 0.1
	done
	echo "$SCREEN" >&2
	fail "never saw $what"
}

# wait_screen_count REGEX N [WHAT]: as wait_screen, until N lines match.
wait_screen_count() {
	local re=$1 n=$2 what=${3:-"$2 lines matching '$1'"} i
	for ((i = 0; i < 600; i++)); do
		SCREEN=$(screen)
		[[ $(grep -Ec -- "$re" <<<"$SCREEN") == "$n" ]] && return 0
		sleep 0.1
	done
	echo "$SCREEN" >&2
	fail "never saw $what"
}

# wait_exit: wait for the command started by tmux_run to end (its status on the fifo);
# sets STATUS.
wait_exit() {
	local fd
	exec {fd}<>"$T/status"	# read-write: the open does not wait for the writer
	read -r -t 60 -u "$fd" STATUS || fail "clrtop did not exit"
	exec {fd}<&-
}
