#include "workers/trainer/trainer_settings.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sluice::trainer {
namespace {

using nlohmann::json;

json Config() {
  return json::parse(R"({
    "trainerJob": {"apiVersion": "sluice.dev/v1alpha1", "kind": "TrainerJob",
                   "metadata": {"name": "train", "namespace": "rl"},
                   "spec": {"policyRef": {"name": "actor"}, "dataflowRef": {"name": "arith"},
                            "steps": 20, "algorithm": {"type": "dapo", "clipHigh": 1.28,
                            "overlong": {"bufferTokens": 16}}}},
    "policy": {"apiVersion": "sluice.dev/v1alpha1", "kind": "Policy",
               "metadata": {"name": "actor", "namespace": "rl"},
               "spec": {"model": {"source": {"builtin": {"layers": 3, "seed": 7}}}}},
    "dataflow": {"apiVersion": "sluice.dev/v1alpha1", "kind": "Dataflow",
                 "metadata": {"name": "arith", "namespace": "rl"},
                 "spec": {"dataset": {"builtin": {}},
                          "workflow": {"type": "single-turn", "roles": [{"name": "solver", "policy": "actor"}]},
                          "sampling": {"maxNewTokens": 64},
                          "batch": {"groupsPerBatch": 8, "minibatches": 2,
                                    "perPolicy": [{"policy": "actor", "minibatches": 4}]}}}
  })");
}

TEST(TrainerSettingsTest, ParsesAndDefaultsTheThreeObjects) {
  Result<TrainerSettings> s = ParseTrainerConfig(Config().dump());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->job, "train");
  EXPECT_EQ(s->nspace, "rl");
  EXPECT_EQ(s->policy, "actor");
  EXPECT_EQ(s->dataflow, "arith");
  EXPECT_EQ(s->spec.steps, 20);
  EXPECT_EQ(s->spec.algorithm.type, "dapo");
  EXPECT_DOUBLE_EQ(s->spec.algorithm.clip_high, 1.28);
  EXPECT_DOUBLE_EQ(s->spec.algorithm.clip_low, 0.8);         // Defaulted.
  EXPECT_EQ(s->spec.micro_batch_tokens, 16384);              // Defaulted.
  EXPECT_DOUBLE_EQ(s->spec.algorithm.advantage.gamma, 1.0);  // Defaulted.
  EXPECT_EQ(s->minibatches, 4);                              // perPolicy wins.
  EXPECT_EQ(s->max_new_tokens, 64);
  EXPECT_EQ(s->model.builtin_uri,
            "builtin:tiny?layers=3&d=64&heads=4&kv_heads=2&ff=256&max_pos=512&seed=7&vocab=char");
}

TEST(TrainerSettingsTest, ErrorsNameTheField) {
  json c = Config();
  c["trainerJob"]["spec"]["steps"] = 0;
  Result<TrainerSettings> s = ParseTrainerConfig(c.dump());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().field(), "trainerJob.spec.steps") << s.status().ToString();

  c = Config();
  c["trainerJob"]["spec"]["algorithm"]["critic"] = {{"lr", 1e-5}};
  s = ParseTrainerConfig(c.dump());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().field(), "trainerJob.spec.algorithm.critic") << s.status().ToString();

  c = Config();
  c.erase("dataflow");
  s = ParseTrainerConfig(c.dump());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().field(), "dataflow");

  c = Config();
  c["trainerJob"]["spec"]["policyRef"]["name"] = "critic";
  s = ParseTrainerConfig(c.dump());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().field(), "trainerJob.spec.policyRef.name");

  EXPECT_EQ(ParseTrainerConfig("[1]").status().field(), "trainer.json");
}

TEST(TrainerSettingsTest, ConfigWithAUriModelNamesTheCacheEntry) {
  json c = Config();
  c["policy"]["spec"]["model"]["source"] = {{"uri", "http://127.0.0.1:9/m/"}};
  Result<TrainerSettings> s = ParseTrainerConfig(c.dump(), "/var/cache/models");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->model.uri, "http://127.0.0.1:9/m/");
  EXPECT_EQ(s->model.directory, model::ModelCacheDir("/var/cache/models", "http://127.0.0.1:9/m"));
  // The CRD refuses other schemes before the resolver sees them.
  c["policy"]["spec"]["model"]["source"] = {{"uri", "hf://Qwen/Qwen3-0.6B"}};
  s = ParseTrainerConfig(c.dump(), "/var/cache/models");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().field(), "policy.spec.model.source.uri") << s.status().ToString();
}

