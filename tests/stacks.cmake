# SPDX-License-Identifier: LGPL-2.1-or-later
# Tests of stacks, symbols and CPU sampling (consumer/symbols/, evring stacks, record
# --stacks/--sample-cpu). The test programs are built with frame pointers and debug
# information, as docs/stacks.md tells users to build theirs.
set(EVR_STACKS_CFLAGS -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer)
add_executable(stacks-parked stacks/parked.c)
target_compile_options(stacks-parked PRIVATE ${EVR_STACKS_CFLAGS})
target_link_libraries(stacks-parked PRIVATE Threads::Threads)

# Each is `bash tests/stacks/NAME.sh EVRING BINDIR`; exit 77 = skipped with the reason.
set(EVR_STACKS_TESTS snapshot snapshot_errors event_stacks sample_cpu jit profile pprof
    bad_input speedscope formats report_cpu untrusted_files system system_tick perf_counters)
foreach(t IN LISTS EVR_STACKS_TESTS)
  add_test(NAME stacks_${t}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/stacks/${t}.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE_DIR:stacks-parked>)
  set_tests_properties(stacks_${t} PROPERTIES LABELS integration TIMEOUT 180
    SKIP_RETURN_CODE 77)
endforeach()

add_executable(stacks-chain stacks/chain.c)
target_compile_options(stacks-chain PRIVATE ${EVR_STACKS_CFLAGS})
target_link_libraries(stacks-chain PRIVATE evring evr_warnings Threads::Threads)

add_executable(stacks-spin stacks/spin.c)
target_compile_options(stacks-spin PRIVATE ${EVR_STACKS_CFLAGS})
target_link_libraries(stacks-spin PRIVATE evring evr_warnings Threads::Threads)

# Per-event stacks through the public API, under the sanitizers too (label unit).
evr_unit(test_stack LIBS evring)

# Module maps: a process's executable mappings, JIT memory and the vDSO included.
evr_unit(test_modmap LIBS evring-symbols)
# System calls' names, summary and Chrome slices (record --syscalls's readers).
evr_unit(test_syscalls LIBS evring-symbols)
# Perf event names (--perf-counters, --sample-cpu=EVENT) and the counters' Chrome tracks.
evr_unit(test_perf_counters LIBS evring-symbols)
target_compile_options(test_stack PRIVATE ${EVR_STACKS_CFLAGS})

# A sample in an rseq abort handler of libevring is named by its function (issue 28, item 5).
evr_unit(test_symbolize_rseq LIBS evring-symbols evring)

# Two threads passing a byte over pipes on one CPU: context switches (stacks_system).
add_executable(stacks-pingpong stacks/pingpong.c)
target_compile_options(stacks-pingpong PRIVATE ${EVR_STACKS_CFLAGS})
target_link_libraries(stacks-pingpong PRIVATE evring evr_warnings Threads::Threads)

add_executable(stacks-memset stacks/memset.c)
target_compile_options(stacks-memset PRIVATE ${EVR_STACKS_CFLAGS})
target_link_libraries(stacks-memset PRIVATE evring evr_warnings)

# Opening files a process names (consumer/symbols/untrusted-file.c): FIFOs, links, devices refused.
evr_unit(test_untrusted_file LIBS evring-untrusted)

# Inlined frames need line tables libdw can read (not clang 14's DWARF 5 with libdw 0.188):
# where it reads none, this case skips as a test of its own.
evr_unit_case(test_modmap test_symbolizer_names_inlined_functions test_modmap_inlined)

# sample_cpu against perf: skipped by itself, with the reason, where perf cannot run.
add_test(NAME stacks_sample_cpu_perf
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/stacks/sample_cpu_perf.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE_DIR:stacks-parked>)
set_tests_properties(stacks_sample_cpu_perf PROPERTIES LABELS integration TIMEOUT 180
  SKIP_RETURN_CODE 77)

# A thread with a known number of page faults and context switches (stacks_perf_counters).
add_executable(stacks-faults stacks/faults.c)
target_compile_options(stacks-faults PRIVATE ${EVR_STACKS_CFLAGS})
target_link_libraries(stacks-faults PRIVATE evring evr_warnings Threads::Threads)
