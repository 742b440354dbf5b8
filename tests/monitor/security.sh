#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What a web page in the user's browser can make the monitor do (issue 26), with the headers
# a browser sends: DNS rebinding on every listener (127.0.0.2, 0.0.0.0 with a key, [::1]),
# Origin: null, POSTs without a type, an empty POST's limits, GETs that start something
# (trace, stacks) without the page's token, control bytes in the path, a parameter over a limit.
source "$(dirname "$0")/lib.sh"

start_producer workload "$WORKLOAD" --rate 100 --threads 1
PID=$PROD_PID
eval "$("$EVRING" monitor --generate-key 2>/dev/null)"
KEY=$EVRING_MONITOR_KEY
JSON=(-H 'Content-Type: application/json')
# What a browser sends for a page of evil.example:P that rebound its name to our address:
# the request is same-origin to the browser.
rebound() {
	BROWSER=(-H "Host: evil.example:$1" -H "Origin: http://evil.example:$1"
		 -H 'Sec-Fetch-Site: same-origin' -H 'Sec-Fetch-Mode: cors' -H 'Sec-Fetch-Dest: empty'
		 -H 'User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0')
}
post_trace() {	# URL [CURL ARGS]: POST a 1 s trace; prints the status
	local url=$1
	shift
	curl -sS --max-time 60 -o "$T/post" -w '%{http_code}' -X POST "$@" \
		-d '{"providers": "Demo", "duration": "1s"}' "$url/processes/$PID/traces"
}

