// Tensor element types and conversions: dtype names and sizes, float16 and bfloat16 encoding
// and decoding (exhaustively over every 16-bit pattern, and against the compiler's and a
// reference rounding on random floats), and whole tensors to and from float32.
#include "workers/model/tensor_dtype.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "workers/model/safetensors.h"

namespace sluice::model {
namespace tensor_dtype_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::byte> Encode(const std::vector<float>& values, DType dtype) {
  Result<std::vector<std::byte>> bytes = FromFloat32(values, dtype);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<std::byte>{};
}

// ---------------------------------------------------------------------------------------------
// DTypes.

TEST(SafetensorsDTypeTest, NamesAndSizes) {
  EXPECT_EQ(DTypeName(DType::kBF16), "BF16");
  EXPECT_EQ(ParseDType("F16"), DType::kF16);
  EXPECT_EQ(ParseDType("BOOL"), DType::kBool);
  EXPECT_EQ(ParseDType("f32"), std::nullopt);
  EXPECT_EQ(ParseDType("F8_E4M3"), std::nullopt);
  EXPECT_EQ(DTypeSize(DType::kF32), 4u);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kI64), 8u);
  EXPECT_EQ(DTypeSize(DType::kU8), 1u);
}

// ---------------------------------------------------------------------------------------------
// Element conversions.

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }
float FromBits(uint32_t b) { return std::bit_cast<float>(b); }

TEST(Float16Test, DecodesSpecialValuesExactly) {
  EXPECT_EQ(Float16BitsToFloat32(0x3c00), 1.0f);
  EXPECT_EQ(Float16BitsToFloat32(0xc000), -2.0f);
  EXPECT_EQ(Float16BitsToFloat32(0x7bff), 65504.0f);
  EXPECT_EQ(Float16BitsToFloat32(0x0001), std::ldexp(1.0f, -24));     // Least subnormal.
  EXPECT_EQ(Float16BitsToFloat32(0x03ff), std::ldexp(1023.0f, -24));  // Greatest subnormal.
  EXPECT_EQ(Float16BitsToFloat32(0x0400), std::ldexp(1.0f, -14));     // Least normal.
  EXPECT_EQ(Bits(Float16BitsToFloat32(0x8000)), 0x80000000u);         // -0.
  EXPECT_EQ(Float16BitsToFloat32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Float16BitsToFloat32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Float16BitsToFloat32(0x7e00)));
  EXPECT_TRUE(std::isnan(Float16BitsToFloat32(0x7c01)));  // Signalling NaN stays NaN.
  EXPECT_TRUE(std::signbit(Float16BitsToFloat32(0xfe00)));
  EXPECT_EQ(Bits(Float16BitsToFloat32(0x7e5a)), 0x7fcb4000u);  // Payload kept.
}

