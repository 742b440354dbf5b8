#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring forward --to journald, checked datagram by datagram on a socket the test owns
# (journal_socket.py decodes journald's native protocol): one entry per event, with
# MESSAGE, PRIORITY from the level, SYSLOG_IDENTIFIER, the EVR_* fields and one EVR_F_ field
# per payload field (names mapped for journald, a multi-line value in the binary form); the
# default filter (warning and above) keeps info events out; a journal that is not there yet
# is retried until it is.
source "$(dirname "$0")/lib.sh"
PRODUCER=$(realpath "${3:?usage: $0 EVRING WORKLOAD PRODUCER}")
need_python
N=300
SOCK=$T/journal.sock

mkfifo "$T/p.out"
"$PRODUCER" --ops "$N" --note >"$T/p.out" 2>"$T/p.err" < <(sleep 600) &
P_PID=$!
KILL_AT_EXIT+=("$P_PID")
exec {P_FD}<"$T/p.out"
expect "$P_FD" "^ready $P_PID\$" "the producer's ready line"

# The socket is not there yet: the forwarder says so and retries.
"$EVRING" forward -p "$P_PID" --providers FwdCheck --to "journald:$SOCK,level=verbose" \
	--to "journald:$SOCK" 2>"$T/fwd.txt" &
FWD_PID=$!
KILL_AT_EXIT+=("$FWD_PID")
wait_lines "$T/fwd.txt" "journald:$SOCK,level=verbose: journald is not running at $SOCK: No such file or directory; retrying\$" 1 \
	"the forwarder saying journald is not running"
mkfifo "$T/j.out"
python3 "$HERE/journal_socket.py" "$SOCK" "$T/entries.jsonl" >"$T/j.out" 2>"$T/j.err" &
J_PID=$!
KILL_AT_EXIT+=("$J_PID")
exec {J_FD}<"$T/j.out"
expect "$J_FD" "^listening\$" "the socket's listening line"
expect "$P_FD" "^recorded " "the producer's recorded line"
wait_lines "$T/entries.jsonl" '"EVR_EVENT": "Op"' "$N" "$N Op entries"
kill -INT "$FWD_PID"
FWD_STATUS=0
wait "$FWD_PID" || FWD_STATUS=$?
cat "$T/fwd.txt"
((FWD_STATUS == 0)) || fail "forward exited with $FWD_STATUS"
read -r ev lost <<<"$(source_counts "$T/fwd.txt" "$P_PID")"
read -r sent dropped filtered <<<"$(sink_counts "$T/fwd.txt" "journald:$SOCK,level=verbose")"
((sent == N + 1 && dropped == 0 && sent + filtered == ev)) ||
	fail "verbose sink: $sent sent, $dropped dropped, $filtered filtered of $ev events"
read -r sent dropped filtered <<<"$(sink_counts "$T/fwd.txt" "journald:$SOCK")"
((sent == 1 && dropped == 0 && sent + filtered == ev)) ||
	fail "default sink (warning and above): $sent sent, $filtered filtered of $ev events"

python3 - "$T/entries.jsonl" "$P_PID" "$N" <<'PY' || fail "the journal entries are not right"
import json, sys
path, pid, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ops, notes = {}, []
for line in open(path):
    e = json.loads(line)
    if "_BAD" in e:
        sys.exit("a datagram does not parse: " + e["_BAD"])
    for k in ("MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "MESSAGE_ID", "EVR_PROVIDER",
              "EVR_EVENT", "EVR_EVENT_ID", "EVR_LEVEL", "EVR_KEYWORDS", "EVR_PID", "EVR_TID",
              "EVR_COMM", "EVR_TIMESTAMP_MONOTONIC_NS", "EVR_TIMESTAMP_REALTIME_USEC",
              "OBJECT_PID"):
        if k not in e:
            sys.exit("entry without %s: %r" % (k, e))
    for k in e:
        if not (1 <= len(k) <= 64 and k[0] != "_" and not k[0].isdigit()
                and all(c.isupper() or c.isdigit() or c == "_" for c in k)):
            sys.exit("a field name journald would drop: %r" % k)
    if e["SYSLOG_IDENTIFIER"] != "evr-forward-producer" or e["EVR_PID"] != pid \
            or e["OBJECT_PID"] != pid or e["EVR_PROVIDER"] != "FwdCheck":
        sys.exit("identity fields: %r" % e)
    if e["EVR_EVENT"] == "Op":
        seq = int(e["EVR_F_SEQ"])
        if e["PRIORITY"] != "6" or e["EVR_LEVEL"] != "info" or \
                e["MESSAGE"] != "FwdCheck/Op seq=%d" % seq or e["EVR_KEYWORDS"] != "0x1":
            sys.exit("Op entry: %r" % e)
        ops[seq] = ops.get(seq, 0) + 1
    elif e["EVR_EVENT"] == "Note":
        notes.append(e)
if sorted(ops) != list(range(1, n + 1)) or set(ops.values()) != {1}:
    sys.exit("Op entries: %d distinct of %d" % (len(ops), n))
# One Note from each sink: the default filter lets warnings through.
if len(notes) != 2:
    sys.exit("%d Note entries, expected 2" % len(notes))
e = notes[0]
want = {"PRIORITY": "4", "EVR_LEVEL": "warning", "EVR_F_TEXT": "first line\nsecond line",
        "EVR_F_A_B": "1", "EVR_F_A_B_2": "2", "EVR_F_9LIVES": "3",
        # journald takes names of at most 64 characters: cut there.
        ("EVR_F_" + "a_field_name_that_is_far_longer_than_journald_would_ever_take_as_is"
         .upper())[:64]: "4"}
for k, v in want.items():
    if e.get(k) != v:
        sys.exit("Note: %s is %r, expected %r (%r)" % (k, e.get(k), v, e))
if not e["MESSAGE"].startswith('FwdCheck/Note text="first line\nsecond line" a-b=1 a_b=2'):
    sys.exit("Note MESSAGE: %r" % e["MESSAGE"])
if notes[0]["MESSAGE_ID"] != notes[1]["MESSAGE_ID"] or len(e["MESSAGE_ID"]) != 32:
    sys.exit("MESSAGE_ID is not one per event type: %r" % [x["MESSAGE_ID"] for x in notes])
print("journal entries: %d Op, %d Note, fields as expected" % (len(ops), len(notes)))
PY
echo PASS
