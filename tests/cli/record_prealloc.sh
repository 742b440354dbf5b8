#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record --io uring (and --io direct, one write at a time: the first two checks)
# allocates the trace's space ahead of its direct writes (fallocate(), 128 MiB at a time) so
# that they are overwrites inside the file's size, which ext4 and XFS take several at a
# time, and cuts the file back to what it wrote when it stops
# (docs/recorder.md, "I/O engine"):
#  - while it records, the file's size and its allocated blocks are 128 MiB or more, far more
#    than written; after a clean stop the file ends with its END chunk: its size is the
#    bytes of its chunks (no tail of zeros) and its blocks are no more than that;
#  - a recorder killed with SIGKILL leaves the space allocated ahead as a tail of zeros:
#    dump and report read the file up to its last whole chunk, call it truncated, not
#    damaged, and say why (zeros to the end); what they count agrees;
#  - zeros followed by anything else are damage, as before (a stray byte after them, a chunk
#    zeroed out in the middle);
#  - EVR_RECORDER_NO_PREALLOC=1 (as a file system that refuses fallocate()) records as
#    before: no space ahead, every event in the file.
# Skipped (77) where no directory takes direct I/O and fallocate(), or (the io_uring part)
# where the kernel refuses io_uring.
source "$(dirname "$0")/lib.sh"
need_python
unset EVR_RECORDER_NO_URING EVR_RECORDER_NO_PREALLOC

find_dio_dir
[[ -n $dio_dir ]] || skip "no directory here takes direct I/O ($T is on $(stat -f -c %T "$T"))"
out=$(mktemp -d "$dio_dir/evr-prealloc.XXXXXX")
cleanup_hook() { rm -rf "$out"; }
fallocate -l 1M "$out/probe" 2>/dev/null ||
	skip "$dio_dir ($(stat -f -c %T "$dio_dir")) does not take fallocate()"
rm -f "$out/probe"
echo "direct I/O in $dio_dir ($(stat -f -c %T "$dio_dir"))"
ahead=$((128 << 20))

# size_blocks FILE: "SIZE ALLOCATED" in bytes.
size_blocks() {
	stat -c '%s %b %B' "$1" | awk '{print $1, $2 * $3}'
}

# chunks_end FILE: where its last chunk ends (the chunks up to the file's end or a header of
# zeros), and the kind of that chunk.
chunks_end() {
	python3 - "$HERE" "$1" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from trace_edit import HDR, KINDS
data = open(sys.argv[2], "rb").read()
names = {v: k for k, v in KINDS.items()}
off, kind = 64, None
while off + HDR.size <= len(data):
    magic, k, _flags, ln, _seq, _dcrc, _hcrc = HDR.unpack_from(data, off)
    if magic == 0:
        break
    if magic != 0x43525645:
        sys.exit("FAIL: no chunk at offset %d" % off)
    off, kind = off + HDR.size + ((ln + 7) & ~7), names.get(k, k)
print(off, kind)
EOF
}

# finish_counted NAME N: wait for the workload's "done N" line, stop the recorder, and check
# that the file NAME.evtrace holds every event it wrote, counted, and was cut back.
finish_counted() {
	expect "$WL_FD" "^done $2 " "the workload's 'done' line"
	echo "$LINE" >"$T/$1.out"
	finish_record "$REC_FD" "$T/$1.err"
	wait "$REC_PID" || fail "$1: record exited with $?: $(cat "$T/$1.err")"
	cat "$T/$1.err"
	grep -q "could not cut the trace back" "$T/$1.err" && fail "$1: the file was not cut back"
	check_accounting "$1" "$2" "$T/$1.out" "$T/$1.err" "$out/$1.evtrace"
}

# expect_ahead NAME: NAME's file, while it records, has a step allocated ahead: its size and
# its blocks (the first step is taken before the line start_record waits for).
expect_ahead() {
	local size alloc
	read -r size alloc < <(size_blocks "$out/$1.evtrace")
	echo "$1, while recording: size $size, allocated $alloc"
	((size >= ahead && alloc >= ahead)) ||
		fail "$1: $size bytes ($alloc allocated) while recording: no space allocated ahead"
}

