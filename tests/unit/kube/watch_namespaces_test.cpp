// ParseWatchNamespaces (the operator's --namespace) and the store's per-namespace relist, which
// lets one informer hold several namespaces' lists.
#include "kube/watch_namespaces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/indexer.h"

namespace sluice::kube {
namespace {

using Names = std::vector<std::string>;

TEST(ParseWatchNamespacesTest, EmptyMeansEveryNamespace) {
  EXPECT_EQ(ParseWatchNamespaces("").value(), Names{""});
  EXPECT_EQ(ParseWatchNamespaces("  ").value(), Names{""});
}

TEST(ParseWatchNamespacesTest, ListsInFirstSeenOrderWithoutDuplicatesOrSpaces) {
  EXPECT_EQ(ParseWatchNamespaces("team-a").value(), Names{"team-a"});
  EXPECT_EQ(ParseWatchNamespaces("b, a ,b,c").value(), (Names{"b", "a", "c"}));
}

TEST(ParseWatchNamespacesTest, RejectsEmptyElementsAndInvalidNamesNamingThem) {
  for (const char* bad : {"a,,b", "a,", ",a"}) {
    Result<Names> r = ParseWatchNamespaces(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().field(), "namespace");
    EXPECT_NE(r.status().message().find("empty namespace"), std::string::npos);
  }
  for (const std::string& bad :
       std::vector<std::string>{"Team", "a_b", "-a", "a-", std::string(64, 'a'), "a/b"}) {
    Result<Names> r = ParseWatchNamespaces("ok," + bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("\"" + bad + "\""), std::string::npos)
        << r.status().message();
  }
  EXPECT_TRUE(ParseWatchNamespaces(std::string(63, 'a')).ok());
}

ObjectPtr Obj(const std::string& ns, const std::string& name, const std::string& rv) {
  return std::make_shared<const nlohmann::json>(
      nlohmann::json{{"metadata", {{"namespace", ns}, {"name", name}, {"resourceVersion", rv}}}});
}

std::vector<std::string> Keys(const std::vector<ObjectPtr>& objects) {
  std::vector<std::string> out;
  for (const ObjectPtr& o : objects) out.push_back(ObjectKey(*o));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(IndexerReplaceNamespaceTest, ReplacesOnlyThatNamespace) {
  Indexer store;
  store.Replace({Obj("a", "x", "1"), Obj("a", "y", "2"), Obj("b", "x", "3")});
  // A relist of namespace a: y vanished, x changed, z is new; b's object is neither reported nor
  // dropped.
  const ReplaceDiff diff = store.ReplaceNamespace("a", {Obj("a", "x", "4"), Obj("a", "z", "5")});
  EXPECT_EQ(Keys(diff.deleted), (std::vector<std::string>{"a/y"}));
  EXPECT_EQ(Keys(diff.added), (std::vector<std::string>{"a/z"}));
  ASSERT_EQ(diff.updated.size(), 1u);
  EXPECT_EQ(ResourceVersionOf(*diff.updated[0].first), "1");
  EXPECT_EQ(ResourceVersionOf(*diff.updated[0].second), "4");
  EXPECT_EQ(store.ListKeys(), (std::vector<std::string>{"a/x", "a/z", "b/x"}));
  EXPECT_EQ(store.ByIndex(kNamespaceIndex, "b")->size(), 1u);
  EXPECT_EQ(store.ByIndex(kNamespaceIndex, "a")->size(), 2u);
  // An empty relist of b empties b alone.
  const ReplaceDiff gone = store.ReplaceNamespace("b", {});
  EXPECT_EQ(Keys(gone.deleted), (std::vector<std::string>{"b/x"}));
  EXPECT_TRUE(gone.added.empty());
  EXPECT_TRUE(gone.updated.empty());
  EXPECT_EQ(store.ListKeys(), (std::vector<std::string>{"a/x", "a/z"}));
}

}  // namespace
}  // namespace sluice::kube
