#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring forward --to jsonl: every event of a known workload arrives, once, decoded, in each
# sink whose filter takes it; the summary's counts add up (sent + dropped + filtered ==
# events); the forwarder ends with the process; -- PROGRAM traces from the first event.
source "$(dirname "$0")/lib.sh"
need_python
N=3000

# --wait-sessions 1: the workload writes nothing until the forwarder's session runs.
start_workload wl --events "$N" --threads 2 --wait-sessions 1 --pin
start_forward fwd -p "$WL_PID" --providers Demo --to "jsonl:$T/all.jsonl" \
	--to "jsonl:$T/ticks.jsonl,event=Tick" \
	--to "jsonl:$T/req.jsonl,level=info,keywords=0x1" \
	--to "jsonl:$T/none.jsonl,provider=NoSuch*"
expect "$WL_FD" "^done $N ([0-9]+)\$" "the workload's done line"
EVENTS=${LINE##* }
finish_forward "$T/fwd.txt"
cat "$T/fwd.txt"
((FWD_STATUS == 0)) || fail "forward exited with $FWD_STATUS"
grep -q "^evring forward: the process exited (it ended the session)$" "$T/fwd.txt" ||
	fail "the forwarder did not end with the process"
read -r ev lost <<<"$(source_counts "$T/fwd.txt" "$WL_PID")"
((ev == EVENTS && lost == 0)) || fail "forwarder read $ev events ($lost lost), workload wrote $EVENTS"

check_jsonl "$T/all.jsonl" --pid "$WL_PID" --ticks "$N" --total "$EVENTS" --no-lost
check_jsonl "$T/ticks.jsonl" --only Tick --ticks "$N" --total "$N"
check_jsonl "$T/req.jsonl" --only RequestStart,RequestStop --count "RequestStart=$N" \
	--count "RequestStop=$N"
[[ ! -s $T/none.jsonl ]] || fail "a sink whose filter takes nothing wrote something"

for s in "jsonl:$T/all.jsonl" "jsonl:$T/ticks.jsonl,event=Tick" \
	"jsonl:$T/req.jsonl,level=info,keywords=0x1" "jsonl:$T/none.jsonl,provider=NoSuch*"; do
	read -r sent dropped filtered <<<"$(sink_counts "$T/fwd.txt" "$s")"
	lines=$(wc -l <"$(cut -d, -f1 <<<"${s#jsonl:}")")
	((dropped == 0 && sent == lines && sent + filtered == EVENTS)) ||
		fail "$s: sent $sent, dropped $dropped, filtered $filtered, $lines lines, $EVENTS events"
done

# -- PROGRAM: from its first event; the program's exit status in the summary.
"$EVRING" forward --providers 'Demo:0x4:4' --to "jsonl:$T/prog.jsonl" -- "$WORKLOAD" \
	--events 500 >"$T/prog.out" 2>"$T/prog.txt" ||
	fail "forward -- PROGRAM failed: $(cat "$T/prog.txt")"
cat "$T/prog.txt"
check_jsonl "$T/prog.jsonl" --only Tick --ticks 500 --total 500 --no-lost
grep -q "^evring forward: the process exited (it ended the session); .*workload exited with \
status 0$" "$T/prog.txt" || fail "the summary does not give the program's status"

# A sink that fails (a full disk) is reported and ends with exit status 1; the other sink
# still gets everything, and the failed one's drops are counted.
st=0
"$EVRING" forward --providers Demo --to jsonl:/dev/full --to "jsonl:$T/ok.jsonl" -- \
	"$WORKLOAD" --events 200 >/dev/null 2>"$T/full.txt" || st=$?
cat "$T/full.txt"
((st == 1)) || fail "a failed sink gave exit status $st"
grep -q "^evring forward: jsonl:/dev/full: cannot write /dev/full: No space left on device$" \
	"$T/full.txt" || fail "the sink's failure is not reported"
check_jsonl "$T/ok.jsonl" --ticks 200 --no-lost
read -r ev lost <<<"$(source_counts "$T/full.txt" "[0-9]*")"
read -r sent dropped filtered <<<"$(sink_counts "$T/full.txt" "jsonl:/dev/full")"
((sent == 0 && dropped == ev)) || fail "/dev/full: $sent sent, $dropped dropped of $ev"
echo PASS
