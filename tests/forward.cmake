# Tests of evring forward (consumer/forward/): bash scripts in tests/forward/ run as
# `bash SCRIPT EVRING WORKLOAD ...` against real processes and real receivers; exit 77:
# skipped (a receiver that cannot run here, no python3), with the reason printed.
if(TARGET evring-forward)
  # Specs, filters and the outbox (real threads: the TSan build checks them).
  evr_unit(test_forward LIBS evring-forward)

  set(EVR_FORWARD_TESTS jsonl errors stall all)
  foreach(t IN LISTS EVR_FORWARD_TESTS)
    add_test(NAME forward_${t}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/forward/${t}.sh $<TARGET_FILE:evring-cli>
              $<TARGET_FILE:workload>)
    set_tests_properties(forward_${t} PROPERTIES LABELS integration TIMEOUT 180
      SKIP_RETURN_CODE 77)
  endforeach()

  # A producer whose counter values a test can predict (also hosts a listener).
  add_executable(evr-forward-producer forward/producer.c)
  target_link_libraries(evr-forward-producer PRIVATE evring evr_warnings Threads::Threads)
  # Real receivers: carbon-cache (graphite-carbon), and clrtop beside it.
  set(EVR_FORWARD_RECEIVER_TESTS graphite graphite_down graphite_reset journald_socket
    journald_real)
  foreach(t IN LISTS EVR_FORWARD_RECEIVER_TESTS)
    add_test(NAME forward_${t}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/forward/${t}.sh $<TARGET_FILE:evring-cli>
              $<TARGET_FILE:workload> $<TARGET_FILE:evr-forward-producer>
              $<TARGET_FILE:clrtop>)
    set_tests_properties(forward_${t} PROPERTIES LABELS integration TIMEOUT 180
      SKIP_RETURN_CODE 77)
  endforeach()
  # Each of its waits gives up after 120 s with what the forwarder said: let it, on a
  # loaded machine, rather than a silent ctest timeout.
  set_tests_properties(forward_graphite_down PROPERTIES TIMEOUT 400)

  # libevring's USDT probes: readelf, and bpftrace where it can run.
  add_test(NAME usdt_probes
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/forward/usdt.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE:workload> $<TARGET_FILE:evr-forward-producer> $<TARGET_FILE:evring>)
  set_tests_properties(usdt_probes PROPERTIES LABELS integration TIMEOUT 180
    SKIP_RETURN_CODE 77)

  # A real LTTng session (lttng-tools, babeltrace2) fed from minirt.
  add_test(NAME forward_lttng
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/forward/lttng.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE:workload> $<TARGET_FILE:minirt>)
  set_tests_properties(forward_lttng PROPERTIES LABELS integration TIMEOUT 180
    SKIP_RETURN_CODE 77)
endif()
