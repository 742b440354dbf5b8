#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring-bench's enabled scenarios with both drains (packets, as evring record reads a
# session; records, as evring dump does), small rings so that losses happen: every run
# checks conservation itself (exit 1 otherwise); here each scenario must also have
# reported its figures, with the drain it used, where its readers ran and (with CPUs 0 and 1)
# the two CPUs' distance.
set -euo pipefail
BENCH=${1:?usage: $0 EVRING-BENCH}
T=$(mktemp -d /tmp/evring-bench-cons.XXXXXX)
trap 'rm -rf "$T"' EXIT
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to check the output"; exit 77; }

for drain in packets records; do
	"$BENCH" --json --runs 1 --events 300000 --ring-size 65536 --drain "$drain" \
		--scenario enabled_1t,enabled_str40,enabled_bytes200,enabled_2t,sessions_4 \
		>"$T/$drain.json" 2>"$T/$drain.err" ||
		{ echo "FAIL: evring-bench --drain $drain: $(tail -3 "$T/$drain.err")"; exit 1; }
	python3 - "$T/$drain.json" "$drain" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = sorted(r["scenario"] for r in rows)
want = sorted(["enabled_1t", "enabled_str40", "enabled_bytes200", "enabled_2t", "sessions_4"])
assert names == want, names
ncpu = len(os.sched_getaffinity(0))
for r in rows:
    assert r["drain"] == sys.argv[2], r
    assert r["ns_per_event_median"] > 0 and r["events_lost"] >= 0, r
    # Readers on the CPUs no writer has (writers take CPUs 0..threads-1), where there are
    # any; and the CPU pair's round trip where CPUs 0 and 1 are both ours.
    free = sorted(set(os.sched_getaffinity(0)) - set(range(r["threads"])))
    if not free:
        assert r["reader_cpus"] == "any", r
    else:
        assert r["reader_cpus"].split(",")[0].split("-")[0] == str(free[0]), (r, free)
    if {0, 1} <= os.sched_getaffinity(0):
        assert 0 < r["cpu_pair_rtt_ns_median"] <= r["cpu_pair_rtt_ns_max"], r
    else:
        assert "cpu_pair_rtt_ns_median" not in r, r
lost = sum(r["events_lost"] for r in rows)
print(f"--drain {sys.argv[2]}: {len(rows)} scenarios conserved, {lost} events lost and counted")
PY
done
echo PASS
