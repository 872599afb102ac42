#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace sluice {
namespace {

TEST(Crc32cTest, StandardCheckValue) {
  const char* kCheck = "123456789";
  EXPECT_EQ(Crc32c(kCheck, 9), 0xE3069283u);
  EXPECT_EQ(crc32c_internal::ExtendSoftware(0, kCheck, 9), 0xE3069283u);
}

TEST(Crc32cTest, EmptyInput) {
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
  EXPECT_EQ(Crc32cExtend(0x12345678u, nullptr, 0), 0x12345678u);
}

// Vectors from RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32cTest, KnownVectors) {
  uint8_t buf[32];
  std::memset(buf, 0, sizeof(buf));
  EXPECT_EQ(Crc32c(buf, sizeof(buf)), 0x8A9136AAu);
  std::memset(buf, 0xff, sizeof(buf));
  EXPECT_EQ(Crc32c(buf, sizeof(buf)), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(buf, sizeof(buf)), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Crc32c(buf, sizeof(buf)), 0x113FDB5Cu);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  const std::string s = "The quick brown fox jumps over the lazy dog, twice over.";
  const uint32_t whole = Crc32c(s.data(), s.size());
  for (size_t split = 0; split <= s.size(); ++split) {
    const uint32_t a = Crc32c(s.data(), split);
    EXPECT_EQ(Crc32cExtend(a, s.data() + split, s.size() - split), whole) << "split " << split;
  }
}

TEST(Crc32cTest, MaskRoundTripsAndChangesValue) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t crc = rng();
    EXPECT_EQ(Crc32cUnmask(Crc32cMask(crc)), crc);
    EXPECT_NE(Crc32cMask(crc), crc);
    EXPECT_NE(Crc32cMask(Crc32cMask(crc)), crc);
  }
  const char* kCheck = "123456789";
  EXPECT_EQ(Crc32cUnmask(Crc32cMask(Crc32c(kCheck, 9))), 0xE3069283u);
}

// The dispatched path (hardware where available) must agree with the table path for every
// length around the 8-byte folding boundaries and every starting alignment.
TEST(Crc32cTest, HardwareAndSoftwareAgree) {
  std::mt19937 rng(12345);
  std::vector<uint8_t> buf(4096 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  const bool hw = crc32c_internal::HardwareAvailable();
  if (!hw) std::printf("note: no SSE4.2 crc32 on this host; comparing dispatch to software\n");
  for (size_t align = 0; align < 16; ++align) {
    for (size_t len = 0; len <= 300; ++len) {
      const uint8_t* p = buf.data() + align;
      const uint32_t sw = crc32c_internal::ExtendSoftware(0, p, len);
      ASSERT_EQ(Crc32c(p, len), sw) << "align " << align << " len " << len;
      if (!hw) continue;
      ASSERT_EQ(crc32c_internal::ExtendHardware(0, p, len), sw);
      // A non-zero running CRC exercises the pre/post inversion on both paths.
      const uint32_t seed = static_cast<uint32_t>(rng());
      ASSERT_EQ(crc32c_internal::ExtendHardware(seed, p, len),
                crc32c_internal::ExtendSoftware(seed, p, len));
    }
  }
  for (int i = 0; i < 200; ++i) {
    const size_t align = rng() % 16;
    const size_t len = rng() % 4096;
    const uint8_t* p = buf.data() + align;
    ASSERT_EQ(Crc32c(p, len), crc32c_internal::ExtendSoftware(0, p, len));
  }
}

}  // namespace
}  // namespace sluice
