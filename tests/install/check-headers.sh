#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/install/check-headers.sh INCLUDE-DIR LIST: every installed header (LIST: one path
# under INCLUDE-DIR a line, written by cmake/install.cmake) compiles on its own, as the only
# include of a file, in strict C11 (-std=c11 -Wpedantic: no GNU extension, no POSIX
# declaration taken for granted) and in C++17, with -Wall -Wextra -Werror, by gcc/g++ and
# clang/clang++ where installed. An instrumented C++ program including <evring/evring.h> is
# normal; so is one built with -std=c11.
#
# Exit: 0 every header passed with every compiler found, 1 a failure (each one shown with the
# compiler's messages), 77 no C compiler at all.

set -uo pipefail

inc=${1:?usage: check-headers.sh INCLUDE-DIR LIST}
list=${2:?usage: check-headers.sh INCLUDE-DIR LIST}
[[ -d "$inc" && -r "$list" ]] || { echo "check-headers: no $inc or $list" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/evr-headers.XXXXXX")
trap 'rm -rf "$work"' EXIT

warn=(-Wall -Wextra -Wpedantic -Werror)
compilers=()
for cc in gcc clang; do command -v "$cc" >/dev/null && compilers+=("c:$cc"); done
for cxx in g++ clang++; do command -v "$cxx" >/dev/null && compilers+=("c++:$cxx"); done
((${#compilers[@]})) || { echo "check-headers: SKIP: no gcc or clang" >&2; exit 77; }

mapfile -t headers < <(grep -v '^$' "$list")
((${#headers[@]})) || { echo "check-headers: $list names no header" >&2; exit 1; }

fail=0 runs=0
for h in "${headers[@]}"; do
	[[ -f "$inc/$h" ]] || { echo "FAIL $h: listed but not in $inc" >&2; fail=$((fail + 1)); continue; }
	# bits/ headers are included by their parent only, which is checked.
	[[ "$h" == */bits/* ]] && continue
	for c in "${compilers[@]}"; do
		lang=${c%%:*} cc=${c#*:}
		if [[ "$lang" == c ]]; then
			src="$work/one.c" std=-std=c11
		else
			src="$work/one.cpp" std=-std=c++17
		fi
		printf '#include <%s>\n' "$h" >"$src"
		runs=$((runs + 1))
		if ! out=$("$cc" "$std" "${warn[@]}" -I"$inc" -fsyntax-only "$src" 2>&1); then
			echo "FAIL $h: $cc $std" >&2
			echo "$out" | head -n 20 >&2
			fail=$((fail + 1))
		fi
	done
done
echo "check-headers: ${#headers[@]} headers, ${compilers[*]}: $runs compiles, $fail failed"
((fail == 0))
