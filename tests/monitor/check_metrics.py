# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check a /metrics body beyond what promtool checks.

    python3 check_metrics.py [--openmetrics] FILE PID [PID...]

Every family has one HELP and one TYPE, before its samples, and its samples are together;
no two samples share a name and label set (promtool 2.42 does not see that); no timestamps;
counters end in _total; each PID has the series of minirt's counters under the names
docs/monitor.md gives; summaries have _sum and _count. Prints one line; exits 1 otherwise.

--openmetrics: the body is OpenMetrics 1.0.0 (promtool 2.42's `check metrics` reads only the
text format): a counter's family is named without _total and its samples with it; a UNIT
line belongs to the family before it, whose name ends in _UNIT; HELP has no bare '"';
"# EOF" ends the body.
"""
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
WANT = {  # minirt's counters under their Prometheus names
    "evring_system_runtime_gc_heap_size_bytes": "gauge",
    "evring_system_runtime_gen_0_gc_count_total": "counter",
    "evring_system_runtime_alloc_rate_bytes_total": "counter",
    "evring_system_runtime_time_in_gc_ratio": "gauge",
    "evring_system_runtime_threadpool_thread_count_current": "gauge",
    "evring_system_runtime_work_item_duration_seconds": "summary",
    "evring_system_runtime_work_item_latency_seconds": "summary",
    "evring_process_cpu_usage_ratio": "gauge",
    "evring_process_working_set_bytes": "gauge",
    "evring_process_voluntary_ctx_switches_total": "counter",
    "evring_session_lost_events_total": "counter",
}


def fail(msg):
    sys.exit("check_metrics: " + msg)


def family_of(name, types, om):
    """The family a sample NAME belongs to."""
    if name in types:
        return name
    if om and name.endswith("_total") and types.get(name[:-6]) == "counter":
        return name[:-6]
    return re.sub(r"_(sum|count)$", "", name)


def main():
    args = sys.argv[1:]
    om = args[:1] == ["--openmetrics"]
    if om:
        args = args[1:]
    text = open(args[0], encoding="utf-8").read()
    pids = args[1:]
    if not text.endswith("\n"):
        fail("the body does not end with a newline")
    if om:
        if not text.endswith("\n# EOF\n") or text.count("# EOF") != 1:
            fail("the body does not end with one '# EOF' line")
        text = text[:-len("# EOF\n")]
    elif "# EOF" in text:
        fail("'# EOF' in the text format")
    types, helps, seen, done, series = {}, set(), set(), set(), {}
    current = None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            name = line.split()[2]
            if name in helps:
                fail("line %d: second HELP for %s" % (n, name))
            helps.add(name)
            if om and re.search(r'(?<!\\)"', line.split(" ", 3)[3]):
                fail("line %d: a bare '\"' in HELP" % n)
            continue
        if line.startswith("# UNIT "):
            if not om:
                fail("line %d: UNIT in the text format" % n)
            _, _, name, unit = line.split()
            if name != current or not name.endswith("_" + unit):
                fail("line %d: UNIT %s for %s (current family %s)" % (n, unit, name, current))
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            if name in types:
                fail("line %d: second TYPE for %s" % (n, name))
            if name in done:
                fail("line %d: family %s comes back after others" % (n, name))
            if om and kind == "counter" and name.endswith("_total"):
                fail("line %d: OpenMetrics counter family %s named with _total" % (n, name))
            types[name] = kind
            if current:
                done.add(current)
            current = name
            continue
        m = SAMPLE.match(line)
        if not m:
            fail("line %d does not parse (or has a timestamp): %r" % (n, line))
        name, labels = m.group(1), m.group(2) or ""
        family = family_of(name, types, om)
        if family != current:
            fail("line %d: sample of %s outside its family (%s)" % (n, name, current))
        if (name, labels) in seen:
            fail("line %d: duplicate series %s%s" % (n, name, labels))
        seen.add((name, labels))
        if types[family] == "counter" and not name.endswith("_total"):
            fail("line %d: counter %s without _total" % (n, name))
        pid = re.search(r'pid="(\d+)"', labels)
        if pid:
            series.setdefault(pid.group(1), set()).add(name)
    for pid in pids:
        have = series.get(pid, set())
        for name, kind in WANT.items():
            family = name[:-6] if om and kind == "counter" else name
            if types.get(family) != kind:
                fail("%s is %s, want %s" % (family, types.get(family), kind))
            want = name + "_count" if kind == "summary" else name
            if want not in have:
                fail("pid %s has no %s" % (pid, want))
    print("check_metrics%s: %d families, %d series, processes %s"
          % (" --openmetrics" if om else "", len(types), len(seen), ",".join(pids)))


main()
