#include "workers/model/tensor_dtype.h"

#include <bit>
#include <cstring>
#include <string>

#include "workers/model/safetensors.h"
#include "workers/model/safetensors_internal.h"

namespace sluice::model {
namespace {

using safetensors_internal::ComputeExtent;
using safetensors_internal::Extent;
using safetensors_internal::QuoteTensorName;
using safetensors_internal::ShapeString;

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, "F32", 4}, {DType::kF16, "F16", 2},   {DType::kBF16, "BF16", 2},
    {DType::kF64, "F64", 8}, {DType::kI64, "I64", 8},   {DType::kI32, "I32", 4},
    {DType::kU8, "U8", 1},   {DType::kBool, "BOOL", 1},
};

}  // namespace

std::string_view DTypeName(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info.name;
  }
  return "?";
}

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

size_t DTypeSize(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info.size;
  }
  return 1;
}

float Float16BitsToFloat32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);  // Inf, or NaN with its payload.
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);  // Rebias 15 -> 127.
  } else if (mantissa == 0) {
    out = sign;  // Signed zero.
  } else {
    // Subnormal: mantissa * 2^-24; normalize so the leading one becomes implicit.
    int e = -14;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    out = sign | (static_cast<uint32_t>(e + 127) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(out);
}

float BFloat16BitsToFloat32(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t Float32ToFloat16Bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) {
    // NaN: keep the high payload bits and set the quiet bit so it cannot become Inf.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  // 65520 is halfway between the largest half (65504, odd mantissa) and 2^16: ties go up.
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const uint32_t exponent = abs >> 23;
  if (exponent >= 113) {
    // Normal in half precision: rebias and round away 13 mantissa bits. A carry out of the
    // mantissa correctly bumps the exponent.
    uint32_t h = ((exponent - 112) << 10) | ((abs >> 13) & 0x3ffu);
    const uint32_t rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // Below 2^-25 (half the smallest subnormal; a tie that rounds to even zero) -> zero.
  if (exponent < 102) return sign;
  // Subnormal in half precision: value = m * 2^(exponent - 150), counted in units of 2^-24.
  const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14..24
  uint32_t h = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u) != 0)) ++h;  // May reach 0x400, the least normal.
  return static_cast<uint16_t>(sign | h);
}

uint16_t Float32ToBFloat16Bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x0040u);  // Quiet NaN, sign and payload kept.
  }
  // Round to nearest even on the 16 dropped bits; overflow carries into Inf as it should.
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + lsb) >> 16);
}

Result<std::vector<float>> ToFloat32(const TensorView& tensor) {
  std::optional<Extent> extent = ComputeExtent(tensor.dtype, tensor.shape);
  if (!extent || extent->bytes != tensor.data.size()) {
    return Status::InvalidArgument(
        "ToFloat32: tensor " + QuoteTensorName(tensor.name) + " has " +
        std::to_string(tensor.data.size()) + " bytes, which does not match shape " +
        ShapeString(tensor.shape) + " of " + std::string(DTypeName(tensor.dtype)));
  }
  const size_t n = extent->elements;
  std::vector<float> out(n);
  const std::byte* p = tensor.data.data();
  auto load = [p]<typename T>(size_t i, T* v) { std::memcpy(v, p + i * sizeof(T), sizeof(T)); };
  switch (tensor.dtype) {
    case DType::kF32:
      if (n > 0) std::memcpy(out.data(), p, n * sizeof(float));
      break;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        load(i, &v);
        out[i] = Float16BitsToFloat32(v);
      }
      break;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        load(i, &v);
        out[i] = BFloat16BitsToFloat32(v);
      }
      break;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) {
        double v;
        load(i, &v);
        out[i] = static_cast<float>(v);
      }
      break;
    case DType::kI64:
      for (size_t i = 0; i < n; ++i) {
        int64_t v;
        load(i, &v);
        out[i] = static_cast<float>(v);
      }
      break;
    case DType::kI32:
      for (size_t i = 0; i < n; ++i) {
        int32_t v;
        load(i, &v);
        out[i] = static_cast<float>(v);
      }
      break;
    case DType::kU8:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::to_integer<uint8_t>(p[i]));
      break;
    case DType::kBool:
      for (size_t i = 0; i < n; ++i) out[i] = std::to_integer<uint8_t>(p[i]) != 0 ? 1.0f : 0.0f;
      break;
  }
  return out;
}

Result<std::vector<std::byte>> FromFloat32(std::span<const float> values, DType dtype) {
  std::vector<std::byte> out(values.size() * DTypeSize(dtype));
  std::byte* p = out.data();
  switch (dtype) {
    case DType::kF32:
      if (!values.empty()) std::memcpy(p, values.data(), values.size_bytes());
      return out;
    case DType::kF16:
      for (size_t i = 0; i < values.size(); ++i) {
        uint16_t v = Float32ToFloat16Bits(values[i]);
        std::memcpy(p + 2 * i, &v, 2);
      }
      return out;
    case DType::kBF16:
      for (size_t i = 0; i < values.size(); ++i) {
        uint16_t v = Float32ToBFloat16Bits(values[i]);
        std::memcpy(p + 2 * i, &v, 2);
      }
      return out;
    case DType::kF64:
      for (size_t i = 0; i < values.size(); ++i) {
        double v = values[i];
        std::memcpy(p + 8 * i, &v, 8);
      }
      return out;
    default:
      return Status::InvalidArgument("FromFloat32: cannot encode floats as " +
                                     std::string(DTypeName(dtype)));
  }
}

}  // namespace sluice::model
