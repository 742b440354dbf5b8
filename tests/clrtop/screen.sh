#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clrtop's screen, driven through tmux like a person would: the overview lists minirt and
# workload; sort keys reorder the rows and move the sort mark; Enter on minirt shows its
# counters, whose numbers change between two captures; the window is resized; minirt is
# killed and shown as exited; Esc goes back; q quits with status 0.
source "$(dirname "$0")/lib.sh"
need_tmux

start_minirt
m=$MINIRT_PID
start_workload
w=$WORKLOAD_PID
tmux_run "$CLRTOP" -d 0.5
wait_screen "^ +$m minirt +[0-9.]+ +[0-9.]+ [KMG]?i?B " "minirt's row with numbers"
wait_screen "^ +$w workload +[0-9.]+ " "workload's row with numbers"
grep -q 'CPU%v' <<<"$SCREEN" || fail "no sort mark on CPU%"

# order: the pids of the rows, top to bottom.
order() {
	grep -Eo "^ +($m|$w) " <<<"$SCREEN" | tr -d ' ' | paste -sd' '
}
lo=$((m < w ? m : w))
hi=$((m < w ? w : m))
tm send-keys N
wait_screen 'PID\^' "the sort mark on PID, ascending"
[[ $(order) == "$lo $hi" ]] || fail "sorted by pid: $(order)"
tm send-keys r
wait_screen 'PIDv' "the sort mark on PID, descending"
[[ $(order) == "$hi $lo" ]] || fail "reversed: $(order)"
tm send-keys M
wait_screen 'MEMv' "the sort mark on MEM"

# Select minirt (sorted by pid, ascending: its row is known) and drill in.
tm send-keys N
wait_screen 'PID\^'
tm send-keys g
[[ $m == "$lo" ]] || tm send-keys j
tm send-keys Enter
wait_screen "PID $m minirt +refresh" "the title of minirt's counters"
wait_screen "^    GC Heap Size +[0-9.]+ [KMG]?i?B" "GC Heap Size with a value"
wait_screen "^  Process$" "the Process group"
wait_screen "^    CPU usage +[0-9.]+%" "CPU usage with a value"
first=$(grep -E '^    ' <<<"$SCREEN" | awk '{ $1 = $1; print }')
for ((i = 0; i < 600; i++)); do
	SCREEN=$(screen)
	now=$(grep -E '^    ' <<<"$SCREEN" | awk '{ $1 = $1; print }')
	[[ $now != "$first" ]] && break
	sleep 0.1
done
[[ $now != "$first" ]] || fail "the counters never changed"
grep -Eq '^    [A-Za-z%].* +[+-][0-9]' <<<"$SCREEN" || fail "no change column"

# Resize: the screen is redrawn for the new size, status bar on the last line.
tm resize-window -x 100 -y 20
for ((i = 0; i < 600; i++)); do
	SCREEN=$(screen)
	[[ $(wc -l <<<"$SCREEN") == 20 && $(sed -n 20p <<<"$SCREEN") == *"q quit"* &&
		$(sed -n 1p <<<"$SCREEN") == *"PID $m minirt"* ]] && break
	sleep 0.1
done
[[ $(sed -n 20p <<<"$SCREEN") == *"q quit"* && $(sed -n 1p <<<"$SCREEN") == *"PID $m minirt"* ]] ||
	{ echo "$SCREEN"; fail "not redrawn at 100x20 (title on top, keys at the bottom)"; }
tm resize-window -x 8 -y 2
wait_screen '^clrtop' "the small-window message"
tm resize-window -x 160 -y 50
wait_screen "^    GC Heap Size +[0-9.]+" "counters after growing again"

# minirt exits: its counters stay, marked exited.
stop_process "$m"
wait_screen "^PID $m  minirt  exited" "minirt marked exited"
tm send-keys Escape
wait_screen "^ +$m minirt .* exited" "minirt's row marked exited in the overview"
grep -Eq "^ +$w workload .* live" <<<"$SCREEN" || fail "workload not live"

# Help, then quit.
tm send-keys h
wait_screen 'clrtop keys' "the help"
tm send-keys x
wait_screen "^ +$w workload" "the overview after help"
tm send-keys q
wait_exit
[[ $STATUS == 0 ]] || fail "clrtop exited with status $STATUS"
echo "clrtop screen: ok"
