#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring forward --to journald into a real systemd-journald: the test starts its own journald
# in a private mount namespace (tmpfs over /run/systemd, /run/log and /var/log/journal, so
# the machine's journal is not touched and no systemd as PID 1 is needed), forwards a
# producer's events to journald's default socket, and reads them back with
# `journalctl -D /run/log/journal -o json`: one entry per event, the fields as sent, the
# multi-line value whole, MESSAGE_ID selecting the event type. Skipped (77) where a private
# mount namespace or journald cannot be had.
source "$(dirname "$0")/lib.sh"
PRODUCER=$(realpath "${3:?usage: $0 EVRING WORKLOAD PRODUCER}")
need_python
JOURNALD=/lib/systemd/systemd-journald
[[ -x $JOURNALD ]] || skip "no $JOURNALD (systemd is not installed)"
command -v journalctl >/dev/null 2>&1 || skip "no journalctl"
command -v unshare >/dev/null 2>&1 || skip "no unshare"

if [[ -z ${EVR_JOURNALD_NS:-} ]]; then
	((EUID == 0)) || skip "a private journald needs root (mount namespace, tmpfs mounts)"
	unshare -m --propagation private true 2>/dev/null ||
		skip "unshare -m is not permitted here"
	# Again, inside the namespace; the temp directory is the one already made.
	trap - EXIT
	EVR_JOURNALD_NS=1 EVR_JOURNALD_T=$T exec unshare -m --propagation private \
		bash "$0" "$@"
fi
rmdir "$EVR_RUNTIME_DIR" "$T" 2>/dev/null || true	# the second evr_test_setup's, unused
T=$EVR_JOURNALD_T
export EVR_RUNTIME_DIR=$T/run
trap evr_test_cleanup EXIT

for d in /run/systemd /run/log /var/log/journal; do
	mkdir -p "$d"
	mount -t tmpfs -o mode=0755 tmpfs "$d" || skip "cannot mount a tmpfs on $d"
done
"$JOURNALD" >"$T/journald.out" 2>&1 &
J_PID=$!
KILL_AT_EXIT+=("$J_PID")
# Wait for its socket (inotify would do too; this polls the path itself).
for ((i = 0; i < 600; i++)); do
	[[ -S /run/systemd/journal/socket ]] && break
	kill -0 "$J_PID" 2>/dev/null || skip "systemd-journald does not start here: $(cat "$T/journald.out")"
	sleep 0.1
done
[[ -S /run/systemd/journal/socket ]] || fail "journald never made its socket"

N=200
mkfifo "$T/p.out"
"$PRODUCER" --ops "$N" --note >"$T/p.out" 2>"$T/p.err" < <(sleep 600) &
P_PID=$!
KILL_AT_EXIT+=("$P_PID")
exec {P_FD}<"$T/p.out"
expect "$P_FD" "^ready $P_PID\$" "the producer's ready line"
start_forward fwd -p "$P_PID" --providers FwdCheck --to journald,level=verbose
expect "$P_FD" "^recorded " "the producer's recorded line"

# journalctl reads what journald stored: wait until every entry is there.
q() {
	journalctl -D /run/log/journal -o json --no-pager "$@" 2>/dev/null || true
}
for ((i = 0; i < 600; i++)); do
	(($(q SYSLOG_IDENTIFIER=evr-forward-producer | wc -l) >= N + 1)) && break
	sleep 0.1
done
kill -INT "$FWD_PID"
finish_forward "$T/fwd.txt"
cat "$T/fwd.txt"
((FWD_STATUS == 0)) || fail "forward exited with $FWD_STATUS"
q SYSLOG_IDENTIFIER=evr-forward-producer >"$T/journal.json"
q SYSLOG_IDENTIFIER=evr-forward-producer EVR_EVENT=Note >"$T/note.json"
NOTE_ID=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["MESSAGE_ID"])' \
	"$T/note.json" 2>/dev/null) || fail "no Note entry in the journal"
q MESSAGE_ID="$NOTE_ID" >"$T/by_id.json"

python3 - "$T/journal.json" "$T/by_id.json" "$P_PID" "$N" <<'PY' || fail "the journal does not hold what was sent"
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
by_id = [json.loads(l) for l in open(sys.argv[2])]
pid, n = sys.argv[3], int(sys.argv[4])

def text(v):
    # journalctl -o json gives a field that is not valid text as an array of bytes.
    return bytes(v).decode() if isinstance(v, list) else v

ops = sorted(int(e["EVR_F_SEQ"]) for e in entries if e.get("EVR_EVENT") == "Op")
if ops != list(range(1, n + 1)):
    sys.exit("%d Op entries in the journal, expected 1..%d" % (len(ops), n))
op = next(e for e in entries if e.get("EVR_EVENT") == "Op")
if op["PRIORITY"] != "6" or op["MESSAGE"] != "FwdCheck/Op seq=%s" % op["EVR_F_SEQ"] or \
        op["EVR_PID"] != pid or op["EVR_LEVEL"] != "info" or op["_TRANSPORT"] != "journal":
    sys.exit("Op entry: %r" % op)
notes = [e for e in entries if e.get("EVR_EVENT") == "Note"]
if len(notes) != 1 or len(by_id) != 1 or by_id[0]["EVR_EVENT"] != "Note":
    sys.exit("%d Note entries, %d selected by MESSAGE_ID" % (len(notes), len(by_id)))
e = notes[0]
if e["PRIORITY"] != "4" or text(e["EVR_F_TEXT"]) != "first line\nsecond line" or \
        e["EVR_F_A_B"] != "1" or e["EVR_F_A_B_2"] != "2" or e["EVR_F_9LIVES"] != "3":
    sys.exit("Note entry: %r" % e)
print("journal: %d Op entries and the Note, fields as sent; MESSAGE_ID selects the Note" % len(ops))
PY
echo PASS
