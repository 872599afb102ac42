#include "common/wire/decoder.h"

#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/wire/format.h"

namespace sluice::wire {
namespace {

static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559,
              "the wire format stores IEEE-754 bits");

// Assembles bytes explicitly, least significant first, so decoding is the same on any host.
template <typename U>
U LoadLe(const char* p) {
  static_assert(std::is_unsigned_v<U>);
  U v = 0;
  for (size_t i = 0; i < sizeof(U); ++i) {
    v |= static_cast<U>(static_cast<U>(static_cast<uint8_t>(p[i])) << (8 * i));
  }
  return v;
}

template <typename T>
using WireBits =
    std::conditional_t<sizeof(T) == 1, uint8_t,
                       std::conditional_t<sizeof(T) == 2, uint16_t,
                                          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

template <typename T>
constexpr const char* TypeName() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, double>) return "f64";
  if constexpr (std::is_same_v<T, int32_t>) return "i32";
  if constexpr (std::is_same_v<T, int64_t>) return "i64";
  if constexpr (std::is_same_v<T, uint8_t>) return "u8";
  if constexpr (std::is_same_v<T, uint16_t>) return "u16";
  if constexpr (std::is_same_v<T, uint32_t>) return "u32";
  return "u64";
}

Status MalformedFrame(std::string_view field, std::string msg) {
  return Status::Corruption(std::move(msg), std::string(field));
}

}  // namespace

Status Decoder::Need(std::string_view field, size_t n, std::string_view what) const {
  if (n <= remaining()) return Status::Ok();
  return MalformedFrame(field, "truncated: " + std::string(what) + " needs " + std::to_string(n) +
                                   " bytes at offset " + std::to_string(pos_) + ", only " +
                                   std::to_string(remaining()) + " remain");
}

template <typename U>
Status Decoder::GetFixed(std::string_view field, std::string_view type, U* out) {
  SLUICE_RETURN_IF_ERROR(Need(field, sizeof(U), type));
  *out = LoadLe<U>(data_.data() + pos_);
  pos_ += sizeof(U);
  return Status::Ok();
}

Status Decoder::GetU8(std::string_view field, uint8_t* out) { return GetFixed(field, "u8", out); }
Status Decoder::GetU16(std::string_view field, uint16_t* out) {
  return GetFixed(field, "u16", out);
}
Status Decoder::GetU32(std::string_view field, uint32_t* out) {
  return GetFixed(field, "u32", out);
}
Status Decoder::GetU64(std::string_view field, uint64_t* out) {
  return GetFixed(field, "u64", out);
}

Status Decoder::GetI32(std::string_view field, int32_t* out) {
  uint32_t bits;
  SLUICE_RETURN_IF_ERROR(GetFixed(field, "i32", &bits));
  *out = static_cast<int32_t>(bits);  // Modular conversion, defined since C++20.
  return Status::Ok();
}

Status Decoder::GetI64(std::string_view field, int64_t* out) {
  uint64_t bits;
  SLUICE_RETURN_IF_ERROR(GetFixed(field, "i64", &bits));
  *out = static_cast<int64_t>(bits);
  return Status::Ok();
}

Status Decoder::GetF32(std::string_view field, float* out) {
  uint32_t bits;
  SLUICE_RETURN_IF_ERROR(GetFixed(field, "f32", &bits));
  *out = std::bit_cast<float>(bits);
  return Status::Ok();
}

Status Decoder::GetF64(std::string_view field, double* out) {
  uint64_t bits;
  SLUICE_RETURN_IF_ERROR(GetFixed(field, "f64", &bits));
  *out = std::bit_cast<double>(bits);
  return Status::Ok();
}

Status Decoder::GetBool(std::string_view field, bool* out) {
  SLUICE_RETURN_IF_ERROR(Need(field, 1, "bool"));
  const uint8_t b = static_cast<uint8_t>(data_[pos_]);
  if (b > 1) return MalformedFrame(field, "bool byte is " + std::to_string(b) + ", want 0 or 1");
  *out = b == 1;
  ++pos_;
  return Status::Ok();
}

