# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check a trace the monitor sent, in any of its formats.

    python3 check_trace.py EVRING FORMAT FILE PROVIDER[,PROVIDER...]

evtrace: `evring dump --json` decodes it; every event belongs to one of the providers, and
there is at least one. chrome: a JSON object with traceEvents named Provider/Event. jsonl:
one JSON object per line, as evring dump --json. ctf: a tar holding DIR/metadata and at least
one DIR/stream_N. Prints one summary line; exits 1 with the reason otherwise.
"""
import json
import subprocess
import sys
import tarfile


def fail(msg):
    sys.exit("check_trace: " + msg)


def events_of_lines(lines, what):
    provs = {}
    for n, line in enumerate(lines, 1):
        try:
            d = json.loads(line)
        except ValueError as e:
            fail("%s line %d is not JSON: %s" % (what, n, e))
        if d.get("type") == "event":
            provs[d["provider"]] = provs.get(d["provider"], 0) + 1
    return provs


def main():
    evring, fmt, path, want = sys.argv[1], sys.argv[2], sys.argv[3], set(sys.argv[4].split(","))
    if fmt == "evtrace":
        out = subprocess.run([evring, "dump", "--json", path], capture_output=True, text=True)
        if out.returncode != 0:
            fail("evring dump failed: " + out.stderr.strip())
        provs = events_of_lines(out.stdout.splitlines(), "dump")
    elif fmt == "jsonl":
        provs = events_of_lines(open(path, encoding="utf-8").read().splitlines(), "jsonl")
    elif fmt == "chrome":
        d = json.load(open(path, encoding="utf-8"))
        provs = {}
        for e in d["traceEvents"]:
            if e.get("ph") in ("i", "B", "X") and "/" in e.get("name", ""):
                p = e["name"].split("/")[0]
                provs[p] = provs.get(p, 0) + 1
    elif fmt == "ctf":
        with tarfile.open(path) as t:
            names = t.getnames()
        if not any(n.endswith("/metadata") for n in names):
            fail("no metadata in the tar: %s" % names)
        if not any("/stream_" in n for n in names):
            fail("no stream in the tar: %s" % names)
        print("check_trace: ctf tar with %d files" % len(names))
        return
    else:
        fail("unknown format " + fmt)
    if not provs:
        fail("%s: no events" % path)
    if not set(provs) <= want:
        fail("%s: providers %s, want only %s" % (path, sorted(provs), sorted(want)))
    print("check_trace: %s %s: %s" % (fmt, path, provs))


main()
