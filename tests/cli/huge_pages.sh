#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sessions backed by huge pages (docs/protocol.md, "Session memory"): a program run with
# EVR_HUGE_PAGES=1 backs the rings of a session a consumer starts with 2 MiB pages
# (MADV_COLLAPSE), mapped whole in its address space, but near the writers; with
# EVR_HUGE_PAGES=0, small pages only; by default, huge pages while they cost the program no
# more than small ones (how many depends on the machine's memory at that moment: not
# asserted). Every recording stays whole.
#
# Population is the agent's, in the background after the session started: the test waits
# until the session's rings are all in the program's memory (its smaps), then looks at how.
source "$(dirname "$0")/lib.sh"
need_python

# MADV_COLLAPSE is Linux 6.1's; shmem_enabled "deny" refuses it.
IFS=. read -r kmaj kmin _ < <(uname -r)
((kmaj > 6 || (kmaj == 6 && kmin >= 1))) ||
	skip "Linux $(uname -r) has no MADV_COLLAPSE (6.1): no huge pages for sessions"
shmem=/sys/kernel/mm/transparent_hugepage/shmem_enabled
[[ -r $shmem ]] || skip "no $shmem: this kernel has no transparent huge pages"
grep -q '\[deny\]' "$shmem" && skip "$shmem is 'deny': huge pages refused for shared memory"

# session_pages PID: "RSS_KIB PMD_KIB" of the process's session mapping(s).
session_pages() {
	python3 - "$1" <<'PY'
import sys
rss = pmd = 0
cur = False
for line in open("/proc/%s/smaps" % sys.argv[1]):
    f = line.split()
    if len(f) >= 6 and "-" in f[0] and ":" not in f[0]:
        cur = "evring-session" in line
    elif cur and f[0] == "Rss:":
        rss += int(f[1])
    elif cur and f[0] in ("ShmemPmdMapped:", "FilePmdMapped:"):
        pmd += int(f[1])
print(rss, pmd)
PY
}

# one HUGE: record a slow workload (its heads stay near the rings' start) run with
# EVR_HUGE_PAGES=HUGE; once the rings are backed, set WANT (the rings' KiB), RINGS, RSS and
# PMD (KiB of the session in the program's memory, and in huge pages).
one() {
	local huge=$1 line i
	if [[ -n $huge ]]; then
		EVR_HUGE_PAGES=$huge start_workload "wl$huge" --threads 1 --rate 2000 --events 0
	else
		start_workload wl --threads 1 --rate 2000 --events 0
	fi
	start_record "rec$huge" -p "$WL_PID" --providers Demo -o "$T/h$huge.evtrace"
	line=$LINE
	[[ $line =~ buffer:\ ([0-9]+)\ rings\ of\ ([0-9.]+)\ MiB ]] ||
		fail "no buffer in the recording line: $line"
	RINGS=${BASH_REMATCH[1]}
	WANT=$((RINGS * ${BASH_REMATCH[2]%.*} * 1024))
	# The agent backs the rings a slice at a time after the session started: wait for
	# all of them (a condition, not a time; bounded).
	for ((i = 0; i < 2000; i++)); do
		read -r RSS PMD < <(session_pages "$WL_PID")
		((RSS >= WANT)) && break
		sleep 0.01
	done
	((RSS >= WANT)) || fail "the rings were not backed: ${RSS} KiB of ${WANT} KiB after 20 s"
	kill -INT "$REC_PID"
	finish_record "$REC_FD" "$T/rec$huge.log"
	wait "$REC_PID" || fail "record (EVR_HUGE_PAGES=$huge) exited with $?: $(cat "$T/rec$huge.log")"
	kill -INT "$WL_PID"
	wait "$WL_PID" || true
	"$EVRING" report "$T/h$huge.evtrace" >/dev/null 2>"$T/report$huge.err" ||
		fail "report of the recording (EVR_HUGE_PAGES=$huge): $(cat "$T/report$huge.err")"
	if [[ -s $T/report$huge.err ]]; then
		fail "report had something to say: $(cat "$T/report$huge.err")"
	fi
	echo "EVR_HUGE_PAGES=${huge:-(unset)}: rings ${WANT} KiB, backed ${RSS} KiB, ${PMD} KiB of it in huge pages"
}

one 0
((PMD == 0)) || fail "huge pages with EVR_HUGE_PAGES=0: ${PMD} KiB"

one ""

one 1
# Small pages only where a ring's writer stood (its head's 2 MiB and the next) and where a
# ring starts off a 2 MiB boundary: at most 3 chunks a ring.
((PMD >= WANT - RINGS * 3 * 2048)) ||
	fail "EVR_HUGE_PAGES=1: ${PMD} KiB of ${WANT} KiB in huge pages (at least" \
		"$((WANT - RINGS * 3 * 2048)) expected; no 2 MiB of free memory?)"
echo "PASS"
