# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks the output of `evring dump` (text or --json) of a workload trace.

Usage: check_dump.py (--text FILE | --json FILE) [--ticks N | --ticks-from-1 N]
                     [--only EV,EV...] [--require EV,EV...] [--no-lost]
Prints a one-line summary; exits 1 with a reason on the first failed check.
"""
import argparse
import json
import re
import sys

MASK = (1 << 64) - 1


def checksum(seq):
    """splitmix64's finalizer, as evr_workload_checksum() in examples/workload.c."""
    x = (seq + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def fail(msg):
    print("check_dump: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


TEXT_EVENT = re.compile(r'^(\d+)\.(\d{9}) cpu=(\d+) tid=(\d+) ([^/ ]+)/(\S+)(.*)$')
TEXT_LOST = re.compile(r'^(\d+)\.(\d{9}) cpu=(\d+) LOST (\d+) events$')
TEXT_FIELD = re.compile(r' (\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def parse_text(path):
    """Yields (kind, ts_ns, name, fields, lost) per line."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            m = TEXT_LOST.match(line)
            if m:
                yield ("lost", int(m[1]) * 10**9 + int(m[2]), None, None, int(m[4]))
                continue
            m = TEXT_EVENT.match(line)
            if not m:
                fail(f"{path}:{n}: not an event line: {line!r}")
            # dump's forms for an event it could not decode: no schema, or a bad payload.
            if m[5] == "?" or m[7].startswith(" <payload does not match"):
                fail(f"{path}:{n}: an event dump could not decode: {line[:200]!r}")
            fields = {}
            for k, v in TEXT_FIELD.findall(m[7]):
                fields[k] = v
            yield ("event", int(m[1]) * 10**9 + int(m[2]), m[6], fields, 0)


JSON_KEYS = {"type", "ts", "provider", "event", "id", "cpu", "tid", "fields"}


def parse_json(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                o = json.loads(line)
            except ValueError as e:
                fail(f"{path}:{n}: not JSON ({e}): {line[:200]!r}")
            if o.get("type") == "lost":
                if set(o) != {"type", "ts", "cpu", "count"}:
                    fail(f"{path}:{n}: lost object with keys {sorted(o)}")
                yield ("lost", o["ts"], None, None, o["count"])
                continue
            if o.get("type") != "event" or not JSON_KEYS <= set(o):
                fail(f"{path}:{n}: event object with keys {sorted(o)}")
            if o["provider"] != "Demo" or not isinstance(o["fields"], dict):
                fail(f"{path}:{n}: unexpected event {line[:200]!r}")
            for k in ("ts", "id", "cpu", "tid"):
                if not isinstance(o[k], int):
                    fail(f"{path}:{n}: {k} is not an integer")
            yield ("event", o["ts"], o["event"], o["fields"], 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--text")
    ap.add_argument("--json")
    ap.add_argument("--ticks", type=int, help="Tick seq must be exactly 1..N")
    ap.add_argument("--ticks-from-1", type=int, help="Tick seq must include 1..N, no duplicates")
    ap.add_argument("--only", help="the only event names allowed")
    ap.add_argument("--require", help="event names that must appear")
    ap.add_argument("--no-lost", action="store_true")
    ap.add_argument("--count", action="append", default=[], help="NAME=N: exactly N of them")
    ap.add_argument("--total", type=int, help="exactly N events in all")
    a = ap.parse_args()
    if bool(a.text) == bool(a.json):
        fail("give --text or --json")
    records = parse_text(a.text) if a.text else parse_json(a.json)
    only = set(a.only.split(",")) if a.only else None
    counts, seqs, lost, last_ts = {}, [], 0, -1
    for kind, ts, name, fields, nlost in records:
        if ts < last_ts:
            fail(f"time goes backwards: {ts} after {last_ts}")
        last_ts = ts
        if kind == "lost":
            lost += nlost
            continue
        counts[name] = counts.get(name, 0) + 1
        if only is not None and name not in only:
            fail(f"event {name} is not in the session's filter {sorted(only)}")
        if name == "Tick":
            seq, ck = int(fields["seq"]), int(fields["checksum"])
            if ck != checksum(seq):
                fail(f"Tick {seq}: checksum {ck} != {checksum(seq)}")
            seqs.append(seq)
        if name == "Phase" and not str(fields.get("name", "")).strip('"'):
            fail("a Phase event without its name field")
    if a.no_lost and lost:
        fail(f"{lost} events lost")
    seqs.sort()
    if len(set(seqs)) != len(seqs):
        fail("duplicate Tick sequence numbers")
    if a.ticks is not None and seqs != list(range(1, a.ticks + 1)):
        missing = sorted(set(range(1, a.ticks + 1)) - set(seqs))[:10]
        fail(f"{len(seqs)} Ticks, expected 1..{a.ticks}; first missing {missing}, "
             f"range {seqs[:1]}..{seqs[-1:]}")
    if a.ticks_from_1 is not None:
        missing = sorted(set(range(1, a.ticks_from_1 + 1)) - set(seqs))[:10]
        if missing:
            fail(f"Ticks 1..{a.ticks_from_1} incomplete; first missing {missing}")
    for name in (a.require.split(",") if a.require else []):
        if not counts.get(name):
            fail(f"no {name} event")
    for c in a.count:
        name, n = c.split("=")
        if counts.get(name, 0) != int(n):
            fail(f"{counts.get(name, 0)} {name} events, expected {n}")
    if a.total is not None and sum(counts.values()) != a.total:
        fail(f"{sum(counts.values())} events in all, expected {a.total}")
    print("check_dump: ok: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
          + f", lost={lost}")


main()
