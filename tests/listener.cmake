# Tests of in-process listeners (<evring/listener.h>, producer/listener.c).
# Public API only, through the shared library (as test_session).
evr_unit(test_listener LIBS evring)

# Against real receivers (scripts in tests/forward/, which has the carbon helpers): the
# example sends its own counters to carbon-cache; a listener's aggregates equal clrtop's.
if(TARGET evring-forward)
  add_test(NAME listener_graphite
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/forward/listener_graphite.sh
            $<TARGET_FILE:evring-cli> $<TARGET_FILE:workload> $<TARGET_FILE:listener-graphite>)
  add_test(NAME listener_clrtop
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/forward/listener_clrtop.sh
            $<TARGET_FILE:evring-cli> $<TARGET_FILE:workload> $<TARGET_FILE:evr-forward-producer>
            $<TARGET_FILE:clrtop>)
  add_test(NAME listener_clrtop_callback
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/forward/listener_clrtop.sh
            $<TARGET_FILE:evring-cli> $<TARGET_FILE:workload> $<TARGET_FILE:evr-forward-producer>
            $<TARGET_FILE:clrtop> callback)
  set_tests_properties(listener_graphite listener_clrtop listener_clrtop_callback PROPERTIES LABELS integration
    TIMEOUT 180 SKIP_RETURN_CODE 77)
endif()
