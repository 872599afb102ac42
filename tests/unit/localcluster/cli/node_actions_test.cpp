// Tests of the node actions' patches and no-op decisions (node_actions.h).
#include "localcluster/cli/node_actions.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

using nlohmann::json;

TEST(NodeActionsTest, ParseAndName) {
  for (const char* word : {"cordon", "uncordon", "fail", "recover"}) {
    std::optional<NodeAction> a = ParseNodeAction(word);
    ASSERT_TRUE(a) << word;
    EXPECT_STREQ(NodeActionName(*a), word);
  }
  EXPECT_FALSE(ParseNodeAction("drain"));
}

TEST(NodeActionsTest, MergePatches) {
  EXPECT_EQ(json::parse(NodeMergePatch(NodeAction::kCordon)),
            json::parse(R"({"spec":{"unschedulable":true}})"));
  EXPECT_EQ(json::parse(NodeMergePatch(NodeAction::kUncordon)),
            json::parse(R"({"spec":{"unschedulable":false}})"));
  EXPECT_EQ(json::parse(NodeMergePatch(NodeAction::kFail)),
            json::parse(R"({"metadata":{"annotations":{"sluice.dev/simulated-failure":"true"}}})"));
  EXPECT_EQ(json::parse(NodeMergePatch(NodeAction::kRecover)),
            json::parse(R"({"metadata":{"annotations":{"sluice.dev/simulated-failure":null}}})"));
}

TEST(NodeActionsTest, AlreadyInState) {
  const json plain = json::parse(R"({"metadata": {"name": "n"}})");
  const json cordoned =
      json::parse(R"({"metadata": {"name": "n"}, "spec": {"unschedulable": true}})");
  const json failed = json::parse(
      R"({"metadata": {"name": "n", "annotations": {"sluice.dev/simulated-failure": "true"}}})");
  EXPECT_FALSE(NodeAlreadyInState(NodeAction::kCordon, plain));
  EXPECT_TRUE(NodeAlreadyInState(NodeAction::kCordon, cordoned));
  EXPECT_TRUE(NodeAlreadyInState(NodeAction::kUncordon, plain));
  EXPECT_FALSE(NodeAlreadyInState(NodeAction::kUncordon, cordoned));
  EXPECT_FALSE(NodeAlreadyInState(NodeAction::kFail, plain));
  EXPECT_TRUE(NodeAlreadyInState(NodeAction::kFail, failed));
  EXPECT_TRUE(NodeAlreadyInState(NodeAction::kRecover, plain));
  EXPECT_FALSE(NodeAlreadyInState(NodeAction::kRecover, failed));
}

TEST(NodeActionsTest, Messages) {
  EXPECT_EQ(NodeActionMessage(NodeAction::kCordon, "gpu-0", false), "node/gpu-0 cordoned");
  EXPECT_EQ(NodeActionMessage(NodeAction::kCordon, "gpu-0", true), "node/gpu-0 already cordoned");
  EXPECT_EQ(NodeActionMessage(NodeAction::kFail, "gpu-0", false),
            "node/gpu-0 marked failed (simulated)");
  EXPECT_EQ(NodeActionMessage(NodeAction::kRecover, "gpu-0", false), "node/gpu-0 recovered");
}

}  // namespace
}  // namespace sluice::cli
