// MakeWorkflow: each workflow type builds from a valid spec, and every invalid input is refused
// with the field it concerns.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;

json SingleTurn() {
  return {{"type", "single-turn"}, {"roles", {{{"name", "policy"}, {"policy", "tiny"}}}}};
}
json MultiTurn() {
  return {{"type", "multi-turn"},
          {"roles", {{{"name", "agent"}, {"policy", "tiny"}}}},
          {"maxTurns", 4},
          {"environment", {{"builtin", "calculator"}}},
          {"toolCall", {{"callOpen", "[call]"}, {"callClose", "[/call]"}}},
          {"reward", {{"type", "math"}}}};
}
json SolveAndVerify() {
  return {{"type", "solve-and-verify"},
          {"roles",
           {{{"name", "verifier"}, {"policy", "judge"}}, {{"name", "solver"}, {"policy", "tiny"}}}},
          {"systemPrompt", "Think step by step."},
          {"reward", {{"type", "verifier"}, {"options", {{"check", "math"}}}}}};
}

// The field of MakeWorkflow's error for `spec` ("" when it succeeds).
std::string ErrorField(const json& spec) {
  Result<std::unique_ptr<Workflow>> workflow = MakeWorkflow(spec);
  if (workflow.ok()) return "";
  EXPECT_EQ(workflow.status().code(), StatusCode::kInvalidArgument) << workflow.status().ToString();
  EXPECT_FALSE(workflow.status().message().empty());
  return workflow.status().field();
}

TEST(MakeWorkflowTest, BuildsEachType) {
  for (const auto& [spec, name] :
       {std::pair{SingleTurn(), "single-turn"}, std::pair{MultiTurn(), "multi-turn"},
        std::pair{SolveAndVerify(), "solve-and-verify"}}) {
    Result<std::unique_ptr<Workflow>> workflow = MakeWorkflow(spec);
    ASSERT_TRUE(workflow.ok()) << workflow.status().ToString();
    EXPECT_EQ((*workflow)->name(), name);
  }
  // type defaults to single-turn, reward to exact-match; unknown keys are ignored.
  Result<std::unique_ptr<Workflow>> defaulted =
      MakeWorkflow({{"roles", {{{"name", "p"}, {"policy", "tiny"}}}}, {"futureField", 1}});
  ASSERT_TRUE(defaulted.ok()) << defaulted.status().ToString();
  EXPECT_EQ((*defaulted)->name(), "single-turn");
  // A null reward is the default one.
  json with_null = SingleTurn();
  with_null["reward"] = nullptr;
  EXPECT_EQ(ErrorField(with_null), "");
}

TEST(MakeWorkflowTest, TypeAndShape) {
  EXPECT_EQ(ErrorField(json::array()), "workflow");
  json spec = SingleTurn();
  spec["type"] = "debate";
  EXPECT_EQ(ErrorField(spec), "workflow.type");
  spec["type"] = 3;
  EXPECT_EQ(ErrorField(spec), "workflow.type");
}

TEST(MakeWorkflowTest, Roles) {
  json spec = SingleTurn();
  spec.erase("roles");
  EXPECT_EQ(ErrorField(spec), "workflow.roles");
  spec["roles"] = json::array();
  EXPECT_EQ(ErrorField(spec), "workflow.roles");
  spec["roles"] = "tiny";
  EXPECT_EQ(ErrorField(spec), "workflow.roles");
  spec["roles"] = {{{"name", "policy"}}};
  EXPECT_EQ(ErrorField(spec), "workflow.roles[0].policy");
  spec["roles"] = {{{"name", ""}, {"policy", "tiny"}}};
  EXPECT_EQ(ErrorField(spec), "workflow.roles[0].name");
  spec["roles"] = {{{"name", "a"}, {"policy", std::string(64, 'p')}}};
  EXPECT_EQ(ErrorField(spec), "workflow.roles[0].policy");
  spec["roles"] = {"tiny"};
  EXPECT_EQ(ErrorField(spec), "workflow.roles[0]");
  // Two roles for a one-role workflow.
  spec["roles"] = {{{"name", "a"}, {"policy", "x"}}, {{"name", "b"}, {"policy", "y"}}};
  EXPECT_EQ(ErrorField(spec), "workflow.roles");
  spec["roles"] = {{{"name", "a"}, {"policy", "x"}}, {{"name", "a"}, {"policy", "y"}}};
  EXPECT_EQ(ErrorField(spec), "workflow.roles[1].name");

  json sv = SolveAndVerify();
  sv["roles"] = {{{"name", "solver"}, {"policy", "x"}}};
  EXPECT_EQ(ErrorField(sv), "workflow.roles");
  sv["roles"] = {{{"name", "solver"}, {"policy", "x"}}, {{"name", "critic"}, {"policy", "y"}}};
  EXPECT_EQ(ErrorField(sv), "workflow.roles");
  sv["roles"] = {{{"name", "solver"}, {"policy", "x"}},
                 {{"name", "verifier"}, {"policy", "y"}},
                 {{"name", "judge"}, {"policy", "z"}}};
  EXPECT_EQ(ErrorField(sv), "workflow.roles");
}

