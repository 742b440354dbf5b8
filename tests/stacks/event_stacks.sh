#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# record --stacks: every event of a program with known call chains carries its stack, and
# the symbolized frames are exactly those functions (Hit: chain_c < chain_b < chain_a <
# main; Note, from another thread: chain_e < chain_d < noter). --stacks=2 keeps two frames;
# a recording without --stacks has none. The fire function inlined into chain_c() shows in
# the JSON and the text of dump. Nothing is lost.
source "$(dirname "$0")/lib.sh"
need_python
N=300

"$EVRING" record --stacks --providers Chain -o "$T/full.evtrace" -- "$BIN/stacks-chain" $N \
	2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
"$EVRING" dump --json "$T/full.evtrace" >"$T/full.jsonl" 2>"$T/dump.err" ||
	fail "dump failed: $(cat "$T/dump.err")"
"$EVRING" dump "$T/full.evtrace" >"$T/full.txt"
grep -q "^    at chain_b+0x" "$T/full.txt" || fail "text dump shows no frames"
# The fire function chain_hit() is inlined into chain_c(): its own line, marked, above it.
grep -A1 -m1 "^    at chain_hit (inlined)$" "$T/full.txt" | grep -q "^    at chain_c+0x" ||
	fail "text dump lacks the inlined fire function above chain_c: $(head -4 "$T/full.txt")"

"$EVRING" record --stacks=2 --providers Chain -o "$T/two.evtrace" -- "$BIN/stacks-chain" $N \
	2>"$T/rec.err" || fail "record --stacks=2 failed: $(cat "$T/rec.err")"
"$EVRING" dump --json "$T/two.evtrace" >"$T/two.jsonl"

"$EVRING" record --providers Chain -o "$T/none.evtrace" -- "$BIN/stacks-chain" $N \
	2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
"$EVRING" dump --json "$T/none.evtrace" >"$T/none.jsonl"

python3 - "$N" "$T/full.jsonl" "$T/two.jsonl" "$T/none.jsonl" <<'PY'
import json, re, sys

n = int(sys.argv[1])

def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]

def funcs(ev):
    return [re.sub(r"\+0x[0-9a-f]+ \(.*\)$", "", f.get("frame", "?")) for f in ev.get("stack", [])]

def check(evs, what, depth=None):
    hits = [e for e in evs if e.get("event") == "Hit"]
    notes = [e for e in evs if e.get("event") == "Note"]
    assert len(hits) == n and len(notes) == n, f"{what}: {len(hits)} Hit, {len(notes)} Note, want {n}"
    assert not [e for e in evs if e["type"] == "lost"], f"{what}: events lost"
    for e in hits:
        f = funcs(e)
        # chain_hit(), the fire function, is inlined at the first frame's address; nothing
        # is inlined at the others'.
        inl = [fr.get("inlined", []) for fr in e["stack"]]
        assert inl[0] == ["chain_hit"] and not any(inl[1:]), f"{what}: inlined {inl}"
        if depth is None:
            assert f[:4] == ["chain_c", "chain_b", "chain_a", "main"], f"{what}: Hit stack {f}"
        else:
            assert f == ["chain_c", "chain_b"][:depth], f"{what}: Hit stack {f} at depth {depth}"
    for e in notes:
        f = funcs(e)
        # The generated fire function of a variable-size event is a frame of its own.
        if f and f[0] == "chain_note__emit":
            f = f[1:]
        if depth is None:
            assert f[:3] == ["chain_e", "chain_d", "noter"], f"{what}: Note stack {f}"
    print(f"{what}: {len(hits)} Hit and {len(notes)} Note events, stacks as expected")

check(load(sys.argv[2]), "--stacks")
check(load(sys.argv[3]), "--stacks=2", depth=2)
none = load(sys.argv[4])
assert not [e for e in none if "stack" in e], "a recording without --stacks has stacks"
print("without --stacks: no stacks")
PY
echo PASS