# --- 1. DNS rebinding ------------------------------------------------------------------------------
# A loopback address other than 127.0.0.1: the Host is checked there too.
start_monitor --listen 127.0.0.2:0
port=${U##*:}
rebound "$port"
expect_status 421 "$U/processes" "${BROWSER[@]}"
got=$(post_trace "$U" "${BROWSER[@]}" "${JSON[@]}")
[[ $got == 421 ]] || fail "rebound POST on 127.0.0.2: $got $(cat "$T/post")"
expect_status 200 "$U/processes" -H "Host: 127.0.0.2:$port"
expect_status 200 "$U/processes" -H "Host: localhost:$port"
expect_status 421 "$U/processes" -H "Host: 127.0.0.2:1"
echo "127.0.0.2: a rebound Host gets 421"
kill "$MON_PID"
wait "$MON_PID" 2>/dev/null || true

# Everywhere with a key (the remote-access recipe): from loopback with a foreign Host, no key
# means 401; our own user with a loopback Host needs none; the key opens it from anywhere.
rm -f "$T/monitor.out"
start_monitor --listen 0.0.0.0:0 --key-hash "$EVRING_MONITOR_KEY_HASH"
port=${U##*:}
L=http://127.0.0.1:$port
rebound "$port"
expect_status 401 "$L/processes" "${BROWSER[@]}"
got=$(post_trace "$L" "${BROWSER[@]}" "${JSON[@]}")
[[ $got == 401 ]] || fail "rebound POST on 0.0.0.0: $got $(cat "$T/post")"
expect_status 401 "$L/processes" -H "Host: evil.example:$port"
expect_status 200 "$L/processes"
expect_status 200 "$L/processes" -H "Host: evil.example:$port" -H "Authorization: Bearer $KEY"
echo "0.0.0.0 with a key: a rebound Host gets 401 without the key"
kill "$MON_PID"
wait "$MON_PID" 2>/dev/null || true

if ip -6 addr show dev lo 2>/dev/null | grep -q "inet6 ::1/"; then
	rm -f "$T/monitor.out"
	start_monitor --listen '[::1]:0'
	port=${U##*:}
	rebound "$port"
	expect_status 421 "$U/processes" -g "${BROWSER[@]}"
	expect_status 200 "$U/processes" -g
	kill "$MON_PID"
	wait "$MON_PID" 2>/dev/null || true
	echo "[::1]: a rebound Host gets 421"
else
	echo "no IPv6 loopback here: the [::1] case is not run"
fi

# --- 6. cross-site requests, POST types, an empty POST, side effects of GET --------------------------
rm -f "$T/monitor.out"
start_monitor --listen 127.0.0.1:0 --max-duration 1s
port=${U##*:}
expect_status 403 "$U/processes" -H 'Origin: null'
got=$(post_trace "$U" -H 'Origin: null' "${JSON[@]}")
[[ $got == 403 ]] || fail "POST with Origin: null: $got $(cat "$T/post")"
got=$(post_trace "$U")
[[ $got == 415 ]] || fail "POST without a Content-Type: $got $(cat "$T/post")"
expect_status 415 "$U/processes/$PID/traces" -X POST
# An empty POST starts a trace of every provider, but not an endless one: --max-duration.
curl -sS --max-time 60 -o "$T/post" -X POST "${JSON[@]}" "$U/processes/$PID/traces"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/post") ||
	fail "empty POST: $(cat "$T/post")"
stopped() { curl -sS "$U/traces/$id" | grep -q '"state":"stopped"'; }
wait_for 60 stopped
grep -q '"stop_reason":"duration"' <(curl -sS "$U/traces/$id") ||
	fail "the empty POST's trace did not stop at --max-duration: $(curl -sS "$U/traces/$id")"
echo "an empty POST's trace stops at --max-duration"
# From a browser, a GET that starts something needs the token of the monitor's own pages.
NAV=(-H 'User-Agent: Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0' -H 'Sec-Fetch-Site: same-origin'
     -H 'Sec-Fetch-Mode: navigate' -H 'Sec-Fetch-Dest: document')
OLDNAV=(-H 'User-Agent: Mozilla/5.0 (Macintosh) Safari/605.1.15')	# no Fetch Metadata, no Referer
expect_status 403 "$U/processes/$PID/trace?duration=200ms" "${NAV[@]}"
expect_status 403 "$U/processes/$PID/trace?duration=200ms" "${OLDNAV[@]}"
expect_status 403 "$U/processes/$PID/stacks" "${OLDNAV[@]}"
expect_status 403 "$U/ui/processes/$PID/stacks" "${OLDNAV[@]}"
expect_status 403 "$U/processes/$PID/stacks?token=0123" "${NAV[@]}"
curl -sS -o "$T/page.html" "$U/ui/processes/$PID"
token=$(grep -o 'token=[0-9a-f]\{64\}' "$T/page.html" | head -1 | cut -d= -f2)
[[ -n $token ]] || fail "the process page has no token in its links"
expect_status 200 "$U/processes/$PID/trace?duration=200ms&token=$token" "${NAV[@]}"
expect_status 200 "$U/processes/$PID/stacks?token=$token" "${OLDNAV[@]}"
expect_status 200 "$U/ui/processes/$PID/stacks?token=$token" "${NAV[@]}"
# Tools (no browser headers) and key holders need no token.
expect_status 200 "$U/processes/$PID/stacks"
echo "trace and stacks from a browser: 403 without the page's token, 200 with it"

# --- 7. control bytes in the path or a parameter --------------------------------------------------
expect_status 400 "$U/processes/$PID/stacks%00/counters"
expect_status 400 "$U/processes/$PID%0a/counters"
expect_status 400 "$U/processes/$PID/counters?history=1%00"
expect_status 400 "$U/info%7f"
expect_status 200 "$U/processes/$PID/counters?history=1"
echo "control bytes: 400"

# --- 8. a parameter over a limit: 400 naming the limit --------------------------------------------
expect_status 400 "$U/processes/$PID/trace?duration=1s&buffer_size=16G"
grep -q 'at most 1G' "$T/body" || fail "buffer_size's 400 does not name the limit: $(cat "$T/body")"
expect_status 400 "$U/processes/$PID/trace?duration=5s"
grep -q 'max-duration' "$T/body" || fail "duration's 400 does not name the limit: $(cat "$T/body")"
expect_status 400 "$U/processes/$PID/trace?duration=1s&max_size=2G"
grep -q 'max-trace-size' "$T/body" || fail "max_size's 400 does not name the limit: $(cat "$T/body")"
echo "parameters over a limit: 400 naming it"
monitor_alive
echo PASS
