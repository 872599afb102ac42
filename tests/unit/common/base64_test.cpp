// Base64 as Kubernetes writes Secret data.
#include "common/base64.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(Base64Test, EncodesWithPadding) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xfb\xff\xbf", 3)), "+/+/");
}

TEST(Base64Test, DecodesAndRoundTrips) {
  EXPECT_EQ(Base64Decode("Zm9vYmFy").value(), "foobar");
  EXPECT_EQ(Base64Decode("Zg==").value(), "f");
  EXPECT_EQ(Base64Decode("Zg").value(), "f");  // Padding optional.
  EXPECT_EQ(Base64Decode("Zm9v\nYmFy\r\n").value(), "foobar");
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  EXPECT_EQ(Base64Decode(Base64Encode(all)).value(), all);
}

TEST(Base64Test, RejectsMalformedInput) {
  EXPECT_FALSE(Base64Decode("Zm9v*").ok());
  EXPECT_FALSE(Base64Decode("Z").ok());      // A lone character encodes nothing.
  EXPECT_FALSE(Base64Decode("Zg=Zg").ok());  // Data after padding.
  EXPECT_FALSE(Base64Decode("Zg===").ok());  // Too much padding.
}

}  // namespace
}  // namespace sluice
