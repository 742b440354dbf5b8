# Tests of the agent part (see tests/CMakeLists.txt for evr_unit()).
