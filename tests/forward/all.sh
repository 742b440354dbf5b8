#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring forward --all: five workloads to one jsonl sink. Three run when forwarding starts,
# two start during it (found through the runtime directory, attached, and only then do they
# write: --wait-sessions 1), one is SIGKILLed during it. Every line carries its process;
# each process that finished counts exactly (its lines + lost == what it says it wrote, and
# the summary says the same); the killed one's Ticks are all there from 1 on, and its end is
# noted. Then a graphite sink over two processes of one name: each its own series (the pid
# in the path) unless instance=comm. Synchronization is on lines only: the workloads'
# ready/done/emitted lines and the forwarder's "+ process" / "- process" lines.
source "$(dirname "$0")/lib.sh"
need_python
F=$T/fwd.txt

# wait_fwd REGEX WHAT: until the forwarder's stderr ($F) has a line matching REGEX (polling
# the file, 120 s at most); a forwarder that ended without it fails the test at once.
wait_fwd() {
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -qE -- "$1" "$F" && return 0
		if ! kill -0 "$FWD_PID" 2>/dev/null; then
			grep -qE -- "$1" "$F" && return 0
			fail "the forwarder ended before $2: $(cat "$F")"
		fi
		sleep 0.1
	done
	fail "never saw $2: $(cat "$F")"
}

start_workload w1 --events 4000 --threads 2 --wait-sessions 1
P1=$WL_PID F1=$WL_FD
start_workload w2 --events 6000 --threads 1 --wait-sessions 1
P2=$WL_PID F2=$WL_FD
start_workload w3 --rate 20000 --threads 1 --wait-sessions 1 --report-every 1000
P3=$WL_PID F3=$WL_FD

"$EVRING" forward --all --providers Demo --buffer-size 64M --to "jsonl:$T/all.jsonl" \
	2>"$F" &
FWD_PID=$!
KILL_AT_EXIT+=("$FWD_PID")
# The three, in the order their attaches finished.
wait_fwd "^evring forward: forwarding every process with an agent \(3 now: [0-9, ]+\) to \
jsonl:" "the forwarder starting with 3 processes"
for p in "$P1" "$P2" "$P3"; do
	grep -qE "^evring forward: forwarding .*[ :]$p[,)]" "$F" || fail "$p not attached at the start"
done

start_workload w4 --events 3000 --threads 2 --wait-sessions 1
P4=$WL_PID F4=$WL_FD
start_workload w5 --events 2000 --threads 1 --wait-sessions 1
P5=$WL_PID F5=$WL_FD
wait_fwd "^evring forward: \+ process $P4 \(workload\)\$" "process $P4 attached"
wait_fwd "^evring forward: \+ process $P5 \(workload\)\$" "process $P5 attached"

expect "$F3" "^emitted 2000\$" "2000 ticks from w3"
kill -9 "$P3"
for f in 1 2 4 5; do
	fdv=F$f
	expect "${!fdv}" "^done " "w$f's done line"
	echo "$LINE" >"$T/w$f.done"
done
for f in 1 2 4 5; do
	pv=P$f
	wait_fwd "^evring forward: - process ${!pv} \(workload\) exited \(it ended the \
session\): [0-9]+ events, [0-9]+ lost\$" "process ${!pv}'s end"
done
wait_fwd "^evring forward: - process $P3 \(workload\) died " "the killed one's end"
# Still forwarding with every process gone: --all waits for more.
kill -0 "$FWD_PID" 2>/dev/null || fail "forward --all ended with its processes: $(cat "$F")"
kill -INT "$FWD_PID"
st=0
wait "$FWD_PID" || st=$?
cat "$F"
((st == 0)) || fail "forward --all exited with $st"
grep -q "^evring forward: stopped by Interrupt$" "$F" || fail "no 'stopped by' line"

for f in 1 2 3 4 5; do
	pv=P$f
	read -r ev lost <<<"$(source_counts "$F" "${!pv}")"
	echo "${!pv} $ev $lost" >>"$T/counts"
