#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/install/install.sh BUILD-DIR: what a user gets from `cmake --install`.
#   1. The build tree installed to a fresh prefix P gives P/bin/evring beside evring-monitor
#      and clrtop, the two libraries, include/evring/ holding exactly the public headers (no
#      private one), the CMake package and pkg-config files whose prefix is P.
#   2. A separate CMake project (app/) with find_package(evring) and evring::evring builds a
#      program (a C provider fired from C++) that `P/bin/evring record -- ./app` records: the
#      dump has every one of its events. evring::consumer links a consumer program.
#   3. The same program built with `pkg-config --cflags --libs evring` records too.
#   4. `P/bin/evring monitor` finds evring-monitor beside it.
#   5. The build tree itself: one include directory (BUILD/include) through
#      evring-uninstalled.pc, and -Devring_DIR=BUILD for CMake.
# Runs in its own runtime directory (EVR_RUNTIME_DIR), so nothing else on the host sees its
# processes. Exit 0 pass, 1 fail, 77 skip (no C++ compiler or pkg-config).
source "$(dirname "$0")/../common.sh"

build=$(cd "${1:?usage: install.sh BUILD-DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
command -v c++ >/dev/null || skip "no C++ compiler (c++) for the test program"
command -v pkg-config >/dev/null || skip "no pkg-config"
evr_test_setup install
P=$T/prefix
N=1000

# 1. Install.
cmake --install "$build" --prefix "$P" >"$T/install.log" 2>&1 ||
	fail "cmake --install: $(tail -n 20 "$T/install.log")"
for f in bin/evring bin/evring-monitor bin/clrtop; do
	[[ -x $P/$f ]] || fail "$f was not installed"
done
for f in lib/libevring.so lib/libevring-consumer.so lib/cmake/evring/evringConfig.cmake \
	lib/cmake/evring/evringConfigVersion.cmake lib/cmake/evring/evringTargets.cmake \
	lib/pkgconfig/evring.pc lib/pkgconfig/evring-consumer.pc; do
	[[ -e $P/$f ]] || fail "$f was not installed"
done
# Exactly the public headers, and nothing the build tree calls private.
(cd "$P/include" && find evring -type f | sort) >"$T/installed.txt"
diff -u "$build/evr-public-headers.txt" "$T/installed.txt" ||
	fail "the installed headers differ from the public set (above)"
for h in ring.h ring-rseq.h shm.h session.h framing.h rundir.h export.h recorder.h \
	sandbox.h symbols.h; do
	[[ ! -e $P/include/evring/$h ]] || fail "private header $h was installed"
done
grep -qx "prefix=$P" "$P/lib/pkgconfig/evring.pc" ||
	fail "evring.pc's prefix is not $P: $(head -n 1 "$P/lib/pkgconfig/evring.pc")"
"$P/bin/evring" --version >/dev/null || fail "the installed evring does not run"
# Each installed program finds libevring-consumer beside it and nowhere else: its search path
# is exactly $ORIGIN/../lib (no empty entry, the working directory: tests/cli/rpath.sh).
if command -v readelf >/dev/null; then
	for f in bin/evring bin/evring-monitor bin/clrtop; do
		rp=$(elf_search_path "$P/$f")
		[[ $rp == '$ORIGIN/../lib' ]] || fail "$f: library search path '$rp', not \$ORIGIN/../lib"
	done
	for f in lib/libevring.so lib/libevring-consumer.so; do
		rp=$(elf_search_path "$P/$f")
		[[ $rp == "" || $rp == '$ORIGIN/../lib' ]] ||
			fail "$f: library search path '$rp' (none, or \$ORIGIN/../lib)"
	done
fi

# 2. find_package(evring).
cmake -S "$here/app" -B "$T/app" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=Release \
	>"$T/app.log" 2>&1 || fail "configuring app/ with find_package(evring): $(tail -n 20 "$T/app.log")"
cmake --build "$T/app" >>"$T/app.log" 2>&1 || fail "building app/: $(tail -n 30 "$T/app.log")"
[[ -x $T/app/lister ]] || fail "evring::consumer was not found (no lister built)"
[[ $("$T/app/lister") == "0 1500000000" ]] || fail "lister (evring::consumer): $("$T/app/lister")"

# record_count NAME PROGRAM: records PROGRAM $N with the installed evring; checks the dump.
record_count() {
	local name=$1 prog=$2 n
	(cd "$T" && "$P/bin/evring" record -o "$T/$name.evtrace" -- "$prog" "$N") \
		>"$T/$name.out" 2>"$T/$name.err" ||
		fail "$name: evring record -- $prog: $(cat "$T/$name.err")"
	grep -qx "fired $N" "$T/$name.out" || fail "$name: the program did not run: $(cat "$T/$name.out")"
	"$P/bin/evring" dump "$T/$name.evtrace" >"$T/$name.txt" 2>"$T/$name.derr" ||
		fail "$name: evring dump: $(cat "$T/$name.derr")"
	n=$(grep -c 'InstallApp/Ping' "$T/$name.txt" || true)
	[[ $n == "$N" ]] || fail "$name: the dump has $n InstallApp/Ping events, not $N"
	grep -q 'ping 999' "$T/$name.txt" || fail "$name: the last event's string is missing"
	# Literal strings (lengths the compiler folds) reach the trace whole.
	grep -q 'InstallApp/KeyValue.*literal-key.*7' "$T/$name.txt" ||
		fail "$name: KeyValue(\"literal-key\", 7) is not in the dump: $(grep KeyValue "$T/$name.txt")"
	grep -q 'InstallApp/Pair.*3.*"k".*literal-value' "$T/$name.txt" ||
		fail "$name: Pair(3, \"k\", \"literal-value\") is not in the dump: $(grep Pair "$T/$name.txt")"
	echo "$name: recorded $n events"
}
record_count cmake "$T/app/app"

# 3. pkg-config, installed.
export PKG_CONFIG_PATH=$P/lib/pkgconfig
flags=$(pkg-config --cflags --libs evring) || fail "pkg-config evring"
[[ $(pkg-config --variable=includedir evring) == "$P/include" ]] ||
	fail "pkg-config's includedir is $(pkg-config --variable=includedir evring)"
cc -Wall -Wextra -Werror -I"$here/app" -c "$here/app/provider.c" -o "$T/provider.o" \
	$(pkg-config --cflags evring) || fail "pkg-config: compiling provider.c"
c++ -Wall -Wextra -Werror -I"$here/app" "$here/app/main.cpp" "$T/provider.o" -o "$T/app-pc" \
	$flags -Wl,-rpath,"$P/lib" || fail "pkg-config: linking app-pc"
cc -Wall -Wextra -Werror "$here/app/lister.c" -o "$T/lister-pc" \
	$(pkg-config --cflags --libs evring-consumer) -Wl,-rpath,"$P/lib" ||
	fail "pkg-config: building lister against evring-consumer"
"$T/lister-pc" >/dev/null || fail "lister-pc (evring-consumer.pc) failed"
record_count pkgconfig "$T/app-pc"

# 4. evring monitor runs the evring-monitor installed beside it.
"$P/bin/evring" monitor --help >"$T/mon.out" 2>&1 || fail "evring monitor --help: $(cat "$T/mon.out")"
grep -qi 'usage' "$T/mon.out" || fail "evring monitor --help: $(cat "$T/mon.out")"

# 5. The build tree, uninstalled: one -I, and the CMake package.
export PKG_CONFIG_PATH=$build/lib/pkgconfig
cflags=$(pkg-config --cflags evring) || fail "pkg-config evring (uninstalled)"
cflags=${cflags%% }
[[ $cflags == "-I$build/include" ]] || fail "evring-uninstalled.pc's Cflags: '$cflags'"
cc -Wall -Wextra -Werror -I"$here/app" -c "$here/app/provider.c" -o "$T/provider-bt.o" $cflags ||
	fail "build tree: compiling provider.c with $cflags"
c++ -Wall -Wextra -Werror -I"$here/app" "$here/app/main.cpp" "$T/provider-bt.o" -o "$T/app-pcbt" \
	$cflags $(pkg-config --libs evring) || fail "build tree: linking app-pcbt"
"$T/app-pcbt" 3 >/dev/null || fail "app-pcbt (evring-uninstalled.pc) did not run"
cmake -S "$here/app" -B "$T/app-bt" -Devring_DIR="$build" >"$T/app-bt.log" 2>&1 &&
	cmake --build "$T/app-bt" >>"$T/app-bt.log" 2>&1 ||
	fail "build tree: -Devring_DIR: $(tail -n 30 "$T/app-bt.log")"
"$T/app-bt/app" 3 >/dev/null || fail "app (build tree package) did not run"
echo "PASS"
