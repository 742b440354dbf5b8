# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers of the monitor tests: sourced by tests/monitor/*.sh, which ctest runs as
#   bash tests/monitor/NAME.sh EVRING MINIRT WORKLOAD
# Real programs only: minirt/workload as producers, `evring monitor` on 127.0.0.1 port 0,
# curl and python3 as clients. Every wait is for the thing itself, bounded by a generous
# timeout that turns a hang into a failure. Exit 77 means skipped.
set -euo pipefail

EVRING=$(realpath "${1:?usage: $0 EVRING MINIRT WORKLOAD}")
MINIRT=$(realpath "${2:?usage: $0 EVRING MINIRT WORKLOAD}")
WORKLOAD=$(realpath "${3:?usage: $0 EVRING MINIRT WORKLOAD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../common.sh"
evr_test_setup monitor

need_python
command -v curl >/dev/null 2>&1 || skip "curl is needed (scripts/setup installs it)"
[[ -x $(dirname "$EVRING")/evring-monitor ]] || skip "evring-monitor is not built"

# start_producer NAME PROGRAM ARGS...: run it, wait for "ready PID"; sets PROD_PID, and
# PROD_FD: its stdout (a fifo), kept open for what it prints later.
start_producer() {
	local name=$1 prog=$2
	shift 2
	mkfifo "$T/$name.out"
	"$prog" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	PROD_PID=$!
	KILL_AT_EXIT+=("$PROD_PID")
	exec {PROD_FD}<"$T/$name.out"
	expect "$PROD_FD" "^ready $PROD_PID\$" "'ready $PROD_PID' from $name"
}

# start_monitor_apart [UNSHARE OPTIONS...]: evring monitor in a mount namespace of its own
# (unshare --mount and the options given, e.g. --pid --fork --kill-child --mount-proc),
# where the runtime directory is an empty tmpfs and $T/shared is reachable only as
# $T/monview; it listens for programs (listen mode) on $T/monview/agents.sock, which is
# $T/shared/agents.sock here. Sets U, MON_PID, MON_FD; stderr goes to $T/monitor.err.
start_monitor_apart() {
	mkdir -m 0700 "$T/shared" "$T/monview"
	mkfifo "$T/monitor.out"
	unshare "$@" --mount --propagation private -- sh -c '
		mount -t tmpfs -o mode=0700 evr-hidden "$EVR_RUNTIME_DIR" &&
		mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$T/shared" "$T/monview" \
		"$EVRING" monitor --listen 127.0.0.1:0 --agent-socket "$T/monview/agents.sock" \
		>"$T/monitor.out" 2>"$T/monitor.err" &
	MON_PID=$!
	KILL_AT_EXIT+=("$MON_PID")
	exec {MON_FD}<"$T/monitor.out"
	IFS= read -r -t 60 -u "$MON_FD" U ||
		fail "the monitor printed no URL: $(cat "$T/monitor.err")"
	[[ -S $T/shared/agents.sock ]] || fail "no socket at $T/shared/agents.sock"
}

# start_monitor ARGS...: evring monitor in the background; waits for its first line, the
# URL; sets U (the URL), MON_PID. stderr goes to $T/monitor.err.
start_monitor() {
	local fd
	mkfifo "$T/monitor.out"
	"$EVRING" monitor "$@" >"$T/monitor.out" 2>"$T/monitor.err" &
	MON_PID=$!
	KILL_AT_EXIT+=("$MON_PID")
	exec {fd}<"$T/monitor.out"
	if ! IFS= read -r -t 60 -u "$fd" U; then
		fail "the monitor printed no URL: $(cat "$T/monitor.err")"
	fi
	[[ $U =~ ^(http://|unix:) ]] || fail "first line is not a URL: '$U'"
	MON_FD=$fd
}

# The monitor must still be running (and serving: /info answers).
monitor_alive() {
	kill -0 "$MON_PID" 2>/dev/null || fail "the monitor died: $(tail -5 "$T/monitor.err")"
	[[ $(curl -sS -o /dev/null -w '%{http_code}' --max-time 30 "$U/info") == 200 ]] ||
		fail "the monitor does not answer /info any more"
}

# code_type URL [CURL ARGS...]: prints "STATUS CONTENT-TYPE" (body to $T/body).
code_type() {
	local url=$1
	shift
	curl -sS --max-time 60 -o "$T/body" -w '%{http_code} %{content_type}' "$@" "$url"
}

# expect_status WANT URL [CURL ARGS...]: the status and, for errors, a problem+json body
# whose "status" member is the same number.
expect_status() {
	local want=$1 url=$2 got
	shift 2
	got=$(code_type "$url" "$@")
	[[ ${got%% *} == "$want" ]] || fail "$url: got '$got', want $want: $(head -c 400 "$T/body")"
	if ((want >= 400)); then
		[[ ${got#* } == application/problem+json* ]] || fail "$url: $want is not problem+json"
		python3 - "$T/body" "$want" <<'PY' || fail "$url: bad problem body: $(cat "$T/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == int(sys.argv[2]), d
assert d["title"] and d["detail"], d
PY
	fi
}

# wait_for SECONDS COMMAND...: run COMMAND until it succeeds (a state we wait for, polled
# because it has no event to wait on); fail after SECONDS.
wait_for() {
	local limit=$1 start=$SECONDS
	shift
	until "$@"; do
		((SECONDS - start < limit)) || fail "timed out after ${limit}s waiting for: $*"
		sleep 0.1
	done
}
