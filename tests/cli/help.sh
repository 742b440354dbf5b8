#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --help says what the tools take (issue 28, items 8 and 9):
# - `evring --help` and `evring convert --help` list every format convert accepts (names
#   and aliases), and convert accepts every format they list;
# - `clrtop --help` names every long option clrtop takes (its longopts table);
# - a mistyped long option or process name gets "did you mean".
#   bash tests/cli/help.sh EVRING WORKLOAD CLRTOP
source "$(dirname "$0")/lib.sh"
CLRTOP=$(realpath "${3:?usage: $0 EVRING WORKLOAD CLRTOP}")
SRC=$(cd "$(dirname "$0")/../.." && pwd)

"$EVRING" record --providers Demo -o "$T/t.evtrace" -- "$WORKLOAD" --events 50 --threads 1 \
	>/dev/null 2>"$T/rec.err" || fail "record: $(cat "$T/rec.err")"

# What convert accepts, asked of convert itself: each word it does not refuse as unknown.
accepts() {
	local st=0
	"$EVRING" convert "$T/t.evtrace" --format "$1" -o "$T/out.$1" -q >/dev/null 2>"$T/acc.err" || st=$?
	! grep -q "unknown format" "$T/acc.err"
}
# Every format word the top-level help lists, with its aliases: "  name (alias)  text".
"$EVRING" --help >"$T/help.txt"
"$EVRING" convert --help >"$T/chelp.txt"
listed=$(sed -n '/^Formats of convert/,/^evring --version/p' "$T/help.txt" |
	{ grep -E '^  [a-z]' || true; } | sed -E 's/^  ([a-z]+)( \(([a-z]+)\))?.*/\1 \3/')
[[ -n $listed ]] || fail "evring --help lists no formats: $(cat "$T/help.txt")"
for w in $listed; do
	accepts "$w" || fail "evring --help lists format '$w', convert refuses it: $(cat "$T/acc.err")"
	grep -qE "^  $w( |$)|\($w\)" "$T/chelp.txt" || fail "convert --help does not list '$w'"
done
# Every format convert accepts is listed (the ones users meet: issue 28 found 'perfetto'
# accepted but undocumented, and pprof, folded, speedscope missing from evring --help).
for w in ctf chrome perfetto jsonl json folded speedscope pprof; do
	accepts "$w" || fail "convert refuses $w"
	grep -qw "$w" <<<"$listed" || fail "evring --help does not list format $w: $listed"
done
accepts nosuch && fail "convert accepts format nosuch"
grep -q "unknown format 'nosuch' (ctf, chrome, jsonl, folded, speedscope or pprof)" "$T/acc.err" ||
	fail "unknown format: $(cat "$T/acc.err")"
echo "formats listed and accepted: $(echo $listed)"

# clrtop: every long option of its table is in its help (the hidden debug one aside).
"$CLRTOP" --help >"$T/clrtop.txt"
opts=$(sed -n '/longopts\[\] = {/,/{ 0 }/p' "$SRC/consumer/clrtop/main.c" |
	grep -oE '\{ "[a-z-]+"' | sed -E 's/\{ "//; s/"//')
[[ -n $opts ]] || fail "no longopts found in consumer/clrtop/main.c"
for o in $opts; do
	[[ $o == debug-sandbox-probe ]] && continue
	grep -q -- "--$o\b" "$T/clrtop.txt" || fail "clrtop --help does not mention --$o"
done
echo "clrtop --help names: $(echo $opts)"

# Did you mean: a long option one edit away, and a process name.
st=0; "$EVRING" record --durtaion 1s -p 1 2>"$T/err" || st=$?
[[ $st == 2 ]] && grep -q "^evring record: unknown option '--durtaion'; did you mean '--duration'?" "$T/err" ||
	fail "record --durtaion: status $st: $(cat "$T/err")"
st=0; "$EVRING" convert "$T/t.evtrace" --fromat chrome 2>"$T/err" || st=$?
[[ $st == 2 ]] && grep -q "did you mean '--format'?" "$T/err" || fail "convert --fromat: $(cat "$T/err")"
st=0; "$EVRING" record --zzzzzz -p 1 2>"$T/err" || st=$?
[[ $st == 2 ]] && ! grep -q "did you mean" "$T/err" || fail "--zzzzzz got a suggestion: $(cat "$T/err")"
st=0; "$EVRING" recrod -p 1 2>"$T/err" || st=$?
[[ $st == 2 ]] && grep -q "^evring: unknown command 'recrod'; did you mean record?" "$T/err" ||
	fail "evring recrod: $(cat "$T/err")"
start_workload wl --events 0 --threads 1 --rate 100
st=0; "$EVRING" record -n wrkload --duration 1s -o "$T/x.evtrace" 2>"$T/err" || st=$?
[[ $st != 0 ]] && grep -q "no process named wrkload.*; did you mean workload (pid $WL_PID)?" "$T/err" ||
	fail "record -n wrkload: status $st: $(cat "$T/err")"
echo PASS