# expect_cut NAME: NAME's file, after a clean stop, ends with its END chunk, no tail after it,
# and holds no space ahead (the blocks count the extent tree's too: a few KiB over the size,
# never the 64 MiB or more allocated ahead).
expect_cut() {
	local size alloc end kind
	read -r size alloc < <(size_blocks "$out/$1.evtrace")
	read -r end kind < <(chunks_end "$out/$1.evtrace")
	echo "$1, after the stop: size $size, allocated $alloc, chunks end at $end with $kind"
	[[ $kind == END ]] || fail "$1: the file ends with $kind, not END"
	((size == end)) || fail "$1: the file has $size bytes, its chunks end at $end: a tail was left"
	((alloc < size + (1 << 20))) ||
		fail "$1: $alloc bytes allocated for a file of $size: the space ahead was not given back"
}

# --io direct (one write at a time, no io_uring) allocates ahead too, from the recorder's own
# thread, inside its sandbox after the first step: a clean recording has the space while it
# records and none after; one that writes more than half a step takes the next step (the
# file's size jumps to two steps, where appending writes would grow it a batch at a time),
# and is cut back when it ends.
N=200000
start_workload dwl --events "$N" --threads 1 --wait-sessions 1 --rate 250000
start_record drec -p "$WL_PID" --providers Demo --buffer-size 64M --io direct \
	-o "$out/direct.evtrace"
expect_ahead direct
finish_counted direct "$N"
expect_cut direct

# The next step, taken inside the sandbox: a stream until the file is past one step (40 MB/s
# into rings that hold 1.5 s of it, so that direct I/O does not fall back to the page cache,
# which takes no step).
start_workload dwl2 --threads 1 --wait-sessions 1 --rate 1000000
start_record drec2 -p "$WL_PID" --providers Demo --buffer-size 256M --io direct \
	-o "$out/direct2.evtrace"
read -r first _alloc < <(size_blocks "$out/direct2.evtrace")
# The first size past one step: a step more (or part of one) if allocated ahead, a batch or
# a few more if appended.
size=$(python3 - "$out/direct2.evtrace" "$first" "$REC_PID" <<'EOF'
import os, sys, time
path, first, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + 120
while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
    size = os.stat(path).st_size
    if size > first:
        print(size)
        sys.exit(0)
    time.sleep(0.005)
print(0)
EOF
)
kill "$WL_PID"
wait "$WL_PID" 2>/dev/null || true
finish_record "$REC_FD" "$T/direct2.err"
wait "$REC_PID" || fail "record --io direct (long) exited with $?: $(cat "$T/direct2.err")"
cat "$T/direct2.err"
echo "--io direct past one step: the size went from $first to $size"
# A step, not appends: a jump of a quarter of a step or more at once (appending writes grow
# the file a 4 MiB batch at a time, 0.1 s of this stream). Not whole steps: ext4 moves the
# size extent by extent while fallocate() runs, and the poller saw 134221824 -> 234881024
# once, 96 MiB into a 128 MiB step. A poller held up may see two. A fall to the page cache
# appends, which cannot be told from a refused step.
if ((size <= first || size - first < ahead / 4)); then
	grep -q "direct I/O fell behind" "$T/direct2.err" ||
		fail "--io direct: the file grew from $first to $size past the first step, not by steps"
	echo "(direct I/O fell behind: the steps not checked)"
fi
grep -q "could not cut the trace back" "$T/direct2.err" && fail "--io direct (long): not cut back"
read -r size alloc < <(size_blocks "$out/direct2.evtrace")
read -r end kind < <(chunks_end "$out/direct2.evtrace")
echo "--io direct (long), after the stop: size $size, chunks end at $end with $kind"
((size == end && size > ahead / 2)) || fail "--io direct (long): $size bytes, chunks end at $end"
[[ $kind == END ]] || fail "--io direct (long): the file ends with $kind, not END"
rm -f "$out/direct2.evtrace"

# A disk that fills after the first step was allocated (steps of 8 MiB on a 16 MiB disk: the
# first is given, the next only part of the way, the writes then go on until the disk is
# full): one clear line, the events it says were written are in the file, and no tail of
# zeros is left after them (the refused step moved the file's size part of the way).
for io in direct uring; do
	EVR_RECORDER_PREALLOC_MIB=8 full_disk_record "full_$io" --io "$io" --buffer-size 64M
	[[ -e $T/full_$io.dump.err ]] || break
	cat "$T/full_$io.dump.err"
	if grep -q "zeros to the end" "$T/full_$io.dump.err"; then
		fail "--io $io, disk full after the space ahead: a tail of zeros was left"
	fi
