# SPDX-License-Identifier: LGPL-2.1-or-later
# Tests of evring monitor (consumer/monitor/).

if(TARGET evring-monitor)
  # The pure parts, compiled in from the tool's sources: metric names, keys, parsers, the
  # route matcher.
  evr_unit(test_monitor LIBS evring-watch evring-consumer PkgConfig::JANSSON PkgConfig::NETTLE
    PkgConfig::MICROHTTPD m)
  target_sources(test_monitor PRIVATE ${PROJECT_SOURCE_DIR}/consumer/monitor/metrics.c
    ${PROJECT_SOURCE_DIR}/consumer/monitor/auth.c ${PROJECT_SOURCE_DIR}/consumer/monitor/util.c
    ${PROJECT_SOURCE_DIR}/consumer/monitor/router.c)
  target_include_directories(test_monitor PRIVATE ${PROJECT_SOURCE_DIR}/consumer/monitor)

  # Real clients (curl, python3, chromium, promtool) against a real monitor and real
  # minirt/workload processes, on loopback (and this machine's own non-loopback address for
  # the auth case). Each is `bash tests/monitor/NAME.sh EVRING MINIRT WORKLOAD`; exit 77:
  # skipped (no chromium, no promtool...).
  set(EVR_MONITOR_TESTS api trace metrics streams hostile auth browser sandbox resources limits
    perf_map_fifo security slowloris conversions profile routes listen_mode listen_pidns
    trace_multi)
  foreach(t IN LISTS EVR_MONITOR_TESTS)
    add_test(NAME monitor_${t}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/monitor/${t}.sh $<TARGET_FILE:evring-cli>
              $<TARGET_FILE:minirt> $<TARGET_FILE:workload>)
    set_tests_properties(monitor_${t} PROPERTIES LABELS integration TIMEOUT 240
      SKIP_RETURN_CODE 77)
    evr_sanitizer_env(monitor_${t})
  endforeach()
endif()
