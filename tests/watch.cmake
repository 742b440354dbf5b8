# SPDX-License-Identifier: LGPL-2.1-or-later
# Tests of the watch (consumer/watch/): the model clrtop and the monitor's hub are views of.
# Integration: real workload processes in a private runtime directory; one found by the
# first scan, one started later and found through inotify, its exit reported, a pid with
# no agent reported failed. Exit 77: no inotify here.
add_executable(evr-watch-test watch/watch.c)
target_link_libraries(evr-watch-test PRIVATE evring-watch evr_warnings)
add_test(NAME watch_processes COMMAND evr-watch-test $<TARGET_FILE:workload>)
set_tests_properties(watch_processes PROPERTIES LABELS integration TIMEOUT 180
  SKIP_RETURN_CODE 77)
evr_sanitizer_env(watch_processes)
