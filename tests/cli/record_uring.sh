#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# evring record --io uring: the direct writes go through io_uring, several in flight while
# the drain goes on (docs/recorder.md, "I/O engine"); record_uring_fallback.sh runs the same
# with EVR_RECORDER_NO_URING=1, the engine refused as a kernel, a seccomp filter or a
# container would refuse it, and the recorder writing from its own thread.
#  - a paced recording (0.25 M events/s, which any disk here takes) inside the sandbox: while it
#    records, the recorder holds an io_uring (/proc/PID/fd), or none in the fallback; every
#    event is in the file, nothing lost (a count: emitted == recorded), and the file is laid
#    out as direct I/O writes it (PAD chunks, a whole number of 512-byte blocks, END last);
#  - --io uring where io_uring is refused says so in one warning and records all the same;
#  - a recorder stopped (SIGSTOP) while its rings overflow: lost > 0 and recorded + lost ==
#    emitted, and dump agrees;
#  - a full ext4 disk (root, a loop device): one line, the file cut back to its last whole
#    write, exactly the events it says are in it.
# With io_uring, the session mapping and the stages are registered as one fixed buffer where
# the kernel allows it (its fdinfo says UserBufs 1), so that a batch is one IORING_OP_WRITEV_FIXED;
# record_uring_nofixed.sh runs the same with the registration refused (EVR_RECORDER_NO_FIXED=1,
# as a kernel before 6.15 or a small RLIMIT_MEMLOCK refuses it): plain vectored writes.
# Skipped (77) where no directory takes direct I/O, or where the kernel refuses io_uring to
# the engine itself (the fallback's test still runs there).
source "$(dirname "$0")/lib.sh"
need_python
fallback=${URING_FALLBACK:-0}
nofixed=${URING_NO_FIXED:-0}
if [[ $fallback == 1 ]]; then
	export EVR_RECORDER_NO_URING=1
else
	unset EVR_RECORDER_NO_URING
fi
if [[ $nofixed == 1 ]]; then
	export EVR_RECORDER_NO_FIXED=1
else
	unset EVR_RECORDER_NO_FIXED
fi
# The buffer is registered once the plain writes have written twice its size (about 140 MB
# for the paced part's 64 MiB session, more than it writes): here from the first batch.
export EVR_RECORDER_FIXED_AFTER=0
# The session and the stages are registered as one fixed buffer (IORING_OP_WRITEV_FIXED) on
# Linux 6.15 or later, where the locked-memory limit holds them (root: CAP_IPC_LOCK).
IFS=. read -r kmaj kmin _ < <(uname -r)
want_fixed=0
if [[ $fallback == 0 && $nofixed == 0 ]] && ((kmaj > 6 || (kmaj == 6 && kmin >= 15))) &&
	[[ $(id -u) == 0 || $(ulimit -l) == unlimited ]]; then
	want_fixed=1
fi

find_dio_dir
[[ -n $dio_dir ]] || skip "no directory here takes direct I/O ($T is on $(stat -f -c %T "$T"))"
out=$(mktemp -d "$dio_dir/evr-uring.XXXXXX")
cleanup_hook() { rm -rf "$out"; }
echo "direct I/O in $dio_dir ($(stat -f -c %T "$dio_dir")); fallback forced: $fallback"

# Refused or not: one warning where io_uring was asked for by name and not used.
"$EVRING" record --providers Demo --io uring -o "$out/small.evtrace" -- "$WORKLOAD" \
	--events 2000 --threads 1 >"$T/small.out" 2>"$T/small.err" ||
	fail "record (small): $(cat "$T/small.err")"
cat "$T/small.err"
refused=$(grep -c "^evring record: warning: --io uring: " "$T/small.err" || true)
if [[ $fallback == 1 ]]; then
	grep -q "^evring record: warning: --io uring: refused (EVR_RECORDER_NO_URING=1): direct \
writes from the recorder's thread$" "$T/small.err" || fail "no word of the refused io_uring"
elif ((refused)); then
	skip "the kernel refuses io_uring here: $(grep -- '--io uring' "$T/small.err")"
fi
((refused <= 1)) || fail "the refusal said more than once"
check_accounting small 2000 "$T/small.out" "$T/small.err" "$out/small.evtrace"

