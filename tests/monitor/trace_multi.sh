#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# GET /trace over several processes (pid=A,B) and over all of them (all=1): one file of
# format 2 with a stream per process, every event of each workload in it (they write only
# once the trace's session runs: --wait-sessions 1, and the trace ends when they have all
# ended): recorded + lost == emitted, per process, as report --json counts them; a converted
# format (jsonl) names each line's process; and the refusals: no selection, a bad one,
# stacks=, a duration over --max-duration, an unknown parameter, and a second trace while one
# holds the only operation slot (429).
source "$(dirname "$0")/lib.sh"

start_monitor --listen 127.0.0.1:0 --max-duration 90s --max-sessions 1

# check_counts FILE PID:DONEFILE...: report --json's processes are exactly these, each
# process's events + lost == what its done line says it emitted.
check_counts() {
	local file=$1
	shift
	"$EVRING" report --json "$file" >"$T/r.json" 2>"$T/r.err" ||
		fail "report --json $file: $(cat "$T/r.err")"
	python3 - "$T/r.json" "$@" <<'EOF' || fail "counts of $file"
import json, re, sys
rep = json.load(open(sys.argv[1]))
procs = {p["pid"]: p for p in rep["processes"]}
want = {}
for a in sys.argv[2:]:
    pid, done = a.split(":", 1)
    want[int(pid)] = int(re.match(r"^done (\d+) (\d+)$", open(done).read().strip())[2])
assert sorted(procs) == sorted(want), f"processes {sorted(procs)} != {sorted(want)}"
assert len({p["stream"] for p in procs.values()}) == len(want), "two processes share a stream"
for pid, emitted in want.items():
    p = procs[pid]
    assert p["events"] + p["lost"] == emitted, \
        f"{pid}: {p['events']} events + {p['lost']} lost != {emitted} emitted"
    assert p["end"] == "exited", f"{pid}: end {p['end']}"
    print(f"process {pid}: {p['events']} + {p['lost']} lost == {emitted} emitted")
EOF
}

# --- pid=A,B: two processes of three ------------------------------------------------------
start_producer a "$WORKLOAD" --events 3000 --threads 2 --wait-sessions 1
A=$PROD_PID A_FD=$PROD_FD
start_producer b "$WORKLOAD" --events 5000 --threads 1 --wait-sessions 1
B=$PROD_PID B_FD=$PROD_FD
start_producer c "$WORKLOAD" --rate 50 --threads 1
C=$PROD_PID
curl -sS --max-time 120 -D "$T/h1" -o "$T/ab.evtrace" \
	"$U/trace?pid=$A,$B&duration=80s&providers=Demo&buffer_size=64M" &
CURL=$!
expect "$A_FD" "^done " "a's done line"
echo "$LINE" >"$T/a.done"
expect "$B_FD" "^done " "b's done line"
echo "$LINE" >"$T/b.done"
wait "$CURL" || fail "curl pid=A,B failed"
grep -q "^HTTP/1.1 200" "$T/h1" || fail "pid=A,B: $(cat "$T/h1") $(head -c 400 "$T/ab.evtrace")"
grep -qiE '^Content-Disposition: attachment; filename="processes-[0-9TZ]+\.evtrace"' "$T/h1" ||
	fail "no Content-Disposition: $(cat "$T/h1")"
grep -qi '^X-Evring-Processes: 2' "$T/h1" || fail "X-Evring-Processes: $(cat "$T/h1")"
check_counts "$T/ab.evtrace" "$A:$T/a.done" "$B:$T/b.done"

# --- all=1: every process there (c, still running, and two more), as JSON lines ----------
start_producer d "$WORKLOAD" --events 2000 --threads 2 --wait-sessions 1
D=$PROD_PID D_FD=$PROD_FD
start_producer e "$WORKLOAD" --events 4000 --threads 1 --wait-sessions 1
E=$PROD_PID E_FD=$PROD_FD
curl -sS --max-time 120 -D "$T/h2" -o "$T/all.evtrace" \
	"$U/trace?all=1&duration=80s&providers=Demo&buffer_size=64M" &