TEST(Float16Test, EncodesWithRoundToNearestEven) {
  EXPECT_EQ(Float32ToFloat16Bits(1.0f), 0x3c00);
  EXPECT_EQ(Float32ToFloat16Bits(-0.0f), 0x8000);
  EXPECT_EQ(Float32ToFloat16Bits(0.0f), 0x0000);
  // Ties between 1 and 1 + 2^-10 go to the even mantissa.
  EXPECT_EQ(Float32ToFloat16Bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(Float32ToFloat16Bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(Float32ToFloat16Bits(FromBits(Bits(1.0f + std::ldexp(1.0f, -11)) + 1)), 0x3c01);
  // Max, and the overflow boundary: 65519.99 rounds down, 65520 (a tie) goes to Inf.
  EXPECT_EQ(Float32ToFloat16Bits(65504.0f), 0x7bff);
  EXPECT_EQ(Float32ToFloat16Bits(65519.0f), 0x7bff);
  EXPECT_EQ(Float32ToFloat16Bits(FromBits(Bits(65520.0f) - 1)), 0x7bff);
  EXPECT_EQ(Float32ToFloat16Bits(65520.0f), 0x7c00);
  EXPECT_EQ(Float32ToFloat16Bits(-1e10f), 0xfc00);
  EXPECT_EQ(Float32ToFloat16Bits(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(Float32ToFloat16Bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(Float32ToFloat16Bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  // Subnormals.
  const float unit = std::ldexp(1.0f, -24);
  EXPECT_EQ(Float32ToFloat16Bits(unit), 0x0001);
  EXPECT_EQ(Float32ToFloat16Bits(0.5f * unit), 0x0000);  // Tie to even: 0.
  EXPECT_EQ(Float32ToFloat16Bits(-0.5f * unit), 0x8000);
  EXPECT_EQ(Float32ToFloat16Bits(FromBits(Bits(0.5f * unit) + 1)), 0x0001);
  EXPECT_EQ(Float32ToFloat16Bits(1.5f * unit), 0x0002);  // Tie between 1 and 2: 2.
  EXPECT_EQ(Float32ToFloat16Bits(2.5f * unit), 0x0002);  // Tie between 2 and 3: 2.
  EXPECT_EQ(Float32ToFloat16Bits(0.25f * unit), 0x0000);
  EXPECT_EQ(Float32ToFloat16Bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(Float32ToFloat16Bits(1023.0f * unit), 0x03ff);
  EXPECT_EQ(Float32ToFloat16Bits(1023.5f * unit), 0x0400);  // Rounds up into the normals.
  EXPECT_EQ(Float32ToFloat16Bits(std::ldexp(1.0f, -14)), 0x0400);
  // NaN stays NaN, sign kept, never becomes Inf (payload only in low bits).
  EXPECT_EQ(Float32ToFloat16Bits(std::numeric_limits<float>::quiet_NaN()) & 0x7e00, 0x7e00);
  EXPECT_EQ(Float32ToFloat16Bits(FromBits(0xff800001u)), 0xfe00);
  EXPECT_EQ(Float32ToFloat16Bits(FromBits(0x7fcb4000u)), 0x7e5a);
}

TEST(Float16Test, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f = Float16BitsToFloat32(static_cast<uint16_t>(h));
    uint16_t back = Float32ToFloat16Bits(f);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) {
      EXPECT_EQ(back, h | 0x200) << h;  // NaNs come back quiet.
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

#ifdef __FLT16_MAX__
TEST(Float16Test, MatchesCompilerConversionOnRandomFloats) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  // Bias towards the half range and rounding boundaries.
  std::uniform_int_distribution<uint32_t> near(0x30000000u, 0x47ffffffu);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = (i % 2 == 0) ? any(rng) : (near(rng) | (any(rng) & 0x80000000u));
    if (i % 4 == 1) bits = (bits & 0xffffe000u) | 0x1000u;  // An exact tie for normals.
    float f = FromBits(bits);
    if (std::isnan(f)) continue;
    auto expected = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    ASSERT_EQ(Float32ToFloat16Bits(f), expected) << std::hex << bits;
  }
}
#endif

// Independent reference: pick the nearer of the two bf16 neighbours in double arithmetic.
uint16_t ReferenceBFloat16(float f) {
  uint32_t bits = Bits(f);
  uint32_t down = bits & 0xffff0000u;
  uint32_t up = down + 0x10000u;
  double d = f;
  double lo = FromBits(down);
  double hi = (up & 0x7fffffffu) >= 0x7f800000u ? std::ldexp(std::copysign(1.0, d), 128)
                                                : static_cast<double>(FromBits(up));
  double dlo = std::fabs(d - lo);
  double dhi = std::fabs(hi - d);
  if (dlo < dhi) return static_cast<uint16_t>(down >> 16);
  if (dhi < dlo) return static_cast<uint16_t>(up >> 16);
  return static_cast<uint16_t>(((down >> 16) & 1) == 0 ? down >> 16 : up >> 16);
}

TEST(BFloat16Test, EdgeCases) {
  EXPECT_EQ(Float32ToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(Float32ToBFloat16Bits(-0.0f), 0x8000);
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x3f808000u)), 0x3f80);  // Tie, even stays.
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x3f818000u)), 0x3f82);  // Tie, odd rounds up.
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x3f807fffu)), 0x3f80);
  // Max finite bf16 and overflow.
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x7f7f0000u)), 0x7f7f);
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x7f7f8000u)), 0x7f80);  // Tie on odd: Inf.
  EXPECT_EQ(Float32ToBFloat16Bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(Float32ToBFloat16Bits(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(Float32ToBFloat16Bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(Float32ToBFloat16Bits(-std::numeric_limits<float>::infinity()), 0xff80);
  // Subnormals round within the subnormals (same exponent range as float).
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x00008000u)), 0x0000);  // Tie to even zero.
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x00018000u)), 0x0002);
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x007fffffu)), 0x0080);  // Up to the least normal.
  EXPECT_EQ(BFloat16BitsToFloat32(0x0001), FromBits(0x00010000u));
  // NaN: quiet, sign and payload kept; a payload only in the low bits does not become Inf.
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0x7f800001u)), 0x7fc0);
  EXPECT_EQ(Float32ToBFloat16Bits(FromBits(0xffc12345u)), 0xffc1);
  EXPECT_TRUE(std::isnan(BFloat16BitsToFloat32(0x7f81)));
  EXPECT_EQ(BFloat16BitsToFloat32(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_EQ(BFloat16BitsToFloat32(0xc040), -3.0f);
}

TEST(BFloat16Test, EveryBFloat16RoundTripsAndRandomFloatsMatchReference) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    uint16_t back = Float32ToBFloat16Bits(BFloat16BitsToFloat32(static_cast<uint16_t>(h)));
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0) {
      EXPECT_EQ(back, h | 0x40);
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 1000000; ++i) {
    uint32_t bits = any(rng);
    if (i % 3 == 0) bits = (bits & 0xffff0000u) | 0x8000u;  // Exact ties.
    float f = FromBits(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(Float32ToBFloat16Bits(f), ReferenceBFloat16(f)) << std::hex << bits;
  }
}

