# Tests: GoogleTest executables registered test by test with ctest.
include(CTest)
include(GoogleTest)

# Test programs compile as unity builds: GoogleTest, nlohmann/json and the helpers' templates are
# instantiated and code-generated once per batch of test files instead of once per file (eight
# apiserver test files: 57.6 s one by one, 16.6 s as one unit on this project's 2-core machines).
# Test files therefore keep their file-local helper names unique within their program, and shared
# helpers live in tests/support/.
option(SLUICE_UNITY_TESTS "Compile test programs as unity builds, 8 sources per unit" ON)

# The torch-free libraries' test programs that `make test` builds and runs under AddressSanitizer
# and UBSan in its clang tree (scripts/test-hardening.sh builds the target sluice_sanitized_tests):
# the libraries that parse outside bytes or run threads. The Makefile's main tree leaves them out
# (SLUICE_SANITIZED_TESTS=OFF), and the fuzz targets' replay drivers with them, so CI compiles and
# runs them once, under the sanitizers, instead of twice (about 5 minutes of a 2-core CI run).
set(SLUICE_SANITIZED_TEST_PROGRAMS
    sluice_common_tests sluice_kube_tests sluice_apiserver_tests sluice_dataflow_tests
    sluice_weights_tests sluice_rollout_sandbox_tests sluice_rollout_rewards_tests
    sluice_rollout_workflows_tests)
option(SLUICE_SANITIZED_TESTS
       "Build SLUICE_SANITIZED_TEST_PROGRAMS and the fuzz targets' replay drivers in this tree" ON)

# sluice_add_test(<name> SOURCES <files...> LIBS <targets...> [TIMEOUT <seconds>] [RUN_SERIAL])
# One executable per area keeps link time down; ctest still sees every TEST individually.
# RUN_SERIAL: ctest runs each of the program's tests alone (for tests whose result depends on
# having the machine to themselves, such as a training run measured against a margin).
function(sluice_add_test name)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(NOT SLUICE_SANITIZED_TESTS AND name IN_LIST SLUICE_SANITIZED_TEST_PROGRAMS)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE sluice_build_flags ${ARG_LIBS} GTest::gtest GTest::gtest_main
                                        GTest::gmock)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests
                                           SLUICE_TEST_PROGRAM ON
                                           UNITY_BUILD ${SLUICE_UNITY_TESTS}
                                           UNITY_BUILD_BATCH_SIZE 8)
  # The kubectl the end-to-end helpers run unless SLUICE_TEST_KUBECTL names another
  # (tests/e2e/apiserver_process.h); SLUICE_TOOLS_DIR is tests/CMakeLists.txt's cache entry.
  target_compile_definitions(${name} PRIVATE SLUICE_DEFAULT_KUBECTL="${SLUICE_TOOLS_DIR}/kubectl")
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    # A hung test fails in two minutes (unless the program says otherwise) instead of holding CI
    # for ctest's default 25.
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} RUN_SERIAL ${ARG_RUN_SERIAL}
               # One variable only: gtest_discover_tests splits a list value into properties.
               ENVIRONMENT "SLUICE_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# sluice_discover_with_machine_kubectl(<target> <gtest filter> [TIMEOUT <seconds>] [RUN_SERIAL])
# Registers the tests of <target> matching the filter once more, named "kubectl-machine/<test>",
# with SLUICE_TEST_KUBECTL=/usr/bin/kubectl (Debian's), so the tests about kubectl's behaviour
# run with the machine's client as well as with the pinned one they use by default
# (SLUICE_DEFAULT_KUBECTL, the kubectl scripts/install-deps.sh puts in SLUICE_TOOLS_DIR).
function(sluice_discover_with_machine_kubectl name filter)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    TEST_PREFIX "kubectl-machine/"
    TEST_FILTER "${filter}"
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} RUN_SERIAL ${ARG_RUN_SERIAL}
               ENVIRONMENT "SLUICE_TEST_KUBECTL=/usr/bin/kubectl"
    DISCOVERY_TIMEOUT 60)
endfunction()

# Test programs compile their own code without optimisation: a test body runs once and is cheap,
# while -O2 makes each test translation unit about half as slow again to compile (9.2 s against
# 5.9 s for a placement test on this project's 2-core machines), and test units are most of a
# fresh build. The code under test is in the libraries and keeps the build type's flags. Test
# programs that reuse the torch PCH keep them too (a PCH only serves the flags it was built with).
# Call once, after every target is defined and before sluice_apply_pch().
option(SLUICE_TEST_O0 "Compile test programs' own sources with -O0" ON)
function(sluice_unoptimize_tests)
  if(NOT SLUICE_TEST_O0)
    return()
  endif()
  _sluice_targets(test_programs "^EXECUTABLE$" TESTS)
  foreach(target IN LISTS test_programs)
    get_target_property(reused ${target} PRECOMPILE_HEADERS_REUSE_FROM)
    if(NOT reused STREQUAL "sluice_torch_pch")
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
      set_target_properties(${target} PROPERTIES SLUICE_TEST_O0 ON)
    endif()
  endforeach()
endfunction()
