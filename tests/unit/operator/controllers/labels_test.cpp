// Label values and child names that Kubernetes accepts, whatever the parent's name (pure
// functions).
#include "operator/controllers/labels.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace sluice::controllers {
namespace {

using nlohmann::json;

// The API server's rules (k8s.io/apimachinery validation: IsValidLabelValue, IsDNS1123Label,
// IsDNS1123Subdomain), checked independently of the functions under test.
bool ValidLabelValue(const std::string& v) {
  static const std::regex kValue(R"(^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$)");
  return v.size() <= 63 && std::regex_match(v, kValue);
}
bool ValidDnsLabel(const std::string& v) {
  static const std::regex kLabel(R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)");
  return v.size() <= 63 && std::regex_match(v, kLabel);
}
bool ValidSubdomain(const std::string& v) {
  static const std::regex kName(
      R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)");
  return v.size() <= 253 && std::regex_match(v, kName);
}

TEST(LabelValueTest, ValidValuesAreUnchanged) {
  for (const std::string& v :
       std::vector<std::string>{"", "a", "gen", "Actor_v2.1", "my-pool", std::string(63, 'x')}) {
    EXPECT_EQ(LabelValue(v), v);
  }
}

TEST(LabelValueTest, LongValuesAreTruncatedWithAHashAndStayValid) {
  const std::string name = std::string(100, 'p') + ".example.com";
  const std::string v = LabelValue(name);
  EXPECT_EQ(v.size(), 63u);
  EXPECT_TRUE(ValidLabelValue(v)) << v;
  // A readable prefix, then the hash of the whole name.
  EXPECT_EQ(v, std::string(52, 'p') + "-" + JsonHash(json(name)));
  EXPECT_EQ(LabelValue(name), v);  // Stable.
  // 64 characters is one too many.
  const std::string v64 = LabelValue(std::string(64, 'a'));
  EXPECT_LE(v64.size(), 63u);
  EXPECT_TRUE(ValidLabelValue(v64)) << v64;
}

TEST(LabelValueTest, DistinctLongValuesStayDistinct) {
  // Equal in their first 63 characters, different after.
  const std::string base(70, 'n');
  EXPECT_NE(LabelValue(base + "-a"), LabelValue(base + "-b"));
  EXPECT_NE(LabelValue(base), LabelValue(base + "n"));
  // A long value never turns into a short valid one that someone else could hold.
  EXPECT_NE(LabelValue(base), base.substr(0, 63));
}

TEST(LabelValueTest, CutsEndingInSeparatorsEndAlphanumeric) {
  // The 52-character cut would end in '-' and '.': they are dropped before the hash.
  const std::string name = std::string(50, 'a') + "-." + std::string(40, 'b');
  const std::string v = LabelValue(name);
  EXPECT_TRUE(ValidLabelValue(v)) << v;
  EXPECT_EQ(v, std::string(50, 'a') + "-" + JsonHash(json(name)));
  // A short value that ends or starts badly, or holds a forbidden character, is hashed too.
  for (const std::string& bad :
       std::vector<std::string>{"pool-", "-pool", "pool.", "a/b", "a b", "_x_"}) {
    const std::string fixed = LabelValue(bad);
    EXPECT_TRUE(ValidLabelValue(fixed)) << bad << " -> " << fixed;
    EXPECT_NE(fixed, bad);
  }
  EXPECT_NE(LabelValue("a/b"), LabelValue("a b"));
  // Nothing usable at all: the hash alone.
  EXPECT_EQ(LabelValue(std::string(70, '-')), JsonHash(json(std::string(70, '-'))));
}

TEST(DnsLabelNameTest, KeepsShortNamesAndHashesTheRest) {
  EXPECT_EQ(DnsLabelName("train"), "train");
  EXPECT_EQ(DnsLabelName("train", "-0"), "train-0");
  EXPECT_EQ(DnsLabelName(std::string(61, 'f'), "-1"), std::string(61, 'f') + "-1");
  const std::string long_name = std::string(70, 'j');
  const std::string n = DnsLabelName(long_name, "-12");
  EXPECT_EQ(n.size(), 63u);
  EXPECT_TRUE(ValidDnsLabel(n)) << n;
  EXPECT_EQ(n, std::string(49, 'j') + "-" + JsonHash(json(long_name)) + "-12");
  EXPECT_NE(DnsLabelName(long_name + "a"), DnsLabelName(long_name + "b"));
  // Object names may hold '.', DNS labels may not: replaced, and hashed to stay distinct.
  const std::string dotted = DnsLabelName("team.job");
  EXPECT_TRUE(ValidDnsLabel(dotted)) << dotted;
  EXPECT_EQ(dotted, "team-job-" + JsonHash(json("team.job")));
  EXPECT_NE(DnsLabelName("team.job"), DnsLabelName("team-job"));
  // The 50-character cut would end in '-': it is dropped.
  const std::string dash = std::string(49, 'x') + "-" + std::string(30, 'y');
  const std::string d = DnsLabelName(dash, "-0");
  EXPECT_TRUE(ValidDnsLabel(d)) << d;
  EXPECT_EQ(d, std::string(49, 'x') + "-" + JsonHash(json(dash)) + "-0");
}

TEST(SubdomainNameTest, KeepsNamesUpTo253Characters) {
  const std::string name = std::string(200, 'c') + ".team";
  EXPECT_EQ(SubdomainName(name, "-config"), name + "-config");
  const std::string longest = std::string(240, 'c') + ".team.x";
  const std::string n = SubdomainName(longest, "-rollout-config");
  EXPECT_EQ(n.size(), 253u);
  EXPECT_TRUE(ValidSubdomain(n)) << n;
  EXPECT_EQ(n.substr(n.size() - 15), "-rollout-config");
  EXPECT_NE(SubdomainName(longest + "a", "-x"), SubdomainName(longest + "b", "-x"));
  // The 238-character cut would end in '.': it is dropped.
  const std::string dot = std::string(237, 'e') + "." + std::string(20, 'f');
  const std::string d = SubdomainName(dot, "-wal");
  EXPECT_TRUE(ValidSubdomain(d)) << d;
  EXPECT_EQ(d, std::string(237, 'e') + "-" + JsonHash(json(dot)) + "-wal");
}

TEST(StandardLabelsTest, EveryValueIsAValidLabelValue) {
  const std::string long_name(200, 'i');
  const json labels =
      StandardLabels("sluice-rollout", long_name, "rollout", {{kPoolLabel, long_name}});
  for (const auto& [key, value] : labels.items()) {
    EXPECT_TRUE(ValidLabelValue(value.get<std::string>())) << key << "=" << value;
  }
  EXPECT_EQ(labels[kInstanceLabel], LabelValue(long_name));
  EXPECT_EQ(labels[kPoolLabel], LabelValue(long_name));
  EXPECT_EQ(StandardLabels("sluice-rollout", "gen", "rollout")[kInstanceLabel], "gen");
}

}  // namespace
}  // namespace sluice::controllers
