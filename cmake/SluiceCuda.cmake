# CUDA (nvcc from /usr/local/cuda/bin when present). Kernels live in workers/kernels and build
# whenever nvcc is found; their tests skip cleanly when no GPU is visible.

find_program(SLUICE_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
if(SLUICE_NVCC)
  set(_sluice_cuda_default ON)
else()
  set(_sluice_cuda_default OFF)
endif()
option(SLUICE_WITH_CUDA "Build the CUDA kernels (workers/kernels)" ${_sluice_cuda_default})

if(SLUICE_WITH_CUDA)
  if(NOT SLUICE_NVCC)
    message(FATAL_ERROR "SLUICE_WITH_CUDA=ON but nvcc was not found (looked in /usr/local/cuda/bin)")
  endif()
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${SLUICE_NVCC})
  endif()
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    # Hopper (H100/H200) first; Ampere (A100) for spill-over pools.
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  # CMake 3.25 knows no CUDA 20 dialect for nvcc; kernels are written in C++17.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
endif()
