# SPDX-License-Identifier: LGPL-2.1-or-later
# What every integration script's helper library shares (tests/cli/lib.sh, tests/clrtop/lib.sh,
# tests/report/lib.sh source it): a private temp directory and runtime directory, processes
# killed at exit, fail/skip, waiting for a line on a pipe, and an ELF file's library search
# path.
#   evr_test_setup NAME: T=/tmp/evring-NAME.XXXXXX, EVR_RUNTIME_DIR=$T/run (mode 0700),
#   KILL_AT_EXIT=(), and an EXIT trap that runs cleanup_hook (if the library defines one),
#   kills every pid in KILL_AT_EXIT and removes $T.
# Every wait is for the thing itself; the only timeouts are generous upper bounds that turn
# a hang into a failure. Exit 77 means skipped.
set -euo pipefail

evr_test_setup() {
	T=$(mktemp -d "/tmp/evring-$1.XXXXXX")
	# A private runtime directory: this test's processes are the only ones consumers see
	# (when not root: root lists every user's directory as well), and tests running in
	# parallel never meet.
	export EVR_RUNTIME_DIR=$T/run
	mkdir -m 0700 "$EVR_RUNTIME_DIR"
	KILL_AT_EXIT=()
	trap evr_test_cleanup EXIT
}

evr_test_cleanup() {
	local p
	if declare -F cleanup_hook >/dev/null; then
		cleanup_hook || true
	fi
	for p in "${KILL_AT_EXIT[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$T"
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

need_python() {
	command -v python3 >/dev/null 2>&1 || skip "python3 is needed to check the output"
}

# expect FD REGEX [WHAT]: read lines from FD until one matches REGEX; sets LINE.
expect() {
	local fd=$1 re=$2 what=${3:-"a line matching '$2'"}
	while IFS= read -r -t 120 -u "$fd" LINE; do
		[[ $LINE =~ $re ]] && return 0
	done
	fail "never saw $what"
}

# elf_search_path FILE: FILE's RUNPATH (or RPATH), empty when it has none (readelf, binutils).
elf_search_path() {
	readelf -d "$1" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p'
}