Status Decoder::GetVarint(std::string_view field, uint64_t* out) {
  uint64_t value = 0;
  for (size_t i = 0; i < kMaxVarintBytes; ++i) {
    if (pos_ + i >= data_.size()) {
      return MalformedFrame(field, "truncated: varint at offset " + std::to_string(pos_) +
                                       " ends after " + std::to_string(i) + " bytes");
    }
    const uint8_t b = static_cast<uint8_t>(data_[pos_ + i]);
    if (i == kMaxVarintBytes - 1) {
      // The 10th byte holds bit 63 only: anything more is too long or too big.
      if (b & 0x80) {
        return MalformedFrame(
            field, "varint at offset " + std::to_string(pos_) + " is longer than 10 bytes");
      }
      if (b > 1) {
        return MalformedFrame(field,
                              "varint at offset " + std::to_string(pos_) + " overflows 64 bits");
      }
    }
    value |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *out = value;
      pos_ += i + 1;
      return Status::Ok();
    }
  }
  return Status::Internal("unreachable: varint loop exit");  // The 10th byte always returns.
}

Status Decoder::GetSignedVarint(std::string_view field, int64_t* out) {
  uint64_t zigzag;
  SLUICE_RETURN_IF_ERROR(GetVarint(field, &zigzag));
  *out = static_cast<int64_t>((zigzag >> 1) ^ (~(zigzag & 1) + 1));
  return Status::Ok();
}

Status Decoder::GetStringView(std::string_view field, std::string_view* out) {
  SLUICE_RETURN_IF_ERROR(Need(field, kLengthPrefixSize, "string length"));
  const uint32_t len = LoadLe<uint32_t>(data_.data() + pos_);
  const size_t left = remaining() - kLengthPrefixSize;
  if (len > left) {
    return MalformedFrame(field, "declared string length " + std::to_string(len) + " at offset " +
                                     std::to_string(pos_) + " exceeds the " + std::to_string(left) +
                                     " bytes remaining");
  }
  *out = data_.substr(pos_ + kLengthPrefixSize, len);
  pos_ += kLengthPrefixSize + len;
  return Status::Ok();
}

Status Decoder::GetString(std::string_view field, std::string* out) {
  std::string_view view;
  SLUICE_RETURN_IF_ERROR(GetStringView(field, &view));
  out->assign(view.data(), view.size());
  return Status::Ok();
}

template <typename T>
Status Decoder::GetArray(std::string_view field, std::vector<T>* out) {
  SLUICE_RETURN_IF_ERROR(Need(field, kCountPrefixSize, "array count"));
  const uint32_t count = LoadLe<uint32_t>(data_.data() + pos_);
  const size_t left = remaining() - kCountPrefixSize;
  // Dividing instead of multiplying cannot overflow; this runs before any allocation.
  if (count > left / sizeof(T)) {
    return MalformedFrame(field, "declared " + std::string(TypeName<T>()) + " array count " +
                                     std::to_string(count) + " at offset " + std::to_string(pos_) +
                                     " needs " + std::to_string(uint64_t{count} * sizeof(T)) +
                                     " bytes, only " + std::to_string(left) + " remain");
  }
  const char* src = data_.data() + pos_ + kCountPrefixSize;
  out->resize(count);
  if (count > 0) {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(out->data(), src, size_t{count} * sizeof(T));
    } else {
      for (size_t i = 0; i < count; ++i) {
        (*out)[i] = std::bit_cast<T>(LoadLe<WireBits<T>>(src + i * sizeof(T)));
      }
    }
  }
  pos_ += kCountPrefixSize + size_t{count} * sizeof(T);
  return Status::Ok();
}

Status Decoder::GetU8Array(std::string_view f, std::vector<uint8_t>* out) {
  return GetArray(f, out);
}
Status Decoder::GetU16Array(std::string_view f, std::vector<uint16_t>* out) {
  return GetArray(f, out);
}
Status Decoder::GetU32Array(std::string_view f, std::vector<uint32_t>* out) {
  return GetArray(f, out);
}
Status Decoder::GetU64Array(std::string_view f, std::vector<uint64_t>* out) {
  return GetArray(f, out);
}
Status Decoder::GetI32Array(std::string_view f, std::vector<int32_t>* out) {
  return GetArray(f, out);
}
Status Decoder::GetI64Array(std::string_view f, std::vector<int64_t>* out) {
  return GetArray(f, out);
}
Status Decoder::GetF32Array(std::string_view f, std::vector<float>* out) {
  return GetArray(f, out);
}
Status Decoder::GetF64Array(std::string_view f, std::vector<double>* out) {
  return GetArray(f, out);
}

Status Decoder::GetRaw(std::string_view field, size_t n, std::string_view* out) {
  SLUICE_RETURN_IF_ERROR(Need(field, n, "raw bytes"));
  *out = data_.substr(pos_, n);
  pos_ += n;
  return Status::Ok();
}

Status Decoder::Skip(std::string_view field, size_t n) {
  SLUICE_RETURN_IF_ERROR(Need(field, n, "skip"));
  pos_ += n;
  return Status::Ok();
}

}  // namespace sluice::wire
