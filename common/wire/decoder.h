// Decoder: reads values in the Sluice wire encoding (docs/wire-format.md) from a byte view.
//
// The input is untrusted. Every read is bounds-checked before any byte is touched; every declared
// string length or array count is checked against the bytes actually remaining before anything
// is allocated, so a hostile length (0xFFFFFFFF with 4 bytes left) costs nothing. Each Get takes
// the name of the field being read ("trajectory.rewards") and a failed read returns a Status whose
// field() is that name: Corruption for truncated or malformed bytes.
//
// A failed Get leaves both the read position and *out unchanged, so a caller may report the error
// and stop; nothing is partially consumed.
//
// Ownership: non-owning. The bytes behind the view must outlive the Decoder and every view
// returned by GetStringView. Thread safety: none; one thread per Decoder. Sizes in bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::wire {

class Decoder {
 public:
  explicit Decoder(std::string_view data) : data_(data) {}
  explicit Decoder(const char* data) : data_(data) {}
  // A temporary string would die before the Decoder reads it.
  explicit Decoder(std::string&&) = delete;

  Status GetU8(std::string_view field, uint8_t* out);
  Status GetU16(std::string_view field, uint16_t* out);
  Status GetU32(std::string_view field, uint32_t* out);
  Status GetU64(std::string_view field, uint64_t* out);
  Status GetI32(std::string_view field, int32_t* out);
  Status GetI64(std::string_view field, int64_t* out);
  Status GetF32(std::string_view field, float* out);
  Status GetF64(std::string_view field, double* out);
  // Corruption unless the byte is 0 or 1: one canonical encoding per value.
  Status GetBool(std::string_view field, bool* out);

  // Corruption when the input ends mid-varint, when a varint runs past 10 bytes, or when its
  // value does not fit 64 bits. Non-minimal encodings (0x80 0x00 for 0) are accepted.
  Status GetVarint(std::string_view field, uint64_t* out);
  Status GetSignedVarint(std::string_view field, int64_t* out);

  // A u32-length-prefixed string, copied into *out.
  Status GetString(std::string_view field, std::string* out);
  // The same, without a copy: *out views the input. Also how nested messages are read: decode the
  // view with another Decoder.
  Status GetStringView(std::string_view field, std::string_view* out);

  // A u32-count-prefixed array, replacing the contents of *out.
  Status GetU8Array(std::string_view field, std::vector<uint8_t>* out);
  Status GetU16Array(std::string_view field, std::vector<uint16_t>* out);
  Status GetU32Array(std::string_view field, std::vector<uint32_t>* out);
  Status GetU64Array(std::string_view field, std::vector<uint64_t>* out);
  Status GetI32Array(std::string_view field, std::vector<int32_t>* out);
  Status GetI64Array(std::string_view field, std::vector<int64_t>* out);
  Status GetF32Array(std::string_view field, std::vector<float>* out);
  Status GetF64Array(std::string_view field, std::vector<double>* out);

  // Exactly n bytes with no prefix, as a view into the input.
  Status GetRaw(std::string_view field, size_t n, std::string_view* out);
  Status Skip(std::string_view field, size_t n);

  // Bytes consumed so far and bytes left.
  size_t position() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool empty() const { return pos_ == data_.size(); }

 private:
  // Checks that n more bytes exist; the error names the field and the shortfall.
  Status Need(std::string_view field, size_t n, std::string_view what) const;
  template <typename U>
  Status GetFixed(std::string_view field, std::string_view type, U* out);
  template <typename T>
  Status GetArray(std::string_view field, std::vector<T>* out);

  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace sluice::wire