# Paced: the disk keeps up, so nothing may be lost. 64 MiB: 2 rings of 32 MiB, direct I/O
# from the first byte; one thread writes 0.25 M events/s (10.5 MB/s) into one ring, 50 MB in
# all: more than the ring, so its space must come back as the writes complete, while the
# ring holds 3 s of the stream, more than a loaded machine keeps the recorder from running
# or a busy disk stalls. One thread: two writers on one CPU, one preempted in its ring's
# slow path, make the other drop a few events (README, "How the data path works"), which no
# recorder can prevent.
N=300000
start_workload wl --events "$N" --threads 1 --wait-sessions 1 --rate 250000
start_record rec -p "$WL_PID" --providers Demo --buffer-size 64M --io uring \
	-o "$out/paced.evtrace"
# The recorder's io_urings and the registered buffers of the last (its fdinfo's UserBufs
# line). A thread of the recorder registers the buffer on a ring of its own; the writing ring
# takes it over (a clone) and the thread's ring is closed at the next batch after that
# (docs/recorder.md, "I/O engine"). Asked until the writing ring alone is left,
# with the buffer where it is expected, or the recorder has gone.
user_bufs=0
uring_fds=0
for ((i = 0; i < 5000; i++)); do
	uring_fds=0
	user_bufs=0
	for f in /proc/"$REC_PID"/fd/*; do
		[[ $(readlink "$f" 2>/dev/null) == 'anon_inode:[io_uring]' ]] || continue
		uring_fds=$((uring_fds + 1))
		user_bufs=$(awk '$1 == "UserBufs:" {print $2}' /proc/"$REC_PID"/fdinfo/"${f##*/}" \
			2>/dev/null || true)
	done
	if ((uring_fds <= 1 && (!want_fixed || user_bufs == 1))) ||
		! kill -0 "$REC_PID" 2>/dev/null; then
		break
	fi
done
expect "$WL_FD" "^done $N " "the workload's 'done' line"
echo "$LINE" >"$T/paced.out"
finish_record "$REC_FD" "$T/paced.err"
wait "$REC_PID" || fail "record exited with $?: $(cat "$T/paced.err")"
cat "$T/paced.err"
if [[ $fallback == 1 ]]; then
	((uring_fds == 0)) || fail "the recorder holds an io_uring although it was refused"
else
	((uring_fds == 1)) || fail "the recorder holds $uring_fds io_urings while recording, not 1"
fi
if ((want_fixed)); then
	[[ $user_bufs == 1 ]] || fail "the session is not registered as a fixed buffer ($user_bufs)"
elif [[ $nofixed == 1 ]]; then
	[[ $user_bufs == 0 ]] || fail "a fixed buffer registered although refused"
fi
echo "paced: registered buffers $user_bufs (expected fixed: $want_fixed)"
check_accounting paced "$N" "$T/paced.out" "$T/paced.err" "$out/paced.evtrace"
[[ $(record_lost "$T/paced.err") == 0 ]] || fail "events lost at 0.25 M events/s"
fell=$(grep -c "direct I/O fell behind" "$T/paced.err" || true)
python3 - "$HERE" "$out/paced.evtrace" "$fell" <<'EOF'
import sys
fell = sys.argv[3] != "0"
sys.path.insert(0, sys.argv[1])
from trace_edit import HDR, KINDS, chunks
data = open(sys.argv[2], "rb").read()
ch = list(chunks(data))
end = ch[-1][0] + HDR.size + ((ch[-1][2] + 7) & ~7)
if end != len(data):
    sys.exit(f"FAIL: the chunks end at {end}, the file at {len(data)}")
if ch[-1][1] != KINDS["END"]:
    sys.exit("FAIL: the file does not end with END")
# Through the page cache once direct I/O fell behind (the output says so), the file need
# not end on a block boundary.
if len(data) % 512 and not fell:
    sys.exit(f"FAIL: {len(data)} bytes, not a whole number of 512-byte blocks")
pads = sum(1 for c in ch if c[1] == KINDS["PAD"])
if pads < 2:
    sys.exit("FAIL: no PAD chunks: not written with direct I/O")
print(f"paced: {len(ch)} chunks, {pads} PAD, {len(data)} bytes, whole")
EOF

# Loss that must happen: the recorder stopped while 1,000,000 iterations overflow its rings.
record_stalled stalled 1000000 "$out/stalled.evtrace" --providers Demo --buffer-size 64M \
	--io uring
