#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --version on every tool and every subcommand, as the dotnet tools have it: the project's
# version from CMake, exit status 0, nothing else done (record does not attach, stress does
# not run).
#   bash tests/cli/version.sh VERSION EVRING CLRTOP EVRING-BENCH EVRING-STRESS
set -euo pipefail
VERSION=${1:?usage: $0 VERSION EVRING CLRTOP EVRING-BENCH EVRING-STRESS}
EVRING=$2 CLRTOP=$3 BENCH=$4 STRESS=$5
source "$(dirname "$0")/../common.sh"
evr_test_setup version

# check WANT CMD...: CMD prints exactly WANT and exits 0.
check() {
	local want=$1 out st=0
	shift
	out=$("$@" 2>&1) || st=$?
	[[ $st == 0 ]] || fail "$*: exit status $st: $out"
	[[ $out == "$want" ]] || fail "$*: '$out', want '$want'"
	echo "ok: $* -> $out"
}

check "evring $VERSION" "$EVRING" --version
for sub in ps record dump convert report stacks forward monitor; do
	check "evring $sub $VERSION" "$EVRING" "$sub" --version
done
# Among other options too, and not after -- (that is the program's own).
check "evring record $VERSION" "$EVRING" record -p 1 --providers Demo --version
st=0
"$EVRING" record --no-sandbox -o "$T/t.evtrace" -- sh -c 'echo "$1"' _ --version \
	>"$T/out" 2>&1 || st=$?
grep -qx -- "--version" "$T/out" || fail "record -- PROGRAM --version: the program did not get it"
check "clrtop $VERSION" "$CLRTOP" --version
check "evring-bench $VERSION" "$BENCH" --version
check "evring-stress $VERSION" "$STRESS" --version
echo PASS