done
python3 - "$T" "$P1" "$P2" "$P3" "$P4" "$P5" <<'EOF'
import collections, json, re, sys
t, pids = sys.argv[1], [int(p) for p in sys.argv[2:]]
killed = pids[2]
summ = {int(p): (int(e), int(l)) for p, e, l in (x.split() for x in open(f"{t}/counts"))}
events, lost, ticks = collections.Counter(), collections.Counter(), collections.defaultdict(list)
for line in open(f"{t}/all.jsonl"):
    e = json.loads(line)
    assert e["pid"] in pids, f"a line of another process: {e}"
    if e["type"] == "lost":
        lost[e["pid"]] += e["count"]
        continue
    assert e["provider"] == "Demo", e
    events[e["pid"]] += 1
    if e["event"] == "Tick":
        ticks[e["pid"]].append(e["fields"]["seq"])
for i, pid in enumerate(pids):
    assert summ[pid] == (events[pid], lost[pid]), \
        f"{pid}: summary {summ[pid]}, lines {events[pid]} + {lost[pid]} lost"
    if pid == killed:
        s = ticks[pid]
        assert lost[pid] == 0, f"the killed one lost {lost[pid]}"
        assert len(s) >= 2000 and sorted(s) == list(range(1, len(s) + 1)), "ticks with gaps"
        print(f"process {pid} (killed): {events[pid]} events, Ticks 1..{len(s)}, none lost")
        continue
    m = re.match(r"^done (\d+) (\d+)$", open(f"{t}/w{i + 1}.done").read().strip())
    emitted = int(m[2])
    assert events[pid] + lost[pid] == emitted, \
        f"{pid}: {events[pid]} forwarded + {lost[pid]} lost != {emitted} emitted"
    print(f"process {pid}: {events[pid]} + {lost[pid]} lost == {emitted} emitted")
EOF

# Graphite, two processes of one name: the pid in every path by default (one series each).
# A receiver per sink: receiver.py serves one connection at a time.
# start_receiver NAME: receiver.py on a free port, storing its lines in $T/NAME.lines; sets
# RPORT.
start_receiver() {
	local fd
	RPORT=$(free_port)
	mkfifo "$T/$1.out"
	python3 "$HERE/receiver.py" "$RPORT" "$T/$1.lines" >"$T/$1.out" 2>"$T/$1.err" &
	KILL_AT_EXIT+=("$!")
	exec {fd}<"$T/$1.out"
	expect "$fd" "^listening\$" "receiver $1 listening"
}
start_receiver t
PT=$RPORT
start_receiver c
PC=$RPORT
start_workload g1 --rate 100 --threads 1
G1=$WL_PID
start_workload g2 --rate 100 --threads 1
G2=$WL_PID
"$EVRING" forward --all --counter-interval 100ms --to "graphite:127.0.0.1:$PT,prefix=t" \
	--to "graphite:127.0.0.1:$PC,prefix=c,instance=comm" 2>"$T/g.txt" &
FWD_PID=$!
KILL_AT_EXIT+=("$FWD_PID")
for p in "$G1" "$G2"; do
	wait_lines "$T/t.lines" "^t\.workload\.$p\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[a-z0-9]+ " 3 \
		"process $p's own series"
done
wait_lines "$T/c.lines" "^c\.workload\.[A-Za-z]" 1 "instance=comm's series"
kill -INT "$FWD_PID"
wait "$FWD_PID" || fail "forward --all to graphite exited with $?: $(cat "$T/g.txt")"
if grep -E "^t\.workload\.[^0-9]" "$T/t.lines" | head -3 | grep .; then
	fail "several processes, yet a path without the pid"
fi
if grep -E "^c\.workload\.[0-9]+\." "$T/c.lines" | head -3 | grep .; then
	fail "instance=comm, yet a path with the pid"
fi
echo PASS
