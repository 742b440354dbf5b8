#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The route table's answers before any handler runs (consumer/monitor/routes.c), with curl
# against a real monitor and minirt: every route that GET /info lists, with every method it
# does not take, is a 405 whose Allow names exactly the methods of that path; a path no
# route has is a 404 whatever the method; HEAD is served where GET is. No request here
# reaches a handler that starts anything: only wrong methods and unknown paths are sent.
source "$(dirname "$0")/lib.sh"

start_producer minirt "$MINIRT" --seconds 120 --phase idle --threads 1
PID=$PROD_PID
start_monitor --listen 127.0.0.1:0 --counter-interval 200ms
JSON=(-H 'Content-Type: application/json')

# expect_allow WANT_ALLOW METHOD URL: a 405 problem whose Allow header is WANT_ALLOW.
# Checked in the shell, not by expect_status's python: there are a hundred of them, and
# python's start-up is seconds on a loaded 2-vCPU machine.
expect_allow() {
	local want=$1 method=$2 url=$3 got
	got=$(curl -sS --max-time 60 -o "$T/body" -D "$T/headers" -w '%{http_code} %{content_type}' \
		-X "$method" "${JSON[@]}" "$url")
	[[ $got == "405 application/problem+json" ]] && grep -q '"status":405' "$T/body" ||
		fail "$method $url: got '$got', want a 405 problem: $(head -c 300 "$T/body")"
	tr -d '\r' <"$T/headers" | grep -qx "Allow: $want" ||
		fail "$method $url: want 'Allow: $want': $(tr -d '\r' <"$T/headers" | grep -i '^allow' || echo 'no Allow')"
}

# Regressions of the if-ladder the table replaced. A counter's own route answered other
# methods 404 although the path exists:
expect_allow "GET, HEAD" POST "$U/processes/$PID/counters/Process/threads"
expect_allow "GET, HEAD" DELETE "$U/processes/$PID/counters/Process/threads"
# ...and a path that exists for no method answered 405 (with an Allow naming methods that
# fail as well) under /processes/{pid}/ and /ui/processes/{pid}/:
expect_status 404 "$U/processes/$PID/no-such-thing" -X POST "${JSON[@]}"
expect_status 404 "$U/ui/processes/$PID/no-such-thing" -X POST "${JSON[@]}"
expect_status 404 "$U/ui/processes/$PID/counters/more" -X DELETE
# The method is judged before {pid} is looked up: a wrong method is wrong for any process.
expect_allow "GET, HEAD" DELETE "$U/processes/no-such-name"

# Every route of the table (GET /info lists it): each method it lacks is a 405 with the
# path's methods; GET routes answer HEAD (to a missing trace: 404, the handler's, not 405).
expect_status 200 "$U/info"
python3 - "$T/body" "$PID" >"$T/cases" <<'PY' || fail "/info routes: $(cat "$T/body")"
import json, sys
routes = json.load(open(sys.argv[1]))["routes"]
values = {"{pid}": sys.argv[2], "{id}": "no-such-trace", "{provider}": "Process",
          "{name}": "threads", "{asset}": "app.js"}
paths = {}
for r in routes:
    method, target = r.split(" ", 1)
    path = target.split("?", 1)[0]
    for k, v in values.items():
        path = path.replace(k, v)
    paths.setdefault(path, []).append(method)
assert len(routes) >= 24 and "/processes/%s/counters/Process/threads" % sys.argv[2] in paths, paths
for path, have in paths.items():
    allow = []
    for m in have:
        for a in (["GET", "HEAD"] if m == "GET" else [m]):
            if a not in allow:
                allow.append(a)
    for m in ["GET", "POST", "PUT", "PATCH", "DELETE"]:
        if m not in allow:
            print("%s\t%s\t%s" % (", ".join(allow), m, path))
PY
n=0
while IFS=$'\t' read -r allow method path; do
	expect_allow "$allow" "$method" "$U$path"
	n=$((n + 1))
done <"$T/cases"
((n >= 60)) || fail "only $n wrong-method cases from /info's routes"
[[ $(curl -sS -o /dev/null -w '%{http_code}' -I "$U/info") == 200 ]] || fail "HEAD /info"
[[ $(curl -sS -o /dev/null -w '%{http_code}' -I "$U/ui/app.js") == 200 ]] || fail "HEAD /ui/app.js"
[[ $(curl -sS -o /dev/null -w '%{http_code}' -I "$U/traces/no-such-trace") == 404 ]] ||
	fail "HEAD /traces/no-such-trace: not the handler's 404"

# Paths no route has: 404 with every method, also past the segment limit and with a
# literal where a capture stands in no pattern.
for m in GET POST DELETE PUT; do
	expect_status 404 "$U/no/such/route" -X "$m" "${JSON[@]}"
done
expect_status 404 "$U/processes/$PID/counters/stream/extra"
expect_status 404 "$U/a/b/c/d/e/f/g/h/i/j"
expect_status 404 "$U/ui/no-such-asset"
monitor_alive
echo PASS
