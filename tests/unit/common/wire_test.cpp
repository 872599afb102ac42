#include <gtest/gtest.h>
#include <sys/mman.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "common/wire/decoder.h"
#include "common/wire/encoder.h"
#include "common/wire/format.h"
#include "common/wire/frame.h"

namespace sluice::wire {
namespace {

template <typename T>
using Lim = std::numeric_limits<T>;

std::string Bytes(std::initializer_list<int> bytes) {
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

// ---------------------------------------------------------------------------------------------
// Encoder and Decoder.

TEST(WireCodecTest, FixedWidthIsLittleEndian) {
  std::string out;
  Encoder e(&out);
  e.PutU16(0x0102);
  e.PutU32(0x01020304u);
  e.PutU64(0x0102030405060708ull);
  e.PutI32(-2);
  e.PutF32(1.0f);
  e.PutBool(true);
  ASSERT_TRUE(e.status().ok());
  EXPECT_EQ(out, Bytes({0x02, 0x01, 0x04, 0x03, 0x02, 0x01, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03,
                        0x02, 0x01, 0xfe, 0xff, 0xff, 0xff, 0x00, 0x00, 0x80, 0x3f, 0x01}));
}

TEST(WireCodecTest, FixedWidthRoundTripExtremes) {
  std::string out;
  Encoder e(&out);
  e.PutU8(0);
  e.PutU8(Lim<uint8_t>::max());
  e.PutU16(Lim<uint16_t>::max());
  e.PutU32(Lim<uint32_t>::max());
  e.PutU64(Lim<uint64_t>::max());
  e.PutI32(Lim<int32_t>::min());
  e.PutI32(Lim<int32_t>::max());
  e.PutI64(Lim<int64_t>::min());
  e.PutI64(Lim<int64_t>::max());
  e.PutBool(false);
  e.PutBool(true);
  ASSERT_TRUE(e.status().ok());

  Decoder d(out);
  uint8_t u8a, u8b;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  int32_t i32a, i32b;
  int64_t i64a, i64b;
  bool b0, b1;
  ASSERT_TRUE(d.GetU8("a", &u8a).ok());
  ASSERT_TRUE(d.GetU8("b", &u8b).ok());
  ASSERT_TRUE(d.GetU16("c", &u16).ok());
  ASSERT_TRUE(d.GetU32("d", &u32).ok());
  ASSERT_TRUE(d.GetU64("e", &u64).ok());
  ASSERT_TRUE(d.GetI32("f", &i32a).ok());
  ASSERT_TRUE(d.GetI32("g", &i32b).ok());
  ASSERT_TRUE(d.GetI64("h", &i64a).ok());
  ASSERT_TRUE(d.GetI64("i", &i64b).ok());
  ASSERT_TRUE(d.GetBool("j", &b0).ok());
  ASSERT_TRUE(d.GetBool("k", &b1).ok());
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(u8a, 0);
  EXPECT_EQ(u8b, 255);
  EXPECT_EQ(u16, Lim<uint16_t>::max());
  EXPECT_EQ(u32, Lim<uint32_t>::max());
  EXPECT_EQ(u64, Lim<uint64_t>::max());
  EXPECT_EQ(i32a, Lim<int32_t>::min());
  EXPECT_EQ(i32b, Lim<int32_t>::max());
  EXPECT_EQ(i64a, Lim<int64_t>::min());
  EXPECT_EQ(i64b, Lim<int64_t>::max());
  EXPECT_FALSE(b0);
  EXPECT_TRUE(b1);
}

TEST(WireCodecTest, FloatsAreBitExact) {
  const std::vector<uint32_t> f32_bits = {
      0x00000000u, 0x80000000u,  // +0, -0
      0x7f800000u, 0xff800000u,  // +inf, -inf
      0x7fc00000u, 0x7fa12345u,  // quiet NaN, signalling NaN with a payload
      0xffc00001u, 0x00000001u,  // negative NaN, smallest denormal
      0x7f7fffffu, 0x3f800000u,  // max, 1.0
  };
  const std::vector<uint64_t> f64_bits = {
      0x0000000000000000ull, 0x8000000000000000ull, 0x7ff0000000000000ull,
      0xfff0000000000000ull, 0x7ff8000000000000ull, 0x7ff0000000000badull,
      0xfff8000000000001ull, 0x0000000000000001ull, 0x7fefffffffffffffull,
  };
  std::string out;
  Encoder e(&out);
  for (uint32_t b : f32_bits) e.PutF32(std::bit_cast<float>(b));
  for (uint64_t b : f64_bits) e.PutF64(std::bit_cast<double>(b));
  std::vector<float> fa;
  std::vector<double> da;
  for (uint32_t b : f32_bits) fa.push_back(std::bit_cast<float>(b));
  for (uint64_t b : f64_bits) da.push_back(std::bit_cast<double>(b));
  e.PutF32Array(fa);
  e.PutF64Array(da);
  ASSERT_TRUE(e.status().ok());

  Decoder d(out);
  for (uint32_t b : f32_bits) {
    float f;
    ASSERT_TRUE(d.GetF32("f32", &f).ok());
    EXPECT_EQ(std::bit_cast<uint32_t>(f), b);
  }
  for (uint64_t b : f64_bits) {
    double f;
    ASSERT_TRUE(d.GetF64("f64", &f).ok());
    EXPECT_EQ(std::bit_cast<uint64_t>(f), b);
  }
  std::vector<float> fa2;
  std::vector<double> da2;
  ASSERT_TRUE(d.GetF32Array("fa", &fa2).ok());
  ASSERT_TRUE(d.GetF64Array("da", &da2).ok());
  ASSERT_EQ(fa2.size(), f32_bits.size());
  ASSERT_EQ(da2.size(), f64_bits.size());
  for (size_t i = 0; i < fa2.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(fa2[i]), f32_bits[i]);
  for (size_t i = 0; i < da2.size(); ++i) EXPECT_EQ(std::bit_cast<uint64_t>(da2[i]), f64_bits[i]);
  EXPECT_TRUE(d.empty());
}

TEST(WireCodecTest, VarintEncodingAndRoundTrip) {
  struct Case {
    uint64_t v;
    std::string bytes;
  };
  const std::vector<Case> cases = {
      {0, Bytes({0x00})},
      {1, Bytes({0x01})},
      {127, Bytes({0x7f})},
      {128, Bytes({0x80, 0x01})},
      {300, Bytes({0xac, 0x02})},
      {16383, Bytes({0xff, 0x7f})},
      {16384, Bytes({0x80, 0x80, 0x01})},
      {Lim<uint32_t>::max(), Bytes({0xff, 0xff, 0xff, 0xff, 0x0f})},
      {Lim<uint64_t>::max(), Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})},
  };
  for (const Case& c : cases) {
    std::string out;
    Encoder e(&out);
    e.PutVarint(c.v);
    EXPECT_EQ(out, c.bytes) << c.v;
    Decoder d(out);
    uint64_t got = 0;
    ASSERT_TRUE(d.GetVarint("v", &got).ok()) << c.v;
    EXPECT_EQ(got, c.v);
    EXPECT_TRUE(d.empty());
  }
}

TEST(WireCodecTest, SignedVarintZigzag) {
  struct Case {
    int64_t v;
    std::string bytes;
  };
  const std::vector<Case> cases = {
      {0, Bytes({0x00})},
      {-1, Bytes({0x01})},
      {1, Bytes({0x02})},
      {-2, Bytes({0x03})},
      {-64, Bytes({0x7f})},
      {64, Bytes({0x80, 0x01})},
      {Lim<int64_t>::max(), Bytes({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})},
      {Lim<int64_t>::min(), Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})},
  };
  for (const Case& c : cases) {
    std::string out;
    Encoder e(&out);
    e.PutSignedVarint(c.v);
    EXPECT_EQ(out, c.bytes) << c.v;
    Decoder d(out);
    int64_t got = 0;
    ASSERT_TRUE(d.GetSignedVarint("v", &got).ok()) << c.v;
    EXPECT_EQ(got, c.v);
  }
}

