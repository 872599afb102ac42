// The reference indices (pools and TrainerJobs by the Policy and Dataflow they name) and
// Referencing, with the index and without it (the scan fallback must agree).
#include "operator/controllers/reference_indexes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::controllers {
namespace {

using nlohmann::json;

kube::ObjectPtr Obj(json o) { return std::make_shared<const json>(std::move(o)); }

kube::ObjectPtr Pool(const std::string& ns, const std::string& name, json policies,
                     const std::string& dataflow) {
  return Obj(
      {{"metadata", {{"namespace", ns}, {"name", name}}},
       {"spec", {{"policies", std::move(policies)}, {"dataflowRef", {{"name", dataflow}}}}}});
}

std::vector<std::string> Names(const std::vector<kube::ObjectPtr>& objects) {
  std::vector<std::string> out;
  for (const kube::ObjectPtr& o : objects) out.push_back((*o)["metadata"]["name"]);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ReferenceIndexesTest, IndexFunctionsNameNamespacedReferences) {
  const kube::ObjectPtr pool = Pool("ns", "p", {"actor", "critic", "actor", 7, ""}, "df");
  EXPECT_EQ(PoolPolicyRefs(*pool), (std::vector<std::string>{"ns/actor", "ns/critic"}));
  EXPECT_EQ(DataflowRefs(*pool), (std::vector<std::string>{"ns/df"}));
  const json job = {
      {"metadata", {{"name", "j"}}},
      {"spec", {{"policyRef", {{"name", "actor"}}}, {"dataflowRef", {{"name", ""}}}}}};
  EXPECT_EQ(JobPolicyRefs(job), (std::vector<std::string>{"default/actor"}));
  EXPECT_TRUE(DataflowRefs(job).empty());
  EXPECT_TRUE(PoolPolicyRefs(json::object()).empty());
}

TEST(ReferenceIndexesTest, IndexedAndScannedLookupsAgree) {
  const std::vector<kube::ObjectPtr> pools = {
      Pool("a", "one", {"actor"}, "df"), Pool("a", "two", {"critic", "actor"}, "other"),
      Pool("b", "three", {"actor"}, "df"), Pool("a", "four", {"critic"}, "df")};
  for (const bool indexed : {true, false}) {
    kube::Indexer store(kube::DefaultIndexers());
    if (indexed) {
      for (const auto& [name, fn] : PoolIndexers()) ASSERT_TRUE(store.AddIndex(name, fn).ok());
    }
    store.Replace(pools);
    auto lookup = [&](const std::string& index, const kube::IndexFunc& fn, const std::string& ns,
                      const std::string& name) {
      EXPECT_EQ(store.ByIndex(index, ns + "/" + name).ok(), indexed);
      return Names(Referencing(store, index, fn, ns, name));
    };
    EXPECT_EQ(lookup(kPolicyRefIndex, PoolPolicyRefs, "a", "actor"),
              (std::vector<std::string>{"one", "two"}));
    EXPECT_EQ(lookup(kDataflowRefIndex, DataflowRefs, "a", "df"),
              (std::vector<std::string>{"four", "one"}));
    EXPECT_TRUE(lookup(kPolicyRefIndex, PoolPolicyRefs, "c", "actor").empty());
  }
}

}  // namespace
}  // namespace sluice::controllers
