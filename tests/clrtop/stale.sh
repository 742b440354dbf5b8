#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clrtop never prints old values as new (issue 14, defect 10). Under load the producer's
# counters thread can stall in the middle of an interval: clrtop's batch mode took the first
# sample of an interval as the whole interval (or waited a little, then printed what it had),
# and printed a snapshot whose values, change column included, were the previous one's. Here
# the stall is made deterministic: the producer's "held" gauge blocks its second sampling
# until this test lets it go. Snapshot 2 must mark Held stale; snapshot 1 nothing.
#   bash tests/clrtop/stale.sh CLRTOP MINIRT WORKLOAD STALL
source "$(dirname "$0")/lib.sh"
STALL=$(realpath "${4:?usage: $0 CLRTOP MINIRT WORKLOAD STALL}")

# run_stalled ORDER: two snapshots at 0.2 s of a producer whose second interval never
# completes while the gate is shut; the snapshots in $T/out.
run_stalled() {
	local gate i
	rm -f "$T/gate"
	mkfifo "$T/gate"
	exec {gate}<>"$T/gate"	# held open, so that the producer's read waits for a byte
	start "$STALL" "stall$1" "$T/gate" "$1"
	STALL_PID=$PID_OF_LAST
	# The previous run's output goes first: clrtop's redirection truncates it only once the
	# background child runs, and the waits below would see the old snapshot 2 until then.
	rm -f "$T/out" "$T/err"
	"$CLRTOP" -b -n 2 -d 0.2 -p "$STALL_PID" --counters Stall >"$T/out" 2>"$T/err" &
	CLRTOP_PID=$!
	KILL_AT_EXIT+=("$CLRTOP_PID")
	for ((i = 0; i < 600; i++)); do
		grep -qs "snapshot 2/2" "$T/out" && break
		sleep 0.1
	done
	grep -q "snapshot 2/2" "$T/out" || { cat "$T/out" "$T/err" >&2; fail "no second snapshot"; }
	# The snapshot is whole once the blank line after it is out.
	for ((i = 0; i < 100; i++)); do
		[[ $(sed -n '/snapshot 2\/2/,$p' "$T/out" | tail -n 1) == "" ]] && break
		sleep 0.1
	done
	echo x >&"$gate"	# let the producer go, so that clrtop's session can end
	wait "$CLRTOP_PID" || { cat "$T/err" >&2; fail "clrtop failed"; }
	exec {gate}>&-
	stop_process "$STALL_PID"
	cat "$T/out"
	snap1=$(sed -n '/snapshot 1\/2/,/snapshot 2\/2/p' "$T/out")
	snap2=$(sed -n '/snapshot 2\/2/,$p' "$T/out")
	grep -q "Held" <<<"$snap1" || fail "$1: snapshot 1 has no Held counter"
	grep -q "stale" <<<"$snap1" && fail "$1: snapshot 1 marks something stale"
	grep -Eq "^ +Held .*stale" <<<"$snap2" || fail "$1: snapshot 2 shows Held's old value as new"
	# Steady was sampled in interval 2 (it is +1) or, if not, is marked too.
	grep -Eq "^ +Steady .*( \+1 |stale)" <<<"$snap2" || fail "$1: snapshot 2's Steady is wrong"
}

# Both orders: the producer samples Held first (interval 2 writes nothing) or last (interval
# 2 is written halfway); which is which depends on its counter list, so each order is run.
run_stalled steady-first
run_stalled held-first
echo "clrtop stale: ok"
