#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One exit status rule for every subcommand (evr_cli_main(), consumer/cli/cli-main.c):
# 0 done (--help too), 2 a bad command line (an unknown option, options that do not go
# together, found while parsing or preparing), 1 the work failed (no such process or file).
# The -n NAME cases are regressions: record with -n answered 1 for its bad command lines.
source "$(dirname "$0")/lib.sh"

# A name and a pid no process has.
name=no-such-process-$$
pid=$(($(cat /proc/sys/kernel/pid_max) - 1))
while [[ -e /proc/$pid ]]; do pid=$((pid - 1)); done

# status WANT CMD...: CMD exits with WANT (stdout and stderr to $T/out, $T/err).
status() {
	local want=$1 st=0
	shift
	"$@" >"$T/out" 2>"$T/err" || st=$?
	[[ $st == "$want" ]] || fail "$* exited with $st, expected $want: $(head -c 300 "$T/err")"
}

# Every subcommand with parse_argv(): --help is 0, an unknown option 2.
for cmd in ps providers record dump convert report stacks; do
	status 0 "$EVRING" "$cmd" --help
	[[ -s $T/out ]] || fail "$cmd --help printed nothing"
	one_line 2 "unknown option '--bogus'" "$EVRING" "$cmd" --bogus
done
status 0 "$EVRING" profiles
grep -q "^Profiles of evring record" "$T/out" || fail "profiles: $(cat "$T/out")"
status 0 "$EVRING" profiles --help
one_line 2 "takes no arguments" "$EVRING" profiles extra

# The work fails: 1.
one_line 1 "no process named $name" "$EVRING" record -n "$name" -o "$T/a.evtrace"
one_line 1 "no process named $name" "$EVRING" providers -n "$name"
one_line 1 "no process $pid|process $pid" "$EVRING" stacks -p "$pid"
for cmd in dump "convert --format jsonl" report; do
	# shellcheck disable=SC2086 # the subcommand and its options, split
	status 1 "$EVRING" $cmd "$T/missing.evtrace"
	grep -q "missing.evtrace" "$T/err" || fail "$cmd: the file is not named: $(cat "$T/err")"
done

# A bad command line is 2 with -n NAME as without it: parse_argv() stops at the option
# before -n's name is looked up, and options that do not go together are found before
# recording (record -n used to answer 1 for both).
one_line 2 "unknown option '--bogus'" "$EVRING" record -n "$name" --bogus
one_line 2 "unknown option '--bogus'" "$EVRING" providers -n "$name" --bogus
start_workload wl --rate 1000 --threads 1
comm=$(cat "/proc/$WL_PID/comm")
one_line 2 "name a file with -o, not stdout" "$EVRING" record -p "$WL_PID" --format chrome -o -
one_line 2 "name a file with -o, not stdout" "$EVRING" record -n "$comm" --format chrome -o -
[[ ! -e $T/a.evtrace ]] || fail "a failed command left an output file"
echo PASS
