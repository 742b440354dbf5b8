# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks the JSON lines of `evring forward --to jsonl` from workload processes.

Usage: check_jsonl.py FILE [--pid PID] [--ticks N] [--only EV,...] [--total N]
                           [--count NAME=N] [--no-lost]
Every line must be one whole object: {"pid":P,"type":"event"|"lost",...} with the keys of
`evring dump --json`; Tick events must carry their checksum.
"""
import argparse
import json
import sys

MASK = (1 << 64) - 1


def checksum(seq):
    """splitmix64's finalizer, as evr_workload_checksum() in examples/workload.c."""
    x = (seq + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def fail(msg):
    print("check_jsonl: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


EVENT_KEYS = {"pid", "type", "ts", "provider", "event", "id", "cpu", "tid", "fields"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--pid", type=int, action="append", default=[])
    ap.add_argument("--ticks", type=int)
    ap.add_argument("--only")
    ap.add_argument("--total", type=int)
    ap.add_argument("--count", action="append", default=[])
    ap.add_argument("--no-lost", action="store_true")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    counts, seqs, lost, total = {}, [], 0, 0
    with open(a.file, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n"):
                fail(f"line {n} is cut: {line[:100]!r}")
            try:
                o = json.loads(line)
            except ValueError as e:
                fail(f"line {n}: not JSON ({e}): {line[:200]!r}")
            if a.pid and o.get("pid") not in a.pid:
                fail(f"line {n}: pid {o.get('pid')} not in {a.pid}")
            if o.get("type") == "lost":
                lost += o["count"]
                continue
            if o.get("type") != "event" or set(o) != EVENT_KEYS:
                fail(f"line {n}: keys {sorted(o)}")
            name = o["event"]
            counts[name] = counts.get(name, 0) + 1
            total += 1
            if only is not None and name not in only:
                fail(f"line {n}: {name} is not in {sorted(only)}")
            if name == "Tick":
                seq, ck = o["fields"]["seq"], o["fields"]["checksum"]
                if ck != checksum(seq):
                    fail(f"Tick {seq}: checksum {ck} != {checksum(seq)}")
                seqs.append(seq)
    if a.no_lost and lost:
        fail(f"{lost} events lost")
    seqs.sort()
    if len(set(seqs)) != len(seqs):
        fail("duplicate Tick sequence numbers")
    if a.ticks is not None and seqs != list(range(1, a.ticks + 1)):
        missing = sorted(set(range(1, a.ticks + 1)) - set(seqs))[:10]
        fail(f"{len(seqs)} Ticks, expected 1..{a.ticks}; first missing {missing}")
    for c in a.count:
        name, k = c.split("=")
        if counts.get(name, 0) != int(k):
            fail(f"{counts.get(name, 0)} {name} events, expected {k}")
    if a.total is not None and total != a.total:
        fail(f"{total} events in all, expected {a.total}")
    print("check_jsonl: ok: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
          + f", lost={lost}")


main()
