# Fuzz targets (tests/fuzz/, docs/fuzzing.md). Each target is built twice:
#  - fuzz_replay_NAME (every build, label unit): the target run once on every file of
#    its corpus, tests/fuzz/corpus/NAME/, seeds and regression inputs alike, so that
#    what fuzzing once found stays fixed under gcc, ASan+UBSan and TSan too;
#  - fuzz_NAME (only with -DEVR_FUZZ=ON and clang, label fuzz): the libFuzzer binary
#    that scripts/fuzz runs; its ctest runs it for a few seconds from the corpus.

set(EVR_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(EVR_FUZZ_SECONDS 4 CACHE STRING "Seconds each fuzz target runs in ctest (label fuzz)")

if(EVR_FUZZ)
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer)
  check_c_source_compiles(
    "#include <stddef.h>
     #include <stdint.h>
     int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }"
    EVR_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  add_custom_target(evr-fuzz-targets)
endif()

# evr_fuzz_target(NAME [SOURCES ...] [LIBS ...] [INCLUDES ...])
function(evr_fuzz_target name)
  cmake_parse_arguments(F "" "" "SOURCES;LIBS;INCLUDES" ${ARGN})
  set(corpus ${EVR_FUZZ_DIR}/corpus/${name})
  add_executable(fuzz_replay_${name} fuzz/replay.c fuzz/fuzz_${name}.c ${F_SOURCES})
  target_include_directories(fuzz_replay_${name} PRIVATE ${EVR_FUZZ_DIR} ${F_INCLUDES})
  target_link_libraries(fuzz_replay_${name} PRIVATE ${F_LIBS} evr_warnings Threads::Threads)
  add_test(NAME fuzz_replay_${name} COMMAND fuzz_replay_${name} ${corpus})
  set_tests_properties(fuzz_replay_${name} PROPERTIES LABELS unit SKIP_RETURN_CODE 77
    TIMEOUT 300)
  evr_sanitizer_env(fuzz_replay_${name})
  if(NOT EVR_FUZZ)
    return()
  endif()
  if(NOT EVR_HAVE_LIBFUZZER)
    add_test(NAME fuzz_${name} COMMAND sh -c
      "echo 'skipped: ${CMAKE_C_COMPILER} cannot link -fsanitize=fuzzer (install clang and libclang-rt-dev)'; exit 77")
    set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77)
    return()
  endif()
  add_executable(fuzz_${name} fuzz/fuzz_${name}.c ${F_SOURCES})
  target_include_directories(fuzz_${name} PRIVATE ${EVR_FUZZ_DIR} ${F_INCLUDES})
  target_link_libraries(fuzz_${name} PRIVATE ${F_LIBS} evr_warnings Threads::Threads)
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(evr-fuzz-targets fuzz_${name})
  add_test(NAME fuzz_${name}
    COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fuzz --no-build --build-dir ${CMAKE_BINARY_DIR}
            --scratch --seconds ${EVR_FUZZ_SECONDS} ${name})
  set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77 TIMEOUT 120)
endfunction()

# The agent's request decoding runs inside the producer: its sources are compiled into the
# target (libevring hides evr_agent_conn_input()), with write.c's own options.
# The list is libevring's own, so that a new source file of the producer is in it too.
get_target_property(evr_producer_sources evring SOURCES)
set(EVR_FUZZ_PRODUCER_SOURCES)
foreach(f IN LISTS evr_producer_sources)
  if(IS_ABSOLUTE ${f})
    list(APPEND EVR_FUZZ_PRODUCER_SOURCES ${f})
  else()
    list(APPEND EVR_FUZZ_PRODUCER_SOURCES ${PROJECT_SOURCE_DIR}/producer/${f})
  endif()
endforeach()
evr_fuzz_target(agent SOURCES ${EVR_FUZZ_PRODUCER_SOURCES}
  INCLUDES ${PROJECT_SOURCE_DIR}/producer ${PROJECT_SOURCE_DIR}/producer/include
  LIBS evring-sessions evring-proto evring-shm evring-decode PkgConfig::URCU_BP m)
foreach(t fuzz_agent fuzz_replay_agent)
  if(TARGET ${t})
    target_compile_definitions(${t} PRIVATE EVR_VERSION="${PROJECT_VERSION}")
  endif()
endforeach()

# As in producer/CMakeLists.txt: liburcu-bp's reader state is less aligned than declared.
if(EVR_SANITIZE MATCHES "undefined")
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/producer/write.c APPEND PROPERTY COMPILE_OPTIONS
    -fno-sanitize=alignment)
endif()

evr_fuzz_target(provider_spec LIBS evring-provider-spec)
evr_fuzz_target(trace SOURCES fuzz/fuzz-trace.c LIBS evring-consumer)
evr_fuzz_target(ring LIBS evring-consumer evring-shm)

# Writes the seeds of the agent, ring and provider_spec corpora (tests/fuzz/mkseeds.c).
add_executable(fuzz_mkseeds fuzz/mkseeds.c)
target_link_libraries(fuzz_mkseeds PRIVATE evring-proto evr_warnings)
# The convert target parses what the converters write with jansson (the monitor's JSON
# library, a required package).
pkg_check_modules(EVR_FUZZ_JANSSON IMPORTED_TARGET jansson)
if(TARGET evring-export AND EVR_FUZZ_JANSSON_FOUND)
  evr_fuzz_target(convert SOURCES fuzz/fuzz-trace.c
    LIBS evring-export evring-consumer PkgConfig::EVR_FUZZ_JANSSON)
endif()

# The monitor's request handling without a socket (consumer/monitor/: the unescape callback,
# path segments, the route matcher, the admission policy, a trace's parameters), with its
# pure sources.
if(TARGET evring-monitor)
  set(mon ${PROJECT_SOURCE_DIR}/consumer/monitor)
  evr_fuzz_target(monitor_request SOURCES ${mon}/auth.c ${mon}/util.c ${mon}/trace-params.c
    ${mon}/router.c
    INCLUDES ${mon}
    LIBS evring-watch evring-export evring-consumer PkgConfig::JANSSON PkgConfig::NETTLE PkgConfig::MICROHTTPD m)
endif()
