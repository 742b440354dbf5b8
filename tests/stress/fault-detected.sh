#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Each injected fault must make evring-stress exit 1 and name the violation.
# Usage: fault-detected.sh path/to/evring-stress
set -u
bin=$1
status=0
for case in "dup:duplicate" "corrupt:corrupt" "drop:were emitted"; do
	fault=${case%%:*}
	want=${case#*:}
	out=$("$bin" --producers 1 --threads 2 --sessions 2 --seconds 1 --inject-fault "$fault" 2>&1)
	rc=$?
	if [ "$rc" -ne 1 ]; then
		printf '%s\n' "$out"
		echo "FAIL: --inject-fault $fault: exit status $rc, expected 1"
		status=1
	elif ! printf '%s\n' "$out" | grep -q "VIOLATION: .*$want"; then
		printf '%s\n' "$out"
		echo "FAIL: --inject-fault $fault: no violation mentioning \"$want\""
		status=1
	else
		echo "ok: --inject-fault $fault detected: $(printf '%s\n' "$out" | grep -m1 "VIOLATION: .*$want")"
	fi
done
exit $status
