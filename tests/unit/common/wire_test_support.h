// What the wire-format tests (wire_*_test.cpp) share: a byte-string literal helper, a huge
// never-touched memory region for size checks, and a sample message with one of every kind of
// value.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "common/wire/encoder.h"

namespace sluice::wire::testing_support {

template <typename T>
using Lim = std::numeric_limits<T>;

inline std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

// A read-only, never-touched mapping of n bytes: a valid range for size checks that must reject
// it before reading, without needing n bytes of memory.
class HugeRegion {
 public:
  explicit HugeRegion(size_t n) : n_(n) {
    p_ = mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  }
  ~HugeRegion() {
    if (p_ != MAP_FAILED) munmap(p_, n_);
  }
  bool ok() const { return p_ != MAP_FAILED; }
  std::string_view view() const { return {static_cast<const char*>(p_), n_}; }

 private:
  size_t n_;
  void* p_;
};

// Writes one of every kind of value; DecodeSample (wire_codec_test.cpp) reads them back, stopping
// at the first error.
inline std::string EncodeSample() {
  std::string out;
  Encoder e(&out);
  e.PutU8(1);
  e.PutU16(2);
  e.PutU32(3);
  e.PutU64(4);
  e.PutI32(-5);
  e.PutI64(-6);
  e.PutF32(7.5f);
  e.PutF64(8.25);
  e.PutBool(true);
  e.PutVarint(300);
  e.PutSignedVarint(-300);
  e.PutString("trajectory-0");
  const int32_t tokens[] = {101, 102, 103};
  e.PutI32Array(tokens);
  const float logprobs[] = {-0.5f, -1.25f};
  e.PutF32Array(logprobs);
  const int64_t ids[] = {Lim<int64_t>::min()};
  e.PutI64Array(ids);
  e.PutU8Array(std::vector<uint8_t>{9, 8, 7});
  return out;
}

}  // namespace sluice::wire::testing_support
