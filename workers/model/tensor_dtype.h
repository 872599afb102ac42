// Tensor element types (DType, named as in safetensors headers) and the conversions between
// their encodings and float32: the F16 and BF16 bit patterns one element at a time, and whole
// tensors to and from float32 buffers. Separate from the safetensors container format
// (safetensors.h, which includes this header): these convert element bytes and know nothing of
// files or headers.
//
// Units: DTypeSize is in bytes per element. Encoded data is little-endian and tightly packed, an
// element of DTypeSize bytes after another (the only layout safetensors has); the byte buffers
// returned are owned by the caller, the spans taken are only read during the call.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::model {

struct TensorView;  // safetensors.h

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kF64,
  kI64,
  kI32,
  kU8,
  kBool,
};

// The name used in headers: "F32", "F16", "BF16", "F64", "I64", "I32", "U8", "BOOL".
std::string_view DTypeName(DType dtype);
// The dtype for a header name (case-sensitive, as the format is); nullopt when unknown.
std::optional<DType> ParseDType(std::string_view name);
// Bytes per element.
size_t DTypeSize(DType dtype);

// Element conversions. F16 and BF16 decode exactly; encoding rounds to nearest, ties to even,
// overflows to infinity, and keeps NaN a NaN (quiet, same sign, high payload bits kept).
float Float16BitsToFloat32(uint16_t bits);
float BFloat16BitsToFloat32(uint16_t bits);
uint16_t Float32ToFloat16Bits(float value);
uint16_t Float32ToBFloat16Bits(float value);

// The tensor's elements as float32 (F16/BF16 exact; F64 and integers rounded; BOOL 0 or 1).
// InvalidArgument when the byte count does not match the shape.
Result<std::vector<float>> ToFloat32(const TensorView& tensor);
// Encodes floats as F32, F16, BF16 or F64 little-endian bytes; InvalidArgument for other dtypes.
Result<std::vector<std::byte>> FromFloat32(std::span<const float> values, DType dtype);

}  // namespace sluice::model
