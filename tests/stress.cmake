# Tests of the stress part: evring-stress (docs/stress.md). Label `stress`: real
# processes, time-boxed, each checking conservation (received + lost == emitted).
add_test(NAME stress_short
  COMMAND evring-stress --producers 2 --threads 2 --sessions 3 --seconds 3)
set_tests_properties(stress_short PROPERTIES LABELS stress TIMEOUT 300)

# The checker can fail: one consumer deliberately mis-counts one event (counts
# it twice, breaks its checksum, or skips it) and the run must exit non-zero.
foreach(fault dup corrupt drop)
  add_test(NAME stress_fault_${fault}
    COMMAND evring-stress --producers 1 --threads 2 --sessions 2 --seconds 1
            --inject-fault ${fault})
  set_tests_properties(stress_fault_${fault} PROPERTIES LABELS stress TIMEOUT 300
    WILL_FAIL TRUE)
endforeach()

# WILL_FAIL passes on any failure, a crash included: this one also checks that
# each injected fault is reported as the violation it is, with exit status 1.
add_test(NAME stress_fault_detected
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/stress/fault-detected.sh $<TARGET_FILE:evring-stress>)
set_tests_properties(stress_fault_detected PROPERTIES LABELS stress TIMEOUT 300)

# Sanitizer builds: the producers run libevring under the same rules as the unit
# tests (TSan: the one suppression explained in tsan.supp). A sanitizer report
# in any child makes it exit non-zero, which evring-stress reports as a
# violation.
evr_sanitizer_env(stress_short stress_fault_dup stress_fault_corrupt stress_fault_drop
  stress_fault_detected)

# evring-bench's enabled scenarios, small and with 64 KiB rings (so that writers lap
# their readers and lose events), with both ways of draining: each run checks for
# every session that received + lost == emitted, and exits 1 when it does not.
add_test(NAME stress_bench_conservation
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/stress/bench-conservation.sh
          $<TARGET_FILE:evring-bench>)
set_tests_properties(stress_bench_conservation PROPERTIES LABELS stress TIMEOUT 300)
