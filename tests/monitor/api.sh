#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every JSON route and page of `evring monitor` with curl against a real minirt: status
# codes, content types, bodies that parse, and the errors a client can cause (unknown pid,
# bad provider list, unknown route, wrong method, form POST, body too large, bad JSON).
source "$(dirname "$0")/lib.sh"

start_producer minirt "$MINIRT" --seconds 900 --phase steady --threads 2
PID=$PROD_PID
start_monitor --listen 127.0.0.1:0 --counter-interval 200ms

expect_status 200 "$U/info"
expect_status 200 "$U/processes"
python3 - "$T/body" "$PID" <<'PY' || fail "/processes: $(cat "$T/body")"
import json, sys
procs = json.load(open(sys.argv[1]))
p = [p for p in procs if p["pid"] == int(sys.argv[2])]
assert p and p[0]["name"] == "minirt" and p[0]["state"] == "live", procs
PY
expect_status 200 "$U/processes?name=minirt"
grep -q "\"pid\":$PID" "$T/body" || fail "?name=minirt does not list $PID"
expect_status 200 "$U/processes?name=nothing-like-this"
[[ $(cat "$T/body") == "[]" ]] || fail "?name=nothing-like-this: $(cat "$T/body")"

expect_status 200 "$U/processes/$PID"
python3 - "$T/body" "$PID" <<'PY' || fail "/processes/PID: $(cat "$T/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pid"] == int(sys.argv[2]) and d["argv"][0].endswith("minirt"), d
assert any(s["client"] == "evring monitor" for s in d["sessions"]), d["sessions"]
assert len(d["threads"]) >= 3, d["threads"]
PY
expect_status 200 "$U/processes/$PID/sessions"
expect_status 200 "$U/processes/$PID/threads"
expect_status 200 "$U/processes/$PID/events?provider=MiniRT"
python3 - "$T/body" <<'PY' || fail "/events: $(head -c 300 "$T/body")"
import json, sys
ev = json.load(open(sys.argv[1]))
names = {e["name"] for e in ev}
assert "GCStart" in names and all(e["provider"] == "MiniRT" for e in ev), names
PY

# Counters from the hub (kept between requests), one counter with history, and a snapshot
# at an interval of the caller's own.
expect_status 200 "$U/processes/$PID/counters"
python3 - "$T/body" <<'PY' || fail "/counters: $(head -c 300 "$T/body")"
import json, sys
d = json.load(open(sys.argv[1]))
names = {(c["provider"], c["name"]) for c in d["counters"]}
for want in [("System.Runtime", "gc-heap-size"), ("Process", "cpu-usage"),
             ("System.Runtime", "work-item-latency")]:
    assert want in names, (want, names)
PY
wait_for 30 bash -c "curl -sS '$U/processes/$PID/counters/Process/threads?history=3' |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"history\"]) == 3' 2>/dev/null"
expect_status 200 "$U/processes/$PID/counters/Process/threads?history=3"
expect_status 200 "$U/processes/$PID/counters?interval=100ms"
python3 - "$T/body" <<'PY' || fail "/counters?interval=100ms: $(head -c 300 "$T/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["interval_ms"] == 100 and d["counters"], d
assert all(c["interval_ms"] == 100 for c in d["counters"]), d
PY
expect_status 404 "$U/processes/$PID/counters/Process/no-such-counter"
expect_status 200 "$U/processes/$PID/stacks?depth=4"
python3 - "$T/body" "$PID" <<'PY' || fail "/stacks: $(head -c 300 "$T/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pid"] == int(sys.argv[2]) and d["threads"], d
assert any(f["func"] for t in d["threads"] for f in t["frames"]), d
PY
# One writer (libevring-symbols) for both: the CLI's document has the same members at each level.
"$EVRING" stacks -p "$PID" --depth 4 --json >"$T/cli-stacks.json" || fail "evring stacks --json failed"
python3 - "$T/body" "$T/cli-stacks.json" <<'PY' || fail "/stacks and evring stacks --json differ"
import json, sys
def shape(d):
    t = d["threads"][0]
    return (sorted(d), sorted(t), sorted(t["frames"][0]) if t["frames"] else None)
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert shape(a) == shape(b), (shape(a), shape(b))
PY

