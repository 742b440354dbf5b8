# Tests of the trace part (see tests/CMakeLists.txt for evr_unit()).
evr_unit(test_decode LIBS evring-consumer)
evr_unit(test_json LIBS evring-consumer m)
evr_unit(test_counter_sample LIBS evring-consumer)

# The trace tests build files from real ring bytes (the ring writer of
# evring-shm), pack a ProcessInfo with the generated protobuf-c code, and test
# both CRC-32C implementations directly: crc32c.c is compiled in so that they
# do not depend on what the library exports.
foreach(t test_trace test_trace_fuzz)
  evr_unit(${t} LIBS evring-consumer evring-shm evring-proto)
  target_sources(${t} PRIVATE ${PROJECT_SOURCE_DIR}/consumer/tracefile/crc32c.c)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/consumer/tracefile)
endforeach()

# Several processes in one file (format 2): streams read apart, the process table.
evr_unit(test_trace_multi LIBS evring-consumer)

# Clock sync points: the jump rule, and files with SYNC chunks (piecewise
# conversion, TSC jumps forward and back) built from real ring bytes.
evr_unit(test_trace_clock LIBS evring-consumer evring-shm evring-proto)
target_include_directories(test_trace_clock PRIVATE ${PROJECT_SOURCE_DIR}/consumer/common/private)

# The recorder's way back to direct I/O: the disk's rate and the stream's fit.
evr_unit(test_recorder_io)
target_include_directories(test_recorder_io PRIVATE ${PROJECT_SOURCE_DIR}/consumer/recorder)

# Direct I/O needs a file system that takes it (EVR_TEST_DIO_DIR): where none does, this
# case skips as a test of its own, not inside a passing test_trace.
evr_unit_case(test_trace test_trace_writer_direct test_trace_direct_io)
# Write-behind's worker needs a file with a disk behind it (EVR_TEST_DIO_DIR too).
evr_unit_case(test_trace test_trace_writer_behind test_trace_write_behind)
