# SPDX-License-Identifier: LGPL-2.1-or-later
# What `cmake --install` puts in place for programs built against evring, and the same for
# programs built against the build tree:
#   include/evring/        every header of a <part>/include/evring/ folder (those folders hold
#                          exactly the public headers; private ones are in <part>/private/)
#   lib/cmake/evring/      evringConfig.cmake, evringConfigVersion.cmake: find_package(evring)
#                          gives evring::evring (libevring) and evring::consumer
#   lib/pkgconfig/         evring.pc, evring-consumer.pc
# The build tree: build/include/ (the public headers, one -I), build/evringConfig.cmake
# (-Devring_DIR=build) and build/lib/pkgconfig/evring{,-consumer}-uninstalled.pc.
include(CMakePackageConfigHelpers)

set(EVR_PUBLIC_INCLUDE_DIRS shm/include provspec/include decode/include producer/include)
set(EVR_INSTALL_TARGETS evring)
if(EVR_BUILD_CONSUMER)
  list(APPEND EVR_PUBLIC_INCLUDE_DIRS consumer/client/include consumer/tracefile/include)
  list(APPEND EVR_INSTALL_TARGETS evring-consumer)
endif()

# The public headers, staged into build/include/evring/ (copied again when one changes).
set(EVR_STAGED_INCLUDE ${PROJECT_BINARY_DIR}/include)
set(EVR_PUBLIC_HEADERS)
foreach(dir IN LISTS EVR_PUBLIC_INCLUDE_DIRS)
  file(GLOB_RECURSE hdrs CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/${dir}
       ${PROJECT_SOURCE_DIR}/${dir}/evring/*.h)
  foreach(h IN LISTS hdrs)
    if(h IN_LIST EVR_PUBLIC_HEADERS)
      message(FATAL_ERROR "two public headers named ${h}")
    endif()
    list(APPEND EVR_PUBLIC_HEADERS ${h})
    configure_file(${PROJECT_SOURCE_DIR}/${dir}/${h} ${EVR_STAGED_INCLUDE}/${h} COPYONLY)
  endforeach()
  install(DIRECTORY ${dir}/evring DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h")
endforeach()
# For tests/install (the header check): every installed header, one per line.
list(SORT EVR_PUBLIC_HEADERS)
string(REPLACE ";" "\n" evr_hdr_lines "${EVR_PUBLIC_HEADERS}")
file(WRITE ${PROJECT_BINARY_DIR}/evr-public-headers.txt "${evr_hdr_lines}\n")

install(TARGETS ${EVR_INSTALL_TARGETS} EXPORT evringTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(EVR_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/evring)
install(EXPORT evringTargets NAMESPACE evring:: DESTINATION ${EVR_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/evringConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/evringConfig.cmake INSTALL_DESTINATION ${EVR_CMAKE_DIR})
# 0.x: a minor release may change the API, so 0.1 satisfies only a request for 0.1.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/evringConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/evringConfig.cmake
              ${PROJECT_BINARY_DIR}/evringConfigVersion.cmake DESTINATION ${EVR_CMAKE_DIR})

# The build tree as a package: evring::evring and evring::consumer point at build/lib and
# build/include (one include directory, the same set as the installed one).
set(evr_bt ${PROJECT_BINARY_DIR}/evringConfig.cmake)
set(evr_bt_text "# Generated: evring's build tree as a CMake package (-Devring_DIR=${PROJECT_BINARY_DIR}).\n")
foreach(t IN LISTS EVR_INSTALL_TARGETS)
  if(t STREQUAL "evring")
    set(name evring)
  else()
    set(name consumer)
  endif()
  string(APPEND evr_bt_text
    "if(NOT TARGET evring::${name})\n"
    "  add_library(evring::${name} SHARED IMPORTED)\n"
    "  set_target_properties(evring::${name} PROPERTIES\n"
    "    IMPORTED_LOCATION \"$<TARGET_FILE:${t}>\"\n"
    "    IMPORTED_SONAME \"$<TARGET_SONAME_FILE_NAME:${t}>\"\n"
    "    INTERFACE_INCLUDE_DIRECTORIES \"${EVR_STAGED_INCLUDE}\")\n"
    "endif()\n")
endforeach()
string(APPEND evr_bt_text "set(evring_FOUND TRUE)\n")
file(GENERATE OUTPUT ${evr_bt} CONTENT "${evr_bt_text}")

# pkg-config. The installed files are written at install time, so that their prefix is the
# one installed to (cmake --install --prefix P), not only CMAKE_INSTALL_PREFIX.
set(EVR_PC_NAMES evring)
if(EVR_BUILD_CONSUMER)
  list(APPEND EVR_PC_NAMES evring-consumer)
endif()
set(EVR_PC_DESC_evring "low-overhead tracing and counters for native Linux processes (producer)")
set(EVR_PC_DESC_evring-consumer "attach to evring producers, read their rings and trace files")
set(EVR_PC_LIB_evring evring)
set(EVR_PC_LIB_evring-consumer evring-consumer)
foreach(pc IN LISTS EVR_PC_NAMES)
  # Uninstalled: the build tree (pkg-config picks NAME-uninstalled.pc over NAME.pc when
  # PKG_CONFIG_PATH names build/lib/pkgconfig).
  file(WRITE ${PROJECT_BINARY_DIR}/lib/pkgconfig/${pc}-uninstalled.pc
    "libdir=${CMAKE_LIBRARY_OUTPUT_DIRECTORY}\n"
    "includedir=${EVR_STAGED_INCLUDE}\n\n"
    "Name: ${pc}\nDescription: ${EVR_PC_DESC_${pc}}; the build tree, uninstalled\n"
    "Version: ${PROJECT_VERSION}\n"
    "Libs: -L\${libdir} -Wl,-rpath,\${libdir} -l${EVR_PC_LIB_${pc}}\n"
    "Cflags: -I\${includedir}\n")
  # The installed file: a template here, its prefix filled in when installing.
  set(libdir "${CMAKE_INSTALL_LIBDIR}")
  set(incdir "${CMAKE_INSTALL_INCLUDEDIR}")
  if(NOT IS_ABSOLUTE "${libdir}")
    set(libdir "\${prefix}/${libdir}")
  endif()
  if(NOT IS_ABSOLUTE "${incdir}")
    set(incdir "\${prefix}/${incdir}")
  endif()
  file(WRITE ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc.in
    "prefix=@EVR_PREFIX@\nlibdir=${libdir}\nincludedir=${incdir}\n\n"
    "Name: ${pc}\nDescription: ${EVR_PC_DESC_${pc}}\nVersion: ${PROJECT_VERSION}\n"
    "Libs: -L\${libdir} -l${EVR_PC_LIB_${pc}}\nCflags: -I\${includedir}\n")
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(pcdir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  else()
    set(pcdir "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  endif()
  install(CODE "
    set(EVR_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    set(pc \"\$ENV{DESTDIR}${pcdir}/${pc}.pc\")
    message(STATUS \"Installing: \${pc}\")
    configure_file(\"${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc.in\" \"\${pc}\" @ONLY)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${pc}\")
  ")
endforeach()
