#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Listen mode (issue 30): a program started with EVR_MONITOR_SOCKET=PATH connects to a
# monitor that cannot see its runtime directory.
#  1. The monitor runs in a mount namespace of its own, where the programs' runtime
#     directory is hidden under a tmpfs and the shared directory is reachable only at
#     another path (a bind mount): the program with the variable is listed, marked
#     listen_mode, and a trace over HTTP of a workload of N iterations holds exactly N
#     Ticks, nothing lost. A program without it is not in listen mode: a monitor that
#     shares the pid namespace finds it all the same, through /proc/PID/root (the
#     container discovery of consumer/client/client-ns.c), never by its socket here.
#  2. A listener that talks garbage, closes at once or announces a huge frame does not
#     hurt the program: it keeps writing events and exits 0 on SIGINT; its agent tries
#     again after each failure, waiting longer each time (at least 100 ms).
#  3. A monitor of uid 65533 refuses a program of uid 65534 that connects to its socket
#     (widened to 0666 for the purpose), with a log line.
# Needs root (unshare, mount, setpriv); skipped otherwise.
source "$(dirname "$0")/lib.sh"

[[ $(id -u) == 0 ]] || skip "needs root (a mount namespace for the monitor, setpriv)"
for t in unshare mount setpriv; do
	command -v $t >/dev/null || skip "$t not found"
done
unshare --mount --propagation private true 2>/dev/null ||
	skip "unshare --mount is not permitted here"
N=20000

# --- 1. a monitor in another mount namespace ------------------------------------------------
# The monitor sees $T/shared only as $T/monview, and an empty runtime directory.
start_monitor_apart
[[ $(stat -c %a "$T/shared/agents.sock") == 600 ]] || fail "the socket's mode is not 0600"
[[ ! -e $T/monview/agents.sock ]] || fail "the bind mount leaked into this namespace"

# A program in the usual way: its socket is in a directory the monitor cannot see.
start_producer hidden "$WORKLOAD" --threads 1 --rate 100
HIDDEN=$PROD_PID
# And the one in listen mode.
EVR_MONITOR_SOCKET=$T/shared/agents.sock start_producer wl "$WORKLOAD" --events "$N" \
	--threads 2 --wait-sessions 1 --pin
PID=$PROD_PID
WL_FD=$PROD_FD

listed() {
	curl -sS --max-time 30 "$U/processes" | python3 -c '
import json, sys
ps = {p["pid"]: p for p in json.load(sys.stdin)}
p = ps.get(int(sys.argv[1]))
assert p and p["listen_mode"] is True and p["state"] == "live", ps
h = ps.get(int(sys.argv[2]))
assert not h or h["listen_mode"] is False, "the other program is in listen mode: %r" % ps' \
	"$PID" "$HIDDEN" \
	2>/dev/null
}
wait_for 60 listed
grep -q "process $PID connected in listen mode on $T/monview/agents.sock" "$T/monitor.err" ||
	fail "no log line for the connection: $(cat "$T/monitor.err")"
# Every route takes it: its description, by the pid the kernel gave the monitor.
expect_status 200 "$U/processes/$PID"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pid"] == int(sys.argv[2]) and d["listen_mode"] is True, d
assert any(s["client"] == "evring monitor" for s in d["sessions"]), d' "$T/body" "$PID" ||
	fail "GET /processes/$PID: $(cat "$T/body")"

# The trace: the workload waits for it (--wait-sessions 1), writes N iterations and exits;
# the trace ends with the process.
curl -sS --max-time 120 -o "$T/t.evtrace" -w '%{http_code}' \
	"$U/processes/$PID/trace?duration=2m&providers=Demo" >"$T/code" ||
	fail "the trace request failed"
[[ $(cat "$T/code") == 200 ]] || fail "trace: HTTP $(cat "$T/code"): $(head -c 300 "$T/t.evtrace")"
expect "$WL_FD" "^done $N " "the workload's 'done' line"
"$EVRING" dump --json "$T/t.evtrace" >"$T/t.json" 2>"$T/dump.err" ||
	fail "dump: $(cat "$T/dump.err")"
python3 "$HERE/../cli/check_dump.py" --json "$T/t.json" --ticks "$N" --no-lost ||
	fail "the trace does not hold exactly $N ticks"
kill "$HIDDEN"
monitor_alive

# --- 2. a hostile listener ---------------------------------------------------------------------
cat >"$T/hostile.py" <<'PY'
# Accept the agent's connections and misbehave on each: garbage, an immediate close, a
# frame header announcing 4 GiB, a valid header then garbage; print each accept's time.
import os, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(8)
print("listening", flush=True)
for i in range(n):
    c, _ = s.accept()
    print("accepted %.6f" % time.monotonic(), flush=True)
    kind = i % 4
    try:
        if kind == 0:
            c.sendall(os.urandom(4096))
        elif kind == 2:
            c.sendall(b"\xff\xff\xff\xff" + os.urandom(64))
        elif kind == 3:
            c.sendall(b"\x10\x00\x00\x00" + os.urandom(16))
    except OSError:
        pass
    c.close()