TEST(WireCodecTest, MalformedVarints) {
  uint64_t v = 7;
  {
    const std::string eleven(10, '\x80');  // Ten continuation bytes, no end.
    const std::string input = eleven + Bytes({0x00});
    Decoder d(input);
    Status s = d.GetVarint("seq", &v);
    EXPECT_EQ(s.code(), StatusCode::kCorruption);
    EXPECT_EQ(s.field(), "seq");
    EXPECT_NE(s.message().find("longer than 10 bytes"), std::string::npos) << s.ToString();
  }
  {
    const std::string input = std::string(9, '\xff') + Bytes({0x02});  // Bit 64 set.
    Decoder d(input);
    Status s = d.GetVarint("seq", &v);
    EXPECT_EQ(s.code(), StatusCode::kCorruption);
    EXPECT_NE(s.message().find("overflows"), std::string::npos) << s.ToString();
  }
  {
    const std::string input = Bytes({0x80, 0x80});
    Decoder d(input);
    Status s = d.GetVarint("seq", &v);
    EXPECT_EQ(s.code(), StatusCode::kCorruption);
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.ToString();
    EXPECT_EQ(d.position(), 0u);
  }
  {
    Decoder d("");
    EXPECT_EQ(d.GetVarint("seq", &v).code(), StatusCode::kCorruption);
  }
  EXPECT_EQ(v, 7u);  // Failed reads leave the output alone.
  {
    const std::string input = Bytes({0x80, 0x00});  // Non-minimal zero is accepted.
    Decoder d(input);
    ASSERT_TRUE(d.GetVarint("seq", &v).ok());
    EXPECT_EQ(v, 0u);
  }
}