done

# Where io_uring is refused, nothing is allocated ahead (the writes are one at a time).
"$EVRING" record --providers Demo --io uring -o "$out/small.evtrace" -- "$WORKLOAD" \
	--events 2000 --threads 1 >"$T/small.out" 2>"$T/small.err" ||
	fail "record (small): $(cat "$T/small.err")"
if grep -q -- "--io uring: " "$T/small.err"; then
	skip "the kernel refuses io_uring here: $(grep -- '--io uring' "$T/small.err")"
fi
check_accounting small 2000 "$T/small.out" "$T/small.err" "$out/small.evtrace"

# A clean recording: the space is there while it records, gone when it stops. Paced (0.25 M
# events/s, 10 MB/s), so that the disk keeps up and nothing is lost (record_uring.sh).
N=200000
start_workload wl --events "$N" --threads 1 --wait-sessions 1 --rate 250000
start_record rec -p "$WL_PID" --providers Demo --buffer-size 64M --io uring \
	-o "$out/clean.evtrace"
expect_ahead clean
finish_counted clean "$N"
[[ $(record_lost "$T/clean.err") == 0 ]] || fail "events lost at 0.25 M events/s"
expect_cut clean
# No zero tail: the readers find the END, as in any finished file.
"$EVRING" report --json "$out/clean.evtrace" >"$T/clean.json" 2>"$T/clean.report.err" ||
	fail "report: $(cat "$T/clean.report.err")"
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
if r["truncated"] or r["damaged_file"]:
    sys.exit("FAIL: the clean recording reads as truncated or damaged")' "$T/clean.json" ||
	fail "report of the clean recording"

# Killed: the space ahead is left as a tail of zeros. The workload writes until stopped.
start_workload wl2 --threads 1 --wait-sessions 1 --rate 250000
start_record rec2 -p "$WL_PID" --providers Demo --buffer-size 64M --io uring \
	-o "$out/killed.evtrace"
# Once the file holds events (a batch goes out at 4 MiB or every 250 ms), through a file (see
# record_killed.sh on grep -q and SIGPIPE).
for ((i = 0; i < 2000; i++)); do
	"$EVRING" dump --json "$out/killed.evtrace" >"$T/probe.jsonl" 2>/dev/null || true
	grep -q '"type":"event"' "$T/probe.jsonl" && break
done
grep -q '"type":"event"' "$T/probe.jsonl" || fail "no event reached the file while recording"
# Stopped first: no batch is submitted after this, the ones in flight still complete.
kill -STOP "$REC_PID"
kill -9 "$REC_PID"
wait "$REC_PID" 2>/dev/null || true
kill "$WL_PID"
wait "$WL_PID" 2>/dev/null || true
read -r size alloc < <(size_blocks "$out/killed.evtrace")
read -r end kind < <(chunks_end "$out/killed.evtrace")
echo "killed: size $size, chunks end at $end with $kind"
((size >= ahead && end < size)) || fail "no tail of zeros after the killed recording ($size, $end)"
python3 - "$out/killed.evtrace" "$end" <<'EOF' || fail "the tail of the killed recording"
import sys
with open(sys.argv[1], "rb") as f:
    f.seek(int(sys.argv[2]))
    while b := f.read(1 << 20):
        if b.count(0) != len(b):
            sys.exit("FAIL: the tail after the last chunk is not all zeros")
EOF
"$EVRING" report --json "$out/killed.evtrace" >"$T/killed.json" 2>"$T/killed.report.err" ||
	fail "report: $(cat "$T/killed.report.err")"
cat "$T/killed.report.err"
grep -q "truncated after byte $end (offset $end: $((size - end)) bytes of zeros to the end: \
space allocated ahead by a recorder that did not stop cleanly)" "$T/killed.report.err" ||
	fail "report does not say that the file ends in the space allocated ahead"
"$EVRING" dump "$out/killed.evtrace" >"$T/killed.txt" 2>"$T/killed.dump.err" ||
	fail "dump: $(cat "$T/killed.dump.err")"
