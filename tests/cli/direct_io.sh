#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record --io direct (one write at a time; --io uring: record_uring.sh) and --io auto
# (the default: direct I/O through io_uring on any file system that takes direct I/O, ext4
# included) against --io buffered on a file system that takes direct I/O:
# the same complete recording either way (every Tick, Alloc and request of the workload's
# N iterations, nothing lost); the direct file is laid out as docs/trace-format.md says (PAD chunks, packets
# written in place on block boundaries, a whole number of blocks, END last) and the buffered
# one has no PAD chunk; --io with a bad value is one line. A disk slower than the producer
# makes the recorder fall back to the page cache, and say so; every loss is counted. Then a full ext4 disk with direct
# I/O (root, a loop device, in a private mount namespace; skipped otherwise): record stops
# saying so in one line, and exactly the events it says were written are in the file.
source "$(dirname "$0")/lib.sh"
need_python
N=20000

one_line 2 "--io: 'sideways' is not auto, uring, direct or buffered" "$EVRING" record -p 1 --io sideways

find_dio_dir
[[ -n $dio_dir ]] || skip "no directory here takes direct I/O ($T is on $(stat -f -c %T "$T"))"
echo "direct I/O in $dio_dir ($(stat -f -c %T "$dio_dir"))"
out=$(mktemp -d "$dio_dir/evr-direct.XXXXXX")
cleanup_hook() { rm -rf "$out"; }

for io in direct auto buffered; do
	start_workload "wl_$io" --events "$N" --threads 2 --wait-sessions 1 --pin
	# --mode after --io keeps the --io asked (--mode discard used to reset it to direct).
	"$EVRING" record -p "$WL_PID" --providers Demo --buffer-size 64M --io "$io" --mode discard \
		-o "$out/$io.evtrace" 2>"$T/$io.err" || fail "record --io $io: $(cat "$T/$io.err")"
	cat "$T/$io.err"
	expect "$WL_FD" "^done $N " "the workload's 'done' line"
	summary=$(grep -E '^evring record: [0-9]+ events, ' "$T/$io.err") || fail "no summary line"
	[[ $summary =~ ^evring\ record:\ ([0-9]+)\ events,\ .*\ ([0-9]+)\ lost, ]] ||
		fail "summary line: $summary"
	[[ ${BASH_REMATCH[2]} == 0 ]] || fail "--io $io: events were lost: $summary"
	count=${BASH_REMATCH[1]}
	"$EVRING" dump "$out/$io.evtrace" >"$T/$io.txt" 2>"$T/$io.dump.err" ||
		fail "dump of the --io $io file: $(cat "$T/$io.dump.err")"
	[[ ! -s $T/$io.dump.err ]] || fail "dump printed on stderr: $(cat "$T/$io.dump.err")"
	check_dump --text "$T/$io.txt" --ticks "$N" --no-lost --total "$count" \
		--count RequestStart="$N" --count Alloc="$N"
done
python3 - "$HERE" "$out/direct.evtrace" "$out/buffered.evtrace" "$out/auto.evtrace" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from trace_edit import HDR, KINDS, chunks
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
def load(path):
    data = open(path, "rb").read()
    # (kind, offset, len, payload all zeros) per chunk, the file's size, where its chunks end
    ch = [(k, o, n, data[o + HDR.size:o + HDR.size + n].count(0) == n)
          for o, k, n, _seq in chunks(data)]
    return ch, len(data), ch[-1][1] + HDR.size + ((ch[-1][2] + 7) & ~7)
b, bsize, bend = load(sys.argv[3])
files = {name: load(path) for name, path in (("direct", sys.argv[2]), ("auto", sys.argv[4]))}
for name, (ch, size, end) in [*files.items(), ("buffered", (b, bsize, bend))]:
    if size != end:
        fail(f"{name}: the chunks end at {end}, the file at {size}")
    if ch[-1][0] != KINDS["END"]:
        fail(f"{name}: the last chunk is kind {ch[-1][0]}, not END")