# Pages and their assets.
for p in / "/ui/processes/$PID" "/ui/processes/$PID/counters" "/ui/processes/$PID/stacks"; do
	got=$(code_type "$U$p")
	[[ $got == "200 text/html; charset=utf-8" ]] || fail "$p: $got"
	grep -q '<script src="/ui/app.js"></script>' "$T/body" || fail "$p: no script"
	# The nav leads to pages, not to raw JSON; no page says "static page".
	python3 - "$T/body" <<'PY' || fail "$p: nav or texts"
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
nav = re.search(r"<nav>(.*?)</nav>", html, re.S).group(1)
hrefs = re.findall(r'href="([^"]*)"', nav)
assert hrefs and all(h == "/" or h.startswith("/ui/") for h in hrefs), hrefs
assert "static page" not in html and "without errors" not in html
assert "counters JSON" not in html
PY
done
# The stacks page: one line per frame ("#N 0x..."), each thread's frames in its own <pre>,
# and no U+FFFD (a frame's newline must not go through the escaper as a control character).
expect_status 200 "$U/ui/processes/$PID/stacks?depth=8"
python3 - "$T/body" "$PID" <<'PY' || fail "the stacks page's frames"
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
assert "\ufffd" not in html, "U+FFFD in the stacks page"
pres = re.findall(r'<pre>(.*?)</pre>', html, re.S)
assert len(pres) >= 3, len(pres)
main = re.search(r'data-tid="%s">.*?<pre>(.*?)</pre>' % sys.argv[2], html, re.S).group(1)
lines = [l for l in main.split("\n") if l]
assert len(lines) >= 2, lines
assert all(re.match(r"#\d+ +0x[0-9a-f]{16} ", l) for l in lines), lines
PY
[[ $(code_type "$U/ui/app.js") == "200 text/javascript; charset=utf-8" ]] || fail "app.js"
[[ $(code_type "$U/ui/style.css") == "200 text/css; charset=utf-8" ]] || fail "style.css"
curl -sS -D "$T/h" -o /dev/null "$U/"
grep -qi "^Content-Security-Policy: default-src 'self'" "$T/h" || fail "no CSP on pages"

# HEAD is GET without a body; keep-alive: curl reuses its connection for a second URL.
[[ $(curl -sS -I -o /dev/null -w '%{http_code}' "$U/info") == 200 ]] || fail "HEAD /info"
curl -sS -v -o /dev/null -o /dev/null "$U/info" "$U/processes" 2>"$T/v"
grep -q "Re-using existing connection" "$T/v" || fail "the connection was not kept alive"

# Errors a client can cause.
expect_status 404 "$U/processes/999999/counters"
grep -q '"errno":"ESRCH"' "$T/body" || fail "unknown pid: not ESRCH"
expect_status 404 "$U/processes/999999"
# A process by name instead of pid, named as `-n NAME` names it (its comm, or the base name
# of its executable or argv[0]): the one of that name; two of one name: 409 naming them.
expect_status 200 "$U/processes/minirt/counters/Process/threads"
expect_status 404 "$U/processes/no-such-name/counters"
grep -q "no process named no-such-name runs libevring's agent" "$T/body" || fail "404 body"
# argv[0] "renamed"; its comm and executable are still minirt's.
start_producer renamed bash -c 'exec -a renamed "$0" --seconds 120 --phase idle --threads 1' \
	"$MINIRT"
