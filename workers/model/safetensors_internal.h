// Helpers shared by the safetensors reader (safetensors.cpp), writer (safetensors_writer.cpp)
// and the element conversions (tensor_dtype.cpp): the format's fixed constants, the byte size of
// a shape, and the pieces of their error messages. Internal to those files (hence its own
// namespace); not part of the safetensors.h API.
//
// Units: element counts and sizes in bytes, as uint64.
//
// Thread safety: constants and pure functions, except that Errno calls std::strerror.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "workers/model/tensor_dtype.h"

namespace sluice::model::safetensors_internal {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; big-endian hosts would need byte swaps");

inline constexpr std::string_view kMetadataKey = "__metadata__";
inline constexpr size_t kLengthPrefixBytes = 8;
// Longer names are cut in error messages so a hostile header cannot bloat them.
inline constexpr size_t kMaxQuotedName = 160;

// `name` in single quotes, cut to kMaxQuotedName bytes, for error messages.
inline std::string QuoteTensorName(std::string_view name) {
  std::string out = "'";
  if (name.size() > kMaxQuotedName) {
    out.append(name.substr(0, kMaxQuotedName));
    out.append("...");
  } else {
    out.append(name);
  }
  out.push_back('\'');
  return out;
}

inline std::string Errno(int err) { return std::strerror(err); }

// Element count and byte size of a shape, or nullopt when a dim is negative or either overflows
// int64.
struct Extent {
  uint64_t elements;
  uint64_t bytes;
};

inline std::optional<Extent> ComputeExtent(DType dtype, std::span<const int64_t> shape) {
  uint64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dim), &elements)) {
      return std::nullopt;
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(DTypeSize(dtype)), &bytes)) {
    return std::nullopt;
  }
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (elements > kMax || bytes > kMax) return std::nullopt;
  return Extent{elements, bytes};
}

// "[2,3]".
inline std::string ShapeString(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out.append(",");
    out.append(std::to_string(shape[i]));
  }
  out.append("]");
  return out;
}

}  // namespace sluice::model::safetensors_internal
