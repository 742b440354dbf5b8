#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# heap-fork: 100 fork()s while another thread maps and unmaps under a Heap session that
# samples every mapping; each child must find the hooks out, run a Heap session of its own
# (mappings and blocks under it) and exit 0. A child that inherited the table of mappings'
# lock held spun for ever in its first sampled mmap() (its alarm ends it: the test fails).
# The child frees the parent's sampled blocks under its session, which must not report them
# (the old code did: its tables were the parent's).
source "$(dirname "$0")/lib.sh"

"$BIN/heap-fork" 100 >"$T/fork.out" 2>&1 || fail "heap-fork: $(cat "$T/fork.out")"
grep -q '^done: 100 forks' "$T/fork.out" || fail "heap-fork did not finish: $(cat "$T/fork.out")"
echo "ok: $(cat "$T/fork.out")"
