#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring report --html opened in headless Chromium: a screenshot that is not blank, and a
# page whose own error recorder (#evr-status, fed by window.onerror) saw no script error.
# Skipped (77) without chromium (scripts/setup --optional installs it).
source "$(dirname "$0")/lib.sh"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROMIUM ]] || skip "chromium is not installed (scripts/setup --optional)"

record_minirt "$T/t.evtrace"
"$EVRING" report "$T/t.evtrace" --html "$T/r.html" >/dev/null 2>"$T/report.err" ||
	fail "report --html: $(cat "$T/report.err")"
# Self-contained: nothing fetched from anywhere.
if grep -Eiq '(src|href)="(https?:)?//|@import|url\(' "$T/r.html"; then
	fail "the page refers to something outside itself"
fi

# A private profile, no network, bounded time.
chrome() {
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$T/profile" --disable-extensions --proxy-server=127.0.0.1:9 \
		--window-size=1280,2400 "$@" "file://$T/r.html"
}
chrome --screenshot="$T/shot.png" >"$T/shot.log" 2>&1 || fail "chromium --screenshot: $(tail -3 "$T/shot.log")"
chrome --dump-dom >"$T/dom.html" 2>"$T/dom.log" || fail "chromium --dump-dom: $(tail -3 "$T/dom.log")"
python3 "$HERE/check_html.py" "$T/shot.png" "$T/dom.html" || fail "the page does not check out"
echo PASS