TEST(TrainerSettingsTest, ConfigWithAPvcModelUsesThePolicysMount) {
  json c = Config();
  c["policy"]["spec"]["model"]["source"] = {{"pvc", {{"claimName", "weights"}, {"path", "/q"}}}};
  Result<TrainerSettings> s = ParseTrainerConfig(c.dump());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->model.directory, "/var/lib/sluice/model/actor/q");
  EXPECT_TRUE(s->model.builtin_uri.empty());
}

TEST(TrainerSettingsTest, WarmStartIsDefaultedAndCarriesHowPromptsAreRendered) {
  json c = Config();
  c["trainerJob"]["spec"]["warmStart"] = {{"steps", 30}};
  c["dataflow"]["spec"]["workflow"]["systemPrompt"] = "Be brief.";
  Result<TrainerSettings> s = ParseTrainerConfig(c.dump());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(s->spec.warm_start.has_value());
  EXPECT_EQ(s->spec.warm_start->steps, 30);
  EXPECT_EQ(s->spec.warm_start->prompts_per_step, 64);  // Defaulted.
  EXPECT_DOUBLE_EQ(s->spec.warm_start->lr, 1e-3);       // Defaulted.
  EXPECT_EQ(s->text.tokenizer, "char");                 // A built-in model.
  EXPECT_EQ(s->text.chat_template, "plain");
  EXPECT_EQ(s->system_prompt, std::optional<std::string>("Be brief."));
}

TEST(TrainerSettingsTest, WarmStartErrorsNameTheField) {
  json c = Config();
  c["trainerJob"]["spec"]["warmStart"] = {{"promptsPerStep", 8}};  // steps is required.
  Result<TrainerSettings> s = ParseTrainerConfig(c.dump());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().field(), "trainerJob.spec.warmStart.steps") << s.status().ToString();

  // A multi-turn workflow qualifies with the built-in calculator only.
  c = Config();
  c["trainerJob"]["spec"]["warmStart"] = {{"steps", 5}};
  c["dataflow"]["spec"]["workflow"]["type"] = "multi-turn";
  c["dataflow"]["spec"]["workflow"]["environment"] = {{"builtin", "python"}};
  s = ParseTrainerConfig(c.dump());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().field(), "trainerJob.spec.warmStart") << s.status().ToString();
  EXPECT_NE(s.status().message().find("calculator"), std::string::npos);

  c = Config();
  c["trainerJob"]["spec"]["warmStart"] = {{"steps", 5}};
  c["policy"]["spec"]["tokenizer"] = {{"chatTemplate", "chatml"}};
  s = ParseTrainerConfig(c.dump());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().field(), "policy.spec.tokenizer.chatTemplate") << s.status().ToString();

  // Without a warm start the trainer renders nothing, so the template is not its business.
  c["trainerJob"]["spec"].erase("warmStart");
  EXPECT_TRUE(ParseTrainerConfig(c.dump()).ok());
}

