#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# GET /processes/PID/heap?duration=T&rate=R: a heap profile over HTTP of heap-sites (three
# sites of known sizes, allocated once the hooks are in), as pprof: gzip, a .pb.gz file name,
# keep_1k's 100 MiB within 15% in inuse_space and churn_64k not in use (go tool pprof -top;
# skipped, 77, after every other check, without go). Its parameters are checked as the
# trace route's (unknown ones, duration and rate limits: 400), and it is an operation: with
# --max-sessions 1 a second request while it runs is a 429.
# Usage: heap.sh EVRING MINIRT WORKLOAD HEAP_SITES
source "$(dirname "$0")/lib.sh"
SITES=$(realpath "${4:?usage: $0 EVRING MINIRT WORKLOAD HEAP_SITES}")

out=$("$(dirname "$SITES")/heap-toggle" 0 2>&1) || {
	rc=$?
	((rc == 77)) && skip "$out"
	fail "heap-toggle 0: $out"
}
# First: it must not hold heap-sites' stdin open (heap-sites ends at its EOF).
start_monitor --listen 127.0.0.1:0 --max-sessions 1 --max-duration 60s
mkfifo "$T/in" "$T/sites.out"
"$SITES" wait <"$T/in" >"$T/sites.out" 2>"$T/sites.err" &
PID=$!
KILL_AT_EXIT+=("$PID")
exec {IN}>"$T/in" {OUT}<"$T/sites.out"
expect "$OUT" "^ready $PID\$" "'ready' from heap-sites"

# Parameters: as every monitor route, unknown ones and values out of their limits are 400s.
expect_status 400 "$U/processes/$PID/heap?duration=1s&providers=Demo"
grep -q "unknown parameter 'providers'" "$T/body" || fail "unknown parameter: $(cat "$T/body")"
expect_status 400 "$U/processes/$PID/heap?rate=0"
grep -q "rate: bytes between samples" "$T/body" || fail "rate=0: $(cat "$T/body")"
expect_status 400 "$U/processes/$PID/heap?rate=2G"
expect_status 400 "$U/processes/$PID/heap?duration=0"
expect_status 400 "$U/processes/$PID/heap?duration=2m"
grep -q "max-duration" "$T/body" || fail "duration over the limit: $(cat "$T/body")"
expect_status 400 "$U/processes/$PID/heap?stacks=0"
expect_status 405 "$U/processes/$PID/heap" -X POST -H 'Content-Type: application/json' -d '{}'

# The profile: 20 s, at 16 KiB (so that keep_1k's estimate is within a few %).
curl -sS --max-time 120 -D "$T/h" -o "$T/heap.pb.gz" -w '%{http_code}' \
	"$U/processes/$PID/heap?duration=20s&rate=16K" >"$T/code" {IN}>&- &
CURL=$!
KILL_AT_EXIT+=("$CURL")
expect "$OUT" "^done " "'done' from heap-sites (its allocations, once the hooks were in)"
# It holds the one operation slot: a second one is refused while it runs.
expect_status 429 "$U/processes/$PID/heap?duration=1s"
wait "$CURL" || fail "curl failed"
[[ $(cat "$T/code") == 200 ]] || fail "heap: $(cat "$T/code") $(head -c 400 "$T/heap.pb.gz")"
[[ $(head -c2 "$T/heap.pb.gz" | od -An -tx1 | tr -d ' ') == 1f8b ]] || fail "heap: not gzip"
grep -qi '^Content-Disposition: attachment; filename="[0-9]*-[0-9TZ]*\.pb\.gz"' "$T/h" ||
	fail "heap file name: $(cat "$T/h")"
exec {IN}>&-
wait "$PID" || fail "heap-sites failed: $(cat "$T/sites.err")"
monitor_alive

if ! command -v go >/dev/null 2>&1 || ! go tool pprof -h >/dev/null 2>&1; then
	skip "everything but pprof's own reading passed: go tool pprof is not installed"
fi
export HOME=$T PPROF_TMPDIR=$T
for idx in inuse_space alloc_space; do
	go tool pprof -sample_index=$idx -top -unit=B -symbolize=none "$T/heap.pb.gz" \
		>"$T/$idx.txt" 2>"$T/pprof.err" || fail "go tool pprof -top: $(cat "$T/pprof.err")"
done
python3 - "$T/inuse_space.txt" "$T/alloc_space.txt" <<'PY'
import re, sys
MiB = 1 << 20
def load(p):
    text, on, d = open(p).read(), False, {}
    assert re.search(r"^Type: (inuse|alloc)_space", text, re.M), text
    for l in text.splitlines():
        if re.match(r"\s+flat\s+flat%", l):
            on = True
        elif on and len(l.split()) >= 6:
            f = l.split()
            d[f[5]] = int(float(f[0].rstrip("B")))
    return d
inuse, alloc = load(sys.argv[1]), load(sys.argv[2])
assert abs(inuse.get("keep_1k", 0) - 100 * MiB) <= 15 * MiB, f"inuse: {inuse}"
assert inuse.get("churn_64k", 0) < 0.01 * 50 * MiB, f"churn_64k in use: {inuse}"
assert abs(alloc.get("churn_64k", 0) - 50 * MiB) <= 7.5 * MiB, f"alloc: {alloc}"
print("inuse_space", inuse)
PY
echo PASS
