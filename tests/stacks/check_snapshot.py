# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check `evring stacks --json` against eu-stack's output and the known parking functions.

usage: check_snapshot.py STACKS.json EU.txt STACKS.txt THREAD:FUNC...
Each THREAD (name) must have FUNC among its frames; for every thread both tools saw, the
function names must agree frame by frame (eu-stack's list, as many frames as both have).
The text output must show the same frames as the JSON.
"""
import json
import re
import sys


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def parse_eu(path):
    stacks, cur = {}, None
    for line in open(path):
        m = re.match(r"^TID (\d+):", line)
        if m:
            cur = stacks.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"^#\d+\s+0x[0-9a-f]+\s*(\S*)", line)
        if m and cur is not None:
            cur.append(m.group(1) or "??")
    return stacks


def main():
    doc = json.load(open(sys.argv[1]))
    eu = parse_eu(sys.argv[2])
    text = open(sys.argv[3]).read()
    want = [a.split(":", 1) for a in sys.argv[4:]]
    if not isinstance(doc.get("pid"), int) or not isinstance(doc.get("threads"), list):
        fail("JSON lacks pid/threads")
    by_name = {}
    for t in doc["threads"]:
        for k in ("tid", "name", "state", "pause_us", "frames"):
            if k not in t:
                fail(f"thread lacks {k}: {t}")
        by_name[t["name"]] = t
        funcs = [f["func"] or "??" for f in t["frames"]]
        if t["tid"] not in eu:
            fail(f"eu-stack did not see thread {t['tid']}")
        theirs = eu[t["tid"]]
        n = min(len(funcs), len(theirs))
        if n < 3:
            fail(f"thread {t['tid']}: too few frames: ours {funcs}, eu-stack {theirs}")
        if funcs[:n] != theirs[:n]:
            fail(f"thread {t['tid']} ({t['name']}): ours {funcs[:n]} != eu-stack {theirs[:n]}")
        for i, f in enumerate(t["frames"]):
            if f["func"] and f"#{i:<2} {f['pc'].replace('0x', '0x' + '0' * (18 - len(f['pc'])))} {f['func']}+" not in text:
                fail(f"text output lacks frame {i} {f['func']} of thread {t['tid']}")
        print(f"thread {t['tid']} {t['name']}: {len(funcs)} frames, agree on {n}: {' < '.join(funcs[:5])}")
    for name, func in want:
        if name not in by_name:
            fail(f"no thread named {name} in {sorted(by_name)}")
        funcs = [f["func"] for f in by_name[name]["frames"]]
        if func not in funcs:
            fail(f"thread {name} is not in {func}: {funcs}")
    if len(eu) != len(doc["threads"]):
        fail(f"eu-stack saw {len(eu)} threads, we saw {len(doc['threads'])}")


main()
