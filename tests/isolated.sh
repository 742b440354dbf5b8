#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The guard of the tests' isolation (tests/CMakeLists.txt): ctest gives every test its own
# runtime directory, so a consumer the user runs on the default one (an `evring monitor`,
# clrtop, `evring ps`) sees none of a test's processes, and cannot attach to them and
# change what they count. Here, in this test's directory as ctest set it (not a fresh
# one of tests/common.sh): a producer is listed by `evring ps` there, and neither listed
# by an `evring ps` on the default directories nor has its socket in them.
# Usage: isolated.sh EVRING PRODUCER
set -euo pipefail
evring=$1 producer=$2

fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -n ${EVR_RUNTIME_DIR:-} ]] || fail "EVR_RUNTIME_DIR is not set: ctest gives every test its own"
case $EVR_RUNTIME_DIR in
/run/user/* | /tmp/evring-[0-9]*) fail "EVR_RUNTIME_DIR=$EVR_RUNTIME_DIR is a default directory" ;;
esac
T=$(mktemp -d /tmp/evring-isolated.XXXXXX)
coproc PROD { exec "$producer"; }
PROD_PID=$PROD_PID
trap 'kill -9 $PROD_PID 2>/dev/null || true; rm -rf "$T"' EXIT
read -r -t 60 -u "${PROD[0]}" word pid || fail "the producer never said ready"
[[ $word == ready && $pid == "$PROD_PID" ]] || fail "producer said '$word $pid'"

# Listed where the test runs: the agent listens there (its socket appears once it has
# bound; `evring ps` retries nothing, so wait for the socket itself).
for ((i = 0; i < 6000; i++)); do
	[[ -S $EVR_RUNTIME_DIR/$pid.sock ]] && break
	sleep 0.01
done
[[ -S $EVR_RUNTIME_DIR/$pid.sock ]] || fail "no socket $EVR_RUNTIME_DIR/$pid.sock"
"$evring" ps --json >"$T/own.json" 2>"$T/own.err" || fail "ps: $(cat "$T/own.err")"
grep -q "\"pid\":$pid[,}]" "$T/own.json" || fail "ps in the test's directory does not list $pid"

# Not where everything else on the machine looks.
uid=$(id -u)
for d in "/tmp/evring-$uid" "/run/user/$uid/evring"; do
	[[ ! -e $d/$pid.sock ]] || fail "$d/$pid.sock exists: the producer listens in a default directory"
done
env -u EVR_RUNTIME_DIR "$evring" ps --json >"$T/default.json" 2>"$T/default.err" || true
if grep -q "\"pid\":$pid[,}]" "$T/default.json"; then
	fail "ps on the default runtime directories lists the test's process $pid"
fi
echo "PASS: $pid is listed in $EVR_RUNTIME_DIR only"
