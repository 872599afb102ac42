#include "common/wire/encoder.h"

#include <bit>
#include <limits>
#include <type_traits>

namespace sluice::wire {
namespace {

// Writes bytes explicitly, least significant first, so the output is the same on any host.
template <typename U>
void AppendLe(std::string* out, U v) {
  static_assert(std::is_unsigned_v<U>);
  char buf[sizeof(U)];
  for (size_t i = 0; i < sizeof(U); ++i) {
    buf[i] = static_cast<char>(static_cast<uint8_t>(v >> (8 * i)));
  }
  out->append(buf, sizeof(U));
}

// The unsigned type of the same width, whose bits are what goes on the wire.
template <typename T>
using WireBits =
    std::conditional_t<sizeof(T) == 1, uint8_t,
                       std::conditional_t<sizeof(T) == 2, uint16_t,
                                          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559,
              "the wire format stores IEEE-754 bits");

}  // namespace

Encoder::Encoder(std::string* out) : out_(out) { SLUICE_CHECK(out != nullptr); }

bool Encoder::FitsU32(size_t n, std::string_view kind, std::string_view prefix) {
  if (!status_.ok()) return false;
  if (n > std::numeric_limits<uint32_t>::max()) {
    status_ = Status::TooLarge(std::string(kind) + " " + std::string(prefix) + " of " +
                               std::to_string(n) + " does not fit its u32 prefix");
    return false;
  }
  return true;
}

void Encoder::PutU8(uint8_t v) {
  if (status_.ok()) out_->push_back(static_cast<char>(v));
}
void Encoder::PutU16(uint16_t v) {
  if (status_.ok()) AppendLe(out_, v);
}
void Encoder::PutU32(uint32_t v) {
  if (status_.ok()) AppendLe(out_, v);
}
void Encoder::PutU64(uint64_t v) {
  if (status_.ok()) AppendLe(out_, v);
}
void Encoder::PutI32(int32_t v) { PutU32(static_cast<uint32_t>(v)); }
void Encoder::PutI64(int64_t v) { PutU64(static_cast<uint64_t>(v)); }
void Encoder::PutF32(float v) { PutU32(std::bit_cast<uint32_t>(v)); }
void Encoder::PutF64(double v) { PutU64(std::bit_cast<uint64_t>(v)); }
void Encoder::PutBool(bool v) { PutU8(v ? 1 : 0); }

void Encoder::PutVarint(uint64_t v) {
  if (!status_.ok()) return;
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(static_cast<uint8_t>(v));
  out_->append(buf, n);
}

void Encoder::PutSignedVarint(int64_t v) {
  // Arithmetic right shift (defined in C++20) spreads the sign bit over all 64 bits.
  const uint64_t zigzag = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  PutVarint(zigzag);
}

void Encoder::PutString(std::string_view s) {
  if (!FitsU32(s.size(), "string", "length")) return;
  AppendLe(out_, static_cast<uint32_t>(s.size()));
  out_->append(s.data(), s.size());
}

void Encoder::PutRaw(std::string_view bytes) {
  if (status_.ok()) out_->append(bytes.data(), bytes.size());
}

template <typename T>
void Encoder::PutArray(std::span<const T> v, const char* type_name) {
  if (!FitsU32(v.size(), type_name, "array count")) return;
  AppendLe(out_, static_cast<uint32_t>(v.size()));
  if (v.empty()) return;
  if constexpr (std::endian::native == std::endian::little) {
    // The in-memory representation already is the wire encoding: one bulk copy.
    out_->append(reinterpret_cast<const char*>(v.data()), v.size_bytes());
  } else {
    out_->reserve(out_->size() + v.size_bytes());
    for (const T& x : v) AppendLe(out_, std::bit_cast<WireBits<T>>(x));
  }
}

void Encoder::PutU8Array(std::span<const uint8_t> v) { PutArray(v, "u8"); }
void Encoder::PutU16Array(std::span<const uint16_t> v) { PutArray(v, "u16"); }
void Encoder::PutU32Array(std::span<const uint32_t> v) { PutArray(v, "u32"); }
void Encoder::PutU64Array(std::span<const uint64_t> v) { PutArray(v, "u64"); }
void Encoder::PutI32Array(std::span<const int32_t> v) { PutArray(v, "i32"); }
void Encoder::PutI64Array(std::span<const int64_t> v) { PutArray(v, "i64"); }
void Encoder::PutF32Array(std::span<const float> v) { PutArray(v, "f32"); }
void Encoder::PutF64Array(std::span<const double> v) { PutArray(v, "f64"); }

}  // namespace sluice::wire
