#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Who gets in: local processes of the monitor's user (loopback TCP, checked with sock_diag;
# the Unix socket, SO_PEERCRED and mode 0600); anyone else only with the API key, which the
# monitor knows only by its hash. Off loopback is tested for real on a non-loopback address
# of this machine (the peer address the monitor sees is not loopback); another local user
# with setpriv (root only). Also: a non-loopback --listen without a key is refused, the
# Host header on loopback (421), cross-site browser requests (403).
source "$(dirname "$0")/lib.sh"

start_producer workload "$WORKLOAD" --rate 100 --threads 1

# --generate-key prints shell assignments; the monitor is given only the hash.
eval "$("$EVRING" monitor --generate-key 2>/dev/null)"
[[ $EVRING_MONITOR_KEY =~ ^[0-9a-f]{64}$ ]] || fail "key: '$EVRING_MONITOR_KEY'"
[[ $EVRING_MONITOR_KEY_HASH =~ ^sha256:[0-9a-f]{64}$ ]] || fail "hash: '$EVRING_MONITOR_KEY_HASH'"
KEY=$EVRING_MONITOR_KEY

# Refusals at start-up (exit 2, one line naming the cause).
st=0
"$EVRING" monitor --listen 0.0.0.0:0 >/dev/null 2>"$T/e1" || st=$?
[[ $st == 2 ]] && grep -q "not a loopback address" "$T/e1" || fail "no key off loopback: $st $(cat "$T/e1")"
st=0
"$EVRING" monitor --no-auth --key-hash "$EVRING_MONITOR_KEY_HASH" >/dev/null 2>"$T/e2" || st=$?
[[ $st == 2 ]] && grep -q "exclude each other" "$T/e2" || fail "--no-auth with a key: $st"
st=0
"$EVRING" monitor --key-hash sha256:1234 >/dev/null 2>"$T/e3" || st=$?
[[ $st == 2 ]] && grep -q -- "--key-hash" "$T/e3" || fail "bad hash: $st $(cat "$T/e3")"

# --- loopback: our own user gets in without a key; the Host and cross-site gates -----------------
start_monitor --listen 127.0.0.1:0
expect_status 200 "$U/info"
port=${U##*:}
expect_status 421 "$U/info" -H "Host: evil.example:$port"
expect_status 200 "$U/info" -H "Host: localhost:$port"
expect_status 403 "$U/info" -H "Origin: http://evil.example"
expect_status 403 "$U/info" -H "Sec-Fetch-Site: cross-site"
expect_status 200 "$U/info" -H "Sec-Fetch-Site: same-origin"
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
	nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	got=$(cd / && "${nobody[@]}" curl -sS -o /dev/null -w '%{http_code}' "$U/info")
	[[ $got == 401 ]] || fail "another local user on loopback without a key: $got"
	echo "another user (uid 65534) on loopback: 401"
else
	echo "not root: the other-user case is not run"
fi
kill "$MON_PID"
wait "$MON_PID" 2>/dev/null || true

# --- off loopback, with a key --------------------------------------------------------------------
ADDR=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}')
if [[ -z $ADDR ]]; then
	echo "no non-loopback IPv4 address here: the off-loopback case is not run"
else
	rm -f "$T/monitor.out"
	start_monitor --listen 0.0.0.0:0 --key-hash "$EVRING_MONITOR_KEY_HASH"
	port=${U##*:}
	grep -q "$KEY" "/proc/$MON_PID/cmdline" && fail "the key itself is on the command line"
	R=http://$ADDR:$port
	expect_status 401 "$R/info"
	curl -sS -D "$T/h" -o /dev/null "$R/processes"
	grep -qi '^WWW-Authenticate: Bearer' "$T/h" || fail "401 without WWW-Authenticate"
	# The key with its last digit changed (a 64-digit hex key has no 'a' in it one time in
	# 62, so ${KEY/a/b} was the key itself now and then: this test's old flake).
	last=${KEY: -1}
	[[ $last == 0 ]] && other=1 || other=0
	WRONG=${KEY:0:63}$other
	[[ $WRONG != "$KEY" ]] || fail "the altered key is the key"
	expect_status 401 "$R/metrics" -H "Authorization: Bearer $WRONG"
	expect_status 401 "$R/processes/$PROD_PID/trace?duration=1s" -H "Authorization: Bearer wrong"
	expect_status 200 "$R/info" -H "Authorization: Bearer $KEY"
	expect_status 200 "$R/processes/$PROD_PID/counters" -H "Authorization: bearer $KEY"
	# The same monitor from loopback: our own user needs no key.
	expect_status 200 "http://127.0.0.1:$port/info"
	echo "off loopback ($ADDR): 401 without the key, 200 with it"
	kill "$MON_PID"
	wait "$MON_PID" 2>/dev/null || true
fi

# --- the Unix socket ------------------------------------------------------------------------------
rm -f "$T/monitor.out"
start_monitor --no-tcp --unix "$T/mon.sock"
[[ $U == "unix:$T/mon.sock" ]] || fail "unix first line: $U"
[[ $(stat -c %a "$T/mon.sock") == 600 ]] || fail "socket mode $(stat -c %a "$T/mon.sock")"
got=$(curl -sS --unix-socket "$T/mon.sock" -o /dev/null -w '%{http_code}' http://localhost/info)
[[ $got == 200 ]] || fail "over the Unix socket: $got"
kill "$MON_PID"
wait "$MON_PID" 2>/dev/null || true
[[ ! -e $T/mon.sock ]] || fail "the socket file is left behind"
echo PASS
