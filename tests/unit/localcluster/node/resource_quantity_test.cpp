#include "localcluster/node/resource_quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::node {
namespace {

using nlohmann::json;

constexpr int64_t kKi = 1024;
constexpr int64_t kMi = kKi * 1024;
constexpr int64_t kGi = kMi * 1024;
constexpr int64_t kTi = kGi * 1024;
constexpr int64_t kPi = kTi * 1024;

struct ParseCase {
  std::string text;
  int64_t milli;
};

TEST(NodeResourceQuantityTest, ParsesKubeQuantities) {
  const std::vector<ParseCase> cases = {
      {"0", 0},
      {"500m", 500},
      {"2", 2000},
      {"1.5", 1500},
      {"0.5", 500},
      {".5", 500},
      {"5.", 5000},
      {"+3", 3000},
      {"-3", -3000},
      {"100m", 100},
      {"1000m", 1000},
      {"0.1m", 1},  // Rounded up to a whole milli-unit.
      {"1.0001m", 2},
      {"0.0000001", 1},
      {"1k", 1000 * 1000},
      {"1M", int64_t{1000000} * 1000},
      {"1G", int64_t{1000000000} * 1000},
      {"1T", int64_t{1000000000000} * 1000},
      {"1P", int64_t{1000000000000000} * 1000},
      {"1Ki", kKi * 1000},
      {"1Mi", kMi * 1000},
      {"4Gi", 4 * kGi * 1000},
      {"1Ti", kTi * 1000},
      {"8Pi", 8 * kPi * 1000},
      {"1.5Gi", 3 * kGi / 2 * 1000},
      {"0.5Ki", 512 * 1000},
      {"1e3", 1000 * 1000},
      {"1E3", 1000 * 1000},
      {"1e+3", 1000 * 1000},
      {"1e-3", 1},
      {"1e-4", 1},  // 0.1m, rounded up.
      {"1.5e2", 150 * 1000},
      {"0e100000", 0},
      {"1e-1000000", 1},
      {"0.000E", 0},
      {"0.001E", int64_t{1000000000000000} * 1000},
      {"00012", 12000},
      {"12.500", 12500},
      {"-0.1m", -1},  // Away from zero, like kube's MilliValue.
      {"9223372036854775807m", std::numeric_limits<int64_t>::max()},
      {"9223372036854775.807", std::numeric_limits<int64_t>::max()},
  };
  for (const ParseCase& c : cases) {
    Result<int64_t> got = ParseQuantityMilli(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.milli) << c.text;
  }
}

TEST(NodeResourceQuantityTest, RejectsMalformedQuantities) {
  for (const std::string text :
       {"",    " ",   "1 ", " 1",  "abc",   "m",    "Gi",   ".",   "+",   "-",    "1.2.3", "1x",
        "1gi", "1KI", "1e", "1E+", "1e3.5", "1e3m", "1Gim", "--1", "1,5", "0x10", "1 Gi",  "e3"}) {
    Result<int64_t> got = ParseQuantityMilli(text);
    ASSERT_FALSE(got.ok()) << "'" << text << "' parsed as " << *got;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find("\"" + text + "\""), std::string::npos)
        << got.status().message();
  }
}

TEST(NodeResourceQuantityTest, RejectsOverflow) {
  for (const std::string text :
       {"9223372036854775808m", "9223372036854776", "1Ei", "1E", "10P", "9Pi", "1e16", "1e1000",
        "99999999999999999999999", "1e999999999999999999999"}) {
    Result<int64_t> got = ParseQuantityMilli(text);
    ASSERT_FALSE(got.ok()) << text << " parsed as " << *got;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(text), std::string::npos) << got.status().message();
    EXPECT_NE(got.status().message().find("too large"), std::string::npos)
        << got.status().message();
  }
}

