#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clrtop -p PID -p PID2 on the screen: both processes with their counters grouped by
# provider; one exits and is shown as exited while the other stays live; -n bounds the
# number of refreshes (clrtop then exits with status 0 by itself).
source "$(dirname "$0")/lib.sh"
need_tmux

start_minirt
m=$MINIRT_PID
start_workload
w=$WORKLOAD_PID
tmux_run "$CLRTOP" -d 0.3 -p "$m" -p "$w"
wait_screen "^PID $m  minirt  live  [1-9]" "minirt's header"
wait_screen "^PID $w  workload  live  [1-9]" "workload's header"
wait_screen "^    GC Heap Size +[0-9.]+" "minirt's GC heap"
wait_screen_count '^  Process$' 2 "a Process group for each process"
stop_process "$w"
wait_screen "^PID $w  workload  exited" "workload marked exited"
grep -q "^PID $m  minirt  live" <<<"$SCREEN" || fail "minirt not live any more"
tm send-keys q
wait_exit
[[ $STATUS == 0 ]] || fail "clrtop exited with status $STATUS"

# -n 3: three refreshes, then exit 0 without a key.
tmux_run "$CLRTOP" -d 0.2 -n 3 -p "$m"
wait_exit
[[ $STATUS == 0 ]] || fail "clrtop -n 3 exited with status $STATUS"
echo "clrtop multi: ok"
