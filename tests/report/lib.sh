# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers of the report tests: sourced by tests/report/*.sh, which ctest runs as
#   bash tests/report/NAME.sh EVRING MINIRT
# record_minirt records minirt for real (runtime events and counters); no sleeps, the
# recording ends when minirt exits. Exit 77 means skipped.
set -euo pipefail

EVRING=$(realpath "${1:?usage: $0 EVRING MINIRT}")
MINIRT=$(realpath "${2:?usage: $0 EVRING MINIRT}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../common.sh"
evr_test_setup report

need_python

# record_minirt FILE: 2 s of minirt's steady phase with MiniRT, System.Runtime and Process.
record_minirt() {
	"$EVRING" record --no-sandbox --providers MiniRT,System.Runtime,Process \
		--counter-interval 200ms -o "$1" -- "$MINIRT" --seconds 2 --phase steady \
		>"$T/record.log" 2>&1 || fail "evring record -- minirt: $(cat "$T/record.log")"
	grep "^evring record: " "$T/record.log"
}
