#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Files that another local user can plant where the consumers look on behalf of a process
# (issue 26, defect 2). A FIFO at /tmp/perf-PID.map used to block `evring stacks -p PID`,
# `record --stacks/--sample-cpu` and `dump` forever in open(); so did a FIFO at the
# .gnu_debuglink name beside a stripped binary (libdwfl's plain open()). For each thing
# planted (a FIFO, a symbolic link to a FIFO, a symbolic link to /dev/zero, a character
# device when root, a 2 GiB sparse file), every consumer must finish and still give the
# stacks; `timeout` is only a guard: its expiry fails the test.
source "$(dirname "$0")/lib.sh"
need_python
MINIRT=$BIN/minirt
[[ -x $MINIRT ]] || MINIRT=$(dirname "$BIN")/bin/minirt
[[ -x $MINIRT ]] || MINIRT=$(dirname "$BIN")/examples/minirt/minirt
[[ -x $MINIRT ]] || skip "minirt not built"
GUARD=60
PLANTED=()

cleanup_hook() {
	local p
	for p in "${PLANTED[@]}"; do
		rm -f "$p"
	done
}

# plant KIND PATH: put a KIND at PATH (replacing what is there).
plant() {
	local kind=$1 path=$2
	rm -f "$path"
	PLANTED+=("$path")
	case $kind in
	fifo) mkfifo "$path" ;;
	link-to-fifo) rm -f "$T/fifo"; mkfifo "$T/fifo"; ln -s "$T/fifo" "$path" ;;
	link-to-zero) ln -s /dev/zero "$path" ;;
	chardev) mknod "$path" c 1 5 ;;	# what /dev/zero is
	huge) truncate -s 2G "$path" ;;
	*) fail "unknown kind $kind" ;;
	esac
}

KINDS=(fifo link-to-fifo link-to-zero huge)
(($(id -u) == 0)) && KINDS+=(chardev)

# guarded WHAT CMD...: run CMD under the guard; a hang fails the test naming WHAT (on the
# script's stderr: the caller redirects the command's).
exec {TEST_STDERR}>&2
guarded() {
	local what=$1 st=0
	shift
	timeout -k 5 "$GUARD" "$@" || st=$?
	((st != 124 && st != 137)) || fail "$what hung (killed after ${GUARD}s)" 2>&"$TEST_STDERR"
	return "$st"
}

start_prog parked "$BIN/stacks-parked"
wait_blocked "$PROG_PID" 4
PARKED=$PROG_PID
for kind in "${KINDS[@]}"; do
	plant "$kind" "/tmp/perf-$PARKED.map"
	guarded "evring stacks -p with a $kind at /tmp/perf-PID.map" \
		"$EVRING" stacks -p "$PARKED" --json >"$T/stacks-$kind.json" 2>"$T/stacks.err" ||
		fail "evring stacks failed with a $kind planted: $(cat "$T/stacks.err")"
	python3 - "$T/stacks-$kind.json" <<'PY' || fail "stacks with a $kind planted"
import json, sys
doc = json.load(open(sys.argv[1]))
funcs = {f["func"] for t in doc["threads"] for f in t["frames"]}
for want in ("park_in_read", "park_in_cond", "park_in_sleep"):
    assert want in funcs, f"{want} missing from {sorted(funcs)}"
PY
done
echo "evring stacks: finished with each of ${KINDS[*]} at /tmp/perf-PID.map"

# A stripped copy whose .gnu_debuglink names a FIFO beside it: the debug file is looked
# for there (and in .debug/). The FIFO is refused; the real debug file in .debug/ is used.
mkdir "$T/dl"
cp "$BIN/stacks-parked" "$T/dl/parked"
objcopy --only-keep-debug "$T/dl/parked" "$T/dl/parked.debug"
objcopy --strip-all --add-gnu-debuglink="$T/dl/parked.debug" "$T/dl/parked"
mkdir "$T/dl/.debug"
mv "$T/dl/parked.debug" "$T/dl/.debug/parked.debug"
mkfifo "$T/dl/parked.debug"
start_prog dl "$T/dl/parked"
wait_blocked "$PROG_PID" 4
guarded "evring stacks -p with a FIFO at the .gnu_debuglink name" \
	"$EVRING" stacks -p "$PROG_PID" --json >"$T/dl.json" 2>"$T/dl.err" ||
	fail "evring stacks failed on the stripped copy: $(cat "$T/dl.err")"
python3 - "$T/dl.json" <<'PY' || fail "stacks of the stripped copy with its debug file in .debug/"
import json, sys
doc = json.load(open(sys.argv[1]))
funcs = {f["func"] for t in doc["threads"] for f in t["frames"]}
assert "park_in_read" in funcs, f"the debug file in .debug/ was not used: {sorted(funcs)}"
PY
echo "debuglink: the FIFO beside the binary refused, .debug/parked.debug used"

# record --stacks --sample-cpu, then dump, with a FIFO at /tmp/perf-PID.map (the recorder
# opens it at the start and at the end; dump looks for it when the trace has no map).
start_prog minirt "$MINIRT" --phase exception-storm --threads 2
plant fifo "/tmp/perf-$PROG_PID.map"
guarded "evring record --stacks --sample-cpu with a FIFO at /tmp/perf-PID.map" \
	"$EVRING" record -p "$PROG_PID" --stacks --sample-cpu --providers 'MiniRT:0x8000:4' \
	--duration 1s -o "$T/rec.evtrace" 2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
guarded "evring dump with a FIFO at /tmp/perf-PID.map" \
	"$EVRING" dump --json "$T/rec.evtrace" >"$T/rec.jsonl" 2>"$T/dump.err" ||
	fail "dump failed: $(cat "$T/dump.err")"
python3 - "$T/rec.jsonl" <<'PY' || fail "the recording with a FIFO planted"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
thrown = [r for r in recs if r.get("event") == "ExceptionThrown"]
assert thrown, "no ExceptionThrown events"
assert all(r.get("stack") for r in thrown), "an event without its stack"
samples = [r for r in recs if r["type"] == "cpu_sample"]
print(f"record: {len(thrown)} events with stacks, {len(samples)} CPU samples")
PY
echo PASS
