# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the heap tests: sourced by tests/heap/*.sh, which ctest runs as
#   bash tests/heap/NAME.sh EVRING BINDIR [MODE]
set -euo pipefail

EVRING=$(realpath "${1:?usage: $0 EVRING BINDIR}")
BIN=$(realpath "${2:?usage: $0 EVRING BINDIR}")
MODE=${3:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../common.sh"
evr_test_setup heap
need_python

# A sanitizer build owns malloc: the programs say so and exit 77.
out=$("$BIN/heap-toggle" 0 2>&1) || {
	rc=$?
	((rc == 77)) && skip "$out"
	fail "heap-toggle 0: $out"
}

PPROF=()
if command -v go >/dev/null 2>&1 && go tool pprof -h >/dev/null 2>&1; then
	PPROF=(go tool pprof)
elif command -v pprof >/dev/null 2>&1; then
	PPROF=(pprof)
fi
export HOME=$T PPROF_TMPDIR=$T

# pprof_top FILE INDEX: `pprof -top` by sample type INDEX as "function bytes" lines.
pprof_top() {
	"${PPROF[@]}" -sample_index="$2" -top -unit=B -symbolize=none "$1" 2>"$T/pprof.err" |
		python3 -c '
import re, sys
on = False
for l in sys.stdin:
    if re.match(r"\s+flat\s+flat%", l):
        on = True
        continue
    f = l.split()
    if on and len(f) >= 6:
        print(f[5], int(float(f[0].rstrip("B"))))
' || fail "pprof -sample_index=$2 -top: $(cat "$T/pprof.err")"
}
