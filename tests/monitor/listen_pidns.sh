#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Listen mode across pid namespaces (issue 30's sidecar that shares neither namespace):
# the monitor runs in a pid and mount namespace of its own, the workload in another pid
# namespace (pid 1 there) and mount namespace, so SO_PEERCRED gives the monitor pid 0 for
# it. The monitor must still list it, under an id of its own (>= 2^30, no real pid), with
# pid_namespace "other" and the pid the workload knows itself by; every connection the
# agent makes (it keeps one spare) lands on that one id; a trace over HTTP by that id
# holds exactly N events, none lost; /metrics labels it; stacks, which need ptrace and a
# pid of the monitor's, are refused with a 409 that says why.
# Needs root and unshare --pid; skipped otherwise.
source "$(dirname "$0")/lib.sh"

[[ $(id -u) == 0 ]] || skip "needs root (pid and mount namespaces)"
command -v unshare >/dev/null || skip "unshare not found"
unshare --pid --fork --kill-child --mount-proc true 2>/dev/null ||
	skip "unshare --pid --mount-proc is not permitted here"
N=20000
ID_MIN=$((1 << 30))

# --- the monitor: its own pid namespace, its own mount namespace ------------------------------
start_monitor_apart --pid --fork --kill-child --mount-proc

# --- the workload: another pid namespace (a sibling of the monitor's), another mount one -----
mkfifo "$T/wl.out"
EVR_MONITOR_SOCKET=$T/shared/agents.sock \
	unshare --pid --fork --kill-child --mount-proc --propagation private -- \
	"$WORKLOAD" --events "$N" --threads 2 --wait-sessions 1 --pin \
	>"$T/wl.out" 2>"$T/wl.err" &
WL_PID=$!
KILL_AT_EXIT+=("$WL_PID")
exec {WL_FD}<"$T/wl.out"
expect "$WL_FD" '^ready [0-9]+$' "'ready' from the workload"
NSPID=${LINE#ready }
((NSPID < 100)) || fail "the workload is not in a pid namespace of its own: pid $NSPID"

# Listed under an id of the monitor's, with its own pid beside it.
listed() {
	curl -sS --max-time 30 "$U/processes" >"$T/procs.json" 2>/dev/null &&
		python3 - "$T/procs.json" "$NSPID" "$ID_MIN" >"$T/id" 2>"$T/listed.err" <<'PY'
import json, sys
ps = json.load(open(sys.argv[1]))
mine = [p for p in ps if p.get("listen_mode")]
assert len(mine) == 1, ps
p = mine[0]
assert p["state"] == "live" and "ns_pid" in p, p
assert p["pid"] >= int(sys.argv[3]), p
assert p["pid_namespace"] == "other" and p["ns_pid"] == int(sys.argv[2]), p
print(p["pid"])
PY
}
# A kernel before 6.9 cannot say which process such a peer is (no SO_PEERPIDFD or no pidfs):
# the monitor refuses it and says so; nothing to test there.
unsupported() {
	grep -qE "this kernel (cannot tell which process|.s pidfds do not tell)" "$T/monitor.err"
}
wait_for 60 eval 'listed || unsupported'
unsupported && skip "this kernel cannot identify a peer in another pid namespace: $(tail -1 "$T/monitor.err")"
ID=$(cat "$T/id")
grep -q "process $ID connected in listen mode on $T/monview/agents.sock (from a pid namespace this one cannot see: id $ID)" \
	"$T/monitor.err" || fail "no log line for the connection: $(cat "$T/monitor.err")"

# GET /processes/{id}: a connection of its own (the hub holds the first one), same id.
expect_status 200 "$U/processes/$ID"
python3 - "$T/body" "$ID" "$NSPID" <<'PY' || fail "GET /processes/$ID: $(cat "$T/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pid"] == int(sys.argv[2]) and d["ns_pid"] == int(sys.argv[3]), d
assert d["listen_mode"] is True and d["pid_namespace"] == "other", d
assert any(s["client"] == "evring monitor" for s in d["sessions"]), d
PY
# The other {pid} routes take the id too: its threads (their tids as it knows them) and events.
expect_status 200 "$U/processes/$ID/threads"
python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); assert len(t) >= 3, t' \
	"$T/body" || fail "GET /processes/$ID/threads: $(cat "$T/body")"
expect_status 200 "$U/processes/$ID/events?provider=Demo"
grep -q '"Tick"' "$T/body" || fail "GET /processes/$ID/events: $(head -c 300 "$T/body")"
# By name too: the names it gave in its HelloReply (the monitor's /proc has no entry for it).
expect_status 200 "$U/processes?name=workload"
python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); assert [x["pid"] for x in p] == [int(sys.argv[2])], p' \
	"$T/body" "$ID" || fail "GET /processes?name=workload: $(cat "$T/body")"
expect_status 200 "$U/processes/workload/sessions"
# Its counters session's figures, labelled by the id.
curl -sS --max-time 30 "$U/metrics" >"$T/metrics" || fail "GET /metrics failed"
grep -q "^evring_session_lost_events_total{pid=\"$ID\"," "$T/metrics" ||
	fail "/metrics has no series for pid $ID: $(grep lost_events "$T/metrics")"
# Stacks need ptrace on a pid of the monitor's: refused, with the reason.
expect_status 409 "$U/processes/$ID/stacks"
grep -q "pid namespace the monitor cannot see" "$T/body" || fail "stacks: $(cat "$T/body")"
expect_status 409 "$U/processes/$ID/trace?duration=1s&providers=Demo&stacks=8"
grep -q "stacks= and sample_cpu= need its pid" "$T/body" || fail "trace stacks=: $(cat "$T/body")"
# A pid no process has, next to it, is still unknown.
expect_status 404 "$U/processes/$((ID + 1))/sessions"

# The trace by that id: the workload waits for it (--wait-sessions 1: a session that enables
# Demo; the hub's counters session does not), writes N iterations and exits.
curl -sS --max-time 120 -o "$T/t.evtrace" -w '%{http_code}' \
	"$U/processes/$ID/trace?duration=2m&providers=Demo" >"$T/code" ||
	fail "the trace request failed"
[[ $(cat "$T/code") == 200 ]] || fail "trace: HTTP $(cat "$T/code"): $(head -c 300 "$T/t.evtrace")"
expect "$WL_FD" "^done $N " "the workload's 'done' line"
"$EVRING" dump --json "$T/t.evtrace" >"$T/t.json" 2>"$T/dump.err" ||
	fail "dump: $(cat "$T/dump.err")"
python3 "$HERE/../cli/check_dump.py" --json "$T/t.json" --ticks "$N" --no-lost ||
	fail "the trace does not hold exactly $N ticks"
# Every connection it made was the same process's: one arrival logged, never a second id.
(($(grep -c "connected in listen mode" "$T/monitor.err") == 1)) ||
	fail "the agent's connections got more than one id: $(cat "$T/monitor.err")"
wait "$WL_PID" || fail "the workload exited with $?"
kill -0 "$MON_PID" 2>/dev/null || fail "the monitor died: $(tail -5 "$T/monitor.err")"
echo "PASS"