TEST(NodeResourceQuantityTest, FormatsForDisplay) {
  EXPECT_EQ(FormatQuantityMilli(0, false), "0");
  EXPECT_EQ(FormatQuantityMilli(0, true), "0");
  EXPECT_EQ(FormatQuantityMilli(500, false), "500m");
  EXPECT_EQ(FormatQuantityMilli(1500, false), "1500m");
  EXPECT_EQ(FormatQuantityMilli(2000, false), "2");
  EXPECT_EQ(FormatQuantityMilli(64000000, false), "64000");
  EXPECT_EQ(FormatQuantityMilli(-2000, false), "-2");
  EXPECT_EQ(FormatQuantityMilli(-250, true), "-250m");
  EXPECT_EQ(FormatQuantityMilli(4 * kGi * 1000, true), "4Gi");
  EXPECT_EQ(FormatQuantityMilli(4 * kGi * 1000, false), "4294967296");
  EXPECT_EQ(FormatQuantityMilli(1536 * kMi * 1000, true), "1536Mi");
  EXPECT_EQ(FormatQuantityMilli(kKi * 1000, true), "1Ki");
  EXPECT_EQ(FormatQuantityMilli(512 * 1000, true), "512");
  EXPECT_EQ(FormatQuantityMilli(int64_t{1000000000} * 1000, true), "1G");
  EXPECT_EQ(FormatQuantityMilli(int64_t{2500} * 1000 * 1000, true), "2500k");
  EXPECT_EQ(FormatQuantityMilli(1001 * 1000, true), "1001");
  EXPECT_EQ(FormatQuantityMilli(1, true), "1m");
}

TEST(NodeResourceQuantityTest, FormatRoundTrips) {
  const std::vector<int64_t> values = {0,
                                       1,
                                       999,
                                       1000,
                                       1024000,
                                       4 * kGi * 1000,
                                       3 * kGi / 2 * 1000,
                                       int64_t{1000000000} * 1000,
                                       8 * kPi * 1000,
                                       -7 * kMi * 1000,
                                       std::numeric_limits<int64_t>::max(),
                                       std::numeric_limits<int64_t>::max() / 1000 * 1000,
                                       -std::numeric_limits<int64_t>::max()};
  for (int64_t v : values) {
    for (bool binary : {false, true}) {
      const std::string text = FormatQuantityMilli(v, binary);
      Result<int64_t> back = ParseQuantityMilli(text);
      ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
      EXPECT_EQ(*back, v) << text;
    }
  }
}

TEST(NodeResourceQuantityTest, ParsesResourceLists) {
  Result<ResourceList> list = ParseResourceList(json::parse(
      R"({"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1, "ephemeral-storage": "10G",
          "example.com/half": 0.5, "example.com/big": 1e3, "example.com/zero": 0})"));
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  const ResourceList want = {
      {"cpu", 2000},
      {"memory", 4 * kGi * 1000},
      {"nvidia.com/gpu", 1000},
      {"ephemeral-storage", int64_t{10000000000} * 1000},
      {"example.com/half", 500},
      {"example.com/big", 1000000},
      {"example.com/zero", 0},
  };
  EXPECT_EQ(*list, want);
}

TEST(NodeResourceQuantityTest, ResourceListNullAndEmpty) {
  Result<ResourceList> null_list = ParseResourceList(json());
  ASSERT_TRUE(null_list.ok());
  EXPECT_TRUE(null_list->empty());
  Result<ResourceList> empty = ParseResourceList(json::object());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(NodeResourceQuantityTest, ResourceListErrorsNameTheResource) {
  struct Case {
    json obj;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {json::array({"2"}), "must be an object"},
      {json("2"), "must be an object"},
      {json{{"cpu", "two"}}, "resource \"cpu\""},
      {json{{"cpu", "two"}}, "\"two\""},
      {json{{"memory", true}}, "resource \"memory\""},
      {json{{"memory", json::object()}}, "must be a string or a number"},
      {json{{"memory", nullptr}}, "resource \"memory\""},
      {json{{"cpu", "-1"}}, "greater than or equal to 0"},
      {json{{"nvidia.com/gpu", -1}}, "resource \"nvidia.com/gpu\""},
      {json{{"memory", "1Ei"}}, "too large"},
      {json{{"cpu", std::numeric_limits<int64_t>::max()}}, "too large"},
  };
  for (const Case& c : cases) {
    Result<ResourceList> got = ParseResourceList(c.obj);
    ASSERT_FALSE(got.ok()) << c.obj.dump();
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(c.needle), std::string::npos)
        << c.obj.dump() << " -> " << got.status().message();
  }
}

}  // namespace
}  // namespace sluice::node

namespace sluice::node {
namespace {

TEST(NodeResourceQuantityTest, NanoAndMicroSuffixesRoundUpToAMilliUnit) {
  EXPECT_EQ(ParseQuantityMilli("100n").value(), 1);
  EXPECT_EQ(ParseQuantityMilli("1500u").value(), 2);
  EXPECT_EQ(ParseQuantityMilli("2000000n").value(), 2);
  EXPECT_EQ(ParseQuantityMilli("0n").value(), 0);
}

}  // namespace
}  // namespace sluice::node
