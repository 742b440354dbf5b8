#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The counters page in headless Chromium: it loads (nothing from outside the monitor), its
# script refreshes the values and plots from /processes/PID/counters without an error, and
# the screenshot shows the plotted counters. The index, process and stacks pages render.
# Skipped (77) without chromium (scripts/setup --optional installs it).
source "$(dirname "$0")/lib.sh"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROMIUM ]] || skip "chromium is not installed (scripts/setup --optional)"

start_producer minirt "$MINIRT" --seconds 120 --phase steady --threads 2
PID=$PROD_PID
start_monitor --listen 127.0.0.1:0 --counter-interval 200ms
# Some history to plot: every counter sampled a few times.
sampled() {
	curl -sS "$U/processes/$PID/counters" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert len(d["counters"]) >= 20 and all(c["samples"] >= 5 for c in d["counters"])' 2>/dev/null
}
wait_for 60 sampled

# A private profile; a proxy that does not exist for anything but loopback (which Chromium
# never proxies): only the monitor can answer.
chrome() {
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$T/profile" --disable-extensions --proxy-server=127.0.0.1:9 \
		--window-size=1280,1400 "$@"
}
page=$U/ui/processes/$PID/counters
chrome --virtual-time-budget=5000 --screenshot="$T/shot.png" "$page" >"$T/shot.log" 2>&1 ||
	fail "chromium --screenshot: $(tail -3 "$T/shot.log")"
chrome --virtual-time-budget=5000 --dump-dom "$page" >"$T/dom.html" 2>"$T/dom.log" ||
	fail "chromium --dump-dom: $(tail -3 "$T/dom.log")"
python3 "$HERE/check_page.py" "$T/shot.png" "$T/dom.html" || fail "the counters page"
# The stacks page stops threads: from a browser it needs the token that the process page's
# link carries (a GET without it is 403), so it is followed from there.
for p in / "/ui/processes/$PID" stacks; do
	if [[ $p == stacks ]]; then
		p=$(grep -o '/ui/processes/'"$PID"'/stacks?token=[0-9a-f]*' "$T/p.html" | head -1)
		[[ -n $p ]] || fail "the process page has no stacks link with its token"
	fi
	chrome --dump-dom "$U$p" >"$T/p.html" 2>"$T/p.log" || fail "chromium $p: $(tail -3 "$T/p.log")"
	grep -q 'data-status="ok" data-errors="0"' "$T/p.html" || fail "$p: script error"
	! grep -q 'static page' "$T/p.html" || fail "$p: says 'static page'"
done
grep -q 'class="thread" data-tid="'"$PID"'"' "$T/p.html" || fail "the stacks page has no main thread"
monitor_alive
echo PASS