CURL=$!
expect "$D_FD" "^done " "d's done line"
echo "$LINE" >"$T/d.done"
expect "$E_FD" "^done " "e's done line"
echo "$LINE" >"$T/e.done"
# c runs on, and so does the trace, holding the one operation slot (--max-sessions 1): another
# trace, of several processes or of one, is a 429 meanwhile.
expect_status 429 "$U/trace?pid=$C&duration=1s"
expect_status 429 "$U/processes/$C/trace?duration=1s&format=jsonl"
# The trace ends with its duration or when c ends; end c now.
kill -TERM "$C"
wait "$CURL" || fail "curl all=1 failed"
grep -q "^HTTP/1.1 200" "$T/h2" || fail "all=1: $(cat "$T/h2") $(head -c 400 "$T/all.evtrace")"
grep -qi '^X-Evring-Processes: 3' "$T/h2" || fail "X-Evring-Processes: $(cat "$T/h2")"
"$EVRING" report --json "$T/all.evtrace" >"$T/r.json" || fail "report --json all"
python3 - "$T/r.json" "$C" "$D" "$E" <<'EOF' || fail "all=1's processes"
import json, sys
rep = json.load(open(sys.argv[1]))
pids = sorted(p["pid"] for p in rep["processes"])
assert pids == sorted(int(p) for p in sys.argv[2:]), f"processes {pids}"
EOF
# d and e, exactly (c wrote before the trace began: no count to match).
"$EVRING" dump --pid "$D" --json "$T/all.evtrace" | grep -vc '"type":"lost"' >"$T/nd" || true
python3 - "$T/r.json" "$D:$T/d.done" "$E:$T/e.done" <<'EOF' || fail "all=1 counts"
import json, re, sys
procs = {p["pid"]: p for p in json.load(open(sys.argv[1]))["processes"]}
for a in sys.argv[2:]:
    pid, done = a.split(":", 1)
    emitted = int(re.match(r"^done (\d+) (\d+)$", open(done).read().strip())[2])
    p = procs[int(pid)]
    assert p["events"] + p["lost"] == emitted, f"{pid}: {p['events']} + {p['lost']} != {emitted}"
    print(f"process {pid}: {p['events']} + {p['lost']} lost == {emitted} emitted")
EOF

# A converted format: each JSON line names its process.
start_producer f "$WORKLOAD" --events 1000 --threads 1 --wait-sessions 1
F=$PROD_PID F_FD=$PROD_FD
start_producer g "$WORKLOAD" --events 1500 --threads 1 --wait-sessions 1
G=$PROD_PID G_FD=$PROD_FD
got=$(code_type "$U/trace?pid=$F,$G&duration=80s&providers=Demo&format=jsonl")
[[ $got == "200 application/x-ndjson" ]] || fail "format=jsonl: $got $(head -c 300 "$T/body")"
expect "$F_FD" "^done " "f's done line"
echo "$LINE" >"$T/f.done"
expect "$G_FD" "^done " "g's done line"
echo "$LINE" >"$T/g.done"
python3 - "$T/body" "$F:$T/f.done" "$G:$T/g.done" <<'EOF' || fail "jsonl lines"
import collections, json, re, sys
n = collections.Counter()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("type") == "event":
        n[e["pid"]] += 1
    elif e.get("type") == "lost":
        n[e["pid"]] += e["count"]
for a in sys.argv[2:]:
    pid, done = a.split(":", 1)
    emitted = int(re.match(r"^done (\d+) (\d+)$", open(done).read().strip())[2])
    assert n[int(pid)] == emitted, f"{pid}: {n[int(pid)]} lines (events + lost) != {emitted}"
assert set(n) == {int(a.split(":")[0]) for a in sys.argv[2:]}, f"pids {set(n)}"
print("jsonl: every line of each process, named")
EOF

# --- refusals -----------------------------------------------------------------------------
expect_status 400 "$U/trace?duration=1s"
expect_status 400 "$U/trace?pid=$C&all=1&duration=1s"
expect_status 400 "$U/trace?all=2&duration=1s"
expect_status 400 "$U/trace?all=1&duration=1s&stacks=16"
grep -q "not over several processes" "$T/body" || fail "stacks=: $(cat "$T/body")"
expect_status 400 "$U/trace?all=1&duration=100s"
expect_status 400 "$U/trace?all=1&duration=1s&nosuch=1"
expect_status 404 "$U/trace?pid=no-such-name&duration=1s"
expect_status 404 "$U/trace?pid=999999999&duration=1s"
curl -sS "$U/info" | grep -q '"GET /trace?pid=A,B|all=1&duration=T' || fail "/info lacks GET /trace"
monitor_alive
echo PASS
