# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check `evring report` (tables and --json) against `evring dump --json`.

    python3 check_report.py DUMP.jsonl REPORT.txt REPORT.json [--providers A,B]

Events per provider and per event type, lost events, busiest threads, and every counter
series' samples, min, mean, max and last, computed here from the dump's samples.
"""
import argparse
import collections
import json
import re
import sys

KINDS = {"CounterMean": "mean", "CounterRate": "rate", "CounterGauge": "gauge",
         "CounterHistogram": "histogram"}


def fail(msg):
    sys.exit("check_report: " + msg)


def value(e):
    f = e["fields"]
    k = e["event"]
    if k == "CounterMean":
        return f["mean"] if f["count"] else 0.0
    if k == "CounterRate":
        return f["rate_per_s"]
    if k == "CounterGauge":
        return f["value"]
    return f["p50"] if f["count"] else 0.0


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-12


def section(lines, title):
    out = []
    for i, line in enumerate(lines):
        if line.startswith(title):
            for line2 in lines[i + 2:]:
                if not line2.strip():
                    break
                out.append(line2)
            return out
    fail("no section %r" % title)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("text")
    ap.add_argument("json")
    ap.add_argument("--providers")
    a = ap.parse_args()

    dump = [json.loads(line) for line in open(a.dump)]
    events = [e for e in dump if e["type"] == "event"]
    lost = sum(e["count"] for e in dump if e["type"] == "lost")
    per_prov = collections.Counter(e["provider"] for e in events)
    per_type = collections.Counter("%s/%s" % (e["provider"], e["event"]) for e in events)
    per_tid = collections.Counter(e["tid"] for e in events)
    series = collections.defaultdict(list)
    for e in events:
        if e["event"] in KINDS:
            series["%s/%s" % (e["provider"], e["fields"]["name"])].append((e["event"], value(e)))

    text = open(a.text).read().splitlines()
    m = re.search(r"^Events +(\d+) .*, (\d+) lost", "\n".join(text), re.M)
    if not m or int(m.group(1)) != len(events) or int(m.group(2)) != lost:
        fail("head line says %s, the dump has %d events and %d lost"
             % (m and m.groups(), len(events), lost))

    got = {l.split()[0]: int(l.split()[1]) for l in section(text, "Events per provider")}
    if got != dict(per_prov):
        fail("per provider %r, dump %r" % (got, dict(per_prov)))
    if a.providers and set(got) != set(a.providers.split(",")):
        fail("providers %r, expected %s" % (sorted(got), a.providers))
    got = {l.split()[0]: int(l.split()[1]) for l in section(text, "Events per type")}
    if got != dict(per_type):
        fail("per type %r, dump %r" % (got, dict(per_type)))

    tot = [l for l in section(text, "Lost events per CPU") if l.split()[0] == "total"]
    if not tot or int(tot[0].split()[1]) != len(events) or int(tot[0].split()[2]) != lost:
        fail("lost table total %r" % tot)

    rows = {}
    if series:
        for l in section(text, "Counters"):
            t = l.split()
            rows[t[0]] = (t[1], int(t[-5]), [float(x) for x in t[-4:]])
    if set(rows) != set(series):
        fail("counters %r, dump %r" % (sorted(rows), sorted(series)))
    for name, samples in series.items():
        vals = [v for _, v in samples]
        want = [min(vals), sum(vals) / len(vals), max(vals), vals[-1]]
        kind, n, got = rows[name]
        if kind != KINDS[samples[0][0]] or n != len(vals):
            fail("%s: %s with %d samples, dump: %s with %d" % (name, kind, n, samples[0][0],
                                                               len(vals)))
        # The table prints 6 significant digits.
        if not all(close(g, w, 1e-5) for g, w in zip(got, want)):
            fail("%s: min/mean/max/last %r, dump %r" % (name, got, want))

    for l in section(text, "Busiest threads"):
        t = l.split()
        if int(t[-2]) != per_tid[int(t[0])]:
            fail("thread %s: %s events, dump %d" % (t[0], t[-2], per_tid[int(t[0])]))

    j = json.load(open(a.json))
    if j["events"] != len(events) or j["lost"] != lost:
        fail("--json: %d events %d lost" % (j["events"], j["lost"]))
    if {p["name"]: p["events"] for p in j["providers"]} != dict(per_prov):
        fail("--json providers")
    if {t["name"]: t["events"] for t in j["event_types"]} != dict(per_type):
        fail("--json event types")
    if {t["tid"]: t["events"] for t in j["threads"]} != dict(per_tid):
        fail("--json threads")
    if sum(r["lost"] for r in j["rings"]) != lost:
        fail("--json lost per ring")
    for c in j["counters"]:
        vals = [v for _, v in series["%s/%s" % (c["provider"], c["name"])]]
        want = [min(vals), sum(vals) / len(vals), max(vals), vals[-1]]
        got = [c["min"], c["mean"], c["max"], c["last"]]
        if c["samples"] != len(vals) or not all(close(g, w, 1e-9) for g, w in zip(got, want)):
            fail("--json counter %s/%s: %r, dump %r" % (c["provider"], c["name"], got, want))
    if len(j["counters"]) != len(series):
        fail("--json: %d counters, dump %d" % (len(j["counters"]), len(series)))
    print("report: %d events, %d lost, %d providers, %d event types, %d counters, %d threads"
          % (len(events), lost, len(per_prov), len(per_type), len(series), len(per_tid)))


main()
