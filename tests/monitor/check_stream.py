# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check a live stream the monitor sent.

    python3 check_stream.py ndjson FILE [--event NAME] [--provider P]
    python3 check_stream.py sse FILE --interval-ms N [--provider P]

ndjson: every line a JSON object; events (type "event") of the wanted provider/event only;
at least one; the last record {"type":"end"} counts the events exactly. sse: records of
"id:", "event:" and "data:" lines separated by blank lines, ids increasing; counter records
of the provider at the interval asked; ends with an "end" event.
"""
import argparse
import json
import sys


def fail(msg):
    sys.exit("check_stream: " + msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind")
    ap.add_argument("file")
    ap.add_argument("--event")
    ap.add_argument("--provider")
    ap.add_argument("--interval-ms", type=int)
    a = ap.parse_args()
    text = open(a.file, encoding="utf-8").read()
    if a.kind == "ndjson":
        recs = [json.loads(l) for l in text.splitlines() if l]
    else:
        recs, last_id = [], 0
        for block in text.split("\n\n"):
            if not block.strip() or block.startswith(":"):
                continue
            f = dict(l.split(": ", 1) for l in block.splitlines() if not l.startswith(":"))
            if int(f["id"]) <= last_id:
                fail("SSE ids do not increase: %s after %d" % (f["id"], last_id))
            last_id = int(f["id"])
            d = json.loads(f["data"])
            if f["event"] != d["type"]:
                fail("SSE event %s carries a %s" % (f["event"], d["type"]))
            recs.append(d)
    if not recs or recs[-1]["type"] != "end":
        fail("the stream does not end with an end record")
    body = [r for r in recs[:-1] if r["type"] in ("event", "counter")]
    if not body:
        fail("no records")
    for r in body:
        if a.provider and r["provider"] != a.provider:
            fail("record of provider %s" % r["provider"])
        if a.event and r.get("event") != a.event:
            fail("record of event %s" % r.get("event"))
        if a.interval_ms and r["interval_ms"] != a.interval_ms:
            fail("sample at %d ms, not %d" % (r["interval_ms"], a.interval_ms))
    n = recs[-1].get("events", recs[-1].get("samples"))
    if n != len(body):
        fail("end record counts %s, the stream has %d" % (n, len(body)))
    print("check_stream: %s: %d records, end %s" % (a.kind, len(body), recs[-1]))


main()
