# Precompiled headers for every C++ target that does not already reuse the torch PCH.
#
# nlohmann/json is included by ~70% of the translation units, cpp-httplib by a quarter and
# GoogleTest by every test; parsing them costs 2.7 s, 2.0 s and 1.5 s per unit on this project's
# 2-core machines, most of a fresh build's header time. Each PCH is compiled once, in its own
# object library, and reused: one for the libraries and programs, one (with GoogleTest and its
# definitions) for the test programs. GCC rejects a PCH built with other code-generation flags;
# CMake adds -Winvalid-pch, so with SLUICE_WERROR a target that cannot use it fails to build
# rather than silently losing the speed-up.

option(SLUICE_PCH "Precompile the third-party headers most translation units include" ON)

set(_sluice_pch_headers <nlohmann/json.hpp> <httplib.h> <string> <vector> <map> <memory>
                        <optional> <functional> <chrono> <mutex>)

function(_sluice_collect_targets dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _sluice_collect_targets(${sub} sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# _sluice_targets(<out> <TYPE regex> [TESTS | NO_TESTS]): the project's targets whose TYPE matches,
# only the test programs (TESTS) or all but them (NO_TESTS).
function(_sluice_targets out types)
  cmake_parse_arguments(ARG "TESTS;NO_TESTS" "" "" ${ARGN})
  _sluice_collect_targets(${CMAKE_SOURCE_DIR} all_targets)
  set(matching "")
  foreach(target IN LISTS all_targets)
    get_target_property(type ${target} TYPE)
    get_target_property(is_test ${target} SLUICE_TEST_PROGRAM)
    if(type MATCHES "${types}" AND NOT (ARG_TESTS AND NOT is_test) AND NOT (ARG_NO_TESTS AND is_test))
      list(APPEND matching ${target})
    endif()
  endforeach()
  set(${out} ${matching} PARENT_SCOPE)
endfunction()

# _sluice_make_pch(<name> [LIBS <targets...>] [HEADERS <extra headers...>])
function(_sluice_make_pch name)
  cmake_parse_arguments(ARG "" "" "LIBS;HEADERS" ${ARGN})
  file(WRITE ${CMAKE_BINARY_DIR}/${name}.cpp "// Anchor for a shared PCH (cmake/SluicePrecompiledHeaders.cmake).\n")
  add_library(${name} OBJECT ${CMAKE_BINARY_DIR}/${name}.cpp)
  target_link_libraries(${name} PRIVATE sluice_build_flags PkgConfig::HTTPLIB
                                        nlohmann_json::nlohmann_json ${ARG_LIBS})
  target_precompile_headers(${name} PRIVATE ${_sluice_pch_headers} ${ARG_HEADERS})
endfunction()

# sluice_apply_pch(): call once, after every target is defined.
function(sluice_apply_pch)
  if(NOT SLUICE_PCH)
    return()
  endif()
  # Through a PCH, GCC 12 reports its known -O2 false positives inside libstdc++'s std::string
  # (char_traits.h memcpy: -Warray-bounds, -Wstringop-overflow/-overread, -Wrestrict) that the
  # system-header rule hides in a plain build. Out-of-bounds accesses in Sluice code are left to
  # the address-sanitizer build (make SANITIZE=address) at run time.
  target_compile_options(sluice_build_flags INTERFACE
    $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-Wno-array-bounds -Wno-stringop-overflow
                                     -Wno-stringop-overread -Wno-restrict>)
  _sluice_collect_targets(${CMAKE_SOURCE_DIR} all_targets)
  _sluice_make_pch(sluice_pch)
  _sluice_make_pch(sluice_test_pch LIBS GTest::gtest HEADERS <gtest/gtest.h>)
  if(SLUICE_TEST_O0)
    # Built as the test programs that reuse it are compiled (sluice_unoptimize_tests).
    target_compile_options(sluice_test_pch PRIVATE -O0)
  endif()
  foreach(target IN LISTS all_targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$"
       OR target MATCHES "^sluice_(test_)?pch$|^sluice_torch_pch$")
      continue()
    endif()
    get_target_property(reused ${target} PRECOMPILE_HEADERS_REUSE_FROM)
    get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
    get_target_property(sources ${target} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.cpp$")
    if(reused OR pic OR NOT sources)
      continue()
    endif()
    get_target_property(is_test ${target} SLUICE_TEST_PROGRAM)
    if(is_test)
      target_precompile_headers(${target} REUSE_FROM sluice_test_pch)
    else()
      target_precompile_headers(${target} REUSE_FROM sluice_pch)
    endif()
  endforeach()
endfunction()
