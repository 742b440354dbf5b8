# Ring writer tests beyond tests/CMakeLists.txt's test_ring: the per-CPU rseq path.
evr_unit(test_ring_rseq LIBS evring-shm)

# The try-lock fallback end to end, where glibc registers no rseq area: the
# library must pick it, and a write from a thread without a registration must be
# counted, never lost silently.
foreach(t test_ring_rseq test_session)
  add_test(NAME ${t}_norseq COMMAND ${t})
  set_tests_properties(${t}_norseq PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
  get_test_property(${t} ENVIRONMENT env)
  if(env)
    set_property(TEST ${t}_norseq PROPERTY ENVIRONMENT "${env}")
  endif()
  set_property(TEST ${t}_norseq APPEND PROPERTY ENVIRONMENT "GLIBC_TUNABLES=glibc.pthread.rseq=0")
endforeach()
# Without a registration only the cases that need none run there: the others would
# skip by design, and one skip makes the whole binary report skipped (evr-unit.h).
set_property(TEST test_ring_rseq_norseq APPEND PROPERTY ENVIRONMENT
  "EVR_TEST_ONLY=test_ring_rseq_write_without_registration_counts_lost,test_ring_rseq_settle_takes_back_an_interrupted_append")
