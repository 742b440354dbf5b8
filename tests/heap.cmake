# SPDX-License-Identifier: LGPL-2.1-or-later
# The Heap provider (producer/heap*.c, docs/memory.md): sampled allocations through GOT
# hooks, with real programs and the real allocator. Built with frame pointers, as
# docs/stacks.md tells users to build theirs, so that sites are named by their function.
set(EVR_HEAP_CFLAGS -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer)
add_executable(heap-sites heap/sites.c)
target_compile_options(heap-sites PRIVATE ${EVR_HEAP_CFLAGS})
target_link_libraries(heap-sites PRIVATE evring evr_warnings ${CMAKE_DL_LIBS})

add_executable(heap-toggle heap/toggle.c)
target_compile_options(heap-toggle PRIVATE ${EVR_HEAP_CFLAGS})
target_link_libraries(heap-toggle PRIVATE evring evr_warnings Threads::Threads ${CMAKE_DL_LIBS})

add_library(heap-dlopen-lib MODULE heap/dlopen-lib.c)
target_compile_options(heap-dlopen-lib PRIVATE ${EVR_HEAP_CFLAGS})
add_executable(heap-dlopen heap/dlopen.c)
target_compile_options(heap-dlopen PRIVATE ${EVR_HEAP_CFLAGS})
target_link_libraries(heap-dlopen PRIVATE evring evr_warnings ${CMAKE_DL_LIBS})
add_dependencies(heap-dlopen heap-dlopen-lib)
add_executable(heap-mmap heap/mmap.c)
target_compile_options(heap-mmap PRIVATE ${EVR_HEAP_CFLAGS})
target_link_libraries(heap-mmap PRIVATE evring evr_warnings ${CMAKE_DL_LIBS})
# They call nothing of libevring: keep it linked, as in a program that has events.
add_executable(heap-fork heap/fork.c)
target_compile_options(heap-fork PRIVATE ${EVR_HEAP_CFLAGS})
target_link_libraries(heap-fork PRIVATE evring evr_warnings Threads::Threads ${CMAKE_DL_LIBS})
target_link_options(heap-sites PRIVATE -Wl,--no-as-needed)
target_link_options(heap-dlopen PRIVATE -Wl,--no-as-needed)
target_link_options(heap-mmap PRIVATE -Wl,--no-as-needed)

# 1,000 sessions switching the hooks on and off under 4 allocating threads.
add_test(NAME heap_toggle COMMAND heap-toggle 1000)
set_tests_properties(heap_toggle PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)

# Each is `bash tests/heap/NAME.sh EVRING BINDIR ARG`; exit 77 = skipped with the reason.
foreach(mode IN ITEMS pid launch)
  add_test(NAME heap_sites_${mode}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/heap/sites.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE_DIR:heap-sites> ${mode})
  set_tests_properties(heap_sites_${mode} PROPERTIES LABELS integration TIMEOUT 300
    SKIP_RETURN_CODE 77)
endforeach()
add_test(NAME heap_dlopen
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/heap/dlopen.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE_DIR:heap-sites> $<TARGET_FILE:heap-dlopen-lib>)
set_tests_properties(heap_dlopen PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)

# Anonymous mmap/munmap, a kind of their own: whole and partial unmaps.
add_test(NAME heap_mmap
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/heap/mmap.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE_DIR:heap-mmap>)
set_tests_properties(heap_mmap PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)

# Chrome/Perfetto: the estimated heap and mmap in use as counter tracks, checked against
# the samples in the same file.
add_test(NAME heap_chrome
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/heap/chrome.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE_DIR:heap-mmap>)
set_tests_properties(heap_chrome PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)

# fork() while another thread maps and unmaps under a Heap session that samples every
# mapping: each child finds the hooks out, runs a Heap session of its own and exits
# (an inherited lock of the table of mappings hung it: its alarm fails the test), and frees
# the parent's sampled blocks under it, which its session must not report.
add_test(NAME heap_fork
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/heap/fork.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE_DIR:heap-fork>)
set_tests_properties(heap_fork PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)

# Against heaptrack's exact profile (skipped without heaptrack).
add_test(NAME heap_heaptrack
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/heap/heaptrack.sh $<TARGET_FILE:evring-cli>
          $<TARGET_FILE_DIR:heap-sites>)
set_tests_properties(heap_heaptrack PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)

# heap.c's ln and e^x - 1 (producer/fmath-internal.h, libevring's own so that it does not
# load libm) against libm's.
evr_unit(test_fmath LIBS m)
target_include_directories(test_fmath PRIVATE ${PROJECT_SOURCE_DIR}/producer)

# The monitor's GET /processes/{pid}/heap (tests/monitor/heap.sh, the monitor tests' helpers).
if(TARGET evring-monitor)
  add_test(NAME monitor_heap
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/monitor/heap.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE:minirt> $<TARGET_FILE:workload> $<TARGET_FILE:heap-sites>)
  set_tests_properties(monitor_heap PROPERTIES LABELS integration TIMEOUT 240
    SKIP_RETURN_CODE 77)
endif()
