#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# dotnet-trace habits in evring record (issue 28, item 9):
# - without -o, the trace is named PROCNAME_YYYYMMDD_HHMMSS.evtrace and a second
#   recording never overwrites the first (it once wrote trace.evtrace each time);
# - --profile NAME sets the providers (and options) `evring profiles` lists, unknown
#   names get "did you mean";
# - --format FORMAT converts the trace when the recording ends, next to it (the .evtrace
#   is kept), named after it with the format's suffix; -o - with --format is refused.
source "$(dirname "$0")/lib.sh"
need_python

mkdir "$T/cwd"
cd "$T/cwd"
# Two recordings, no -o: two files, the first one intact.
"$EVRING" record --providers Demo -- "$WORKLOAD" --events 40 --threads 1 >/dev/null 2>"$T/r1.err" ||
	fail "record 1: $(cat "$T/r1.err")"
first=$(ls)
[[ $first =~ ^workload_[0-9]{8}_[0-9]{6}\.evtrace$ ]] || fail "default name: '$first'"
sum1=$(md5sum <"$first")
"$EVRING" record --providers Demo -- "$WORKLOAD" --events 40 --threads 1 >/dev/null 2>"$T/r2.err" ||
	fail "record 2: $(cat "$T/r2.err")"
files=(*.evtrace)
[[ ${#files[@]} == 2 ]] || fail "two recordings left ${#files[@]} files: ${files[*]}"
[[ $(md5sum <"$first") == "$sum1" ]] || fail "the second recording changed $first"
grep -q "file ${files[1]}\$" "$T/r2.err" || grep -q "file ${files[0]}\$" "$T/r2.err" ||
	fail "the summary does not name the file: $(cat "$T/r2.err")"
echo "default names: ${files[*]}"

# Profiles: every one `evring profiles` lists is taken, and sets the session's providers.
"$EVRING" profiles >"$T/profiles.txt"
for p in cpu-sampling gc-verbose gc-collect; do
	grep -q "^  $p " "$T/profiles.txt" || fail "evring profiles does not list $p"
done
for p in $(grep -oE '^  [a-z-]+ ' "$T/profiles.txt"); do
	spec=$(grep -A1 "^  $p " "$T/profiles.txt" | grep -oE "providers '[^']+'" | cut -d"'" -f2)
	[[ -n $spec ]] || fail "evring profiles gives no providers for $p"
	# cpu-sampling: enough work for CPU samples (one per ms of CPU; 40 rounds take less).
	n=40
	[[ $p == cpu-sampling ]] && n=50000
	st=0
	"$EVRING" record --profile "$p" -o "$T/$p.evtrace" -- "$WORKLOAD" --events $n --threads 1 \
		>/dev/null 2>"$T/$p.err" || st=$?
	if ((st != 0)) && grep -q "perf_event_paranoid\|cpu-clock" "$T/$p.err"; then
		echo "note: $p: perf_events refused here"
		continue
	fi
	((st == 0)) || fail "record --profile $p: $(cat "$T/$p.err")"
	"$EVRING" report "$T/$p.evtrace" >"$T/$p.txt"
	grep -qF "Session   providers $spec, " "$T/$p.txt" ||
		fail "--profile $p: the session's providers are not $spec: $(grep ^Session "$T/$p.txt")"
	if [[ $p == cpu-sampling ]]; then
		grep -qE "^CPU samples: [1-9]" "$T/$p.txt" || fail "--profile $p: no CPU samples"
	fi
	echo "--profile $p: providers $spec"
done
st=0; "$EVRING" record --profile gc-verbos -p 1 2>"$T/err" || st=$?
[[ $st == 2 ]] && grep -q "^evring record: --profile: no profile 'gc-verbos'; did you mean gc-verbose?" "$T/err" ||
	fail "--profile gc-verbos: status $st: $(cat "$T/err")"

# --format: converted next to the trace, the trace kept.
"$EVRING" record --providers Demo --format chrome -- "$WORKLOAD" --events 40 --threads 1 \
	>/dev/null 2>"$T/f.err" || fail "record --format chrome: $(cat "$T/f.err")"
json=$(ls -t *.json | head -1)
[[ -f ${json%.json}.evtrace ]] || fail "no trace beside $json: $(ls)"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["traceEvents"]' "$json" ||
	fail "$json is not Chrome JSON"
grep -qE "^evring convert: [1-9][0-9]* events, 0 lost, .* of chrome to $json " "$T/f.err" ||
	fail "no conversion summary: $(cat "$T/f.err")"
"$EVRING" record --providers Demo --format jsonl -o "$T/x.evtrace" -- "$WORKLOAD" --events 40 \
	--threads 1 >/dev/null 2>"$T/f2.err" || fail "record --format jsonl: $(cat "$T/f2.err")"
[[ -s $T/x.evtrace && $(wc -l <"$T/x.jsonl") == $("$EVRING" dump --json "$T/x.evtrace" | grep -c '"type":"event"') ]] ||
	fail "x.jsonl does not hold the trace's events: $(ls "$T")"
st=0; "$EVRING" record --format pprof -o - -p 1 >/dev/null 2>"$T/err" || st=$?
[[ $st == 2 ]] && grep -q "name a file with -o, not stdout" "$T/err" || fail "--format with -o -: $st $(cat "$T/err")"
echo PASS