TEST(ConversionTest, ToAndFromFloat32) {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.5f, 0.1f, 1e-6f, 65504.0f, 3e38f};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    Result<std::vector<std::byte>> bytes = FromFloat32(values, dtype);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(bytes->size(), values.size() * DTypeSize(dtype));
    TensorView view{"v", dtype, {static_cast<int64_t>(values.size())}, *bytes};
    Result<std::vector<float>> back = ToFloat32(view);
    ASSERT_TRUE(back.ok());
    for (size_t i = 0; i < values.size(); ++i) {
      float expected = values[i];
      if (dtype == DType::kF16) expected = Float16BitsToFloat32(Float32ToFloat16Bits(expected));
      if (dtype == DType::kBF16) expected = BFloat16BitsToFloat32(Float32ToBFloat16Bits(expected));
      EXPECT_EQ(Bits((*back)[i]), Bits(expected)) << DTypeName(dtype) << " " << i;
    }
  }
  // Inf and NaN survive every float dtype.
  std::vector<float> special = {std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN()};
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF64}) {
    std::vector<std::byte> bytes = Encode(special, dtype);
    std::vector<float> back = *ToFloat32({"s", dtype, {3}, bytes});
    EXPECT_EQ(back[0], special[0]);
    EXPECT_EQ(back[1], special[1]);
    EXPECT_TRUE(std::isnan(back[2]));
  }

  EXPECT_EQ(FromFloat32(values, DType::kI32).status().code(), StatusCode::kInvalidArgument);
  std::vector<std::byte> three(3);
  Result<std::vector<float>> bad = ToFloat32({"odd", DType::kF16, {2}, three});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("'odd'"));

  std::vector<std::byte> ints(8);
  int32_t a = -7;
  int32_t b = 1 << 20;
  std::memcpy(ints.data(), &a, 4);
  std::memcpy(ints.data() + 4, &b, 4);
  EXPECT_THAT(*ToFloat32({"i", DType::kI32, {2}, ints}), ElementsAre(-7.0f, 1048576.0f));
  std::vector<std::byte> flags = {std::byte{0}, std::byte{2}};
  EXPECT_THAT(*ToFloat32({"b", DType::kBool, {2}, flags}), ElementsAre(0.0f, 1.0f));
}

}  // namespace tensor_dtype_test
}  // namespace sluice::model
