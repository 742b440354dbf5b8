#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring dump of damaged files: a truncated trace dumps up to its last complete chunk with
# a warning (exit 0); a file that is not a trace, or is cut inside its header, is a one-line
# error (exit 1).
source "$(dirname "$0")/lib.sh"
need_python

"$EVRING" record --providers Demo -o "$T/t.evtrace" -- "$WORKLOAD" --events 20000 \
	>/dev/null 2>"$T/rec.err" || fail "record: $(cat "$T/rec.err")"
"$EVRING" dump "$T/t.evtrace" >"$T/full.txt" || fail "dump of the whole file"
size=$(stat -c %s "$T/t.evtrace")

cp "$T/t.evtrace" "$T/cut.evtrace"
truncate -s $((size * 2 / 3 + 5)) "$T/cut.evtrace"
"$EVRING" dump "$T/cut.evtrace" >"$T/cut.txt" 2>"$T/cut.err" ||
	fail "dump of a truncated file failed: $(cat "$T/cut.err")"
cat "$T/cut.err"
[[ $(wc -l <"$T/cut.err") == 1 ]] && grep -q "warning: .*truncated" "$T/cut.err" ||
	fail "no one-line truncation warning"
full=$(wc -l <"$T/full.txt") cut=$(wc -l <"$T/cut.txt")
((cut > 0 && cut < full)) || fail "truncated dump has $cut lines, the full one $full"
check_dump --text "$T/cut.txt"
# What the cut file holds is what the whole file holds, times aside (they count from each
# file's first event). Not necessarily its first Ticks: the recorder writes a packet once
# it is complete, so a quiet ring's first packet may land after a busy ring's later ones.
cut -d' ' -f2- "$T/full.txt" | sort >"$T/full.ev"
cut -d' ' -f2- "$T/cut.txt" | sort >"$T/cut.ev"
extra=$(comm -23 "$T/cut.ev" "$T/full.ev" | head -3)
[[ -z $extra ]] || fail "the truncated dump has events the whole one lacks: $extra"

# Not a trace, an empty file, a header cut short, a missing file: one line, exit 1.
head -c 65536 /dev/urandom >"$T/junk"
: >"$T/empty"
head -c 30 "$T/t.evtrace" >"$T/short"
for f in junk empty short missing; do
	st=0
	"$EVRING" dump "$T/$f" >"$T/$f.out" 2>"$T/$f.err" || st=$?
	[[ $st == 1 ]] || fail "dump of '$f' exited with $st: $(cat "$T/$f.err")"
	[[ $(wc -l <"$T/$f.err") == 1 ]] || fail "dump of '$f': $(cat "$T/$f.err")"
	[[ ! -s $T/$f.out ]] || fail "dump of '$f' printed events"
	echo "$f: $(cat "$T/$f.err")"
done
echo "PASS"
