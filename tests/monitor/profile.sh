#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A CPU profile over HTTP (issue 28, item 2): GET /processes/PID/trace with sample_cpu and
# stacks, as `evring record --sample-cpu --stacks`, of a busy workload, downloaded in the
# profile formats of libevring-export's table: pprof (read by `go tool pprof -top`),
# speedscope (JSON with samples), folded; a kept trace converts to them too. A trace without
# stacks is a 422 for a profile format. Skipped (77) when perf_events refuse CPU sampling;
# the pprof reading is skipped (77, after every other check) without go.
source "$(dirname "$0")/lib.sh"

start_producer workload "$WORKLOAD" --rate 0 --threads 1
PID=$PROD_PID
start_monitor --listen 127.0.0.1:0

get() {	# QUERY OUT: a trace of PID; prints the status
	curl -sS --max-time 120 -D "$T/h" -o "$2" -w '%{http_code}' "$U/processes/$PID/trace?$1"
}
code=$(get "duration=2s&providers=Demo&sample_cpu=199&stacks=32&format=speedscope" "$T/p.json")
if [[ $code != 200 ]] && grep -q "perf_event_paranoid\|perf_event_open" "$T/p.json"; then
	skip "perf_events refused: $(cat "$T/p.json")"
fi
[[ $code == 200 ]] || fail "speedscope: $code $(head -c 400 "$T/p.json")"
grep -qi '^Content-Disposition: attachment; filename="[0-9]*-[0-9TZ]*\.speedscope\.json"' \
	"$T/h" || fail "speedscope file name: $(cat "$T/h")"
python3 - "$T/p.json" <<'PY' || fail "speedscope: $(head -c 300 "$T/p.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json", d.get("$schema")
n = sum(len(p["samples"]) for p in d["profiles"])
assert n >= 20, f"{n} samples in 2 s of a busy thread at 199 Hz"
assert d["profiles"][0]["unit"] == "nanoseconds"
names = {f["name"] for f in d["shared"]["frames"]}
# Symbolized from the workload's binary: its worker thread's function and what it calls.
assert "worker" in names and any(n.startswith("demo_") for n in names), sorted(names)[:40]
PY

code=$(get "duration=2s&providers=Demo&sample_cpu=&format=pprof" "$T/cpu.pb.gz")
[[ $code == 200 ]] || fail "pprof: $code $(head -c 400 "$T/cpu.pb.gz")"
[[ $(head -c2 "$T/cpu.pb.gz" | od -An -tx1 | tr -d ' ') == 1f8b ]] || fail "pprof: not gzip"
code=$(get "duration=1s&providers=Demo&stacks=true&format=folded" "$T/ev.folded")
[[ $code == 200 ]] || fail "folded: $code $(head -c 400 "$T/ev.folded")"
grep -qE ';worker;.* [0-9]+$' "$T/ev.folded" || fail "folded event stacks: $(head -3 "$T/ev.folded")"

# No stacks recorded: a profile format says so (422), not an empty file.
code=$(get "duration=200ms&providers=Demo&format=pprof" "$T/none")
[[ $code == 422 ]] && grep -q "no CPU samples or event stacks" "$T/none" ||
	fail "a profile without stacks: $code $(cat "$T/none")"
# Bad values are named.
code=$(get "duration=1s&sample_cpu=0" "$T/bad")
[[ $code == 400 ]] && grep -q "sample_cpu: a rate in Hz from 1 to 100000" "$T/bad" ||
	fail "sample_cpu=0: $code $(cat "$T/bad")"
code=$(get "duration=1s&format=svg" "$T/bad")
[[ $code == 400 ]] && grep -q "format: evtrace or ctf, chrome, jsonl, folded, speedscope or pprof" \
	"$T/bad" || fail "format=svg: $code $(cat "$T/bad")"

# A kept trace (JSON body) with sampling, then downloaded as a profile.
curl -sS --max-time 60 -o "$T/post" -X POST -H 'Content-Type: application/json' \
	-d '{"providers": "Demo", "duration": "1s", "sample_cpu": true}' \
	"$U/processes/$PID/traces"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/post") ||
	fail "POST: $(cat "$T/post")"
wait_for 60 bash -c "curl -sS '$U/traces/$id' | grep -q '\"state\":\"stopped\"'"
expect_status 200 "$U/traces/$id/trace?format=speedscope"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert sum(len(p["samples"]) for p in d["profiles"]) > 0' \
	"$T/body" || fail "kept trace as speedscope: $(head -c 300 "$T/body")"
monitor_alive

if command -v go >/dev/null 2>&1 && go tool pprof -h >/dev/null 2>&1; then
	export HOME=$T PPROF_TMPDIR=$T
	go tool pprof -top -symbolize=none "$T/cpu.pb.gz" >"$T/top.txt" 2>"$T/top.err" ||
		fail "go tool pprof -top: $(cat "$T/top.err")"
	grep -qE '^Type: cpu' "$T/top.txt" && grep -qE ' (worker|demo_[a-z_]+)$' "$T/top.txt" ||
		fail "pprof -top: $(head -20 "$T/top.txt")"
else
	skip "everything but pprof's own reading passed: go tool pprof is not installed"
fi
echo PASS
