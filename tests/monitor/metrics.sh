#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# /metrics for two real minirt processes: the Prometheus text format 0.0.4, valid under
# `promtool check metrics` (skipped without promtool: scripts/setup --optional installs
# Debian's prometheus), one family per name with the documented names for minirt's
# counters, and a counter that keeps counting between two scrapes (the sessions stay up).
# OpenMetrics 1.0.0 for a scraper whose Accept header prefers it (Prometheus's own), checked
# by check_metrics.py --openmetrics and parsed by Prometheus's OpenMetrics parser (promtool
# tsdb create-blocks-from openmetrics: `check metrics` reads only the text format).
source "$(dirname "$0")/lib.sh"

start_producer minirt1 "$MINIRT" --seconds 120 --phase steady --threads 2
P1=$PROD_PID
start_producer minirt2 "$MINIRT" --seconds 120 --phase alloc-heavy --threads 1
P2=$PROD_PID
start_monitor --listen 127.0.0.1:0 --counter-interval 100ms

# Both processes have sampled every counter at least twice.
both_sampled() {
	local p
	for p in "$P1" "$P2"; do
		curl -sS "$U/processes/$p/counters" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert len(d["counters"]) >= 30 and all(c["samples"] >= 2 for c in d["counters"])' \
			2>/dev/null || return 1
	done
}
wait_for 60 both_sampled
got=$(code_type "$U/metrics" -D "$T/h")
[[ $got == "200 text/plain; version=0.0.4; charset=utf-8" ]] || fail "/metrics: $got"
grep -qi '^Vary: Accept' "$T/h" || fail "/metrics has no Vary: Accept"
cp "$T/body" "$T/m1.txt"
python3 "$HERE/check_metrics.py" "$T/m1.txt" "$P1" "$P2" || fail "check_metrics"

# The totals keep counting: a later scrape never shows less, and the CPU counters grow.
total() { grep "^evring_process_voluntary_ctx_switches_total{pid=\"$P1\"" "$1" | awk '{print $2}'; }
grows() {
	curl -sS -o "$T/m2.txt" "$U/metrics"
	python3 -c 'import sys; sys.exit(0 if float(sys.argv[2]) > float(sys.argv[1]) else 1)' \
		"$(total "$T/m1.txt")" "$(total "$T/m2.txt")"
}
wait_for 60 grows

# OpenMetrics: what Prometheus asks for; the text format when text/plain is preferred.
PROM_ACCEPT='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
got=$(code_type "$U/metrics" -H "Accept: $PROM_ACCEPT")
[[ $got == "200 application/openmetrics-text; version=1.0.0; charset=utf-8" ]] ||
	fail "/metrics for Prometheus's Accept: $got"
cp "$T/body" "$T/om.txt"
python3 "$HERE/check_metrics.py" --openmetrics "$T/om.txt" "$P1" "$P2" ||
	fail "check_metrics --openmetrics"
got=$(code_type "$U/metrics" -H 'Accept: application/openmetrics-text;q=0.3, text/plain;q=0.8')
[[ $got == "200 text/plain; version=0.0.4; charset=utf-8" ]] || fail "text/plain preferred: $got"

if command -v promtool >/dev/null 2>&1; then
	promtool check metrics <"$T/m2.txt" >"$T/promtool.out" 2>&1 ||
		fail "promtool check metrics: $(cat "$T/promtool.out")"
	echo "promtool check metrics: clean"
	# Prometheus's OpenMetrics parser, through backfilling: it wants a timestamp on each
	# sample (the exposition has none), and fails on anything it cannot parse.
	sed -E '/^#/!s/$/ 1700000000/' "$T/om.txt" >"$T/om-ts.txt"
	promtool tsdb create-blocks-from openmetrics "$T/om-ts.txt" "$T/blocks" \
		>"$T/promtool-om.out" 2>&1 || fail "Prometheus's OpenMetrics parser: $(cat "$T/promtool-om.out")"
	echo "promtool tsdb create-blocks-from openmetrics: parsed"
else
	skip "promtool is not installed (scripts/setup --optional): the format checks passed"
fi
monitor_alive
echo PASS