expect_status 200 "$U/processes/renamed/counters/Process/threads"
expect_status 200 "$U/processes?name=renamed"
python3 - "$T/body" "$PROD_PID" <<'PY' || fail "?name=renamed: $(cat "$T/body")"
import json, sys
assert [p["pid"] for p in json.load(open(sys.argv[1]))] == [int(sys.argv[2])]
PY
expect_status 409 "$U/processes/minirt"
grep -q "2 processes named minirt run libevring's agent (pids .*$PID" "$T/body" &&
	grep -q '"errno":"ENOTUNIQ"' "$T/body" || fail "409 body: $(cat "$T/body")"
kill "$PROD_PID"
expect_status 404 "$U/no/such/route"
expect_status 405 "$U/metrics" -X DELETE
expect_status 400 "$U/processes/$PID/trace?duration=1s&providers=Bad%20Name"
grep -q 'contains whitespace' "$T/body" || fail "the bad provider is not named"
expect_status 400 "$U/processes/$PID/trace?duration=forever"
# An unknown (mistyped) parameter is a 400 naming it, on every route that takes some and
# on those that take none; a provider the process does not have records nothing: warned.
expect_status 400 "$U/processes/$PID/trace?duration=1s&provders=NoSuch"
grep -q "unknown parameter 'provders'" "$T/body" || fail "provders not named: $(cat "$T/body")"
expect_status 400 "$U/processes/$PID/stacks?dept=4"
grep -q "unknown parameter 'dept'" "$T/body" || fail "dept not named: $(cat "$T/body")"
expect_status 400 "$U/processes?nam=minirt"
expect_status 400 "$U/info?x=1"
expect_status 400 "$U/ui/processes/$PID/stacks?depht=3"
expect_status 200 "$U/processes/$PID/trace?duration=200ms&providers=NoSuch&format=jsonl" \
	-D "$T/wh"
grep -qi '^X-Evring-Warning: providers: process [0-9]* has no provider NoSuch' "$T/wh" &&
	grep -qi '^Warning: 199 evring-monitor "providers: .*NoSuch' "$T/wh" ||
	fail "no warning for providers=NoSuch: $(cat "$T/wh")"
expect_status 201 "$U/processes/$PID/traces" -X POST -H 'Content-Type: application/json' \
	-d '{"providers": "MiniRT,NoSuch"}' -D "$T/wh"
grep -qi '^X-Evring-Warning: .*no provider NoSuch' "$T/wh" || fail "POST: no warning header"
python3 - "$T/body" <<'PY' || fail "POST: no warning in the trace: $(cat "$T/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["warnings"]) == 1 and "NoSuch" in d["warnings"][0] \
    and "MiniRT" not in d["warnings"][0].split("(")[0], d
PY
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/body")
expect_status 204 "$U/traces/$id" -X DELETE
expect_status 200 "$U/processes/$PID/trace?duration=100ms&providers=MiniRT&format=jsonl" \
	-D "$T/wh"
! grep -qi '^X-Evring-Warning' "$T/wh" || fail "a warning for a provider the process has"
expect_status 400 "$U/processes/$PID/counters?interval=1ms"
expect_status 415 "$U/processes/$PID/traces" -X POST -d 'providers=MiniRT'
expect_status 400 "$U/processes/$PID/traces" -X POST -H 'Content-Type: application/json' \
	-d '{"providers": "MiniRT",'
grep -q 'is not JSON' "$T/body" || fail "bad JSON: $(cat "$T/body")"
expect_status 400 "$U/processes/$PID/traces" -X POST -H 'Content-Type: application/json' \
	-d '{"provders": "MiniRT"}'
grep -q "unknown parameter 'provders'" "$T/body" || fail "typo not named: $(cat "$T/body")"
head -c 100000 /dev/zero | tr '\0' 'x' >"$T/big"
expect_status 413 "$U/processes/$PID/traces" -X POST -H 'Content-Type: application/json' \
	--data-binary @"$T/big"
expect_status 413 "$U/processes/$PID/traces" -X POST -H 'Content-Type: application/json' \
	-H 'Transfer-Encoding: chunked' --data-binary @"$T/big"
expect_status 404 "$U/traces/12345"
monitor_alive
echo PASS
