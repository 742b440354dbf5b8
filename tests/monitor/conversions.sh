#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Conversions and kept traces against their limits (issue 26): a conversion is an operation
# (429 past --max-sessions), stops when its client goes away; a trace stops at its max_size;
# stopped kept traces are forgotten after --trace-ttl, the oldest first past --max-kept-bytes.
source "$(dirname "$0")/lib.sh"

start_producer minirt "$MINIRT" --seconds 240 --phase exception-storm --threads 2
PID=$PROD_PID
JSON=(-H 'Content-Type: application/json')
post() {	# BODY: start a kept trace; prints its id
	curl -sS --max-time 60 -o "$T/post" -X POST "${JSON[@]}" -d "$1" "$U/processes/$PID/traces"
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/post" ||
		fail "POST $1: $(cat "$T/post")"
}
field() { curl -sS "$U/traces/$1" >"$T/field"; python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['$2'])" "$T/field" 2>/dev/null || cat "$T/field" >&2; }
stopped() { [[ $(field "$1" state) == stopped ]]; }
info() { curl -sS "$U/info" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }

# --- a conversion is an operation ------------------------------------------------------------------
start_monitor --listen 127.0.0.1:0 --max-sessions 1
A=$(post '{"providers": "MiniRT", "duration": "1s"}')
wait_for 60 stopped "$A"
exec {S}< <(curl -sS -N --max-time 200 "$U/processes/$PID/stream?providers=MiniRT")
SPID=$!
KILL_AT_EXIT+=("$SPID")
read -r -t 60 -u "$S" line || fail "the stream sent nothing"
expect_status 429 "$U/traces/$A/trace?format=jsonl"
expect_status 429 "$U/traces/$A/trace?format=chrome"
kill "$SPID"
exec {S}<&-
slot_free() { [[ $(curl -sS -o /dev/null -w '%{http_code}' "$U/traces/$A/trace?format=jsonl") == 200 ]]; }
wait_for 30 slot_free
echo "a conversion while the only operation slot is taken: 429; once free: 200"

# --- a conversion whose client left stops ------------------------------------------------------------
B=$(post '{"providers": "MiniRT", "duration": "4s"}')
wait_for 60 stopped "$B"
echo "trace $B: $(field "$B" bytes) bytes, $(field "$B" events) events"
port=${U##*:}
python3 - "$port" "$B" "$U" <<'PY' || fail "the abandoned conversion"
import json, socket, sys, time, urllib.request
port, tid, url = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def info():
    with urllib.request.urlopen(url + "/info", timeout=30) as r:
        return json.load(r)
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /traces/%s/trace?format=jsonl HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (tid.encode(), port))
# Leave once the conversion holds its operation slot (a wait for the thing itself).
deadline = time.monotonic() + 60
while info()["operations"] != 1:
    assert time.monotonic() < deadline, "the conversion never started"
    time.sleep(0.005)
s.close()
while info()["conversions_abandoned"] != 1 or info()["operations"] != 0:
    assert time.monotonic() < deadline + 60, info()
    time.sleep(0.05)
PY
echo "a conversion whose client left: stopped, its slot given back"
kill "$MON_PID"
wait "$MON_PID" 2>/dev/null || true

# --- max_size, --trace-ttl ----------------------------------------------------------------------------
rm -f "$T/monitor.out"
start_monitor --listen 127.0.0.1:0 --trace-ttl 5s
C=$(post '{"providers": "MiniRT", "max_size": "64K"}')
# The trace as it was when seen stopped (it is forgotten --trace-ttl later).
stopped_json() { curl -sS "$U/traces/$1" >"$T/c.json" && grep -q '"state":"stopped"' "$T/c.json"; }
wait_for 60 stopped_json "$C"
python3 - "$T/c.json" <<'PY' || fail "trace $C did not stop at max_size: $(cat "$T/c.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["truncated"] is True and d["bytes"] >= 65536 and d["max_size"] == 65536, d
print(f"max_size 64K: the trace stopped by itself at {d['bytes']} bytes")
PY
gone() { [[ $(curl -sS -o /dev/null -w '%{http_code}' "$U/traces/$1") == 404 ]]; }
wait_for 60 gone "$C"
echo "past --trace-ttl: forgotten"
kill "$MON_PID"
wait "$MON_PID" 2>/dev/null || true

# --- --max-kept-bytes: the oldest first -----------------------------------------------------------------
# E (160K) and F (128K) together pass 256K: E, the older, goes; F stays.
rm -f "$T/monitor.out"
start_monitor --listen 127.0.0.1:0 --max-kept-bytes 256K
E=$(post '{"providers": "MiniRT", "max_size": "160K"}')
wait_for 60 stopped "$E"
F=$(post '{"providers": "MiniRT", "max_size": "128K"}')
wait_for 60 gone "$E"
wait_for 60 stopped "$F"
[[ $(field "$F" state) == stopped ]] || fail "the newer trace went too"
echo "past --max-kept-bytes: the oldest trace forgotten, the newer one kept"
monitor_alive
echo PASS
