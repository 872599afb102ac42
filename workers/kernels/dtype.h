// DType: the element type of a tensor handed to a Sluice CUDA kernel.
//
// Kernels take tensors as raw device pointers plus explicit shapes, so the storage type travels
// beside the pointer as this enum rather than as a CUDA type: headers under workers/kernels/
// stay includable from plain C++ (no cuda_fp16.h needed by callers). Every kernel computes in
// float32 whatever the storage type.
#pragma once

#include <cstddef>
#include <string_view>

namespace sluice::kernels {

enum class DType {
  kFloat32,   // IEEE binary32.
  kFloat16,   // IEEE binary16 (CUDA __half).
  kBFloat16,  // bfloat16: the top 16 bits of a binary32 (CUDA __nv_bfloat16).
};

// Bytes per element.
constexpr size_t DTypeSize(DType dtype) { return dtype == DType::kFloat32 ? 4 : 2; }

// "float32", "float16" or "bfloat16", for error messages.
constexpr std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

}  // namespace sluice::kernels
