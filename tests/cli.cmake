# Tests of the cli part (see tests/CMakeLists.txt for evr_unit()).

# The command's option parsers and output helpers, compiled in from the tool's sources.
evr_unit(test_cli_util LIBS evring-consumer evring-export)
target_sources(test_cli_util PRIVATE ${PROJECT_SOURCE_DIR}/consumer/cli/util.c
  ${PROJECT_SOURCE_DIR}/consumer/cli/suggest.c)
target_include_directories(test_cli_util PRIVATE ${PROJECT_SOURCE_DIR}/consumer/cli)

# Durations as every tool takes them (evr_duration_parse(), libevring-consumer).
evr_unit(test_duration LIBS evring-consumer)

# Integration tests of the evring command against real workload processes: each is a bash
# script in tests/cli/ run as `bash SCRIPT EVRING WORKLOAD` (helpers in tests/cli/lib.sh,
# output checks in tests/cli/check_dump.py). Exit 77: skipped (no python3, not root...).
set(EVR_CLI_TESTS ps record_pid record_launch record_two record_loss producer_killed
    record_killed truncated damaged stream errors other_user sandbox memory record_connect
    sandbox_all old_format direct_io record_habits readme_example record_all record_several
    exit_status record_uring record_uring_fallback record_several_stacks record_all_idle
    record_several_stopped record_several_stopped_late record_several_stopped_end
    record_checksum record_uring_nofixed record_prealloc record_behind record_timeout huge_pages
    rpath)
foreach(t IN LISTS EVR_CLI_TESTS)
  add_test(NAME cli_${t}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/${t}.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE:workload>)
  set_tests_properties(cli_${t} PROPERTIES LABELS integration TIMEOUT 180
    SKIP_RETURN_CODE 77)
endforeach()
# The README's example counts its losses with the machine's default buffer: alone, so that
# the suite's other processes preempt its two writers less (tests/cli/readme_example.sh).
set_tests_properties(cli_readme_example PROPERTIES RUN_SERIAL TRUE)

# Socket squatting by another user: a fake agent (tests/cli/fake-agent.c) in a directory
# uid 65534 created first, in a private mount namespace (tests/cli/squat.sh).
add_executable(evr-fake-agent cli/fake-agent.c)
target_link_libraries(evr-fake-agent PRIVATE evring-proto evr_warnings)
add_test(NAME cli_squat
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/squat.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE:workload> $<TARGET_FILE:clrtop> $<TARGET_FILE:evr-fake-agent>)
set_tests_properties(cli_squat PROPERTIES LABELS integration TIMEOUT 180 SKIP_RETURN_CODE 77)

# Processes in containers (issue 30): workloads in a pid and mount namespace of their own,
# listed with both pids, recorded by their pid here, found by --all and clrtop; refusals of
# another user namespace and of an open directory inside (tests/cli/container.sh). Root only.
add_test(NAME cli_container
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/container.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE:workload> $<TARGET_FILE:clrtop>)
set_tests_properties(cli_container PROPERTIES LABELS integration TIMEOUT 180
  SKIP_RETURN_CODE 77)

# How the client reaches a container's runtime directory (consumer/client/client-ns.c): the
# walk in a root of its own, the refusals, /proc/PID/environ and the namespaces.
evr_unit(test_client_ns LIBS evring-proto evring-consumer-api)
target_sources(test_client_ns PRIVATE ${PROJECT_SOURCE_DIR}/consumer/client/client-ns.c
  ${PROJECT_SOURCE_DIR}/consumer/client/client-util.c)
target_include_directories(test_client_ns PRIVATE ${PROJECT_SOURCE_DIR}/consumer/client)

# The /proc check (consumer/client/client-check.c): a process of ours is never reported; one
# in a mount and pid namespace of its own is awaited, reported once its agent listens, then
# forgotten. The container case needs root: a ctest test of its own, so that it skips alone.
evr_unit(test_proc_check LIBS evring-consumer)
evr_unit_case(test_proc_check test_container_reported_once test_proc_check_container)
set_property(TEST test_proc_check_container APPEND PROPERTY ENVIRONMENT
  "EVR_RUNTIME_DIR=${CMAKE_CURRENT_BINARY_DIR}/test_proc_check.run")

# evring providers and -n NAME (record, clrtop): a workload and minirt (with counters).
add_test(NAME cli_providers
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/providers.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE:workload> $<TARGET_FILE:minirt> $<TARGET_FILE:clrtop>)
set_tests_properties(cli_providers PROPERTIES LABELS integration TIMEOUT 180 SKIP_RETURN_CODE 77)

# --version on every tool and subcommand (the dotnet tools' habit).
if(TARGET evring-cli AND TARGET clrtop)
  add_test(NAME cli_version
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/version.sh ${PROJECT_VERSION}
            $<TARGET_FILE:evring-cli> $<TARGET_FILE:clrtop> $<TARGET_FILE:evring-bench>
            $<TARGET_FILE:evring-stress>)
  set_tests_properties(cli_version PROPERTIES LABELS integration TIMEOUT 60 SKIP_RETURN_CODE 77)
endif()

# libevring-sandbox: the broker's limits and the allow-list (consumer/sandbox/).
evr_unit(test_sandbox LIBS evring-sandbox evring-consumer)

# --help lists what the tools take, and typos get "did you mean" (issue 28, items 8, 9).
if(TARGET evring-cli AND TARGET clrtop)
  add_test(NAME cli_help
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/help.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE:workload> $<TARGET_FILE:clrtop>)
  set_tests_properties(cli_help PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()

# record --syscalls (perf tracepoints; root or CAP_PERFMON, else skipped): a static program
# with a known number of write()/openat() calls, as its instrumented parent's child, counted
# exactly and as `strace -c -f` counts them (tests/cli/syscalls.sh).
# Static (no loader's openat to count) and never sanitized: the sanitizers' runtimes cannot be
# linked statically, and they would make system calls of their own.
add_executable(evr-syscalls-work cli/syscalls-work.c)
target_link_options(evr-syscalls-work PRIVATE -static)
if(EVR_SANITIZE)
  target_compile_options(evr-syscalls-work PRIVATE -Wall -Wextra -Werror)
  target_compile_definitions(evr-syscalls-work PRIVATE _GNU_SOURCE)
else()
  target_link_libraries(evr-syscalls-work PRIVATE evr_warnings)
endif()
add_executable(evr-syscalls-launch cli/syscalls-launch.c)
target_link_libraries(evr-syscalls-launch PRIVATE evring evr_warnings)
add_test(NAME cli_syscalls
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/syscalls.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE:workload> $<TARGET_FILE:evr-syscalls-launch>
          $<TARGET_FILE:evr-syscalls-work>)
set_tests_properties(cli_syscalls PROPERTIES LABELS integration TIMEOUT 180 SKIP_RETURN_CODE 77)

# The tools' option tables: getopt's tables and the --help list from one table
# (consumer/common/cli-options.c, issue 27).
evr_unit(test_cli_options LIBS evring-cli-options)
