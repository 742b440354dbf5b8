# Tests of counters (see tests/CMakeLists.txt for evr_unit()).

# Public API only, through the shared library.
evr_unit(test_counters LIBS evring m)

# Integration: two in-process sessions with 200 ms and 1000 ms intervals on one
# process; the run is bounded by the 1 s session's own sample count.
add_executable(evr-counters-intervals counters/intervals.c)
target_link_libraries(evr-counters-intervals PRIVATE evring evr_warnings Threads::Threads m)
add_test(NAME counters_intervals COMMAND evr-counters-intervals)
set_tests_properties(counters_intervals PROPERTIES LABELS integration TIMEOUT 120
  SKIP_RETURN_CODE 77)

# The same with glibc's rseq registration off: samples take the try-lock path.
add_test(NAME test_counters_norseq COMMAND test_counters)
set_tests_properties(test_counters_norseq PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
get_test_property(test_counters ENVIRONMENT env)
if(env)
  set_property(TEST test_counters_norseq PROPERTY ENVIRONMENT "${env}")
endif()
set_property(TEST test_counters_norseq APPEND PROPERTY ENVIRONMENT
  "GLIBC_TUNABLES=glibc.pthread.rseq=0")

# Integration: attach by PID with a counter interval (the agent's path).
add_executable(evr-counters-attach-producer counters/attach-producer.c)
target_link_libraries(evr-counters-attach-producer PRIVATE evring evr_warnings Threads::Threads)
add_executable(evr-counters-attach counters/attach.c)
target_link_libraries(evr-counters-attach PRIVATE evring-consumer evr_warnings m)
add_test(NAME counters_attach COMMAND evr-counters-attach
  $<TARGET_FILE:evr-counters-attach-producer>)
set_tests_properties(counters_attach PROPERTIES LABELS integration TIMEOUT 120
  SKIP_RETURN_CODE 77)
