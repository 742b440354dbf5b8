# Tests of the trace part (see tests/CMakeLists.txt for evr_unit()).
