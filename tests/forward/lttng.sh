#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring forward --to lttng with a real LTTng session: lttng-sessiond, `lttng create`,
# `enable-event -u 'evring:*'`, `start`; minirt forwarded to LTTng and, for comparison, to a
# JSON lines file; babeltrace2 must show every forwarded event with its provider, name,
# level, keywords, thread, time and fields, exactly as the JSON lines have them, none
# discarded. A second session enables the same events with a filter on the event's own
# fields (provider == "MiniRT" && event == "GCStart") and must hold exactly those.
# As root the session daemon runs in a private mount namespace (its /var/run/lttng and
# /dev/shm on tmpfs), so a daemon of the machine or of another test is never met; as
# another user it is that user's daemon with LTTNG_HOME in the test's directory. Skipped (77)
# without lttng-tools, babeltrace2, the evring:* module (liblttng-ust-dev) or a namespace.
source "$(dirname "$0")/lib.sh"
MINIRT=$(realpath "${3:?usage: $0 EVRING WORKLOAD MINIRT}")
need_python
for t in lttng lttng-sessiond babeltrace2; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed (scripts/setup --optional)"
done
if "$EVRING" forward --to lttng -p 1 2>&1 | grep -q "built without LTTng-UST"; then
	skip "evring was built without LTTng-UST (liblttng-ust-dev)"
fi

if ((EUID == 0)) && [[ -z ${EVR_LTTNG_NS:-} ]]; then
	unshare -m --propagation private true 2>/dev/null || skip "unshare -m is not permitted here"
	trap - EXIT
	EVR_LTTNG_NS=1 EVR_LTTNG_T=$T exec unshare -m --propagation private bash "$0" "$@"
fi
if [[ -n ${EVR_LTTNG_NS:-} ]]; then
	rmdir "$EVR_RUNTIME_DIR" "$T" 2>/dev/null || true	# this run's own, unused
	T=$EVR_LTTNG_T
	export EVR_RUNTIME_DIR=$T/run
	trap evr_test_cleanup EXIT
	for d in /var/run/lttng /dev/shm; do
		mkdir -p "$d"
		mount -t tmpfs tmpfs "$d" || skip "cannot mount a tmpfs on $d"
	done
fi
export LTTNG_HOME=$T
cleanup_hook() {
	lttng destroy --all >/dev/null 2>&1 || true
	[[ -n ${SESSIOND_PID:-} ]] && kill "$SESSIOND_PID" 2>/dev/null || true
}
# --daemonize returns once the daemon takes commands.
lttng-sessiond --daemonize --no-kernel >"$T/sessiond.out" 2>&1 ||
	skip "lttng-sessiond does not start here: $(cat "$T/sessiond.out")"
if ((EUID == 0)); then
	SESSIOND_PID=$(cat /var/run/lttng/lttng-sessiond.pid)
else
	SESSIOND_PID=$(cat "$T/.lttng/lttng-sessiond.pid")
fi
lttng create all --output="$T/all" >/dev/null
lttng enable-event -u -s all 'evring:*' >/dev/null
lttng create gc --output="$T/gc" >/dev/null
lttng enable-event -u -s gc 'evring:*' --filter 'provider == "MiniRT" && event == "GCStart"' \
	>/dev/null
lttng start all >/dev/null
lttng start gc >/dev/null

# minirt's runtime events and its System.Runtime counters (every 500 ms) until it exits.
"$EVRING" forward --providers 'MiniRT,System.Runtime' --counter-interval 500ms --to lttng \
	--to "jsonl:$T/copy.jsonl" -- "$MINIRT" --seconds 2 --phase alloc-heavy \
	>"$T/minirt.out" 2>"$T/fwd.txt" || fail "forward failed: $(cat "$T/fwd.txt")"
cat "$T/fwd.txt"
lttng stop all >/dev/null
lttng stop gc >/dev/null
lttng list all >"$T/list.txt"
grep -q "Discarded events: 0" "$T/list.txt" || fail "LTTng discarded events: $(cat "$T/list.txt")"
lttng destroy --all >/dev/null
read -r sent dropped filtered <<<"$(sink_counts "$T/fwd.txt" lttng)"
((sent > 0 && dropped == 0)) || fail "lttng sink: $sent sent, $dropped dropped"
babeltrace2 "$T/all" >"$T/all.txt" || fail "babeltrace2 cannot read the trace"
babeltrace2 "$T/gc" >"$T/gc.txt" || fail "babeltrace2 cannot read the filtered trace"
head -3 "$T/all.txt"

python3 - "$T/all.txt" "$T/gc.txt" "$T/copy.jsonl" "$sent" <<'PY' || fail "the LTTng trace does not hold the forwarded events"
import json, re, sys
LINE = re.compile(r'^\[[^]]*\] \([^)]*\) \S+ evring:(\w+): \{ cpu_id = \d+ \}, \{ '
                  r'provider = "(.*?)", event = "(.*?)", id = (\d+), level = (\d+), '
                  r'keywords = (0x[0-9a-fA-F]+), pid = (\d+), tid = (\d+), ts_ns = (\d+), '
                  r'fields = "(.*)" \}$')
LEVELS = ["log_always", "critical", "error", "warning", "info", "verbose"]
C_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a",
         "b": "\b", "f": "\f", "v": "\v", "0": "\0"}

def unescape(s):
    """babeltrace2 prints strings with C's escapes."""
    return re.sub(r"\\(.)", lambda m: C_ESC.get(m[1], m[1]), s)

def read_trace(path):
    out = []
    for n, line in enumerate(open(path), 1):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            sys.exit("%s:%d: not an evring event as expected: %r" % (path, n, line[:300]))
        name, prov, ev, id_, lvl, kw, pid, tid, ts, fields = m.groups()
        if LEVELS[int(lvl)] != name:
            sys.exit("%s:%d: level %s in evring:%s" % (path, n, lvl, name))
        fields = unescape(fields)
        out.append((prov, ev, int(id_), int(kw, 16), int(pid), int(tid), int(ts),
                    json.dumps(json.loads(fields), sort_keys=True)))
    return out

trace = read_trace(sys.argv[1])
gc = read_trace(sys.argv[2])
copy = []
for line in open(sys.argv[3]):
    o = json.loads(line)
    if o["type"] != "event":
        continue
    copy.append((o["provider"], o["event"], o["id"], None, o["pid"], o["tid"], o["ts"],
                 json.dumps(o["fields"], sort_keys=True)))
strip = lambda rows: sorted((r[0], r[1], r[2], r[4], r[5], r[6], r[7]) for r in rows)
if len(trace) != int(sys.argv[4]) or strip(trace) != strip(copy):
    sys.exit("LTTng has %d events, the forwarder sent %s, the JSON copy has %d; first "
             "difference: %r" % (len(trace), sys.argv[4], len(copy),
             next(((a, b) for a, b in zip(strip(trace), strip(copy)) if a != b), None)))
kinds = {r[1] for r in trace}
for want in ("GCStart", "GCEnd", "CounterMean"):
    if want not in kinds:
        sys.exit("no %s event in the trace (events: %s)" % (want, sorted(kinds)))
want_gc = [r for r in trace if r[0] == "MiniRT" and r[1] == "GCStart"]
if sorted(gc) != sorted(want_gc) or not gc:
    sys.exit("the filtered session has %d events, %d GCStart were forwarded"
             % (len(gc), len(want_gc)))
print("LTTng: %d events, as forwarded, fields equal to the JSON copy; filtered session: "
      "%d GCStart" % (len(trace), len(gc)))
PY
echo PASS
