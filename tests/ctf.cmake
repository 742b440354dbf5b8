# SPDX-License-Identifier: LGPL-2.1-or-later
# evring convert --format ctf (consumer/export/convert-ctf*.c), checked with babeltrace2.
# The integration tests skip (77) without babeltrace2 or python3.

add_executable(test_ctf_tsdl unit/test_ctf_tsdl.c)
target_include_directories(test_ctf_tsdl PRIVATE ${PROJECT_SOURCE_DIR}/consumer/export)
target_link_libraries(test_ctf_tsdl PRIVATE evring-export ${CMOCKA_LIB} evr_warnings)
add_test(NAME test_ctf_tsdl COMMAND test_ctf_tsdl)
set_tests_properties(test_ctf_tsdl PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 60)
evr_sanitizer_env(test_ctf_tsdl)

if(TARGET evring-cli)
  # A synthetic trace with awkward content, written with the trace writer API.
  add_executable(evr-ctf-mktrace ctf/mktrace.c)
  target_link_libraries(evr-ctf-mktrace PRIVATE evring-consumer evr_warnings m)
  add_test(NAME ctf_odd COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ctf/odd.sh
    $<TARGET_FILE:evring-cli> $<TARGET_FILE:evr-ctf-mktrace>)
  set(EVR_CTF_TESTS ctf_odd)
  foreach(t minirt loss files disk_full)
    if(t STREQUAL "minirt")
      set(prog $<TARGET_FILE:minirt>)
    else()
      set(prog $<TARGET_FILE:workload>)
    endif()
    add_test(NAME ctf_${t}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ctf/${t}.sh $<TARGET_FILE:evring-cli> ${prog})
    list(APPEND EVR_CTF_TESTS ctf_${t})
  endforeach()
  set_tests_properties(${EVR_CTF_TESTS} PROPERTIES LABELS integration TIMEOUT 300
    SKIP_RETURN_CODE 77)
  evr_sanitizer_env(${EVR_CTF_TESTS})
endif()