// The transcript shape follows the Dataflow's workflow and the role the Policy ("actor") plays
// in it; what the warm start cannot shape is refused naming trainerJob.spec.warmStart.
TEST(TrainerSettingsTest, WarmStartShapeFollowsTheWorkflowAndTheRole) {
  const json calculator = {{"builtin", "calculator"}};
  struct Case {
    const char* name;
    json workflow;                            // The Dataflow's spec.workflow.
    std::optional<WarmStartTranscript> want;  // nullopt: refused.
    std::string role;                         // Wanted role, or a part of the refusal's message.
  };
  const std::vector<Case> cases = {
      {"single-turn",
       {{"type", "single-turn"}, {"roles", {{{"name", "policy"}, {"policy", "actor"}}}}},
       WarmStartTranscript::kAnswer,
       "policy"},
      {"the solver",
       {{"type", "solve-and-verify"},
        {"roles",
         {{{"name", "solver"}, {"policy", "actor"}}, {{"name", "verifier"}, {"policy", "judge"}}}}},
       WarmStartTranscript::kAnswer,
       "solver"},
      {"the verifier",
       {{"type", "solve-and-verify"},
        {"roles",
         {{{"name", "solver"}, {"policy", "judge"}}, {{"name", "verifier"}, {"policy", "actor"}}}}},
       WarmStartTranscript::kVerdict,
       "verifier"},
      {"a calculator agent",
       {{"type", "multi-turn"},
        {"roles", {{{"name", "agent"}, {"policy", "actor"}}}},
        {"environment", calculator}},
       WarmStartTranscript::kCalculatorCall,
       "agent"},
      {"a calculator agent with two turns",
       {{"type", "multi-turn"},
        {"maxTurns", 2},
        {"roles", {{{"name", "agent"}, {"policy", "actor"}}}},
        {"environment", calculator}},
       WarmStartTranscript::kCalculatorCall,
       "agent"},
      {"both roles",
       {{"type", "solve-and-verify"},
        {"roles",
         {{{"name", "solver"}, {"policy", "actor"}}, {{"name", "verifier"}, {"policy", "actor"}}}}},
       std::nullopt,
       "more than one role"},
      {"no role",
       {{"type", "solve-and-verify"},
        {"roles",
         {{{"name", "solver"}, {"policy", "a"}}, {{"name", "verifier"}, {"policy", "b"}}}}},
       std::nullopt,
       "plays no role"},
      {"an HTTP environment",
       {{"type", "multi-turn"},
        {"roles", {{{"name", "agent"}, {"policy", "actor"}}}},
        {"environment", {{"url", "http://env.rl:8080"}}}},
       std::nullopt,
       "calculator"},
      {"the python environment",
       {{"type", "multi-turn"},
        {"roles", {{{"name", "agent"}, {"policy", "actor"}}}},
        {"environment", {{"builtin", "python"}}}},
       std::nullopt,
       "calculator"},
      {"one turn: no room for the answer",
       {{"type", "multi-turn"},
        {"maxTurns", 1},
        {"roles", {{{"name", "agent"}, {"policy", "actor"}}}},
        {"environment", calculator}},
       std::nullopt,
       "maxTurns"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    json c = Config();
    c["trainerJob"]["spec"]["warmStart"] = {{"steps", 5}};
    c["dataflow"]["spec"]["workflow"] = tc.workflow;
    // perPolicy must name a Policy of the roles, which "no role" leaves out.
    c["dataflow"]["spec"]["batch"].erase("perPolicy");
    Result<TrainerSettings> s = ParseTrainerConfig(c.dump());
    if (!tc.want) {
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(s.status().field(), "trainerJob.spec.warmStart") << s.status().ToString();
      EXPECT_NE(s.status().message().find(tc.role), std::string::npos) << s.status().ToString();
      // Without a warm start the same Dataflow is fine: only the warm start needs the shape.
      c["trainerJob"]["spec"].erase("warmStart");
      EXPECT_TRUE(ParseTrainerConfig(c.dump()).ok());
      continue;
    }
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->warm_start_transcript, *tc.want);
    EXPECT_EQ(s->warm_start_role, tc.role);
    // workflow.toolCall unset: the CRD's markers.
    EXPECT_EQ(s->tool_call.call_open, "<tool>");
    EXPECT_EQ(s->tool_call.call_close, "</tool>");
    EXPECT_EQ(s->tool_call.answer_open, "<answer>");
    EXPECT_EQ(s->tool_call.answer_close, "</answer>");
  }
}

TEST(TrainerSettingsTest, WarmStartCarriesTheWorkflowsMarkers) {
  json c = Config();
  c["trainerJob"]["spec"]["warmStart"] = {{"steps", 5}};
  c["dataflow"]["spec"]["workflow"] = {
      {"type", "solve-and-verify"},
      {"roles",
       {{{"name", "solver"}, {"policy", "judge"}}, {{"name", "verifier"}, {"policy", "actor"}}}},
      {"toolCall", {{"answerOpen", "[["}, {"answerClose", "]]"}}}};
  Result<TrainerSettings> s = ParseTrainerConfig(c.dump());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->warm_start_transcript, WarmStartTranscript::kVerdict);
  EXPECT_EQ(s->tool_call.answer_open, "[[");
  EXPECT_EQ(s->tool_call.answer_close, "]]");
  EXPECT_EQ(s->tool_call.call_open, "<tool>");  // Defaulted.
  EXPECT_EQ(s->tool_call.call_close, "</tool>");
}

}  // namespace
}  // namespace sluice::trainer
