#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The README's first example, three times with default options (default buffer, default
# I/O): `evring record --providers Demo -o app.evtrace -- workload --events 100000`. The
# workload writes as fast as it can (about 12 M events/s from one thread); nothing may be
# lost, and the accounting is exact, each time. A count, not a time: a default that loses
# on an ordinary machine is the defect this guards against (issue 29: 147-239 k of 400 k
# events lost with the 4 MiB default rings).
source "$(dirname "$0")/lib.sh"
N=100000

for i in 1 2 3; do
	(cd "$T" && "$EVRING" record --providers Demo -o app.evtrace -- "$WORKLOAD" \
		--events "$N") >"$T/$i.out" 2>"$T/$i.err" ||
		fail "record (run $i) exited with $?: $(cat "$T/$i.err")"
	cat "$T/$i.err"
	lost=$(record_lost "$T/$i.err")
	check_accounting "run$i" "$N" "$T/$i.out" "$T/$i.err" "$T/app.evtrace"
	((lost == 0)) || fail "run $i: $lost events lost with the default options"
done
echo "PASS"
