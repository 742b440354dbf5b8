# SPDX-License-Identifier: LGPL-2.1-or-later
# Tests of minirt, the managed-runtime simulator (examples/minirt): the real binary.
#
# Each run pins one load phase for 2 seconds with --verify (the whole heap is
# checked after every collection; a failure aborts) and must end with the exit
# summary and status 0. The load generator queues requests at the phase's rate
# and minirt drains the queue before it exits, so the amount of work, and with
# it the counts asserted here, does not depend on how fast this machine is.
set(EVR_MINIRT_RUN
  "\"$0\" \"$@\" 2>&1 && echo 'minirt: exit status 0'")
set(EVR_MINIRT_OK "[^\n]*\nminirt: exit status 0")

add_test(NAME minirt_steady
  COMMAND sh -c "${EVR_MINIRT_RUN}" $<TARGET_FILE:minirt> --seconds 2 --phase steady --verify)
set_tests_properties(minirt_steady PROPERTIES PASS_REGULAR_EXPRESSION
  "exit summary: [^\n]* gen0=[1-9][0-9]* [^\n]* completed=[1-9][0-9]* [^\n]* jitted=[1-9][0-9]*${EVR_MINIRT_OK}")

# Large objects: the LOH budget forces gen2 collections, which also collect gen1.
add_test(NAME minirt_alloc_heavy
  COMMAND sh -c "${EVR_MINIRT_RUN}" $<TARGET_FILE:minirt> --seconds 2 --phase alloc-heavy
          --verify)
set_tests_properties(minirt_alloc_heavy PROPERTIES PASS_REGULAR_EXPRESSION
  "exit summary: [^\n]* gen1=[1-9][0-9]* gen2=[1-9][0-9]* [^\n]* completed=[1-9][0-9]*${EVR_MINIRT_OK}")

add_test(NAME minirt_exception_storm
  COMMAND sh -c "${EVR_MINIRT_RUN}" $<TARGET_FILE:minirt> --seconds 2 --phase exception-storm
          --verify)
set_tests_properties(minirt_exception_storm PROPERTIES PASS_REGULAR_EXPRESSION
  "exit summary: [^\n]* completed=[1-9][0-9]* exceptions=[1-9][0-9]*${EVR_MINIRT_OK}")

# Every phase in turn, with a small gen0 budget: many collections while the
# thread pool grows and shrinks.
add_test(NAME minirt_cycle
  COMMAND sh -c "${EVR_MINIRT_RUN}" $<TARGET_FILE:minirt> --seconds 3 --phase-seconds 0.6
          --gen0-budget 512k --verify)
set_tests_properties(minirt_cycle PROPERTIES PASS_REGULAR_EXPRESSION
  "exit summary: [^\n]* gen0=[1-9][0-9]* [^\n]* completed=[1-9][0-9]*${EVR_MINIRT_OK}")

# PASS_REGULAR_EXPRESSION ignores the exit status: echo it, a usage error is 2.
add_test(NAME minirt_bad_phase
  COMMAND sh -c "\"$0\" --phase nosuch 2>&1; echo \"minirt: exit status $?\""
          $<TARGET_FILE:minirt>)
set_tests_properties(minirt_bad_phase PROPERTIES PASS_REGULAR_EXPRESSION
  "minirt: --phase: unknown phase 'nosuch'[^\n]*\n[^\n]*\nminirt: exit status 2")

set(EVR_MINIRT_TESTS minirt_steady minirt_alloc_heavy minirt_exception_storm minirt_cycle
  minirt_bad_phase)
# The plain runs need no agent: no socket, nothing left in the runtime directory.
set_tests_properties(${EVR_MINIRT_TESTS} PROPERTIES LABELS integration TIMEOUT 180
  ENVIRONMENT EVR_AGENT=0)

# Under a real consumer: the trace must agree with minirt's own counts.
if(TARGET evring-cli)
  add_test(NAME minirt_record
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/minirt/record.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE:minirt> burst)
  set_tests_properties(minirt_record PROPERTIES LABELS integration TIMEOUT 180
    SKIP_RETURN_CODE 77)
  list(APPEND EVR_MINIRT_TESTS minirt_record)
  add_test(NAME minirt_counters
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/minirt/counters.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE:minirt>)
  set_tests_properties(minirt_counters PROPERTIES LABELS integration TIMEOUT 180
    SKIP_RETURN_CODE 77)
  list(APPEND EVR_MINIRT_TESTS minirt_counters)
endif()

evr_sanitizer_env(${EVR_MINIRT_TESTS})
