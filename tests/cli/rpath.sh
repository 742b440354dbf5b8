#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The build tree's programs and libraries look for libraries only where they were built, never
# in the directory they are run from (CMakeLists.txt, CMAKE_BUILD_WITH_INSTALL_RPATH):
#   1. no RPATH or RUNPATH of an ELF file in bin/ or lib/ has an empty entry (the dynamic
#      loader reads one as the working directory) or a relative one that is not $ORIGIN's;
#   2. evring, evring-monitor and clrtop, run from a directory holding a library of each name
#      they need (files that are no library: loading one fails the program), run as usual;
#   3. so does a program linked against libevring-consumer (the library, whose own search
#      path CMake used to pad with nothing but ':').
# The installed tree is checked the same way by tests/install/install.sh.
source "$(dirname "$0")/lib.sh"
command -v readelf >/dev/null || skip "no readelf (binutils) to read the search paths"

bin=$(dirname "$EVRING")
lib=$(cd "$bin/../lib" && pwd)

# search_path_ok FILE: fails on an empty or relative entry of FILE's RPATH/RUNPATH.
search_path_ok() {
	local f=$1 p entry
	p=$(elf_search_path "$f" 2>/dev/null)
	[[ -n $p ]] || return 0
	# An entry before, between or after ':' that is empty: a leading, doubled or trailing ':'.
	[[ $p != :* && $p != *: && $p != *::* ]] ||
		fail "$f: its library search path '$p' has an empty entry (the working directory)"
	local IFS=:
	for entry in $p; do
		[[ $entry == /* || $entry == '$ORIGIN' || $entry == '$ORIGIN/'* ]] ||
			fail "$f: its library search path '$p' has a relative entry '$entry'"
	done
}

n=0
while IFS= read -r -d '' f; do
	[[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
		search_path_ok "$f"
	n=$((n + 1))
done < <(find "$bin" "$lib" -maxdepth 1 -type f -print0)
((n >= 3)) || fail "only $n ELF files in $bin and $lib"
echo "search paths: $n ELF files, none with an empty or relative entry"

# 2. Plant every library the programs need, by name, in a directory, and run them there.
plant=$T/plant
mkdir "$plant"
for prog in "$EVRING" "$bin/evring-monitor" "$bin/clrtop"; do
	[[ -x $prog ]] || continue
	while read -r soname; do
		[[ -e $plant/$soname ]] || echo "planted by tests/cli/rpath.sh: not a library" \
			>"$plant/$soname"
	done < <(readelf -d "$prog" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
done
[[ -e $plant/libevring-consumer.so.0 ]] ||
	fail "evring needs no libevring-consumer.so.0? $(readelf -d "$EVRING" | grep NEEDED)"
(cd "$plant" && "$EVRING" --version) >"$T/version.out" 2>"$T/version.err" ||
	fail "evring --version run from a directory of planted libraries: $(cat "$T/version.err")"
grep -q '^evring ' "$T/version.out" || fail "evring --version printed: $(cat "$T/version.out")"
for prog in evring-monitor clrtop; do
	[[ -x $bin/$prog ]] || continue
	(cd "$plant" && "$bin/$prog" --help) >"$T/$prog.out" 2>&1 ||
		fail "$prog --help run from a directory of planted libraries: $(tail -n 3 "$T/$prog.out")"
done
# 3. A record run from there (the consumer library's own dependencies, loaded at start).
start_workload w --rate 100 --threads 1
(cd "$plant" && "$EVRING" ps) >"$T/ps.out" 2>"$T/ps.err" ||
	fail "evring ps run from a directory of planted libraries: $(cat "$T/ps.err")"
grep -q "$WL_PID" "$T/ps.out" || fail "evring ps run from there does not list $WL_PID: $(cat "$T/ps.out")"
echo "evring, evring-monitor, clrtop and evring ps ran beside $(ls "$plant" | wc -l) planted libraries"