# --io auto is direct I/O here too (through io_uring where the kernel allows it, else as
# --io direct): the same layout.
for name, (d, dsize, _dend) in files.items():
    pads = [c for c in d if c[0] == KINDS["PAD"]]
    events = [c for c in d if c[0] == KINDS["EVENTS"]]
    # Whole packets (16 to 64 KiB) whose first byte is on a block boundary: written in place.
    in_place = [c for c in events
                if (c[1] + 24 + 16) % 512 == 0 and (c[2] - 16) % 16384 == 0]
    if not pads or d[0][0] != KINDS["PAD"]:
        fail(f"the {name} file has no PAD chunk after its header (not direct I/O)")
    if not all(c[3] for c in pads):
        fail(f"a PAD chunk of the {name} file holds something other than zeros")
    if int(dsize) % 512:
        fail(f"the {name} file is {dsize} bytes, not a whole number of 512-byte blocks")
    if not in_place:
        fail(f"no packet of the {name} file starts on a block boundary")
    print(f"{name}: {len(events)} EVENTS chunks, {len(in_place)} whole packets on block "
          f"boundaries, {len(pads)} PAD chunks ({sum(24 + c[2] for c in pads)} bytes of "
          f"{dsize})")
if any(c[0] == KINDS["PAD"] for c in b):
    fail("the buffered file has PAD chunks")
print(f"buffered: {len(b)} chunks, {bsize} bytes")
EOF

# Rings too small to hold a disk's stall (8 MiB a ring at most: 16 ms of a 500 MB/s stream)
# start through the page cache: a small recording that ends before a calm second has no
# PAD chunk but the one that ends the file header's block.
"$EVRING" record --providers Demo --buffer-size 128K --io uring -o "$out/small.evtrace" \
	-- "$WORKLOAD" --events 2000 --threads 1 >"$T/small.out" 2>"$T/small.err" ||
	fail "record (small): $(cat "$T/small.err")"
check_accounting small 2000 "$T/small.out" "$T/small.err" "$out/small.evtrace"
python3 - "$HERE" "$out/small.evtrace" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from trace_edit import KINDS, chunks
# The file header's block, written directly to learn whether the file system takes it,
# ends with the only PAD chunk.
kinds = [k for _o, k, _n, _s in chunks(open(sys.argv[2], "rb").read())]
if KINDS["PAD"] in kinds[1:]:
    sys.exit("FAIL: 128 KiB rings started with direct I/O (PAD chunks past the first)")
print("small rings: through the page cache from the start")
EOF

# A disk slower than the producer, surely: rings that take direct I/O from the start (2 of
# 32 MiB or more), and the recorder stopped (SIGSTOP) while 1,000,000 iterations fill them,
# a stop that EVR_RECORDER_SLOW_DISK=1 has it take as the disk's (by itself, a ring filled
# while no write was in flight is the recorder's own lag, which the page cache would not
# help: record_uring.sh). Its first batch then finds a ring more than half full, and the
# recorder goes on through the page cache (it says so). Whatever was lost is counted:
# events + lost == what the workload wrote, and dump agrees.
EVR_RECORDER_SLOW_DISK=1 record_stalled behind 1000000 "$out/behind.evtrace" --providers Demo --buffer-size 256M --io uring
cat "$T/behind.err"
grep -q "^evring record: warning: direct I/O fell behind (a ring was half full): writing \
through the page cache while the disk catches up$" "$T/behind.err" ||
	fail "no word of direct I/O falling behind"
check_accounting behind 1000000 "$T/behind.out" "$T/behind.err" "$out/behind.evtrace"

# A full ext4 disk, written with direct I/O, one write at a time (tests/cli/record_uring.sh:
# through io_uring).
full_disk_record direct --io direct
echo "PASS"
