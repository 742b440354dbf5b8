# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check a /metrics body beyond what promtool checks.

    python3 check_metrics.py FILE PID [PID...]

Every family has one HELP and one TYPE, before its samples, and its samples are together;
no two samples share a name and label set (promtool 2.42 does not see that); no timestamps;
counters end in _total; each PID has the series of minirt's counters under the names
docs/monitor.md gives; summaries have _sum and _count. Prints one line; exits 1 otherwise.
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


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    pids = sys.argv[2:]
    if not text.endswith("\n"):
        fail("the body does not end with a newline")
    types, helps, seen, done, series = {}, set(), set(), set(), {}
    current = None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            name = line.split()[2]
            if name in helps:
                fail("line %d: second HELP for %s" % (n, name))
            helps.add(name)
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            if name in types:
                fail("line %d: second TYPE for %s" % (n, name))
            if name in done:
                fail("line %d: family %s comes back after others" % (n, name))
            types[name] = kind
            if current:
                done.add(current)
            current = name
            continue
        m = SAMPLE.match(line)
        if not m:
            fail("line %d does not parse (or has a timestamp): %r" % (n, line))
        name, labels = m.group(1), m.group(2) or ""
        family = re.sub(r"_(sum|count)$", "", name) if name not in types else name
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
            if types.get(name) != kind:
                fail("%s is %s, want %s" % (name, types.get(name), kind))
            want = name + "_count" if kind == "summary" else name
            if want not in have:
                fail("pid %s has no %s" % (pid, want))
    print("check_metrics: %d families, %d series, processes %s" % (len(types), len(seen),
                                                                   ",".join(pids)))


main()