grep -q "bytes of zeros to the end" "$T/killed.dump.err" || fail "dump does not say why it stops"
read -r devents dlost < <(awk '$3 == "LOST" { l += $4; next } { e++ }
	END { print e + 0, l + 0 }' "$T/killed.txt")
python3 - "$T/killed.json" "$devents" "$dlost" <<'EOF' || fail "the killed recording's counts"
import json, sys
r = json.load(open(sys.argv[1]))
dev, dlost = int(sys.argv[2]), int(sys.argv[3])
if not r["truncated"] or r["damaged_file"] or r["damaged"]:
    sys.exit(f"FAIL: truncated {r['truncated']}, damaged {r['damaged_file']} {r['damaged']}")
if r["events"] <= 0 or r["events"] != dev or r["lost"] != dlost:
    sys.exit(f"FAIL: report counts {r['events']} events, {r['lost']} lost; dump {dev}, {dlost}")
print(f"killed: {dev} events, {dlost} lost, read up to its last chunk")
EOF
# The same file as a stream.
"$EVRING" dump - <"$out/killed.evtrace" >"$T/killed.stream.txt" 2>"$T/killed.stream.err" ||
	fail "dump -: $(cat "$T/killed.stream.err")"
grep -q "bytes of zeros to the end" "$T/killed.stream.err" ||
	fail "dump - does not say why it stops: $(cat "$T/killed.stream.err")"
[[ $(grep -vc ' LOST ' "$T/killed.stream.txt") == "$devents" ]] ||
	fail "dump - shows $(grep -vc ' LOST ' "$T/killed.stream.txt") events, dump FILE $devents"

# Zeros that are not the tail are damage, as before: a stray byte at the end of the zeros
# stops the reader at an invalid header (not "zeros to the end"), and a chunk in the middle
# of the clean recording zeroed out is a missing chunk, read past.
python3 - "$out/killed.evtrace" "$T/stray.evtrace" "$out/clean.evtrace" "$T/hole.evtrace" \
	"$HERE" <<'EOF' || fail "making the damaged copies"
import sys
sys.path.insert(0, sys.argv[5])
from trace_edit import HDR, KINDS, chunks
data = bytearray(open(sys.argv[1], "rb").read())
data[-1] = 1
open(sys.argv[2], "wb").write(data)
data = bytearray(open(sys.argv[3], "rb").read())
ev = [c for c in chunks(data) if c[1] == KINDS["EVENTS"]]
off, _kind, ln, _seq = ev[len(ev) // 2]
data[off:off + HDR.size + ((ln + 7) & ~7)] = bytes(HDR.size + ((ln + 7) & ~7))
open(sys.argv[4], "wb").write(data)
EOF
"$EVRING" report --json "$T/stray.evtrace" >"$T/stray.json" 2>"$T/stray.err" ||
	fail "report (stray byte): $(cat "$T/stray.err")"
grep -q "zeros to the end" "$T/stray.err" && fail "zeros followed by a byte read as the tail"
grep -q "truncated after byte $end (offset $end: invalid chunk header" "$T/stray.err" ||
	fail "the stray byte after the zeros: $(cat "$T/stray.err")"
"$EVRING" report --json "$T/hole.evtrace" >"$T/hole.json" 2>"$T/hole.err" ||
	fail "report (zeroed chunk): $(cat "$T/hole.err")"
grep -q "zeros to the end" "$T/hole.err" && fail "a zeroed chunk in the middle read as the tail"
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
if not r["damaged_file"] or r["truncated"]:
    sys.exit("FAIL: a zeroed chunk: damaged %s, truncated %s" % (r["damaged_file"], r["truncated"]))' \
	"$T/hole.json" || fail "the zeroed chunk in the middle is not damage"
echo "zeros followed by data: damage, as before"

# Refused (EVR_RECORDER_NO_PREALLOC=1): appending writes, the file never larger than written.
N=100000
start_workload wl3 --events "$N" --threads 1 --wait-sessions 1 --rate 250000
EVR_RECORDER_NO_PREALLOC=1 start_record rec3 -p "$WL_PID" --providers Demo --buffer-size 64M \
	--io uring -o "$out/noalloc.evtrace"
read -r size alloc < <(size_blocks "$out/noalloc.evtrace")
((size < ahead)) || fail "EVR_RECORDER_NO_PREALLOC=1: $size bytes while recording"
finish_counted noalloc "$N"
read -r size alloc < <(size_blocks "$out/noalloc.evtrace")
read -r end kind < <(chunks_end "$out/noalloc.evtrace")
if ((size != end)) || [[ $kind != END ]]; then
	fail "noalloc: $size bytes, chunks end at $end ($kind)"
fi
echo "PASS"
