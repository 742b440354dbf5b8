# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check a Chrome trace-event JSON file written by `evring convert --format chrome`
against `evring dump --json` of the same trace.

    python3 check_chrome.py DUMP.jsonl CHROME.json [--counters PROVIDER]

Structure: it parses, the keys each phase needs are there, every "E" closes the innermost
open "B" of its thread (same name), async "b"/"e" ids pair up, timestamps never go back
on a thread, process and thread names are given. Content: every event of the dump is
there exactly once (instant, B, E or counter sample; the converter's own split/close
records are marked args.evring "split", "not closed" or "closed late" and not counted), lost counts add up, every counter
sample of the dump is on its counter track, pairs (GCStart/GCEnd) are slices.
"""
import argparse
import collections
import json
import sys

EXACT = 2 ** 53


def fail(msg):
    sys.exit("check_chrome: " + msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("chrome")
    ap.add_argument("--counters", help="a provider whose counter tracks must be present")
    a = ap.parse_args()

    dump = [json.loads(line) for line in open(a.dump)]
    doc = json.load(open(a.chrome))
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents array")
    if doc.get("displayTimeUnit") not in ("ns", "ms"):
        fail("displayTimeUnit missing")
    evs = doc["traceEvents"]

    stacks = collections.defaultdict(list)
    last_ts = {}
    async_open = {}
    named_threads = set()
    seen_threads = set()
    process_named = False
    n_real = 0
    lost = 0
    counter_samples = collections.Counter()
    instants = collections.Counter()
    slices_b = collections.Counter()
    slices_e = collections.Counter()
    approximated = set()  # starts and stops shown as instants (no start, crossed, too deep)
    for e in evs:
        ph = e.get("ph")
        if ph is None or "pid" not in e or "name" not in e:
            fail("record without ph, pid or name: %r" % e)
        if ph == "M":
            if e["name"] == "process_name":
                process_named = bool(e["args"]["name"])
            elif e["name"] == "thread_name":
                if not e["args"]["name"]:
                    fail("empty thread name: %r" % e)
                named_threads.add(e["tid"])
            elif e["name"] != "process_labels":
                fail("unknown metadata %r" % e)
            continue
        for k in ("ts", "tid"):
            if k not in e:
                fail("%s record without %s: %r" % (ph, k, e))
        if not isinstance(e["ts"], (int, float)):
            fail("ts is not a number: %r" % e)
        key = (e["pid"], e["tid"])
        if e["ts"] < last_ts.get(key, -1):
            fail("time goes back on thread %r: %r" % (key, e))
        last_ts[key] = e["ts"]
        args = e.get("args", {})
        for v in args.values():
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > EXACT:
                fail("integer beyond 2^53 as a number: %r" % e)
        synthetic = args.get("evring") in ("split", "not closed", "closed late")
        if not synthetic:
            n_real += 1
        if ph == "i":
            if e.get("s") == "g":
                if e["name"] != "Lost events":
                    fail("unexpected global instant %r" % e)
                lost += args["count"]
                n_real -= 1
                continue
            if e.get("s") != "t":
                fail("instant without scope: %r" % e)
            instants[e["name"]] += 1
            seen_threads.add(e["tid"])
            if args.get("evring") in ("too deep", "crossed", "no start"):
                approximated.add(e["name"])
        elif ph == "B":
            stacks[key].append(e["name"])
            seen_threads.add(e["tid"])
            if not synthetic:
                slices_b[e["name"]] += 1
        elif ph == "E":
            if not stacks[key] or stacks[key][-1] != e["name"]:
                fail("E does not close the innermost B of its thread: %r (open: %r)"
                     % (e, stacks[key]))
            stacks[key].pop()
            if not synthetic:
                slices_e[e["name"]] += 1
        elif ph == "C":
            if not args or not all(isinstance(v, (int, float)) for v in args.values()):
                fail("counter without numeric args: %r" % e)
            counter_samples[(e.get("cat"), e["name"])] += 1
        elif ph in ("b", "e"):
            ident = (e.get("cat"), e["name"], e.get("id"))
            if e.get("id") is None:
                fail("async record without id: %r" % e)
            if ph == "b":
                async_open[ident] = async_open.get(ident, 0) + 1
            else:
                if not async_open.get(ident):
                    fail("async e without b: %r" % e)
                async_open[ident] -= 1
        else:
            fail("unexpected phase %r" % e)
    for key, st in stacks.items():
        if st:
            fail("slices left open on %r: %r" % (key, st))
    if any(async_open.values()):
        fail("async slices left open")
    if not process_named:
        fail("no process_name")
    if seen_threads - named_threads:
        fail("threads without a name: %r" % sorted(seen_threads - named_threads))

    d_events = [e for e in dump if e["type"] == "event"]
    d_lost = sum(e["count"] for e in dump if e["type"] == "lost")
    if n_real != len(d_events):
        fail("%d events in the JSON, %d in the dump" % (n_real, len(d_events)))
    if lost != d_lost:
        fail("%d lost in the JSON, %d in the dump" % (lost, d_lost))
    want_c = collections.Counter()
    for e in d_events:
        if e["event"] in ("CounterMean", "CounterRate", "CounterGauge", "CounterHistogram"):
            want_c[(e["provider"], e["fields"]["display_name"])] += 1
    if want_c != counter_samples:
        fail("counter tracks %r, the dump has %r" % (counter_samples, want_c))
    if a.counters and not any(p == a.counters for p, _ in counter_samples):
        fail("no counter track of " + a.counters)
    d_names = collections.Counter((e["provider"], e["event"]) for e in d_events)
    gc_start = d_names[("MiniRT", "GCStart")]
    gc_end = d_names[("MiniRT", "GCEnd")]
    # A GCEnd without its GCStart in the file (a cut trace) is an instant event.
    if slices_b["GC"] != gc_start or slices_e["GC"] + instants["MiniRT/GCEnd"] != gc_end:
        fail("GC slices: %d B, %d E, dump %d GCStart %d GCEnd"
             % (slices_b["GC"], slices_e["GC"], gc_start, gc_end))
    if instants["MiniRT/GCStart"]:
        fail("GCStart as an instant event")
    for (prov, name), n in d_names.items():
        if name.startswith("Counter") or name in ("GCStart", "GCEnd"):
            continue
        full = "%s/%s" % (prov, name)
        if full in approximated:
            continue
        if full in instants and instants[full] != n:
            fail("%s/%s: %d instants, %d in the dump" % (prov, name,
                 instants["%s/%s" % (prov, name)], n))
    print("chrome: %d records, %d events (%d instants, %d slices, %d counter samples), "
          "%d lost, %d threads" % (len(evs), n_real, sum(instants.values()),
                                   sum(slices_b.values()), sum(counter_samples.values()),
                                   lost, len(named_threads)))


main()
