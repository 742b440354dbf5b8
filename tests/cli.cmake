# Tests of the cli part (see tests/CMakeLists.txt for evr_unit()).