TEST(MakeWorkflowTest, MaxTurns) {
  json spec = SingleTurn();
  spec["maxTurns"] = 2;
  EXPECT_EQ(ErrorField(spec), "workflow.maxTurns");
  json multi = MultiTurn();
  for (json bad : {json(0), json(257), json(-1), json(2.5), json("3")}) {
    multi["maxTurns"] = bad;
    EXPECT_EQ(ErrorField(multi), "workflow.maxTurns") << bad;
  }
  multi["maxTurns"] = 256;
  EXPECT_EQ(ErrorField(multi), "");
}

TEST(MakeWorkflowTest, SystemPrompt) {
  json spec = SingleTurn();
  spec["systemPrompt"] = 5;
  EXPECT_EQ(ErrorField(spec), "workflow.systemPrompt");
  spec["systemPrompt"] = std::string(32769, 's');
  EXPECT_EQ(ErrorField(spec), "workflow.systemPrompt");
}

TEST(MakeWorkflowTest, Environment) {
  json multi = MultiTurn();
  multi.erase("environment");
  EXPECT_EQ(ErrorField(multi), "workflow.environment");
  json single = SingleTurn();
  single["environment"] = {{"builtin", "calculator"}};
  EXPECT_EQ(ErrorField(single), "workflow.environment");
  // The environment parser's own errors keep their field.
  multi["environment"] = {{"builtin", "abacus"}};
  EXPECT_TRUE(ErrorField(multi).starts_with("workflow.environment")) << ErrorField(multi);
}

TEST(MakeWorkflowTest, ToolCall) {
  json multi = MultiTurn();
  multi["toolCall"] = {{"callOpen", ""}};
  EXPECT_EQ(ErrorField(multi), "workflow.toolCall.callOpen");
}

TEST(MakeWorkflowTest, Reward) {
  json spec = SingleTurn();
  spec["reward"] = "exact-match";
  EXPECT_EQ(ErrorField(spec), "workflow.reward");
  spec["reward"] = {{"type", "telepathy"}};
  EXPECT_EQ(ErrorField(spec), "workflow.reward.type");
  spec["reward"] = {{"type", 1}};
  EXPECT_EQ(ErrorField(spec), "workflow.reward.type");
  spec["reward"] = {{"type", "exact-match"}, {"options", 3}};
  EXPECT_EQ(ErrorField(spec), "workflow.reward.options");
  // verifier only scores solve-and-verify.
  spec["reward"] = {{"type", "verifier"}};
  EXPECT_EQ(ErrorField(spec), "workflow.reward.type");

  json sv = SolveAndVerify();
  sv["reward"] = {{"type", "verifier"}, {"options", {{"check", "verifier"}}}};
  EXPECT_EQ(ErrorField(sv), "workflow.reward.options.check");
  sv["reward"] = {{"type", "verifier"}, {"options", {{"check", "vibes"}}}};
  EXPECT_EQ(ErrorField(sv), "workflow.reward.options.check");
  sv["reward"] = {{"type", "verifier"}, {"options", {{"check", 7}}}};
  EXPECT_EQ(ErrorField(sv), "workflow.reward.options.check");
  sv["reward"] = {{"type", "verifier"}};  // check defaults to exact-match.
  EXPECT_EQ(ErrorField(sv), "");
  sv["reward"] = {{"type", "code-exec"}};
  EXPECT_EQ(ErrorField(sv), "");
}

}  // namespace
}  // namespace sluice::rollout