TEST(WireCodecTest, Strings) {
  const std::string binary("a\0b\xff\x80", 5);
  std::string out;
  Encoder e(&out);
  e.PutString("");
  e.PutString("hello");
  e.PutString(binary);
  ASSERT_TRUE(e.status().ok());
  EXPECT_EQ(out.substr(0, 9), Bytes({0, 0, 0, 0, 5, 0, 0, 0, 'h'}));

  Decoder d(out);
  std::string a = "junk", b, c;
  std::string_view cv;
  ASSERT_TRUE(d.GetString("a", &a).ok());
  ASSERT_TRUE(d.GetString("b", &b).ok());
  ASSERT_TRUE(d.GetStringView("c", &cv).ok());
  EXPECT_EQ(a, "");
  EXPECT_EQ(b, "hello");
  EXPECT_EQ(cv, binary);
  EXPECT_GE(cv.data(), out.data());  // A view into the input, not a copy.
  EXPECT_TRUE(d.empty());
}

TEST(WireCodecTest, ArraysOfEveryType) {
  const std::vector<uint8_t> u8 = {0, 1, 255};
  const std::vector<uint16_t> u16 = {0, 1, 0xffff};
  const std::vector<uint32_t> u32 = {0, 1, 0xffffffffu};
  const std::vector<uint64_t> u64 = {0, 1, Lim<uint64_t>::max()};
  const std::vector<int32_t> i32 = {0, -1, Lim<int32_t>::min(), Lim<int32_t>::max()};
  const std::vector<int64_t> i64 = {0, -1, Lim<int64_t>::min(), Lim<int64_t>::max()};
  const std::vector<float> f32 = {0.0f, -1.5f, Lim<float>::infinity(), Lim<float>::max()};
  const std::vector<double> f64 = {0.0, -1.5, -Lim<double>::infinity(), Lim<double>::lowest()};

  std::string out;
  Encoder e(&out);
  e.PutU8Array(u8);
  e.PutU16Array(u16);
  e.PutU32Array(u32);
  e.PutU64Array(u64);
  e.PutI32Array(i32);
  e.PutI64Array(i64);
  e.PutF32Array(f32);
  e.PutF64Array(f64);
  // And every type empty.
  e.PutU8Array({});
  e.PutU16Array({});
  e.PutU32Array({});
  e.PutU64Array({});
  e.PutI32Array({});
  e.PutI64Array({});
  e.PutF32Array({});
  e.PutF64Array({});
  ASSERT_TRUE(e.status().ok());

  Decoder d(out);
  std::vector<uint8_t> ru8;
  std::vector<uint16_t> ru16;
  std::vector<uint32_t> ru32;
  std::vector<uint64_t> ru64;
  std::vector<int32_t> ri32;
  std::vector<int64_t> ri64;
  std::vector<float> rf32;
  std::vector<double> rf64;
  ASSERT_TRUE(d.GetU8Array("u8", &ru8).ok());
  ASSERT_TRUE(d.GetU16Array("u16", &ru16).ok());
  ASSERT_TRUE(d.GetU32Array("u32", &ru32).ok());
  ASSERT_TRUE(d.GetU64Array("u64", &ru64).ok());
  ASSERT_TRUE(d.GetI32Array("i32", &ri32).ok());
  ASSERT_TRUE(d.GetI64Array("i64", &ri64).ok());
  ASSERT_TRUE(d.GetF32Array("f32", &rf32).ok());
  ASSERT_TRUE(d.GetF64Array("f64", &rf64).ok());
  EXPECT_EQ(ru8, u8);
  EXPECT_EQ(ru16, u16);
  EXPECT_EQ(ru32, u32);
  EXPECT_EQ(ru64, u64);
  EXPECT_EQ(ri32, i32);
  EXPECT_EQ(ri64, i64);
  EXPECT_EQ(rf32, f32);
  EXPECT_EQ(rf64, f64);
  // Reading into non-empty vectors replaces their contents.
  ASSERT_TRUE(d.GetU8Array("u8", &ru8).ok());
  ASSERT_TRUE(d.GetU16Array("u16", &ru16).ok());
  ASSERT_TRUE(d.GetU32Array("u32", &ru32).ok());
  ASSERT_TRUE(d.GetU64Array("u64", &ru64).ok());
  ASSERT_TRUE(d.GetI32Array("i32", &ri32).ok());
  ASSERT_TRUE(d.GetI64Array("i64", &ri64).ok());
  ASSERT_TRUE(d.GetF32Array("f32", &rf32).ok());
  ASSERT_TRUE(d.GetF64Array("f64", &rf64).ok());
  EXPECT_TRUE(ru8.empty() && ru16.empty() && ru32.empty() && ru64.empty());
  EXPECT_TRUE(ri32.empty() && ri64.empty() && rf32.empty() && rf64.empty());
  EXPECT_TRUE(d.empty());
}

TEST(WireCodecTest, ArrayLayoutIsCountThenLittleEndianElements) {
  std::string out;
  Encoder e(&out);
  const int32_t v[] = {1, -1};
  e.PutI32Array(v);
  EXPECT_EQ(out, Bytes({2, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}));
}

