#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# libevring's USDT probes (producer/usdt.c): `readelf -n` lists evring:event and
# evring:counter, each with a semaphore; with no tracer attached a process has no session
# for them; with bpftrace attached the agent notices the semaphore and starts its listener
# (one in-process session), every event of a known sequence fires evring:event once with
# its fields as JSON, a counter fires evring:counter with its value, and once bpftrace
# detaches the session goes away. The bpftrace part is skipped (77) where it cannot run
# (not root, no bpftrace, no tracefs, BPF refused), with the reason.
source "$(dirname "$0")/lib.sh"
PRODUCER=$(realpath "${3:?usage: $0 EVRING WORKLOAD PRODUCER LIBEVRING}")
LIB=$(realpath "${4:?usage: $0 EVRING WORKLOAD PRODUCER LIBEVRING}")
need_python
N=2000

command -v readelf >/dev/null 2>&1 || skip "no readelf (binutils)"
readelf -n "$LIB" >"$T/notes.txt"
grep -q "NT_STAPSDT" "$T/notes.txt" ||
	skip "libevring was built without USDT probes (no <sys/sdt.h>: systemtap-sdt-dev)"
python3 - "$T/notes.txt" <<'PY' || fail "the probes are not in $LIB as expected"
import re, sys
notes = open(sys.argv[1]).read()
found = {}
for m in re.finditer(r"Provider: (\S+)\s+Name: (\S+)\s+Location: \S+, Base: \S+, "
                     r"Semaphore: (\S+)\s+Arguments: ([^\n]*)", notes):
    found[(m[1], m[2])] = (int(m[3], 16), len(m[4].split()))
want = {("evring", "event"): 6, ("evring", "counter"): 5}
for k, nargs in want.items():
    if k not in found:
        sys.exit("no probe %s:%s in %s" % (k + (sorted(found),)))
    if found[k][0] == 0 or found[k][1] != nargs:
        sys.exit("%s:%s: semaphore %#x, %d arguments" % (k + found[k]))
print("readelf: evring:event and evring:counter, with semaphores")
PY

# sessions_of PID: how many sessions the process has now.
sessions_of() {
	"$EVRING" ps --json | python3 -c '
import json, sys
for l in sys.stdin:
    o = json.loads(l)
    if o["pid"] == int(sys.argv[1]):
        print(o["sessions"])' "$1"
}
# wait_sessions PID N: until the process has N sessions (60 s at most).
wait_sessions() {
	local i
	for ((i = 0; i < 600; i++)); do
		[[ $(sessions_of "$1") == "$2" ]] && return 0
		sleep 0.1
	done
	fail "process $1 never had $2 sessions (it has $(sessions_of "$1"))"
}

# The test's processes use a copy of the library, and bpftrace attaches to that copy only:
# uprobes attach to a file, so every other process of this build (other tests running
# beside this one) keeps its semaphores at zero and its sessions as they are.
mkdir -p "$T/lib"
cp "$LIB" "$T/lib/libevring.so.0"
LIB=$T/lib/libevring.so.0
export LD_LIBRARY_PATH=$T/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

start_workload idle --rate 200 --threads 1
IDLE=$WL_PID
grep -q "$LIB" "/proc/$IDLE/maps" || fail "the workload does not use the copy of libevring"
[[ $(sessions_of "$IDLE") == 0 ]] || fail "a process has a session with no tracer attached"

((EUID == 0)) || skip "bpftrace needs root"
command -v bpftrace >/dev/null 2>&1 || skip "bpftrace is not installed (scripts/setup --optional)"
if [[ ! -e /sys/kernel/tracing/uprobe_events && -z ${EVR_USDT_NS:-} ]]; then
	# tracefs is not mounted: mount it in a private mount namespace, and run there.
	unshare -m --propagation private true 2>/dev/null || skip "no tracefs, and unshare -m is refused"
	# Everything again from the start in there, with a directory of its own.
	evr_test_cleanup
	trap - EXIT
	EVR_USDT_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
if [[ -n ${EVR_USDT_NS:-} && ! -e /sys/kernel/tracing/uprobe_events ]]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || skip "cannot mount tracefs"
fi

# bpftrace: the sequence's events (their fields), and the first depth counter sample.
cat >"$T/probe.bt" <<BT
usdt:$LIB:evring:event /str(arg0) == "FwdCheck" && str(arg1) == "Op"/ {
	@seq[str(arg2)] = count();
	@level[arg4] = count();
}
usdt:$LIB:evring:counter /str(arg0) == "FwdCheck" && str(arg1) == "depth"/ {
	printf("counter %s %s %s kind=%d interval=%d\n", str(arg0), str(arg1), str(arg2),
	       arg3, arg4);
}
BT
mkfifo "$T/bt.out"
bpftrace "$T/probe.bt" >"$T/bt.out" 2>"$T/bt.err" &
BT_PID=$!
KILL_AT_EXIT+=("$BT_PID")
exec {BT_FD}<"$T/bt.out"
while IFS= read -r -t 120 -u "$BT_FD" LINE; do
	[[ $LINE == Attaching* ]] && break
done
[[ ${LINE:-} == Attaching* ]] || skip "bpftrace cannot attach here: $(cat "$T/bt.err")"

# Attached: the agent of every process with this libevring starts its probes' session.
wait_sessions "$IDLE" 1
mkfifo "$T/p.out"
"$PRODUCER" --ops "$N" --sessions 1 >"$T/p.out" 2>"$T/p.err" < <(sleep 600) &
P_PID=$!
KILL_AT_EXIT+=("$P_PID")
exec {P_FD}<"$T/p.out"
expect "$P_FD" "^ready $P_PID\$" "the producer's ready line"
expect "$P_FD" "^recorded " "the producer's recorded line (once the probes' session runs)"
expect "$BT_FD" "^counter FwdCheck depth 42 kind=3 interval=1000\$" "the counter probe"
kill -INT "$BT_PID"
cat <&"$BT_FD" >"$T/maps.txt"
wait "$BT_PID" || true
python3 - "$T/maps.txt" "$N" <<'PY' || fail "bpftrace did not see the sequence"
import json, re, sys
text, n = open(sys.argv[1]).read(), int(sys.argv[2])
seqs = {}
for m in re.finditer(r"^@seq\[(.*)\]: (\d+)$", text, re.M):
    seqs[json.loads(m[1])["seq"]] = int(m[2])
levels = dict((int(a), int(b)) for a, b in re.findall(r"^@level\[(\d+)\]: (\d+)$", text, re.M))
if sorted(seqs) != list(range(1, n + 1)) or set(seqs.values()) != {1}:
    sys.exit("%d distinct Op events (want 1..%d, once each)" % (len(seqs), n))
if levels != {4: n}:
    sys.exit("levels %r" % levels)
print("bpftrace: %d Op events, each once, fields as JSON, level info" % n)
PY
# Detached: the sessions go away.
wait_sessions "$IDLE" 0
wait_sessions "$P_PID" 0
echo PASS
