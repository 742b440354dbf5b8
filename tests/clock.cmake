# Tests of the clock part (see tests/CMakeLists.txt for evr_unit()).

# The clock choice, a pure function of made-up probes, and the cross-CPU check
# run for real: both compiled in from libevring's sources (they are hidden
# symbols of the library).
evr_unit(test_clock)
target_sources(test_clock PRIVATE ${PROJECT_SOURCE_DIR}/producer/clock-decide.c
  ${PROJECT_SOURCE_DIR}/producer/clock-skew.c)
target_include_directories(test_clock PRIVATE ${PROJECT_SOURCE_DIR}/producer
  ${PROJECT_SOURCE_DIR}/producer/include ${PROJECT_SOURCE_DIR}/provspec/include)
target_link_libraries(test_clock PRIVATE evring-shm)

# Timestamps end to end: a real producer records its own CLOCK_MONOTONIC readings in
# every event for >= 10 s (its two threads on whatever CPUs they get), the checker
# compares them with what the trace reader converts; then EVR_CLOCK=monotonic, and a
# trace whose TSC jumps, read by evring dump. About 20 s.
add_executable(clock-stamps clock/stamps.c)
target_link_libraries(clock-stamps PRIVATE evring evr_warnings Threads::Threads)
add_executable(clock-check clock/check.c)
target_link_libraries(clock-check PRIVATE evring-consumer evring-shm evring-proto evr_warnings)
add_test(NAME clock_accuracy
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/clock/accuracy.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE:clock-stamps> $<TARGET_FILE:clock-check> 10)
set_tests_properties(clock_accuracy PROPERTIES LABELS integration TIMEOUT 300
  SKIP_RETURN_CODE 77)
