# Tests of clrtop, the live counter viewer (consumer/clrtop/).

# The core: formatting, --counters, sorting, csv/json lines.
evr_unit(test_clrtop_core LIBS clrtop-core evring-consumer m)

# The real binary against real minirt/workload processes: batch snapshots and
# recordings, errors, and the curses screen driven through tmux. Each script
# gets its own EVR_RUNTIME_DIR; exit 77: skipped (no tmux, no python3).
set(EVR_CLRTOP_TESTS batch export errors screen multi sandbox)
foreach(t IN LISTS EVR_CLRTOP_TESTS)
  add_test(NAME clrtop_${t}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/clrtop/${t}.sh $<TARGET_FILE:clrtop>
            $<TARGET_FILE:minirt> $<TARGET_FILE:workload>)
  set_tests_properties(clrtop_${t} PROPERTIES LABELS integration TIMEOUT 180
    SKIP_RETURN_CODE 77)
  evr_sanitizer_env(clrtop_${t})
endforeach()

# A producer whose samples arrive when the test says: clrtop marks what is not new
# (issue 14, defect 10).
add_executable(evr-clrtop-stall clrtop/stall.c)
target_link_libraries(evr-clrtop-stall PRIVATE evring evr_warnings)
add_test(NAME clrtop_stale
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/clrtop/stale.sh $<TARGET_FILE:clrtop>
          $<TARGET_FILE:minirt> $<TARGET_FILE:workload> $<TARGET_FILE:evr-clrtop-stall>)
set_tests_properties(clrtop_stale PROPERTIES LABELS integration TIMEOUT 180 SKIP_RETURN_CODE 77)
evr_sanitizer_env(clrtop_stale)
