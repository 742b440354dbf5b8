# Tests of the agent part (see tests/CMakeLists.txt for evr_unit()).

# Framing and the schema set: every protobuf-c call goes through evring-proto;
# random and truncated input must give errors, never crashes (label unit, so
# they run under ASan+UBSan and TSan too).
evr_unit(test_framing LIBS evring-proto)
evr_unit(test_schema LIBS evring-consumer evring-proto)
evr_unit(test_shm_meta LIBS evring-shm)
evr_unit(test_span LIBS evring-shm)

# Integration: a real producer (libevring, its agent thread) driven over its
# stdin/stdout, and a driver that attaches with the client API.
add_executable(evr-agent-producer agent/producer.c)
target_link_libraries(evr-agent-producer PRIVATE evring evr_warnings)
add_executable(evr-agent-driver agent/driver.c agent/harness.c)
target_include_directories(evr-agent-driver PRIVATE ${PROJECT_SOURCE_DIR}/producer/include
  ${PROJECT_SOURCE_DIR}/provspec/include)
target_link_libraries(evr-agent-driver PRIVATE evring-consumer evr_warnings)
foreach(t decode late_event sessions64 consumer_killed producer_killed garbage fork lazy_meta reverse
          errors peer_uid max_clients runtime_dir spans loss)
  add_test(NAME agent_${t} COMMAND evr-agent-driver ${t} $<TARGET_FILE:evr-agent-producer>)
  set_tests_properties(agent_${t} PROPERTIES LABELS integration TIMEOUT 120
    SKIP_RETURN_CODE 77)
endforeach()

# What a consumer can make the agent and the producer spend (issue 14): idle connections,
# session memory.
add_executable(evr-agent-limits agent/limits.c agent/harness.c)
target_link_libraries(evr-agent-limits PRIVATE evring-consumer evr_warnings)
foreach(t idle memory)
  add_test(NAME agent_limits_${t} COMMAND evr-agent-limits ${t} $<TARGET_FILE:evr-agent-producer>)
  set_tests_properties(agent_limits_${t} PROPERTIES LABELS integration TIMEOUT 120
    SKIP_RETURN_CODE 77)
endforeach()

# Listen mode (EVR_MONITOR_SOCKET): a consumer's dial-in socket, two consumers at once
# through it, a hostile listener in its place, and the consumer's return.
add_executable(evr-agent-listen agent/listen.c agent/harness.c)
target_link_libraries(evr-agent-listen PRIVATE evring-consumer evr_warnings)
add_test(NAME agent_listen COMMAND evr-agent-listen $<TARGET_FILE:evr-agent-producer>)
set_tests_properties(agent_listen PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77)
