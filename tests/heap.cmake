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
# They call nothing of libevring: keep it linked, as in a program that has events.
target_link_options(heap-sites PRIVATE -Wl,--no-as-needed)
target_link_options(heap-dlopen PRIVATE -Wl,--no-as-needed)

# 1,000 sessions switching the hooks on and off under 4 allocating threads.
add_test(NAME heap_toggle COMMAND heap-toggle 1000)
set_tests_properties(heap_toggle PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)

# Each is `bash tests/heap/NAME.sh EVRING BINDIR [ARGS]`; exit 77 = skipped with the reason.
foreach(t IN ITEMS sites_pid sites_launch dlopen)
  string(REGEX REPLACE "_.*" "" script ${t})
  string(REGEX MATCH "_.*" mode "${t}")
  string(REPLACE "_" "" mode "${mode}")
  add_test(NAME heap_${t}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/heap/${script}.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE_DIR:heap-sites> ${mode})
  set_tests_properties(heap_${t} PROPERTIES LABELS integration TIMEOUT 300
    SKIP_RETURN_CODE 77)
endforeach()
