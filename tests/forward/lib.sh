# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the evring forward tests: sourced by tests/forward/*.sh, which ctest runs as
#   bash tests/forward/NAME.sh EVRING WORKLOAD [MORE...]
# Shared pieces (temp and runtime directories, fail, skip, expect) are in tests/common.sh.
set -euo pipefail

EVRING=$(realpath "${1:?usage: $0 EVRING WORKLOAD}")
WORKLOAD=$(realpath "${2:?usage: $0 EVRING WORKLOAD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../common.sh"
evr_test_setup forward

# start_workload NAME ARGS...: the workload in the background, its stdout on a fifo (WL_FD);
# waits for its "ready PID" line. Sets WL_PID.
start_workload() {
	local name=$1
	shift
	mkfifo "$T/$name.out"
	"$WORKLOAD" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	WL_PID=$!
	KILL_AT_EXIT+=("$WL_PID")
	exec {WL_FD}<"$T/$name.out"
	expect "$WL_FD" "^ready $WL_PID\$" "'ready $WL_PID' from the workload"
}

# start_forward NAME ARGS...: evring forward in the background, stderr on a fifo (FWD_FD);
# waits for the line saying every session runs and every sink is open. Sets FWD_PID.
start_forward() {
	local name=$1
	shift
	mkfifo "$T/$name.err"
	"$EVRING" forward "$@" 2>"$T/$name.err" &
	FWD_PID=$!
	KILL_AT_EXIT+=("$FWD_PID")
	exec {FWD_FD}<"$T/$name.err"
	expect "$FWD_FD" "^evring forward: forwarding " "evring forward starting"
}

# finish_forward FILE: the rest of the forwarder's stderr into FILE, then its exit status
# in FWD_STATUS.
finish_forward() {
	cat <&"$FWD_FD" >"$1"
	FWD_STATUS=0
	wait "$FWD_PID" || FWD_STATUS=$?
}

# sink_counts FILE SINK: "SENT DROPPED FILTERED" from the summary line of SINK in FILE.
sink_counts() {
	local line
	line=$(grep -F "evring forward: $2: " "$1" | grep -E ": [0-9]+ sent, [0-9]+ dropped" |
		head -1) || fail "no summary line for $2"
	[[ $line =~ :\ ([0-9]+)\ sent,\ ([0-9]+)\ dropped.*,\ ([0-9]+)\ filtered ]] ||
		fail "summary line of $2: $line"
	echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
}

# source_counts FILE PID: "EVENTS LOST" from the summary line of process PID.
source_counts() {
	local line
	line=$(grep "^evring forward: process $2 " "$1") || fail "no summary line for $2"
	[[ $line =~ :\ ([0-9]+)\ events,\ ([0-9]+)\ lost\ by\ the\ producer ]] ||
		fail "summary line of process $2: $line"
	echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
}

check_jsonl() {
	python3 "$HERE/check_jsonl.py" "$@"
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT: until something accepts connections on 127.0.0.1:PORT (at most 60 s).
wait_port() {
	python3 - "$1" <<'PY' || fail "nothing listens on port $1"
import socket, sys, time
end = time.monotonic() + 60
while time.monotonic() < end:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
PY
}

# start_carbon: a private carbon-cache (Debian graphite-carbon) on a free loopback port,
# storing 1-second points for an hour under $T/carbon; sets CARBON_PORT, CARBON_WSP (the
# whisper directory) and CARBON_PID. Skips when graphite-carbon is not installed.
start_carbon() {
	command -v carbon-cache >/dev/null 2>&1 && command -v whisper-fetch >/dev/null 2>&1 ||
		skip "graphite-carbon and python3-whisper are not installed (scripts/setup --optional)"
	local d=$T/carbon
	mkdir -p "$d/storage"
	CARBON_PORT=$(free_port)
	CARBON_WSP=$d/storage/whisper
	cat >"$d/carbon.conf" <<CONF
[cache]
STORAGE_DIR = $d/storage/
LOCAL_DATA_DIR = $CARBON_WSP/
WHITELISTS_DIR = $d/storage/lists/
CONF_DIR = $d/
LOG_DIR = $d/log/
PID_DIR = $d/
DATABASE = whisper
ENABLE_LOGROTATION = False
MAX_CACHE_SIZE = inf
MAX_UPDATES_PER_SECOND = inf
MAX_CREATES_PER_MINUTE = inf
MIN_TIMESTAMP_RESOLUTION = 1
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = $CARBON_PORT
ENABLE_UDP_LISTENER = False
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = 0
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = 0
USE_FLOW_CONTROL = True
CACHE_WRITE_STRATEGY = sorted
WHISPER_AUTOFLUSH = True
CONF
	printf '[default]\npattern = .*\nretentions = 1s:1h\n' >"$d/storage-schemas.conf"
	carbon-cache --config="$d/carbon.conf" --nodaemon --pidfile="$d/carbon.pid" start \
		>"$d/out.txt" 2>&1 &
	CARBON_PID=$!
	KILL_AT_EXIT+=("$CARBON_PID")
	wait_port "$CARBON_PORT"
}

# count_lines FILE REGEX: how many lines of FILE match REGEX (0 if none or no file).
count_lines() {
	grep -cE -- "$2" "$1" 2>/dev/null || true
}

# wait_lines FILE REGEX N [WHAT]: until FILE has at least N lines matching REGEX; polls the
# file itself, for a process whose output goes to a file (120 s at most).
wait_lines() {
	local i
	for ((i = 0; i < 1200; i++)); do
		(($(count_lines "$1" "$2") >= $3)) && return 0
		sleep 0.1
	done
	fail "never saw ${4:-$3 lines matching '$2'} in $1: $(cat "$1")"
}
