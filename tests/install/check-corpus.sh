#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/install/check-corpus.sh INCLUDE-DIR: the typical instrumented program (corpus/: a
# provider with every field type shared by C and C++ files, a char buf[64] passed to a str
# field, json and bytes fields, counters) compiles without a warning, -Wall -Wextra
# -Wpedantic -Werror, at -O0, -O2 (with _FORTIFY_SOURCE, as distributions build) and -O3,
# by gcc and clang in C11 and by g++ and clang++ in C++17, against INCLUDE-DIR alone.
#
# Exit: 0 all passed with every compiler found, 1 a failure (shown), 77 no compiler.

set -uo pipefail

inc=${1:?usage: check-corpus.sh INCLUDE-DIR}
corpus=$(cd "$(dirname "${BASH_SOURCE[0]}")/corpus" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/evr-corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT

warn=(-Wall -Wextra -Wpedantic -Werror)
ccs=() cxxs=()
for cc in gcc clang; do command -v "$cc" >/dev/null && ccs+=("$cc"); done
for cxx in g++ clang++; do command -v "$cxx" >/dev/null && cxxs+=("$cxx"); done
((${#ccs[@]} + ${#cxxs[@]})) || { echo "check-corpus: SKIP: no gcc or clang" >&2; exit 77; }

fail=0 runs=0
# compile COMPILER STD OPT FILE
compile() {
	local out
	runs=$((runs + 1))
	# shellcheck disable=SC2086 # $3 is one or two flags
	if ! out=$("$1" "$2" $3 "${warn[@]}" -I"$inc" -c "$4" -o "$work/o.o" 2>&1); then
		echo "FAIL $(basename "$4"): $1 $2 $3" >&2
		echo "$out" | head -n 30 >&2
		fail=$((fail + 1))
	fi
}
for opt in -O0 "-O2 -D_FORTIFY_SOURCE=2" -O3; do
	for cc in "${ccs[@]}"; do
		for f in "$corpus"/*.c; do compile "$cc" -std=c11 "$opt" "$f"; done
	done
	for cxx in "${cxxs[@]}"; do
		for f in "$corpus"/*.cpp; do compile "$cxx" -std=c++17 "$opt" "$f"; done
	done
done
echo "check-corpus: ${ccs[*]} ${cxxs[*]}, -O0/-O2/-O3: $runs compiles, $fail failed"
((fail == 0))