TEST(WireCodecTest, RawAndSkip) {
  std::string out;
  Encoder e(&out);
  e.PutRaw("abc");
  e.PutU8(9);
  Decoder d(out);
  std::string_view raw;
  ASSERT_TRUE(d.GetRaw("raw", 2, &raw).ok());
  EXPECT_EQ(raw, "ab");
  ASSERT_TRUE(d.Skip("pad", 1).ok());
  EXPECT_EQ(d.Skip("pad", 2).code(), StatusCode::kCorruption);
  EXPECT_EQ(d.GetRaw("raw", Lim<size_t>::max(), &raw).code(), StatusCode::kCorruption);
  uint8_t b;
  ASSERT_TRUE(d.GetU8("b", &b).ok());
  EXPECT_EQ(b, 9);
}

TEST(WireCodecTest, ErrorsNameTheFieldAndKeepPosition) {
  const std::string input = Bytes({1, 2, 3});
  Decoder d(input);
  uint32_t v = 42;
  Status s = d.GetU32("batch.count", &v);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.field(), "batch.count");
  EXPECT_NE(s.ToString().find("batch.count"), std::string::npos);
  EXPECT_NE(s.message().find("truncated"), std::string::npos);
  EXPECT_EQ(v, 42u);
  EXPECT_EQ(d.position(), 0u);
  uint16_t w;
  ASSERT_TRUE(d.GetU16("x", &w).ok());
  EXPECT_EQ(w, 0x0201);
  EXPECT_EQ(d.remaining(), 1u);
}

TEST(WireCodecTest, BoolMustBeZeroOrOne) {
  const std::string input = Bytes({2});
  Decoder d(input);
  bool b = false;
  Status s = d.GetBool("done", &b);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.field(), "done");
}

