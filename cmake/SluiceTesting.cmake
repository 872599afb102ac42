# Tests: GoogleTest executables registered test by test with ctest.
include(CTest)
include(GoogleTest)

# sluice_add_test(<name> SOURCES <files...> LIBS <targets...> [TIMEOUT <seconds>] [RUN_SERIAL])
# One executable per area keeps link time down; ctest still sees every TEST individually.
# RUN_SERIAL: ctest runs each of the program's tests alone (for tests whose result depends on
# having the machine to themselves, such as a training run measured against a margin).
function(sluice_add_test name)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE sluice_build_flags ${ARG_LIBS} GTest::gtest GTest::gtest_main
                                        GTest::gmock)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests
                                           SLUICE_TEST_PROGRAM ON)
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    # A hung test fails in two minutes (unless the program says otherwise) instead of holding CI
    # for ctest's default 25.
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} RUN_SERIAL ${ARG_RUN_SERIAL}
               # One variable only: gtest_discover_tests splits a list value into properties.
               ENVIRONMENT "SLUICE_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# sluice_discover_with_kubectl(<target> <gtest filter> [TIMEOUT <seconds>] [RUN_SERIAL])
# Registers the tests of <target> matching the filter once more, named "kubectl-1.35/<test>",
# with SLUICE_TEST_KUBECTL pointing at the kubectl in SLUICE_TOOLS_DIR, so the end-to-end tests
# run with a current kubectl as well as the machine's. The tests fail (not skip) when that
# kubectl is missing: scripts/install-deps.sh installs it.
function(sluice_discover_with_kubectl name filter)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    TEST_PREFIX "kubectl-1.35/"
    TEST_FILTER "${filter}"
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} RUN_SERIAL ${ARG_RUN_SERIAL}
               ENVIRONMENT "SLUICE_TEST_KUBECTL=${SLUICE_TOOLS_DIR}/kubectl"
    DISCOVERY_TIMEOUT 60)
endfunction()
