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

# libFuzzer builds (tests/fuzz/CMakeLists.txt): every Sluice target gets the fuzzer's coverage
# instrumentation, and the fuzz targets link libFuzzer's main. Clang only; with AddressSanitizer,
# whose runtime also carries the coverage callbacks the instrumented unit tests call.
option(SLUICE_FUZZ "Build tests/fuzz/ as libFuzzer programs (clang, SLUICE_SANITIZE=address[,undefined])"
       OFF)
if(SLUICE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SLUICE_FUZZ needs clang (CXX=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(NOT SLUICE_SANITIZE MATCHES "^address")
    message(FATAL_ERROR "SLUICE_FUZZ needs SLUICE_SANITIZE=address or address,undefined")
  endif()
  target_compile_options(sluice_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
