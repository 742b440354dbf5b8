#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/hello run as the README shows it: its exit status is 0 and it prints each event
# it wrote, read back, and the count (7 Alloc events, then Log and Tick; nothing lost).
# Usage: example_hello.sh HELLO
set -euo pipefail
hello=$1

out=$("$hello" 7) || { echo "FAIL: hello exited $?" >&2; exit 1; }
printf '%s\n' "$out"
re=$'^(Hello/Alloc tid=[0-9]+ ring=[0-9]+ 12 bytes\n){7}Hello/Log tid=[0-9]+ ring=[0-9]+ 16 bytes\nHello/Tick tid=[0-9]+ ring=[0-9]+ 0 bytes\nread 9 events, 0 lost$'
[[ $out =~ $re ]] || { echo "FAIL: hello printed something else than 7 Alloc, Log, Tick, 9 read" >&2; exit 1; }
echo PASS