// A string length of 0xFFFFFFFF with 4 bytes behind it, or an array count of 2^31, must fail
// before anything is allocated: the output stays empty with no capacity.
TEST(WireCodecTest, AbsurdLengthsRejectedWithoutAllocating) {
  {
    const std::string input = Bytes({0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c', 'd'});
    Decoder d(input);
    std::string s;
    Status st = d.GetString("name", &s);
    EXPECT_EQ(st.code(), StatusCode::kCorruption);
    EXPECT_EQ(st.field(), "name");
    EXPECT_NE(st.message().find("4294967295"), std::string::npos) << st.ToString();
    EXPECT_EQ(s.capacity(), std::string().capacity());
    EXPECT_EQ(d.position(), 0u);
  }
  const std::string count_2_31 = Bytes({0x00, 0x00, 0x00, 0x80, 1, 2, 3, 4, 5, 6, 7, 8});
  const std::string count_max = Bytes({0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8});
  for (const std::string& input : {count_2_31, count_max}) {
    Decoder d(input);
    std::vector<int32_t> i32;
    std::vector<double> f64;
    std::vector<uint8_t> u8;
    std::vector<uint64_t> u64;
    Status st = d.GetI32Array("tokens", &i32);
    EXPECT_EQ(st.code(), StatusCode::kCorruption);
    EXPECT_EQ(st.field(), "tokens");
    EXPECT_EQ(d.GetF64Array("values", &f64).field(), "values");
    EXPECT_EQ(d.GetU8Array("bytes", &u8).code(), StatusCode::kCorruption);
    EXPECT_EQ(d.GetU64Array("ids", &u64).code(), StatusCode::kCorruption);
    EXPECT_EQ(i32.capacity(), 0u);
    EXPECT_EQ(f64.capacity(), 0u);
    EXPECT_EQ(u8.capacity(), 0u);
    EXPECT_EQ(u64.capacity(), 0u);
    EXPECT_EQ(d.position(), 0u);
  }
  {
    // One element short: count 3 of i32 with 11 bytes behind it.
    const std::string input = Bytes({3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0});
    Decoder d(input);
    std::vector<int32_t> v;
    EXPECT_EQ(d.GetI32Array("tokens", &v).code(), StatusCode::kCorruption);
    EXPECT_EQ(v.capacity(), 0u);
  }
}

// Writes one of every kind of value; Read reads them back, stopping at the first error.
std::string EncodeSample() {
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

Status DecodeSample(std::string_view in) {
  Decoder d(in);
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64, var;
  int32_t i32;
  int64_t i64, svar;
  float f32;
  double f64;
  bool b;
  std::string s;
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<int64_t> ids;
  std::vector<uint8_t> bytes;
  SLUICE_RETURN_IF_ERROR(d.GetU8("u8", &u8));
  SLUICE_RETURN_IF_ERROR(d.GetU16("u16", &u16));
  SLUICE_RETURN_IF_ERROR(d.GetU32("u32", &u32));
  SLUICE_RETURN_IF_ERROR(d.GetU64("u64", &u64));
  SLUICE_RETURN_IF_ERROR(d.GetI32("i32", &i32));
  SLUICE_RETURN_IF_ERROR(d.GetI64("i64", &i64));
  SLUICE_RETURN_IF_ERROR(d.GetF32("f32", &f32));
  SLUICE_RETURN_IF_ERROR(d.GetF64("f64", &f64));
  SLUICE_RETURN_IF_ERROR(d.GetBool("bool", &b));
  SLUICE_RETURN_IF_ERROR(d.GetVarint("varint", &var));
  SLUICE_RETURN_IF_ERROR(d.GetSignedVarint("svarint", &svar));
  SLUICE_RETURN_IF_ERROR(d.GetString("name", &s));
  SLUICE_RETURN_IF_ERROR(d.GetI32Array("tokens", &tokens));
  SLUICE_RETURN_IF_ERROR(d.GetF32Array("logprobs", &logprobs));
  SLUICE_RETURN_IF_ERROR(d.GetI64Array("ids", &ids));
  SLUICE_RETURN_IF_ERROR(d.GetU8Array("bytes", &bytes));
  if (u8 != 1 || u16 != 2 || u32 != 3 || u64 != 4 || i32 != -5 || i64 != -6 || f32 != 7.5f ||
      f64 != 8.25 || !b || var != 300 || svar != -300 || s != "trajectory-0" ||
      tokens != std::vector<int32_t>{101, 102, 103} ||
      logprobs != std::vector<float>{-0.5f, -1.25f} ||
      ids != std::vector<int64_t>{Lim<int64_t>::min()} || bytes != std::vector<uint8_t>{9, 8, 7} ||
      !d.empty()) {
    return Status::Internal("sample decoded to different values");
  }
  return Status::Ok();
}

TEST(WireCodecTest, MessageRoundTripAndEveryTruncation) {
  const std::string full = EncodeSample();
  ASSERT_TRUE(DecodeSample(full).ok()) << DecodeSample(full).ToString();
  for (size_t n = 0; n < full.size(); ++n) {
    // A copy of exactly n bytes, so AddressSanitizer sees any read past the prefix.
    const std::string prefix = full.substr(0, n);
    Status s = DecodeSample(prefix);
    ASSERT_EQ(s.code(), StatusCode::kCorruption) << "prefix " << n << ": " << s.ToString();
    EXPECT_FALSE(s.field().empty()) << "prefix " << n;
  }
}

TEST(WireCodecTest, EncoderRejectsLengthsOverU32) {
  if constexpr (sizeof(size_t) <= 4) GTEST_SKIP() << "needs a 64-bit address space";
  HugeRegion region(size_t{1} << 32);  // One byte more than a u32 length can say.
  if (!region.ok()) GTEST_SKIP() << "could not reserve 4 GiB of address space";
  std::string out;
  Encoder e(&out);
  e.PutU8(1);
  e.PutString(region.view());
  EXPECT_EQ(e.status().code(), StatusCode::kTooLarge);
  EXPECT_NE(e.status().message().find("string length"), std::string::npos);
  e.PutU32(5);  // Ignored once the status is an error.
  EXPECT_EQ(out.size(), 1u);

  std::string out2;
  Encoder e2(&out2);
  e2.PutU8Array(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(region.view().data()),
                                         region.view().size()));
  EXPECT_EQ(e2.status().code(), StatusCode::kTooLarge);
  EXPECT_TRUE(out2.empty());
}

// ---------------------------------------------------------------------------------------------
// Frames.

// A frame header with the given fields and a correct header CRC.
std::string Header(uint16_t version, uint16_t type, uint16_t flags, uint16_t reserved,
                   uint32_t payload_length) {
  std::string h;
  Encoder e(&h);
  e.PutU32(kMagic);
  e.PutU16(version);
  e.PutU16(type);
  e.PutU16(flags);
  e.PutU16(reserved);
  e.PutU32(payload_length);
  e.PutU32(Crc32cMask(Crc32c(h.data(), h.size())));
  return h;
}

// A whole frame with arbitrary header fields and correct CRCs.
std::string CustomFrame(uint16_t version, uint16_t flags, uint16_t reserved,
                        std::string_view payload) {
  std::string f = Header(version, 7, flags, reserved, static_cast<uint32_t>(payload.size()));
  f.append(payload);
  Encoder e(&f);
  e.PutU32(Crc32cMask(Crc32c(f.data(), f.size())));
  return f;
}

std::string MustEncode(uint16_t type, std::string_view payload) {
  Result<std::string> r = EncodeFrame(type, payload);
  SLUICE_CHECK(r.ok());
  return std::move(r).value();
}

TEST(WireFrameTest, LayoutMatchesSpec) {
  const std::string f = MustEncode(0x0102, "hi");
  ASSERT_EQ(f.size(), kFrameOverhead + 2);
  EXPECT_EQ(f.substr(0, 4), "SLW1");
  EXPECT_EQ(f.substr(4, 12), Bytes({1, 0, 2, 1, 0, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_EQ(f.substr(0, 20), Header(1, 0x0102, 0, 0, 2));
  EXPECT_EQ(f.substr(20, 2), "hi");
  std::string trailer;
  Encoder(&trailer).PutU32(Crc32cMask(Crc32c(f.data(), 22)));
  EXPECT_EQ(f.substr(22), trailer);
}

TEST(WireFrameTest, SingleAndEmptyFrames) {
  for (const std::string& payload : {std::string(), std::string("payload"), EncodeSample()}) {
    const std::string f = MustEncode(42, payload);
    FrameReader r(f);
    ASSERT_FALSE(r.AtEnd());
    Result<Frame> frame = r.Next();
    ASSERT_TRUE(frame.ok()) << frame.status().ToString();
    EXPECT_EQ(frame->type, 42);
    EXPECT_EQ(frame->payload, payload);
    EXPECT_TRUE(r.AtEnd());
    EXPECT_EQ(r.Next().status().code(), StatusCode::kNotFound);
  }
  FrameReader empty("");
  EXPECT_TRUE(empty.AtEnd());
}

TEST(WireFrameTest, BeginFinishFrameMatchesEncodeFrame) {
  std::string out = "prefix";
  const size_t start = BeginFrame(&out);
  EXPECT_EQ(start, 6u);
  Encoder e(&out);
  e.PutString("trajectory");
  const float values[] = {1.0f, 2.0f};
  e.PutF32Array(values);
  ASSERT_TRUE(e.status().ok());
  ASSERT_TRUE(FinishFrame(9, start, &out).ok());

  std::string payload;
  Encoder p(&payload);
  p.PutString("trajectory");
  p.PutF32Array(values);
  EXPECT_EQ(out, "prefix" + MustEncode(9, payload));

  std::string appended = "prefix";
  ASSERT_TRUE(AppendFrame(9, payload, &appended).ok());
  EXPECT_EQ(appended, out);
}

TEST(WireFrameTest, WritersRejectPayloadsOverTheHardCap) {
  if constexpr (sizeof(size_t) <= 4) GTEST_SKIP() << "needs a 64-bit address space";
  HugeRegion region(size_t{kMaxFramePayloadBytes} + 1);
  if (!region.ok()) GTEST_SKIP() << "could not reserve 1 GiB of address space";
  std::string out = "keep";
  Status s = AppendFrame(1, region.view(), &out);
  EXPECT_EQ(s.code(), StatusCode::kTooLarge);
  EXPECT_EQ(s.field(), "frame.payload_length");
  EXPECT_EQ(out, "keep");
  EXPECT_EQ(EncodeFrame(1, region.view()).status().code(), StatusCode::kTooLarge);
}

std::vector<std::pair<uint16_t, std::string>> SampleFrames() {
  std::mt19937 rng(99);
  std::vector<std::pair<uint16_t, std::string>> frames;
  frames.emplace_back(1, "");
  frames.emplace_back(2, EncodeSample());
  frames.emplace_back(0xffff, "x");
  std::string big(70000, '\0');
  for (char& c : big) c = static_cast<char>(rng());
  frames.emplace_back(3, big);
  frames.emplace_back(0, "last");
  return frames;
}

TEST(WireFrameTest, MultiFrameStreamRoundTrip) {
  const auto frames = SampleFrames();
  std::string stream;
  for (const auto& [type, payload] : frames) ASSERT_TRUE(AppendFrame(type, payload, &stream).ok());

  FrameReader r(stream);
  for (const auto& [type, payload] : frames) {
    ASSERT_FALSE(r.AtEnd());
    Result<Frame> f = r.Next();
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(f->type, type);
    EXPECT_EQ(f->payload, payload);
  }
  EXPECT_TRUE(r.AtEnd());
  EXPECT_EQ(r.offset(), stream.size());

  // The same bytes through the stream reader, in chunks of 1 byte, then of random sizes.
  std::mt19937 rng(5);
  for (int pass = 0; pass < 2; ++pass) {
    FrameStreamReader sr;
    size_t next = 0;
    size_t pos = 0;
    while (pos < stream.size()) {
      const size_t chunk = pass == 0 ? 1 : 1 + rng() % 5000;
      const size_t n = std::min(chunk, stream.size() - pos);
      sr.Append(std::string_view(stream).substr(pos, n));
      pos += n;
      while (true) {
        Result<std::optional<Frame>> f = sr.Next();
        ASSERT_TRUE(f.ok()) << f.status().ToString();
        if (!f->has_value()) {
          EXPECT_GT(sr.BytesWanted(), 0u);
          break;
        }
        ASSERT_LT(next, frames.size());
        EXPECT_EQ((*f)->type, frames[next].first);
        EXPECT_EQ((*f)->payload, frames[next].second);
        ++next;
      }
    }
    EXPECT_EQ(next, frames.size());
    EXPECT_EQ(sr.buffered(), 0u);
    EXPECT_TRUE(sr.Finish().ok());
  }
}

TEST(WireFrameTest, StreamReaderSaysHowManyBytesItWants) {
  const std::string f = MustEncode(1, std::string(100, 'p'));
  FrameStreamReader sr;
  EXPECT_EQ(sr.BytesWanted(), kFrameHeaderSize);
  sr.Append(std::string_view(f).substr(0, 5));
  ASSERT_FALSE(sr.Next()->has_value());
  EXPECT_EQ(sr.BytesWanted(), kFrameHeaderSize - 5);
  sr.Append(std::string_view(f).substr(5, 20));
  ASSERT_FALSE(sr.Next()->has_value());
  EXPECT_EQ(sr.BytesWanted(), f.size() - 25);
  sr.Append(std::string_view(f).substr(25));
  EXPECT_EQ(sr.BytesWanted(), 0u);
  ASSERT_TRUE(sr.Next()->has_value());
}

// Every prefix of a frame, and of a two-frame stream, is reported as truncated (never read past,
// never mistaken for a clean end) except the empty prefix and the frame boundaries.
TEST(WireFrameTest, TruncationAtEveryOffset) {
  const std::string one = MustEncode(5, EncodeSample());
  const std::string two = one + MustEncode(6, "second frame payload");
  for (const std::string* input : {&one, &two}) {
    for (size_t n = 0; n < input->size(); ++n) {
      const std::string prefix = input->substr(0, n);  // Exact-size copy for ASan.
      FrameReader r(prefix);
      size_t frames = 0;
      Status error;
      while (!r.AtEnd()) {
        Result<Frame> f = r.Next();
        if (!f.ok()) {
          error = f.status();
          break;
        }
        ++frames;
      }
      if (n == 0 || n == one.size()) {
        EXPECT_TRUE(error.ok()) << n << ": " << error.ToString();
        EXPECT_EQ(frames, n == 0 ? 0u : 1u);
        continue;
      }
      EXPECT_EQ(frames, n > one.size() ? 1u : 0u) << n;
      EXPECT_EQ(error.code(), StatusCode::kCorruption) << n << ": " << error.ToString();
      EXPECT_EQ(error.field(), "frame") << n;
      EXPECT_EQ(error.message().rfind("truncated frame", 0), 0u) << error.message();
      EXPECT_TRUE(r.truncated());
      EXPECT_EQ(r.offset(), n > one.size() ? one.size() : 0u);

      // The stream reader waits for more instead, and Finish reports the truncation.
      FrameStreamReader sr;
      sr.Append(prefix);
      size_t stream_frames = 0;
      while (true) {
        Result<std::optional<Frame>> f = sr.Next();
        ASSERT_TRUE(f.ok()) << n << ": " << f.status().ToString();
        if (!f->has_value()) break;
        ++stream_frames;
      }
      EXPECT_EQ(stream_frames, frames);
      EXPECT_GT(sr.BytesWanted(), 0u);
      Status fin = sr.Finish();
      EXPECT_EQ(fin.code(), StatusCode::kCorruption) << n;
      EXPECT_EQ(fin.message().rfind("truncated frame", 0), 0u) << fin.message();
    }
  }
}

// Any single-bit flip is caught: in magic or version by the header checks, elsewhere by the header
// CRC or the frame CRC. The stream reader reports it too, rather than waiting for more bytes.
TEST(WireFrameTest, EverySingleBitFlipIsCaught) {
  const std::string good = MustEncode(3, "bit flips must not pass: " + EncodeSample());
  for (size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      FrameReader r(bad);
      Result<Frame> f = r.Next();
      ASSERT_FALSE(f.ok()) << "byte " << byte << " bit " << bit;
      const std::string field = f.status().field();
      SCOPED_TRACE("byte " + std::to_string(byte) + " bit " + std::to_string(bit));
      if (byte < 4) {
        EXPECT_EQ(field, "frame.magic");
      } else if (byte < 6) {
        EXPECT_EQ(field, "frame.version");
      } else if (byte < kFrameHeaderSize) {
        EXPECT_EQ(field, "frame.header_crc");
      } else {
        EXPECT_EQ(field, "frame.crc");  // Payload or trailer.
      }
      FrameStreamReader sr;
      sr.Append(bad);
      EXPECT_FALSE(sr.Next().ok()) << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(WireFrameTest, OversizeLengthRejectedFromTheHeaderAlone) {
  FrameReaderOptions options;
  options.max_payload_bytes = 1024;
  const std::string f = MustEncode(1, std::string(1025, 'x'));
  const std::string header_only = f.substr(0, kFrameHeaderSize);

  FrameReader r(header_only, options);
  Result<Frame> got = r.Next();
  EXPECT_EQ(got.status().code(), StatusCode::kTooLarge);
  EXPECT_EQ(got.status().field(), "frame.payload_length");
  EXPECT_NE(got.status().message().find("1025"), std::string::npos);
  EXPECT_NE(got.status().message().find("1024"), std::string::npos);
  EXPECT_FALSE(r.truncated());

  FrameStreamReader sr(options);
  sr.Append(header_only);
  EXPECT_EQ(sr.Next().status().code(), StatusCode::kTooLarge);
  sr.Append(f.substr(kFrameHeaderSize));  // Dropped: the stream is dead.
  EXPECT_EQ(sr.buffered(), header_only.size());
  EXPECT_EQ(sr.Finish().code(), StatusCode::kTooLarge);

  // A payload exactly at the limit is fine.
  const std::string limit_frame = MustEncode(1, std::string(1024, 'x'));
  FrameReader at_limit(limit_frame, options);
  EXPECT_TRUE(at_limit.Next().ok());

  // 0xFFFFFFFF with the default limit, and with a limit above the hard cap (clamped to it).
  const std::string huge = Header(1, 1, 0, 0, 0xffffffffu);
  EXPECT_EQ(FrameReader(huge).Next().status().code(), StatusCode::kTooLarge);
  FrameReaderOptions unlimited;
  unlimited.max_payload_bytes = Lim<uint32_t>::max();
  EXPECT_EQ(FrameReader(huge, unlimited).Next().status().code(), StatusCode::kTooLarge);
  const std::string over_cap = Header(1, 1, 0, 0, kMaxFramePayloadBytes + 1);
  EXPECT_EQ(FrameReader(over_cap, unlimited).Next().status().code(), StatusCode::kTooLarge);
  // At the cap with a raised limit: accepted as a header, then truncated.
  const std::string at_cap_header = Header(1, 1, 0, 0, kMaxFramePayloadBytes);
  FrameReader at_cap(at_cap_header, unlimited);
  EXPECT_FALSE(at_cap.Next().ok());
  EXPECT_TRUE(at_cap.truncated());
}

TEST(WireFrameTest, BadMagic) {
  std::string f = MustEncode(1, "x");
  f[0] = 'X';
  Result<Frame> got = FrameReader(f).Next();
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(got.status().field(), "frame.magic");

  // Garbage is refused from its first bytes, e.g. an HTTP request sent to a frame port.
  FrameStreamReader sr;
  sr.Append("GE");
  Result<std::optional<Frame>> s = sr.Next();
  EXPECT_EQ(s.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(s.status().field(), "frame.magic");
  EXPECT_EQ(FrameReader("S").Next().status().field(), "frame");  // A valid prefix: truncated.
}

TEST(WireFrameTest, UnsupportedVersion) {
  const std::string newer = CustomFrame(kFormatVersion + 1, 0, 0, "from the future");
  Result<Frame> got = FrameReader(newer).Next();
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().field(), "frame.version");
  EXPECT_NE(got.status().message().find("version 2"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find("(1)"), std::string::npos) << got.status().message();

  // Known from the first 6 bytes, before the rest of a header whose layout may have changed.
  FrameStreamReader sr;
  sr.Append(newer.substr(0, 6));
  EXPECT_EQ(sr.Next().status().field(), "frame.version");

  const std::string zero = CustomFrame(0, 0, 0, "");
  EXPECT_EQ(FrameReader(zero).Next().status().field(), "frame.version");
  const std::string far = CustomFrame(0xffff, 0, 0, "");
  EXPECT_NE(FrameReader(far).Next().status().message().find("65535"), std::string::npos);
}

TEST(WireFrameTest, UnknownFlagsAndReservedBitsRejected) {
  const std::string with_flags = CustomFrame(1, 0x0001, 0, "x");
  Result<Frame> flags = FrameReader(with_flags).Next();
  EXPECT_EQ(flags.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(flags.status().field(), "frame.flags");
  const std::string with_reserved = CustomFrame(1, 0, 0x8000, "x");
  Result<Frame> reserved = FrameReader(with_reserved).Next();
  EXPECT_EQ(reserved.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reserved.status().field(), "frame.reserved");
  const std::string plain = CustomFrame(1, 0, 0, "x");
  EXPECT_TRUE(FrameReader(plain).Next().ok());
}

TEST(WireFrameTest, ErrorsAreSticky) {
  std::string stream = MustEncode(1, "a") + MustEncode(2, "b") + MustEncode(3, "c");
  stream[MustEncode(1, "a").size() + kFrameHeaderSize] ^= 1;  // Damage the second payload.
  FrameReader r(stream);
  ASSERT_TRUE(r.Next().ok());
  const size_t bad_at = r.offset();
  Status first = r.Next().status();
  EXPECT_EQ(first.field(), "frame.crc");
  EXPECT_NE(first.message().find("offset " + std::to_string(bad_at)), std::string::npos);
  EXPECT_EQ(r.Next().status(), first);
  EXPECT_FALSE(r.AtEnd());
  EXPECT_EQ(r.offset(), bad_at);
  EXPECT_FALSE(r.truncated());

  FrameStreamReader sr;
  sr.Append(stream);
  ASSERT_TRUE(sr.Next().ok());
  EXPECT_FALSE(sr.Next().ok());
  EXPECT_FALSE(sr.Next().ok());
  EXPECT_FALSE(sr.Finish().ok());
}

TEST(WireFrameTest, ScanFrameReportsWhatItNeeds) {
  const std::string f = MustEncode(4, "abc");
  Result<FrameScan> s = ScanFrame(std::string_view(f).substr(0, 3));
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->complete);
  EXPECT_EQ(s->bytes_needed, kFrameHeaderSize);
  s = ScanFrame(std::string_view(f).substr(0, kFrameHeaderSize));
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->complete);
  EXPECT_EQ(s->bytes_needed, f.size());
  const std::string with_more = f + "trailing bytes of the next frame";
  s = ScanFrame(with_more);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->complete);
  EXPECT_EQ(s->frame_size, f.size());
  EXPECT_EQ(s->frame.type, 4);
  EXPECT_EQ(s->frame.payload, "abc");
}

}  // namespace
}  // namespace sluice::wire
