#include "api/meta.h"

#include <gtest/gtest.h>

namespace sluice::api {
namespace {

using nlohmann::json;

TEST(ApiMetaTest, ObjectMetaRoundTripsAndOmitsEmptyFields) {
  const json j = json::parse(R"({
    "name": "rp", "namespace": "default", "uid": "u-1", "resourceVersion": "42",
    "generation": 3, "creationTimestamp": "2026-11-22T10:00:00Z",
    "labels": {"app": "x"}, "annotations": {"a": "b"},
    "ownerReferences": [{"apiVersion": "sluice.dev/v1alpha1", "kind": "Dataflow",
                         "name": "df", "uid": "u-0", "controller": true,
                         "blockOwnerDeletion": true}],
    "finalizers": ["sluice.dev/drain"]})");
  Result<ObjectMeta> m = ObjectMetaFromJson(j);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->generation, 3);
  EXPECT_EQ(m->owner_references.at(0).kind, "Dataflow");
  EXPECT_EQ(ToJson(*m), j);
  EXPECT_EQ(ToJson(ObjectMeta{}), json::object());
}

TEST(ApiMetaTest, WrongTypesNameTheField) {
  Result<ObjectMeta> m = ObjectMetaFromJson(json::parse(R"({"labels": {"a": 1}})"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().field(), "metadata.labels.a");
  m = ObjectMetaFromJson(json::parse(R"({"ownerReferences": [{"controller": "yes"}]})"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().field(), "metadata.ownerReferences[0].controller");
}

TEST(ApiMetaTest, SetConditionMovesTransitionTimeOnlyOnStatusChange) {
  FakeClock clock;
  std::vector<Condition> conditions;
  EXPECT_TRUE(
      SetCondition(conditions, {"Ready", "False", "Pending", "waiting", 1, ""}, clock.WallNow()));
  const std::string t0 = conditions[0].last_transition_time;
  EXPECT_EQ(t0, "2026-01-01T00:00:00Z");

  clock.Advance(std::chrono::seconds(30));
  // Same status, new reason: updated, transition time kept.
  EXPECT_TRUE(
      SetCondition(conditions, {"Ready", "False", "Scheduling", "2 of 3", 2, ""}, clock.WallNow()));
  EXPECT_EQ(conditions[0].last_transition_time, t0);
  EXPECT_EQ(conditions[0].reason, "Scheduling");
  EXPECT_EQ(conditions[0].observed_generation, 2);
  // Identical: no change reported, so no status write.
  EXPECT_FALSE(
      SetCondition(conditions, {"Ready", "False", "Scheduling", "2 of 3", 2, ""}, clock.WallNow()));
  // Status flips: transition time moves.
  clock.Advance(std::chrono::seconds(30));
  EXPECT_TRUE(SetCondition(conditions, {"Ready", "True", "AllReady", "", 2, ""}, clock.WallNow()));
  EXPECT_EQ(conditions[0].last_transition_time, "2026-01-01T00:01:00Z");
  EXPECT_TRUE(IsConditionTrue(conditions, "Ready"));
  EXPECT_FALSE(IsConditionTrue(conditions, "Degraded"));

  EXPECT_TRUE(SetCondition(conditions, {"Degraded", "False", "", "", 2, ""}, clock.WallNow()));
  EXPECT_EQ(conditions.size(), 2u);
  EXPECT_TRUE(RemoveCondition(conditions, "Degraded"));
  EXPECT_FALSE(RemoveCondition(conditions, "Degraded"));
  EXPECT_EQ(FindCondition(conditions, "Degraded"), nullptr);
}

TEST(ApiMetaTest, ConditionsOrEmptyReadsBackWhatItCan) {
  EXPECT_TRUE(ConditionsOrEmpty(nlohmann::json()).empty());
  EXPECT_TRUE(ConditionsOrEmpty(nlohmann::json("not a list")).empty());
  const std::vector<Condition> read = ConditionsOrEmpty(nlohmann::json::parse(
      R"([{"type": "Ready", "status": "True", "reason": "Up", "message": "",
           "lastTransitionTime": "2026-01-01T00:00:00Z"}])"));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].type, "Ready");
  EXPECT_EQ(read[0].status, "True");
}

TEST(ApiMetaTest, ConditionsRoundTrip) {
  const json j = json::parse(R"([{"type": "Ready", "status": "True", "reason": "AllReady",
      "message": "3/3", "observedGeneration": 4, "lastTransitionTime": "2026-11-22T10:00:00Z"}])");
  Result<std::vector<Condition>> c = ConditionsFromJson(j, "status.conditions");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(ToJson(*c), j);
  EXPECT_EQ(
      ConditionsFromJson(json::parse(R"([{"type": 1}])"), "status.conditions").status().field(),
      "status.conditions[0].type");
}

}  // namespace
}  // namespace sluice::api
