#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record --checksum auto|always|never (docs/recorder.md, "Checksums"): the CRC of the
# events' bytes is the recorder's largest own cost, and a recorder that is behind skips it
# rather than lose events.
#  - --checksum never: every EVENTS chunk carries EVR_TRACE_CHUNK_UNCHECKED (bit 15 of the
#    header's flags, data_crc 0, the header's own CRC right); the file reads back exactly
#    (emitted == recorded + lost, dump agrees, from the file and from a pipe), report --json
#    and dump count the chunks;
#  - cut inside an unchecked chunk, it reads up to the chunk before it;
#  - --checksum always: no chunk unchecked, and a payload damaged beyond repair (two bits)
#    is still detected and counted lost, not read;
#  - auto with the recorder stopped (SIGSTOP) while the rings fill: it drains them behind, so
#    some chunks go out unchecked, said once by record; still exact;
#  - a wrong value: one line, exit 2.
source "$(dirname "$0")/lib.sh"
need_python

one_line 2 "^evring record: --checksum: 'sometimes' is not auto, always or never$" \
	"$EVRING" record --checksum sometimes --providers Demo -o "$T/x.evtrace" -- "$WORKLOAD"

# flags_of TRACE: "EVENTS-chunks unchecked-EVENTS-chunks", checking each header on the way.
flags_of() {
	python3 - "$HERE" "$1" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
from trace_edit import HDR, KINDS, crc32c
data = open(sys.argv[2], "rb").read()
off, ev, un = 64, 0, 0
while off + HDR.size <= len(data):
    magic, kind, flags, ln, seq, dcrc, hcrc = HDR.unpack_from(data, off)
    if magic != 0x43525645 or hcrc != crc32c(data[off:off + 20]):
        sys.exit(f"FAIL: bad chunk header at {off}")
    body = data[off + HDR.size:off + HDR.size + ln]
    if flags & 0x8000:
        if kind != KINDS["EVENTS"] or dcrc != 0:
            sys.exit(f"FAIL: unchecked chunk of kind {kind}, data_crc {dcrc:#x} at {off}")
        un += 1
    elif crc32c(body) != dcrc:
        sys.exit(f"FAIL: checked chunk at {off} fails its CRC")
    ev += kind == KINDS["EVENTS"]
    off += HDR.size + ((ln + 7) & ~7)
print(ev, un)
EOF
}

# never: exact, every EVENTS chunk unchecked, and the readers say how many.
N=20000
"$EVRING" record --providers Demo --checksum never -o "$T/never.evtrace" -- "$WORKLOAD" \
	--events "$N" --threads 1 >"$T/never.out" 2>"$T/never.err" ||
	fail "record (never): $(cat "$T/never.err")"
check_accounting never "$N" "$T/never.out" "$T/never.err" "$T/never.evtrace"
read -r ev un < <(flags_of "$T/never.evtrace") || fail "flags (never)"
((ev > 0 && un == ev)) || fail "never: $un of $ev EVENTS chunks unchecked"
grep -q "without their checksum" "$T/never.err" && fail "never: record reports what was asked"
grep -q "^evring dump: $T/never.evtrace: $un chunks of events carry no checksum" \
	"$T/never.dump.err" || fail "dump does not count the unchecked chunks: $(cat "$T/never.dump.err")"
"$EVRING" report --json "$T/never.evtrace" >"$T/never.json" 2>"$T/never.rep.err" ||
	fail "report: $(cat "$T/never.rep.err")"
python3 - "$T/never.json" "$un" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
if o["unchecked_chunks"] != int(sys.argv[2]) or o["damaged_file"]:
    sys.exit(f"FAIL: report says {o['unchecked_chunks']} unchecked, damaged {o['damaged_file']}")
EOF
# Through a pipe (read once, front to back: trace-stream.c), the same events and the same count.
# shellcheck disable=SC2002 # a pipe, not the file, is what this reads
cat "$T/never.evtrace" | "$EVRING" dump - >"$T/pipe.txt" 2>"$T/pipe.err" ||
	fail "dump (pipe): $(cat "$T/pipe.err")"
