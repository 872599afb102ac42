# Build options and the warning/sanitizer flags every Sluice target gets through
# the interface library `sluice_build_flags`.

set(SLUICE_SANITIZE "" CACHE STRING
    "Sanitizer to build with: address, undefined, address,undefined, thread or empty")
set_property(CACHE SLUICE_SANITIZE PROPERTY STRINGS "" address undefined "address,undefined" thread)
option(SLUICE_WERROR "Treat compiler warnings in Sluice code as errors" OFF)

add_library(sluice_build_flags INTERFACE)
target_compile_options(sluice_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${SLUICE_WERROR}>>:-Werror>)
# lld links the large test programs several times faster than ld.bfd (about 1.7 s against 6 s
# for the API server's tests), which adds up over some sixty programs in a fresh build.
option(SLUICE_LLD "Link with lld when the compiler accepts -fuse-ld=lld" ON)
if(SLUICE_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" SLUICE_HAVE_LLD)
  if(SLUICE_HAVE_LLD)
    add_link_options($<$<LINK_LANGUAGE:CXX>:-fuse-ld=lld>)
  endif()
endif()
# Sources include each other relative to the repository root: #include "common/status.h".
target_include_directories(sluice_build_flags INTERFACE ${CMAKE_SOURCE_DIR})

if(SLUICE_SANITIZE STREQUAL "address")
  set(_sluice_san_flags -fsanitize=address -fno-omit-frame-pointer)
elseif(SLUICE_SANITIZE STREQUAL "undefined")
  set(_sluice_san_flags -fsanitize=undefined -fno-sanitize-recover=undefined)
elseif(SLUICE_SANITIZE STREQUAL "address,undefined")
  set(_sluice_san_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined
                        -fno-omit-frame-pointer)
elseif(SLUICE_SANITIZE STREQUAL "thread")
  set(_sluice_san_flags -fsanitize=thread)
elseif(NOT SLUICE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "SLUICE_SANITIZE must be address, undefined, address,undefined, thread or empty, "
                      "not '${SLUICE_SANITIZE}'")
endif()
if(_sluice_san_flags)
  # GCC 12 reports -Wmaybe-uninitialized false positives inside std::variant moves once the
  # sanitizers instrument the code; the plain build keeps the warning (and -Werror) on.
  target_compile_options(sluice_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:${_sluice_san_flags}>
    $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-Wno-maybe-uninitialized>)
  target_link_options(sluice_build_flags INTERFACE ${_sluice_san_flags})
endif()

# libFuzzer builds (tests/fuzz/CMakeLists.txt): the libraries, programs and fuzz targets get the
# fuzzer's coverage instrumentation (sluice_apply_fuzz_coverage), and the fuzz targets link
# libFuzzer's main. Clang only; with AddressSanitizer, whose runtime also carries the coverage
# callbacks that the instrumented libraries call from the unit tests.
option(SLUICE_FUZZ "Build tests/fuzz/ as libFuzzer programs (clang, SLUICE_SANITIZE=address[,undefined])"
       OFF)
if(SLUICE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SLUICE_FUZZ needs clang (CXX=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(NOT SLUICE_SANITIZE MATCHES "^address")
    message(FATAL_ERROR "SLUICE_FUZZ needs SLUICE_SANITIZE=address or address,undefined")
  endif()
endif()

# sluice_apply_fuzz_coverage(): call once, after sluice_apply_pch(). The test programs' own code
# (and their PCH) stays uninstrumented: libFuzzer never runs it, and the instrumentation makes a
# test unit about a third slower to compile (34 s against 25 s for a common test unit under ASan).
function(sluice_apply_fuzz_coverage)
  if(NOT SLUICE_FUZZ)
    return()
  endif()
  _sluice_targets(targets "^(STATIC_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$" NO_TESTS)
  list(REMOVE_ITEM targets sluice_test_pch)
  foreach(target IN LISTS targets)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  endforeach()
endfunction()
