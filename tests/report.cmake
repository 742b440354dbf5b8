# SPDX-License-Identifier: LGPL-2.1-or-later
# Tests of `evring convert --format chrome` and `evring report` (tests/report/): real
# minirt recordings, checked with python3 against dump --json; the HTML page in headless
# Chromium. Each is `bash tests/report/NAME.sh EVRING MINIRT`; exit 77: skipped.
evr_unit(test_report_util LIBS evring-export)
target_include_directories(test_report_util PRIVATE ${PROJECT_SOURCE_DIR}/consumer/export)

if(TARGET evring-cli AND TARGET minirt)
  set(EVR_REPORT_TESTS chrome report truncated html)
  foreach(t IN LISTS EVR_REPORT_TESTS)
    add_test(NAME report_${t}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report/${t}.sh $<TARGET_FILE:evring-cli>
              $<TARGET_FILE:minirt>)
    set_tests_properties(report_${t} PROPERTIES LABELS integration TIMEOUT 240
      SKIP_RETURN_CODE 77)
    evr_sanitizer_env(report_${t})
  endforeach()
endif()

# Start/stop pairs that cross deeply: the Chrome JSON stays linear (issue 14, defect 4).
add_executable(evr-chrome-crossing report/crossing.c)
target_link_libraries(evr-chrome-crossing PRIVATE evring evr_warnings)
if(TARGET evring-cli)
  add_test(NAME report_crossing
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report/crossing.sh $<TARGET_FILE:evring-cli>
            $<TARGET_FILE:evr-chrome-crossing>)
  set_tests_properties(report_crossing PROPERTIES LABELS integration TIMEOUT 240
    SKIP_RETURN_CODE 77)
  evr_sanitizer_env(report_crossing)
endif()
