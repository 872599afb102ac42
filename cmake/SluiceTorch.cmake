# libtorch (Debian's libtorch-dev, CPU build) and the precompiled header its users share.
#
# Only workers/model, workers/rollout engine code and workers/trainer include libtorch headers;
# each such translation unit costs ~30 s on 2 cores without a PCH. Those targets call
# sluice_use_torch(<target>), which links Torch and reuses one precompiled <torch/torch.h>
# (with nlohmann/json, which most of them include too).

# A CUDA-enabled libtorch (the PyPI wheel's, found with -DCMAKE_PREFIX_PATH=<site-packages>/torch)
# detects the machine's GPUs at configure time unless TORCH_CUDA_ARCH_LIST names the
# architectures, and that detection fails the configure on a machine without a GPU (its test
# program asks nvcc for this project's C++20 dialect). The list only sets the nvcc flags torch's
# config exports (workers/kernels chooses its own architectures); Ampere and Hopper by default.
# Debian's CPU libtorch ignores it.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
endif()
find_package(Torch QUIET)
if(Torch_FOUND)
  set(_sluice_torch_default ON)
else()
  set(_sluice_torch_default OFF)
endif()
option(SLUICE_WITH_TORCH "Build the libtorch components (model, engine, trainer)"
       ${_sluice_torch_default})
if(SLUICE_WITH_TORCH AND NOT Torch_FOUND)
  message(FATAL_ERROR "SLUICE_WITH_TORCH=ON but libtorch was not found (apt-get install libtorch-dev)")
endif()

function(sluice_use_torch target)
  if(NOT SLUICE_WITH_TORCH)
    message(FATAL_ERROR "${target} needs libtorch; guard it with if(SLUICE_WITH_TORCH)")
  endif()
  if(NOT TARGET sluice_torch_pch)
    # The PCH is compiled once, in this object library, and reused by every torch target.
    file(WRITE ${CMAKE_BINARY_DIR}/sluice_torch_pch.cpp "// Anchor for the shared torch PCH.\n")
    add_library(sluice_torch_pch OBJECT ${CMAKE_BINARY_DIR}/sluice_torch_pch.cpp)
    target_link_libraries(sluice_torch_pch PUBLIC sluice_build_flags ${TORCH_LIBRARIES}
                                                  nlohmann_json::nlohmann_json)
    target_compile_options(sluice_torch_pch PUBLIC ${TORCH_CXX_FLAGS_LIST})
    target_precompile_headers(sluice_torch_pch PRIVATE <torch/torch.h> <nlohmann/json.hpp>)
  endif()
  target_link_libraries(${target} PUBLIC sluice_build_flags ${TORCH_LIBRARIES})
  target_compile_options(${target} PUBLIC ${TORCH_CXX_FLAGS_LIST})
  target_precompile_headers(${target} REUSE_FROM sluice_torch_pch)
endfunction()

if(SLUICE_WITH_TORCH)
  separate_arguments(TORCH_CXX_FLAGS_LIST UNIX_COMMAND "${TORCH_CXX_FLAGS}")
endif()
