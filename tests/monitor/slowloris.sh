#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Slowloris before authentication (issue 26): a stranger (this machine's non-loopback
# address, so not a local process of our user) holds 200 requests whose headers never end,
# dripping a header line at a time faster than the idle timeout. The monitor keeps at most
# --max-peer-connections of them, closes each at its --header-timeout (a total, not idle
# time), and its own user's requests over loopback keep getting 200; its threads and fds stay
# bounded (counts, not times). Then the connection limit's reserve: strangers from many
# connections cannot take the places kept for the owner.
source "$(dirname "$0")/lib.sh"

ADDR=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}')
[[ -n $ADDR ]] || skip "no non-loopback IPv4 address here: no stranger to play"
start_producer workload "$WORKLOAD" --rate 100 --threads 1
eval "$("$EVRING" monitor --generate-key 2>/dev/null)"
PEER=8
start_monitor --listen 0.0.0.0:0 --key-hash "$EVRING_MONITOR_KEY_HASH" --idle-timeout 2s \
	--header-timeout 3s --max-peer-connections $PEER
port=${U##*:}
expect_status 200 "http://127.0.0.1:$port/processes"
base_t=$(awk '/^Threads:/ {print $2}' "/proc/$MON_PID/status")
base_f=$(ls "/proc/$MON_PID/fd" | wc -l)
# Each held connection: a thread, the socket and its dup; plus the owner's request. The
# refused ones get no thread and no fd that outlives their accept: the stranger's address is
# refused by the accept policy, before MHD gives the connection a thread (refused after,
# they piled up: 40 threads and 86 fds over the base were seen for a moment). Bounded by the
# peer limit, not by the 200 connections (before the limit, threads and fds grew by 200).
python3 "$HERE/slowloris.py" "$ADDR" "$port" "$MON_PID" "http://127.0.0.1:$port" 200 0.5 \
	$((base_t + PEER + 4)) $((base_f + 2 * PEER + 8)) || fail "slowloris"
curl -sS "http://127.0.0.1:$port/info" -o "$T/info"
python3 - "$T/info" "$PEER" <<'PY' || fail "the refusals are not counted: $(cat "$T/info")"
import json, sys
d = json.load(open(sys.argv[1]))["refused"]
assert d["connections_per_peer"] >= 200 - int(sys.argv[2]), d
assert d["header_or_stream_timeouts"] >= int(sys.argv[2]), d
assert d["strangers_connected"] == 0, d
PY
grep -q 'refused a connection: the peer has --max-peer-connections' "$T/monitor.err" ||
	fail "no refusal logged"
lines=$(grep -c 'refused a connection' "$T/monitor.err")
((lines < 50)) || fail "$lines log lines for 192 refusals: not rate-limited"
# A key holder from the stranger's address is not refused for good: its connection stops
# counting as a stranger's once the key is seen.
expect_status 200 "http://$ADDR:$port/info" -H "Authorization: Bearer $EVRING_MONITOR_KEY"
monitor_alive
echo PASS
