// Tests of the wire format's Encoder and Decoder (common/wire): fixed-width, float, varint,
// string and array encodings, malformed and truncated input, and size limits checked before
// anything is allocated.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/wire/decoder.h"
#include "common/wire/encoder.h"
#include "tests/unit/common/wire_test_support.h"

namespace sluice::wire {
namespace {

using testing_support::Bytes;
using testing_support::EncodeSample;
using testing_support::HugeRegion;
using testing_support::Lim;

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

// Reads back what EncodeSample (wire_test_support.h) writes, stopping at the first error.
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
  static_assert(sizeof(size_t) >= 8, "Sluice builds for 64-bit targets");
  HugeRegion region(size_t{1} << 32);  // One byte more than a u32 length can say.
  ASSERT_TRUE(region.ok()) << "could not reserve 4 GiB of address space (ulimit -v?)";
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

}  // namespace
}  // namespace sluice::wire
