# Tests of evring forward (consumer/forward/): bash scripts in tests/forward/ run as
# `bash SCRIPT EVRING WORKLOAD ...` against real processes and real receivers; exit 77:
# skipped (a receiver that cannot run here, no python3), with the reason printed.
if(TARGET evring-forward)
  # Specs, filters and the outbox (real threads: the TSan build checks them).
  evr_unit(test_forward LIBS evring-forward)

  set(EVR_FORWARD_TESTS jsonl errors stall)
  foreach(t IN LISTS EVR_FORWARD_TESTS)
    add_test(NAME forward_${t}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/forward/${t}.sh $<TARGET_FILE:evring-cli>
              $<TARGET_FILE:workload>)
    set_tests_properties(forward_${t} PROPERTIES LABELS integration TIMEOUT 180
      SKIP_RETURN_CODE 77)
  endforeach()
endif()