s.close()
os.unlink(path)
print("finished", flush=True)
PY
mkfifo "$T/hostile.out"
python3 "$T/hostile.py" "$T/shared/hostile.sock" 6 >"$T/hostile.out" &
KILL_AT_EXIT+=("$!")
exec {HFD}<"$T/hostile.out"
expect "$HFD" '^listening$' "the hostile listener"
EVR_MONITOR_SOCKET=$T/shared/hostile.sock start_producer victim "$WORKLOAD" --threads 2 \
	--rate 2000 --report-every 2000
VICTIM=$PROD_PID
VFD=$PROD_FD
times=()
for ((i = 0; i < 6; i++)); do
	IFS= read -r -t 60 -u "$HFD" line || fail "the agent stopped connecting after $i tries"
	[[ $line =~ ^accepted\ ([0-9.]+)$ ]] || fail "hostile listener: '$line'"
	times+=("${BASH_REMATCH[1]}")
done
expect "$HFD" '^finished$' "the hostile listener's end"
# Each failure makes the next try wait: 100 ms at least, then longer (never a storm).
python3 - "${times[@]}" <<'PY' || fail "the agent retried too soon: ${times[*]}"
import sys
t = [float(x) for x in sys.argv[1:]]
gaps = [b - a for a, b in zip(t, t[1:])]
assert all(g >= 0.099 for g in gaps), gaps
assert gaps[-1] >= 0.8, gaps  # 100, 200, 400, 800, 1600 ms
print("retry gaps:", ["%.3f" % g for g in gaps])
PY
# Still writing events after all that: past what it had reported (the lines so far, read
# until a pause; one comes every 0.5 s), it reports more; then a clean exit.
last=0
while IFS= read -r -t 0.3 -u "$VFD" line; do
	[[ $line =~ ^emitted\ ([0-9]+)$ ]] && last=${BASH_REMATCH[1]}
done
expect "$VFD" '^emitted [0-9]+$' "the program's progress after the hostile listener"
((${LINE#emitted } > last)) || fail "the program's count did not grow: $last, then $LINE"
kill -INT "$VICTIM"
expect "$VFD" '^done [0-9]+ ' "the program's 'done' line"
wait "$VICTIM" || fail "the program exited with $? after the hostile listener"
grep -q . "$T/victim.err" && fail "the program printed on stderr: $(cat "$T/victim.err")"

# --- 3. a peer of another uid is refused -------------------------------------------------------
chmod 0711 "$T"
install -d -m 0711 -o 65533 -g 65533 "$T/u65533"
install -d -m 0700 -o 65533 -g 65533 "$T/u65533/run"
install -d -m 0700 -o 65534 -g 65534 "$T/u65534"
mkfifo "$T/mon2.out"
EVR_RUNTIME_DIR=$T/u65533/run setpriv --reuid=65533 --regid=65533 --clear-groups \
	"$EVRING" monitor --listen 127.0.0.1:0 --agent-socket "$T/u65533/agents.sock" \
	>"$T/mon2.out" 2>"$T/mon2.err" &
MON2=$!
KILL_AT_EXIT+=("$MON2")
exec {M2FD}<"$T/mon2.out"
IFS= read -r -t 60 -u "$M2FD" U2 || fail "the second monitor printed no URL: $(cat "$T/mon2.err")"
chmod 0666 "$T/u65533/agents.sock"
mkfifo "$T/nobody.out"
EVR_RUNTIME_DIR=$T/u65534 EVR_MONITOR_SOCKET=$T/u65533/agents.sock \
	setpriv --reuid=65534 --regid=65534 --clear-groups "$WORKLOAD" --threads 1 --rate 100 \
	>"$T/nobody.out" 2>"$T/nobody.err" &
NOBODY=$!
KILL_AT_EXIT+=("$NOBODY")
exec {NFD}<"$T/nobody.out"
expect "$NFD" "^ready $NOBODY\$" "'ready' from the program of uid 65534"
refused() {
	grep -q "refusing a listen-mode connection from process $NOBODY of uid 65534 on $T/u65533/agents.sock: only uid 65533's programs may connect" "$T/mon2.err"
}
wait_for 60 refused
! curl -sS --max-time 30 "$U2/processes" | grep -q "\"pid\": *$NOBODY\b" ||
	fail "the monitor lists the refused process"
kill -0 "$NOBODY" || fail "the refused program died"
kill "$NOBODY" "$MON2"
wait "$NOBODY" "$MON2" 2>/dev/null || true
echo "PASS"
