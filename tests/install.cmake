# SPDX-License-Identifier: LGPL-2.1-or-later
# Installing and building against evring (label install): every installed header alone in
# strict C11 and C++17, a corpus of instrumented programs warning-free at -O0/-O2/-O3 with
# gcc and clang, and the build tree installed to a fresh prefix, then used by a separate
# CMake project (find_package) and by pkg-config, whose programs `evring record` records.
add_test(NAME install_headers
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check-headers.sh ${PROJECT_BINARY_DIR}/include
          ${PROJECT_BINARY_DIR}/evr-public-headers.txt)
add_test(NAME install_corpus
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check-corpus.sh ${PROJECT_BINARY_DIR}/include)
add_test(NAME install_package
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/install.sh ${PROJECT_BINARY_DIR})
set_tests_properties(install_headers install_corpus install_package PROPERTIES
  LABELS install SKIP_RETURN_CODE 77 TIMEOUT 600)