cmp -s "$T/pipe.txt" "$T/never.txt" || fail "dump of the pipe differs from dump of the file"
grep -q "^evring dump: .*: $un chunks of events carry no checksum" "$T/pipe.err" ||
	fail "dump of a pipe does not count the unchecked chunks: $(cat "$T/pipe.err")"
echo "never: $un of $ev EVENTS chunks unchecked, read back exactly"

# Cut inside the last unchecked EVENTS chunk: read up to the chunk before it.
last=$(python3 "$HERE/trace_edit.py" chunks "$T/never.evtrace" | awk '$2 == 4 {o = $1} END {print o}')
head -c $((last + 100)) "$T/never.evtrace" >"$T/cut.evtrace"
"$EVRING" dump "$T/cut.evtrace" >"$T/cut.txt" 2>"$T/cut.err" || fail "dump (cut): $(cat "$T/cut.err")"
grep -q "truncated after byte $last (offset $last: the file ends inside a chunk (EVENTS" \
	"$T/cut.err" || fail "cut: $(cat "$T/cut.err")"
cut_events=$(grep -vc " LOST " "$T/cut.txt" || true)
full_events=$(grep -vc " LOST " "$T/never.txt" || true)
((cut_events > 0 && cut_events < full_events)) ||
	fail "cut: $cut_events events read, of $full_events"
echo "cut: $cut_events of $full_events events up to byte $last"

# always: every chunk checked; damage in one is caught, not read.
"$EVRING" record --providers Demo --checksum always -o "$T/always.evtrace" -- "$WORKLOAD" \
	--events "$N" --threads 1 >"$T/always.out" 2>"$T/always.err" ||
	fail "record (always): $(cat "$T/always.err")"
check_accounting always "$N" "$T/always.out" "$T/always.err" "$T/always.evtrace"
read -r ev un < <(flags_of "$T/always.evtrace") || fail "flags (always)"
((ev > 0 && un == 0)) || fail "always: $un of $ev EVENTS chunks unchecked"
grep -q "carry no checksum" "$T/always.dump.err" && fail "always: dump counts unchecked chunks"
first=$(python3 "$HERE/trace_edit.py" chunks "$T/always.evtrace" | awk '$2 == 4 {print $1; exit}')
python3 - "$T/always.evtrace" "$((first + 24 + 16 + 100))" <<'EOF'
import sys
path, at = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(at)
    b = f.read(1)[0] ^ 0x41          # two bits: beyond repair
    f.seek(at)
    f.write(bytes([b]))
EOF
"$EVRING" dump "$T/always.evtrace" >"$T/bad.txt" 2>"$T/bad.err" || fail "dump (damaged): $(cat "$T/bad.err")"
grep -q "1 EVENTS chunks damaged beyond repair" "$T/bad.err" ||
	fail "a damaged checked chunk went unseen: $(cat "$T/bad.err")"
echo "always: every chunk checked, damage caught"

# auto, the recorder stopped while the rings overflow: it drains them behind the writers.
record_stalled stalled 300000 "$T/stalled.evtrace" --providers Demo --buffer-size 16M
cat "$T/stalled.err"
check_accounting stalled 300000 "$T/stalled.out" "$T/stalled.err" "$T/stalled.evtrace"
read -r ev un < <(flags_of "$T/stalled.evtrace") || fail "flags (stalled)"
((un > 0 && un <= ev)) || fail "auto, behind: $un of $ev EVENTS chunks unchecked"
[[ $(grep -c "EVENTS chunks were written without their checksum while the recorder was \
behind" "$T/stalled.err") == 1 ]] || fail "record does not say it once"
grep -q "^evring record: $un of $ev EVENTS chunks" "$T/stalled.err" ||
	fail "record's count differs from the file's ($un of $ev)"
echo "auto: $un of $ev EVENTS chunks unchecked while behind"
echo "PASS"
