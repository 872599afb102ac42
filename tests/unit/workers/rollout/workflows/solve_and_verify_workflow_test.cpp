// SolveAndVerifyWorkflow on a scripted backend: who owns which token, and both rewards, for a
// correct answer accepted, a correct answer rejected (with and without a retry), a wrong answer
// accepted, the "verifier" reward type, one policy in both roles, and policies that cannot share
// a transcript.
#include "workers/rollout/workflows/solve_and_verify_workflow.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/unit/workers/rollout/workflows/scripted_backend.h"
#include "workers/model/char_tokenizer.h"

namespace sluice::rollout {
namespace solve_and_verify_workflow_test {

using model::CharTokenizer;
using nlohmann::json;
using test_support::PlainCharPolicy;
using test_support::ScriptedBackend;

constexpr char kPrompt[] = "<|user|>\nWhat is 6*7?<|end|>\n<|assistant|>\n";

std::vector<int32_t> Ids(std::string_view text) { return CharTokenizer().Encode(text); }

std::unique_ptr<Workflow> MakeSolveAndVerify(json extra = json::object(),
                                             std::string verifier_policy = "judge") {
  json spec = {{"type", "solve-and-verify"},
               {"roles",
                {{{"name", "solver"}, {"policy", "solver-p"}},
                 {{"name", "verifier"}, {"policy", verifier_policy}}}},
               {"reward", {{"type", "exact-match"}}}};
  spec.update(extra);
  auto workflow = MakeWorkflow(spec);
  EXPECT_TRUE(workflow.ok()) << workflow.status().ToString();
  return workflow.ok() ? std::move(workflow).value() : nullptr;
}

LeasedTask Task() {
  LeasedTask task;
  task.task_id = "task-5";
  task.prompt_id = "row-5";
  task.prompt = "What is 6*7?";
  task.answer = "42";
  task.samples = 1;
  task.sampling = {{"maxNewTokens", 64}};
  return task;
}

struct Episode {
  dataflow::Sample sample;
  EpisodeStats stats;
  std::vector<GenerateRequest> requests;
};

Episode RunScript(const Workflow& workflow, std::vector<std::string> solver,
                  std::vector<std::string> verifier, std::string verifier_policy = "judge") {
  ScriptedBackend backend(ScriptedBackend::Queue(
      {{"solver-p", std::move(solver)}, {verifier_policy, std::move(verifier)}}));
  EpisodeContext context;
  context.backend = &backend;
  context.policies["solver-p"] = PlainCharPolicy();
  context.policies["judge"] = PlainCharPolicy();
  Result<EpisodeResult> result = workflow.Run(Task(), context);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  Episode run;
  if (result.ok()) {
    EXPECT_EQ(result->samples.size(), 1u);
    run.sample = result->samples.at(0);
    run.stats = result->stats;
    EXPECT_TRUE(dataflow::ValidateSample(run.sample).ok())
        << dataflow::ValidateSample(run.sample).ToString();
  }
  run.requests = backend.requests();
  return run;
}

// The expected layout: parts of text, each owned by -1 (context) or a role index.
struct Part {
  std::string text;
  int32_t owner;
};

void ExpectLayout(const dataflow::Sample& s, const std::vector<Part>& parts) {
  std::vector<int32_t> tokens;
  std::vector<int32_t> owners;
  std::vector<uint32_t> starts;
  for (const Part& p : parts) {
    const std::vector<int32_t> ids = Ids(p.text);
    if (p.owner >= 0) starts.push_back(static_cast<uint32_t>(tokens.size()));
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    owners.insert(owners.end(), ids.size(), p.owner);
  }
  EXPECT_EQ(s.tokens, tokens);
  EXPECT_EQ(s.token_owner, owners);
  EXPECT_EQ(s.turn_starts, starts);
  ASSERT_EQ(s.loss_mask.size(), owners.size());
  for (size_t t = 0; t < owners.size(); ++t) {
    EXPECT_EQ(s.loss_mask[t], owners[t] >= 0 ? 1 : 0) << t;
    EXPECT_EQ(s.versions[t], owners[t] >= 0 ? ScriptedBackend::kVersion : dataflow::kNoVersion);
  }
}

const std::string kVerify = "\n<|user|>\n" +
                            std::string(SolveAndVerifyWorkflow::kVerifyInstruction) +
                            "<|end|>\n<|assistant|>\n";
const std::string kRetry =
    "\n<|user|>\nThe verifier rejected the answer. Try again.<|end|>\n"
    "<|assistant|>\n";

TEST(SolveAndVerifyWorkflowTest, CorrectAnswerAccepted) {
  auto workflow = MakeSolveAndVerify();
  ASSERT_NE(workflow, nullptr);
  EXPECT_EQ(workflow->name(), "solve-and-verify");
  Episode run = RunScript(*workflow, {"<answer>42</answer><|end|>"},
                          {"It checks out. <answer>yes</answer><|end|>"});
  const dataflow::Sample& s = run.sample;
  ExpectLayout(s, {{kPrompt, -1},
                   {"<answer>42</answer><|end|>", 0},
                   {kVerify, -1},
                   {"It checks out. <answer>yes</answer><|end|>", 1}});
  EXPECT_EQ(s.policies, (std::vector<std::string>{"solver-p", "judge"}));
  EXPECT_EQ(s.policy_rewards, (std::vector<double>{1, 1}));
  EXPECT_EQ(s.reward, 1.0);
  EXPECT_EQ(s.finish_reason, "stop");
  ASSERT_EQ(run.requests.size(), 2u);
  EXPECT_EQ(run.requests[0].policy, "solver-p");
  EXPECT_EQ(run.requests[1].policy, "judge");
  // The verifier's context is the solver's prompt and answer plus the instruction.
  EXPECT_EQ(run.requests[1].prompt,
            std::vector<int32_t>(s.tokens.begin(), s.tokens.begin() + s.turn_starts[1]));
  EXPECT_EQ(run.requests[1].sampling, run.requests[0].sampling);
  EXPECT_EQ(run.stats.generated_tokens, s.GeneratedTokens());
}

TEST(SolveAndVerifyWorkflowTest, CorrectAnswerRejectedThenRetriedAndAccepted) {
  auto workflow = MakeSolveAndVerify();
  ASSERT_NE(workflow, nullptr);
  Episode run =
      RunScript(*workflow, {"<answer>42</answer><|end|>", "Still <answer>42</answer><|end|>"},
                {"<answer>no</answer><|end|>", "<answer> YES </answer><|end|>"});
  const dataflow::Sample& s = run.sample;
  ExpectLayout(s, {{kPrompt, -1},
                   {"<answer>42</answer><|end|>", 0},
                   {kVerify, -1},
                   {"<answer>no</answer><|end|>", 1},
                   {kRetry, -1},
                   {"Still <answer>42</answer><|end|>", 0},
                   {kVerify, -1},
                   {"<answer> YES </answer><|end|>", 1}});
  // The final verdict (yes) matches the final answer's correctness.
  EXPECT_EQ(s.policy_rewards, (std::vector<double>{1, 1}));
  EXPECT_EQ(run.requests.size(), 4u);
}

TEST(SolveAndVerifyWorkflowTest, CorrectAnswerRejectedWithoutAttemptsLeft) {
  auto workflow = MakeSolveAndVerify({{"maxTurns", 1}});
  ASSERT_NE(workflow, nullptr);
  Episode run =
      RunScript(*workflow, {"<answer>42</answer><|end|>"}, {"<answer>no</answer><|end|>"});
  EXPECT_EQ(run.sample.policy_rewards, (std::vector<double>{1, 0}));
  EXPECT_EQ(run.sample.reward, 1.0);
  EXPECT_EQ(run.requests.size(), 2u);
}

TEST(SolveAndVerifyWorkflowTest, RejectionsUpToTheDefaultTwoAttempts) {
  auto workflow = MakeSolveAndVerify();
  ASSERT_NE(workflow, nullptr);
  Episode run = RunScript(*workflow, {"<answer>41</answer><|end|>", "<answer>40</answer><|end|>"},
                          {"<answer>no</answer><|end|>", "maybe<|end|>"});
  // Two attempts; the second verdict is not "yes", so it counts as no: right about a wrong answer.
  EXPECT_EQ(run.requests.size(), 4u);
  EXPECT_EQ(run.sample.turn_starts.size(), 4u);
  EXPECT_EQ(run.sample.policy_rewards, (std::vector<double>{0, 1}));
}

TEST(SolveAndVerifyWorkflowTest, WrongAnswerAccepted) {
  auto workflow = MakeSolveAndVerify();
  ASSERT_NE(workflow, nullptr);
  Episode run =
      RunScript(*workflow, {"<answer>41</answer><|end|>"}, {"<answer>yes</answer><|end|>"});
  EXPECT_EQ(run.sample.policy_rewards, (std::vector<double>{0, 0}));
  EXPECT_EQ(run.sample.reward, 0.0);
}

TEST(SolveAndVerifyWorkflowTest, VerifierRewardTypeRewardsTheSolverByVerdict) {
  auto workflow = MakeSolveAndVerify({{"reward", {{"type", "verifier"}}}});
  ASSERT_NE(workflow, nullptr);
  // Wrong but accepted: the solver is rewarded by the verdict; the verifier, checked by
  // exact-match (the default check), was wrong.
  Episode run =
      RunScript(*workflow, {"<answer>41</answer><|end|>"}, {"<answer>yes</answer><|end|>"});
  EXPECT_EQ(run.sample.policy_rewards, (std::vector<double>{1, 0}));
  EXPECT_EQ(run.sample.reward, 1.0);

  // Correct and accepted: both rewarded.
  Episode run2 =
      RunScript(*workflow, {"<answer>42</answer><|end|>"}, {"<answer>yes</answer><|end|>"});
  EXPECT_EQ(run2.sample.policy_rewards, (std::vector<double>{1, 1}));
}

TEST(SolveAndVerifyWorkflowTest, VerifierRewardTypeWithMathCheck) {
  auto workflow = MakeSolveAndVerify(
      {{"reward", {{"type", "verifier"}, {"options", {{"check", "math"}}}}}, {"maxTurns", 1}});
  ASSERT_NE(workflow, nullptr);
  // 42.0 is right by math equivalence (not by exact match); the verifier said no.
  Episode run =
      RunScript(*workflow, {"<answer>42.0</answer><|end|>"}, {"<answer>no</answer><|end|>"});
  EXPECT_EQ(run.sample.policy_rewards, (std::vector<double>{0, 0}));
}

TEST(SolveAndVerifyWorkflowTest, OnePolicyInBothRolesIsSinglePolicy) {
  auto workflow = MakeSolveAndVerify(json::object(), "solver-p");
  ASSERT_NE(workflow, nullptr);
  Episode run = RunScript(*workflow, {"<answer>42</answer><|end|>", "<answer>yes</answer><|end|>"},
                          {}, "solver-p");
  const dataflow::Sample& s = run.sample;
  EXPECT_EQ(s.policy, "solver-p");
  EXPECT_TRUE(s.policies.empty());
  EXPECT_TRUE(s.token_owner.empty());
  EXPECT_EQ(s.reward, 1.0);
  // Both turns are trained.
  EXPECT_EQ(s.GeneratedTokens(), static_cast<int64_t>(Ids("<answer>42</answer><|end|>").size() +
                                                      Ids("<answer>yes</answer><|end|>").size()));
  EXPECT_EQ(s.turn_starts.size(), 2u);
}

TEST(SolveAndVerifyWorkflowTest, PoliciesWithDifferentTemplatesAreRefused) {
  auto workflow = MakeSolveAndVerify();
  ASSERT_NE(workflow, nullptr);
  ScriptedBackend backend(ScriptedBackend::Queue({}));
  EpisodeContext context;
  context.backend = &backend;
  context.policies["solver-p"] = PlainCharPolicy();
  PolicyText other = PlainCharPolicy();
  other.chat_template =
      std::make_shared<const model::ChatTemplate>(model::ChatTemplate::ByName("chatml").value());
  context.policies["judge"] = other;
  Result<EpisodeResult> result = workflow->Run(Task(), context);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().field(), "workflow.roles");
  EXPECT_TRUE(backend.requests().empty());

  context.policies.erase("judge");
  result = workflow->Run(Task(), context);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().field(), "workflow.roles[verifier].policy");
}

TEST(SolveAndVerifyWorkflowTest, IsYesAcceptsYesInAnyCaseOnly) {
  for (const char* yes : {"yes", "YES", "Yes", " yes\n", "\tyEs "}) {
    EXPECT_TRUE(SolveAndVerifyWorkflow::IsYes(yes)) << yes;
  }
  for (const char* no : {"no", "", "y", "yes.", "yes it is", "<answer>yes</answer>", "ye s"}) {
    EXPECT_FALSE(SolveAndVerifyWorkflow::IsYes(no)) << no;
  }
}

}  // namespace solve_and_verify_workflow_test
}  // namespace sluice::rollout
