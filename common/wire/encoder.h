// Encoder: appends values in the Sluice wire encoding (docs/wire-format.md) to a std::string.
//
// Fixed-width values are little-endian on every host; floats are their IEEE-754 bits, so NaN
// payloads and signed zeros survive unchanged. Strings carry a u32 byte length and arrays a u32
// element count. The encoding carries no field tags: writer and reader agree on the order, as a
// message's documented layout.
//
// Ownership: the output string belongs to the caller and must outlive the Encoder; the Encoder
// only appends to it. Errors: a length that does not fit its u32 prefix makes status() TooLarge;
// from then on every Put is ignored, so callers check status() once at the end instead of after
// each Put. Thread safety: none; use one Encoder from one thread at a time. Sizes are in bytes,
// array counts in elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::wire {

class Encoder {
 public:
  explicit Encoder(std::string* out);

  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  void PutU8(uint8_t v);
  void PutU16(uint16_t v);
  void PutU32(uint32_t v);
  void PutU64(uint64_t v);
  void PutI32(int32_t v);  // Two's complement, 4 bytes.
  void PutI64(int64_t v);  // Two's complement, 8 bytes.
  void PutF32(float v);    // IEEE-754 binary32 bits as a u32.
  void PutF64(double v);   // IEEE-754 binary64 bits as a u64.
  void PutBool(bool v);    // One byte, 0 or 1.

  // LEB128: 7 bits per byte, least significant group first, high bit set on all but the last
  // byte. 1 to 10 bytes.
  void PutVarint(uint64_t v);
  // Zigzag (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...) then LEB128, so small negatives stay short.
  void PutSignedVarint(int64_t v);

  // u32 byte length, then the bytes. Any byte values (no UTF-8 check), so this is also the
  // encoding of opaque byte blobs and of nested messages.
  void PutString(std::string_view s);

  // u32 element count, then the elements back to back in the fixed-width encoding above.
  void PutU8Array(std::span<const uint8_t> v);
  void PutU16Array(std::span<const uint16_t> v);  // Also for f16/bf16 tensors, as raw bits.
  void PutU32Array(std::span<const uint32_t> v);
  void PutU64Array(std::span<const uint64_t> v);
  void PutI32Array(std::span<const int32_t> v);
  void PutI64Array(std::span<const int64_t> v);
  void PutF32Array(std::span<const float> v);
  void PutF64Array(std::span<const double> v);

  // Appends bytes with no length prefix, e.g. a value the reader knows the size of.
  void PutRaw(std::string_view bytes);

  // OK, or the first error (TooLarge, naming what did not fit). When not OK the output holds a
  // partial encoding and must be discarded.
  const Status& status() const { return status_; }
  // Bytes in the output string, including anything it held before this Encoder.
  size_t size() const { return out_->size(); }

 private:
  template <typename T>
  void PutArray(std::span<const T> v, const char* type_name);
  bool FitsU32(size_t n, std::string_view kind, std::string_view prefix);

  std::string* out_;
  Status status_;
};

}  // namespace sluice::wire