cat "$T/stalled.err"
check_accounting stalled 1000000 "$T/stalled.out" "$T/stalled.err" "$out/stalled.evtrace"
(($(record_lost "$T/stalled.err") > 0)) || fail "a stopped recorder lost nothing"

# The page cache that does not catch up, or costs the recorder too much, gives way
# (docs/recorder.md, "Direct I/O"): the recorder stopped until its ring overflows (taken as
# the disk's lag: EVR_RECORDER_SLOW_DISK=1), so that its first batch finds the ring half
# full and goes through the page cache; then KNOB: EVR_RECORDER_CACHE_SLOW=1 has the rings
# taken as not calm a second later (a guest whose fresh memory is dear makes them so; with
# the price rule off, EVR_RECORDER_CACHE_DEAR=0, which a recorder busy catching up through
# such a page cache would trigger first), EVR_RECORDER_CACHE_DEAR=1 the page cache taken as
# half of a CPU or more 0.2 s later (the same guest makes it so); either way direct I/O comes
# back for the rest. The workload runs
# on until record says so: every event of it is counted (recorded + lost == emitted, dump
# agrees), and the file has PAD chunks after the page cache's part, the direct writes' again.
cache_gives_way() {
	local name=$1 knob=$2 why=$3 least=$4 other=${5:-}
	start_workload "$name.wl" --events 0 --threads 1 --wait-sessions 1 --rate 1000000 \
		--report-every 400000
	export "$knob=1"
	[[ -n $other ]] && export "$other"
	EVR_RECORDER_SLOW_DISK=1 start_record "$name.rec" -p "$WL_PID" \
		--providers Demo --buffer-size 64M --io uring -o "$out/$name.evtrace"
	unset "$knob"
	[[ -n $other ]] && unset "${other%%=*}"
	kill -STOP "$REC_PID"
	expect "$WL_FD" "^emitted 400000\$" "the workload's 'emitted 400000' line"
	kill -CONT "$REC_PID"
	expect "$REC_FD" "^evring record: warning: direct I/O fell behind " "the fall to the page cache"
	expect "$REC_FD" "^evring record: warning: $why: direct I/O again for the rest of the \
recording, through the disk's stalls\$" "direct I/O again ($knob)"
	kill -INT "$WL_PID"
	cat <&"$WL_FD" >"$T/$name.out"
	finish_record "$REC_FD" "$T/$name.err"
	wait "$REC_PID" || fail "record ($name) exited with $?: $(cat "$T/$name.err")"
	cat "$T/$name.err"
	[[ $(tail -1 "$T/$name.out") =~ ^done\ ([0-9]+)\  ]] || fail "no 'done' line from the workload"
	check_accounting "$name" "${BASH_REMATCH[1]}" "$T/$name.out" "$T/$name.err" "$out/$name.evtrace"
	python3 - "$HERE" "$out/$name.evtrace" "$name" "$least" <<'EOF2'
import sys
sys.path.insert(0, sys.argv[1])
from trace_edit import KINDS, chunks
kinds = [k for _o, k, _n, _s in chunks(open(sys.argv[2], "rb").read())]
# A direct batch (4 MiB at most: 64 packets) ends with a PAD chunk; the page cache writes
# none. Its part is the longest run of chunks without one (at least the half ring it caught
# up with, and a second or 0.2 s of 40 MB/s), and direct I/O is back if PAD chunks follow it.
run = best = best_end = 0
for i, k in enumerate(kinds):
    run = 0 if k == KINDS["PAD"] else run + 1
    if run > best:
        best, best_end = run, i
if best < int(sys.argv[4]):
    sys.exit(f"FAIL: no page cache part (the longest run without PAD: {best} chunks)")
after = sum(1 for k in kinds[best_end:] if k == KINDS["PAD"])
if not after:
    sys.exit("FAIL: no PAD chunk after the page cache's part: direct I/O never came back")
print(f"{sys.argv[3]}: {len(kinds)} chunks, the page cache's {best}, then {after} PAD chunks")
EOF2
}
cache_gives_way slow EVR_RECORDER_CACHE_SLOW \
	"the page cache did not catch up in [0-9.]+ s \(it took [0-9]+ MB/s\)" 200 \
	EVR_RECORDER_CACHE_DEAR=0
cache_gives_way dear EVR_RECORDER_CACHE_DEAR \
	"the page cache took [0-9]+% of a CPU from the recorder \([0-9.]+ ns a byte\)" 50

full_disk_record "uring$fallback" --io uring
echo "PASS"
